"""torchvision's ViT-B/16, initialised locally; its attention uses PyTorch's fused
scaled_dot_product_attention where the hardware has a kernel for it."""

import torchvision

from bench.workloads._torch import loss, make_batch

__all__ = ["build_model", "loss", "make_batch"]


def build_model(spec, point):
    return torchvision.models.VisionTransformer(
        image_size=spec.input_shape()[-1],  # ViT-B/16's sizes, at the workload's (square) size
        patch_size=16,
        num_layers=12,
        num_heads=12,
        hidden_dim=768,
        mlp_dim=3072,
        num_classes=spec.num_classes,
    )
