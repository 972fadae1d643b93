"""Shared PyTorch pieces for workload implementations (not a workload: starts with _).

A workload's torch.py provides three functions; image classifiers import the last two
from here and only write build_model:
  build_model(spec, point) -> torch.nn.Module
  make_batch(spec, point, batch_size, generator) -> (inputs, targets), on the CPU
  loss(outputs, targets) -> scalar tensor
A model that computes its own losses from inputs and targets (torchvision's detection
models, a GAN's generator and discriminators) provides instead of `loss`:
  train_loss(model, inputs, targets) -> scalar tensor, calling model(...) once
A workload that trains with its own optimiser (SGD with momentum otherwise) provides
  optimizer(parameters) -> torch.optim.Optimizer
called with the model's parameters already on the device (FSDP2's DTensor shards over
ranks), so it may choose its implementation by their device (decoders: `adamw`).
A decoder that trains on a token file (--data tokens:PATH) provides
  token_batch(windows) -> (inputs, targets), from a (batch, seq_len + 1) int64 tensor
Inputs and targets are tensors, or tuples and dicts of tensors (boxes, labels, masks).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from bench.workloads import _optim


def make_batch(spec, point, batch_size: int, generator: torch.Generator):
    """Random images and labels: synthetic data as the published comparisons used (no
    I/O, no augmentation)."""
    images = torch.randn((batch_size, *spec.input_shape(point.seq_len)), generator=generator)
    labels = torch.randint(0, spec.num_classes, (batch_size,), generator=generator)
    return images, labels


def loss(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(outputs, targets)


def next_token_pairs(windows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A decoder's inputs and targets from windows of seq_len + 1 tokens: each
    position's target is the next token."""
    return windows[:, :-1], windows[:, 1:]


def next_token_batch(spec, point, batch_size: int, generator: torch.Generator):
    """A decoder's batch: random token sequences; each position's target is the next token."""
    seq_len = spec.input_shape(point.seq_len)[0]
    tokens = torch.randint(0, spec.num_classes, (batch_size, seq_len + 1), generator=generator)
    return next_token_pairs(tokens)


ADAMW = {"lr": _optim.LR, "betas": _optim.BETAS, "eps": _optim.EPS,
         "weight_decay": _optim.WEIGHT_DECAY}  # fmt: skip


def adamw(parameters) -> torch.optim.Optimizer:
    """AdamW as torchtitan and nanoGPT train decoders: lr 3e-4, betas (0.9, 0.95), eps
    1e-8, weight decay 0.1 on every parameter (torchtitan's way; nanoGPT spares biases
    and norms). The fused kernel wherever this torch has one for the parameters' device
    and type (CUDA and ROCm, the CPU since PyTorch 2.4, MPS, XPU; FSDP2's DTensor shards
    too: tested on two gloo ranks), else foreach. The parameters are on their device
    already: the session builds, moves or shards the model before it asks for this, and
    torch would check the device only at the first step."""
    params = list(parameters)
    devices = fused_devices()
    if all(p.device.type in devices and torch.is_floating_point(p) for p in params):
        return torch.optim.AdamW(params, fused=True, **ADAMW)  # type: ignore[arg-type]
    return torch.optim.AdamW(params, foreach=True, **ADAMW)  # type: ignore[arg-type]


def fused_devices() -> list[str]:
    """The device types with fused optimizer kernels in this torch (its own list, as
    torch.optim reads it; CUDA alone where a torch lacks the list)."""
    from torch.utils import _foreach_utils

    listed = getattr(_foreach_utils, "_get_fused_kernels_supported_devices", None)
    return listed() if listed is not None else ["cuda"]


def next_token_loss(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of every position's logits (in float32) against the next token."""
    return F.cross_entropy(outputs.flatten(0, 1).float(), targets.flatten())


def normal_init(model: torch.nn.Module, std: float = 0.02) -> None:
    """BERT's and GPT-2's initialisation: linear and embedding weights N(0, std), linear
    biases zero."""
    for module in model.modules():
        if isinstance(module, torch.nn.Linear | torch.nn.Embedding):
            torch.nn.init.normal_(module.weight, std=std)
        if isinstance(module, torch.nn.Linear) and module.bias is not None:
            torch.nn.init.zeros_(module.bias)
