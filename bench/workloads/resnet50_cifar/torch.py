"""resnet50-cifar in PyTorch: build_model, loss, make_batch (bench.workloads.contract)."""

from torch import nn
from torchvision.models import resnet50

from bench.workloads._torch import loss, make_batch

__all__ = ["build_model", "loss", "make_batch"]


def build_model(spec, point) -> nn.Module:
    # The unchanged ImageNet stem, as Keras' ResNet50(weights=None, classes=10) on
    # 32x32 inputs in the M2 Max vs V100 CIFAR study: the feature map is 1x1 before pooling.
    return resnet50(weights=None, num_classes=spec.num_classes)
