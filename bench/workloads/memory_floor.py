"""Does a model's training state fit at all? A floor from the parameter count alone.

Weights, gradients and optimizer state live on the devices for the whole step, whatever
the batch: a workload that declares their size (WorkloadSpec.model_state, a formula of
its parameter count) is checked before any child starts. Sharded over ranks (FSDP2)
each rank holds its share. Activations, workspace and the gathered blocks come on top,
so passing this check does not say the model fits; failing it says it cannot.

    bench llama3-8b --device cuda          # on one 80 GB GPU: one line, exit 2
    bench llama3-8b --find-max-batch       # the answer: no batch fits ('*'), and why
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bench.config import discovery
from bench.util.errors import UsageError
from bench.util.units import format_bytes

if TYPE_CHECKING:
    from bench.config.run_config import RunConfig


def shortfall(config: RunConfig, ranks_here: int | None) -> str | None:
    """Why the model's state cannot fit on `ranks_here` ranks per machine (None: the
    framework's own use of the devices, one process), or None when it may."""
    spec = discovery.workload(config.workload)
    if spec.model_state is None:
        return None
    local = ranks_here or 1
    world = local * config.nnodes
    available = discovery.platform(config.device).memory_per_rank(local)
    if config.memory_limit_bytes is not None:
        available = min(available or config.memory_limit_bytes, config.memory_limit_bytes)
    if available is None:  # not known before a device is opened (a TPU): the child finds out
        return None
    state, what = spec.model_state()
    per_rank = -(-state // world)
    if per_rank <= available:
        return None
    where = (
        f"{world} {config.device} ranks with {format_bytes(available)} each"
        if world > 1
        else f"one {config.device} device with {format_bytes(available)}"
    )
    return (
        f"{config.workload} does not fit on {where}: its {what} "
        f"alone need {format_bytes(per_rank)} per rank before any activation; shard it over "
        "more devices (--devices) or machines (--nnodes)"
    )


def check(config: RunConfig) -> None:
    """Before a run: one line and exit 2 for a point whose model state cannot fit.
    A search (of the largest batch or sequence length) asks that question itself and
    answers it: nothing fits."""
    if config.searches:
        return
    for ranks in config.devices:
        reason = shortfall(config, ranks)
        if reason is not None:
            raise UsageError(reason)
