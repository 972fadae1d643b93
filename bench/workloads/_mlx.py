"""Shared MLX pieces for workload implementations (not a workload).

A workload's mlx.py provides, as its jax.py does:
  build_model(spec, point) -> mlx.nn.Module called on NHWC images or token ids, its
      parameters float32 (the session casts them for --precision bf16)
  make_batch(spec, point, batch_size, seed) -> (inputs, targets) as NumPy arrays
  loss(logits, targets) -> scalar mean loss over the batch
A workload that trains with its own optimiser (SGD with momentum otherwise) provides:
  optimizer() -> (an mlx.optimizers optimizer, how it reads in a result: "AdamW(...)")
"""

from __future__ import annotations

import math
from typing import Any, cast

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim

from bench.workloads import _optim
from bench.workloads._numpy import image_batch as make_batch

__all__ = ["ResNet50", "adamw", "loss", "make_batch", "normal_init", "resnet50"]


def loss(logits, targets):
    return nn.losses.cross_entropy(logits.astype(mx.float32), targets, reduction="mean")


def adamw():
    """The decoders' AdamW (bench.workloads._optim) in MLX, with PyTorch's bias
    correction (MLX's default leaves it out), and how it reads in a result."""
    transform = optim.AdamW(learning_rate=_optim.LR, betas=list(_optim.BETAS), eps=_optim.EPS,
                            weight_decay=_optim.WEIGHT_DECAY, bias_correction=True)  # fmt: skip
    return transform, _optim.label()


def normal_init(model: nn.Module, std: float = 0.02, scaled: tuple[str, ...] = (), layers: int = 1):
    """GPT-2's and Llama's initialisation, as their torch.py: every linear and embedding
    weight N(0, std), biases zero, norms one; weights whose path ends in one of `scaled`
    (the blocks' output projections) at std / sqrt(2 x layers)."""
    from mlx.utils import tree_flatten, tree_unflatten

    updated = []
    flat = cast("list[tuple[str, Any]]", tree_flatten(model.parameters()))
    for path, value in flat:
        name = path.rsplit(".", 2)
        if name[-1] == "bias":
            value = mx.zeros_like(value)
        elif value.ndim == 1:  # a norm's scale
            value = mx.ones_like(value)
        else:
            deep = len(name) > 1 and name[-2] in scaled
            value = mx.random.normal(value.shape) * (std / math.sqrt(2 * layers) if deep else std)
        updated.append((path, value))
    model.update(tree_unflatten(updated))


def _norm(channels: int) -> nn.BatchNorm:
    return nn.BatchNorm(channels, eps=1e-5, momentum=0.1)  # PyTorch's (Flax's 0.9 is 1 - 0.1)


class Bottleneck(nn.Module):
    """torchvision's Bottleneck (ResNet v1.5: the stride on the 3x3 convolution), NHWC."""

    def __init__(self, channels: int, width: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, width, 1, bias=False)
        self.bn1 = _norm(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = _norm(width)
        self.conv3 = nn.Conv2d(width, width * 4, 1, bias=False)
        self.bn3 = _norm(width * 4)
        self.downsample = None
        if stride != 1 or channels != width * 4:
            self.downsample = nn.Sequential(
                nn.Conv2d(channels, width * 4, 1, stride=stride, bias=False), _norm(width * 4)
            )

    def __call__(self, x: mx.array) -> mx.array:
        out = nn.relu(self.bn1(self.conv1(x)))
        out = nn.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return nn.relu(out + (x if self.downsample is None else self.downsample(x)))


class ResNet50(nn.Module):
    """torchvision's resnet50, layer for layer: the same parameter count, exactly."""

    def __init__(self, num_classes: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = _norm(64)
        self.pool = nn.MaxPool2d(3, stride=2, padding=1)
        self.blocks = []
        channels = 64
        for stage, (count, width) in enumerate(zip((3, 4, 6, 3), (64, 128, 256, 512), strict=True)):
            for block in range(count):
                stride = 2 if stage > 0 and block == 0 else 1
                self.blocks.append(Bottleneck(channels, width, stride))
                channels = width * 4
        self.fc = nn.Linear(channels, num_classes)

    def __call__(self, x: mx.array) -> mx.array:
        x = self.pool(nn.relu(self.bn1(self.conv1(x))))
        for block in self.blocks:
            x = block(x)
        return self.fc(x.mean(axis=(1, 2)))


def resnet50(spec, point) -> nn.Module:
    return ResNet50(spec.num_classes)
