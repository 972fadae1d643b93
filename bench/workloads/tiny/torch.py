"""tiny in PyTorch: build_model, loss, make_batch (bench.workloads.contract)."""

from torch import nn

from bench.workloads._torch import loss, make_batch

__all__ = ["build_model", "loss", "make_batch"]


def build_model(spec, point) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 8, kernel_size=3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(8 * 8 * 8, spec.num_classes),
    )
