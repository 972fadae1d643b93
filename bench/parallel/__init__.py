"""Parallelism applied as functions over a plain model (the model file knows nothing of
them): fsdp.apply_fsdp shards a torch model with FSDP2, checkpoint.apply_ac recomputes
blocks' activations, jax_fsdp.apply_fsdp shards a JAX training state (parameters and
optimizer state) over a device mesh. The framework's session picks what applies from
the point and the workload (bench.frameworks.torch, bench.frameworks.jax).

The torch functions act on the model's repeated blocks: the children of its `layers`
container (a ModuleDict or ModuleList, as torchtitan's and most decoders' are)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torch import nn


def block_container(model: nn.Module) -> nn.Module:
    """The module holding the model's repeated blocks, its `layers`."""
    layers = getattr(model, "layers", None)
    if layers is None:
        raise ValueError(f"{type(model).__name__} has no `layers` of blocks to shard one by one")
    return layers
