"""resnet50 in PyTorch: build_model, loss, make_batch (bench.workloads.contract)."""

from torch import nn
from torchvision.models import resnet50

from bench.workloads._torch import loss, make_batch

__all__ = ["build_model", "loss", "make_batch"]


def build_model(spec, point) -> nn.Module:
    return resnet50(weights=None, num_classes=spec.num_classes)
