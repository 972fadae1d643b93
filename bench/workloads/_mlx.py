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

__all__ = ["adamw", "loss", "make_batch", "normal_init"]


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
