"""Shared JAX (Flax linen) pieces for workload implementations (not a workload).

A workload's jax.py provides the same three functions as its torch.py:
  build_model(spec, point, dtype) -> flax.linen.Module called as model(x, train=...);
      dtype is the compute dtype (parameters stay float32)
  make_batch(spec, point, batch_size, seed) -> (inputs, targets) as NumPy arrays
  loss(logits, targets) -> scalar mean loss over the batch
A workload that trains with its own optimiser (SGD with momentum otherwise) provides:
  optimizer() -> (optax.GradientTransformation, how it reads in a result: "AdamW(...)")
"""

from __future__ import annotations

from functools import partial

import flax.linen as nn
import jax.numpy as jnp
import optax

from bench.workloads import _optim
from bench.workloads._numpy import image_batch as make_batch

__all__ = ["ResNet50", "loss", "make_batch"]


def loss(logits, targets):
    return optax.softmax_cross_entropy_with_integer_labels(logits, targets).mean()


def adamw():
    """The decoders' AdamW (bench.workloads._optim) in optax, and how it reads in a result."""
    transform = optax.adamw(learning_rate=_optim.LR, b1=_optim.BETAS[0], b2=_optim.BETAS[1],
                            eps=_optim.EPS, weight_decay=_optim.WEIGHT_DECAY)  # fmt: skip
    return transform, _optim.label()


class Bottleneck(nn.Module):
    """torchvision's Bottleneck (ResNet v1.5: the stride on the 3x3 convolution)."""

    width: int
    stride: int
    dtype: jnp.dtype

    @nn.compact
    def __call__(self, x, train: bool):
        conv = partial(nn.Conv, use_bias=False, dtype=self.dtype)
        norm = partial(
            nn.BatchNorm,
            use_running_average=not train,
            momentum=0.9,
            epsilon=1e-5,
            dtype=self.dtype,
        )
        out = nn.relu(norm()(conv(self.width, (1, 1))(x)))
        out = conv(self.width, (3, 3), strides=self.stride, padding=((1, 1), (1, 1)))(out)
        out = nn.relu(norm()(out))
        out = norm()(conv(self.width * 4, (1, 1))(out))
        if self.stride != 1 or x.shape[-1] != self.width * 4:
            x = norm()(conv(self.width * 4, (1, 1), strides=self.stride)(x))
        return nn.relu(out + x)


class ResNet50(nn.Module):
    """torchvision's resnet50, layer for layer: the same parameter count, exactly."""

    num_classes: int
    dtype: jnp.dtype = jnp.float32

    @nn.compact
    def __call__(self, x, train: bool = True):
        x = nn.Conv(
            64, (7, 7), strides=2, padding=((3, 3), (3, 3)), use_bias=False, dtype=self.dtype
        )(x)
        x = nn.BatchNorm(
            use_running_average=not train, momentum=0.9, epsilon=1e-5, dtype=self.dtype
        )(x)
        x = nn.max_pool(nn.relu(x), (3, 3), strides=(2, 2), padding=((1, 1), (1, 1)))
        for stage, (blocks, width) in enumerate(
            zip((3, 4, 6, 3), (64, 128, 256, 512), strict=True)
        ):
            for block in range(blocks):
                stride = 2 if stage > 0 and block == 0 else 1
                x = Bottleneck(width, stride, self.dtype)(x, train)
        x = x.mean(axis=(1, 2))
        return nn.Dense(self.num_classes, dtype=self.dtype)(x)


def resnet50(spec, point, dtype) -> nn.Module:
    return ResNet50(spec.num_classes, dtype)
