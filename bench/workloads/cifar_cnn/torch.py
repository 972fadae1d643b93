"""cnn-s, cnn-m, cnn-l and cnn-xl in PyTorch: build_model, loss, make_batch
(bench.workloads.contract)."""

from torch import nn

from bench.workloads._torch import loss, make_batch
from bench.workloads.cifar_cnn import ARCHITECTURES

__all__ = ["build_model", "loss", "make_batch"]


def build_model(spec, point) -> nn.Module:
    convs, dense = ARCHITECTURES[spec.name]
    layers: list[nn.Module] = []
    channels, size = spec.sample_shape[0], spec.sample_shape[1]
    # Keras-style 3x3 'valid' convolutions, a 2x2 max-pool between them (not after the last).
    for i, out in enumerate(convs):
        layers += [nn.Conv2d(channels, out, kernel_size=3), nn.ReLU()]
        channels, size = out, size - 2
        if i < len(convs) - 1:
            layers.append(nn.MaxPool2d(2))
            size //= 2
    layers += [
        nn.Flatten(),
        nn.Linear(channels * size * size, dense),
        nn.ReLU(),
        nn.Linear(dense, spec.num_classes),
    ]
    return nn.Sequential(*layers)
