"""cnn-s, cnn-m, cnn-l and cnn-xl in MLX: build_model, loss, make_batch
(bench.workloads.contract)."""

import mlx.core as mx
import mlx.nn as nn

from bench.workloads._mlx import loss, make_batch
from bench.workloads.cifar_cnn import ARCHITECTURES

__all__ = ["build_model", "loss", "make_batch"]


class CifarCnn(nn.Module):
    """TensorFlow's CNN tutorial network, widened per ARCHITECTURES (as torch.py): 3x3
    'valid' convolutions on NHWC images, a 2x2 max-pool between them."""

    def __init__(self, convs: tuple[int, ...], dense: int, num_classes: int, channels: int,
                 size: int) -> None:  # fmt: skip
        super().__init__()
        self.convs = []
        for i, out in enumerate(convs):
            self.convs.append(nn.Conv2d(channels, out, kernel_size=3))
            channels, size = out, size - 2
            if i < len(convs) - 1:
                size //= 2
        self.pool = nn.MaxPool2d(2, stride=2)
        self.hidden = nn.Linear(channels * size * size, dense)
        self.output = nn.Linear(dense, num_classes)

    def __call__(self, x: mx.array) -> mx.array:
        for i, conv in enumerate(self.convs):
            x = nn.relu(conv(x))
            if i < len(self.convs) - 1:
                x = self.pool(x)
        return self.output(nn.relu(self.hidden(x.reshape(x.shape[0], -1))))


def build_model(spec, point) -> nn.Module:
    convs, dense = ARCHITECTURES[spec.name]
    channels, size = spec.sample_shape[0], spec.sample_shape[1]
    return CifarCnn(convs, dense, spec.num_classes, channels, size)
