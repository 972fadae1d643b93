"""Activation checkpointing applied to a plain model's blocks: their activations are
dropped after the forward pass and recomputed in the backward, trading compute for
memory (longer sequences, larger batches). Applied before FSDP2 wraps the blocks, as
torchtitan does. The Flax decoders (gpt2, llama3) recompute the same blocks
(`recomputed`) through flax.linen.remat (jax.checkpoint).

    none       every activation kept
    full       every block recomputed
    selective  every other block recomputed (torchtitan's layer-wise selective option
               with a period of 2): about half the memory saving for half the recompute
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bench.config.sweep import CHECKPOINTING_MODES
from bench.parallel import block_container

if TYPE_CHECKING:
    from torch import nn

MODES = CHECKPOINTING_MODES


def recomputed(mode: str, index: int) -> bool:
    """Whether block `index` (from 0) is recomputed in the backward under `mode`."""
    return mode == "full" or (mode == "selective" and index % 2 == 0)


def recomputed_count(mode: str, blocks: int) -> int:
    """How many of `blocks` blocks `mode` recomputes (a point's details)."""
    return sum(recomputed(mode, index) for index in range(blocks))


def apply_ac(model: nn.Module, mode: str) -> int:
    """Wrap the model's blocks in place; returns how many were wrapped."""
    if mode not in MODES:
        raise ValueError(f"activation checkpointing: {mode!r}; choose from: {', '.join(MODES)}")
    if mode == "none":
        return 0
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

    layers = block_container(model)
    wrapped = 0
    for index, (name, block) in enumerate(list(layers.named_children())):
        if recomputed(mode, index):
            layers.register_module(name, checkpoint_wrapper(block, preserve_rng_state=False))
            wrapped += 1
    return wrapped
