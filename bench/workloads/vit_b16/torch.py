"""torchvision's ViT-B/16, initialised locally; its attention uses PyTorch's fused
scaled_dot_product_attention where the hardware has a kernel for it."""

import torchvision

from bench.workloads._torch import loss, make_batch
from bench.workloads.vit_b16 import HEADS, HIDDEN, LAYERS, MLP, PATCH

__all__ = ["build_model", "loss", "make_batch"]


def build_model(spec, point):
    return torchvision.models.VisionTransformer(
        image_size=spec.input_shape()[-1],  # the workload's (square) size
        patch_size=PATCH,
        num_layers=LAYERS,
        num_heads=HEADS,
        hidden_dim=HIDDEN,
        mlp_dim=MLP,
        num_classes=spec.num_classes,
    )
