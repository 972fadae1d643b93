"""torchvision's DeepLabV3 with a ResNet-50 backbone (output stride 8), from scratch."""

import torch
import torch.nn.functional as F
import torchvision

from bench.workloads.deeplabv3 import IGNORE


class _Out(torch.nn.Module):
    """The main head's logits (torchvision returns {'out': ...})."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.model(images)["out"]


def build_model(spec, point):
    return _Out(
        torchvision.models.segmentation.deeplabv3_resnet50(
            weights=None, weights_backbone=None, num_classes=spec.num_classes, aux_loss=False
        )
    )


def make_batch(spec, point, batch_size: int, generator: torch.Generator):
    """Random images and per-pixel labels, about 5% of the pixels unlabelled."""
    shape = spec.input_shape()
    images = torch.randn((batch_size, *shape), generator=generator)
    labels = torch.randint(0, spec.num_classes, (batch_size, *shape[1:]), generator=generator)
    unlabelled = torch.rand((batch_size, *shape[1:]), generator=generator) < 0.05
    return images, labels.masked_fill(unlabelled, IGNORE)


def loss(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(outputs.float(), targets, ignore_index=IGNORE)
