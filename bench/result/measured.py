"""A point's record: its axes, raw measurements per repeat, and status, as stored.

Point (bench.result.point) is this record with the statistics derived from it
(bench.result.derive, which reads this record and never a Point: the import runs one
way). A new stored field is one line here and its entry in bench.result.schema.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.config.options import point_default


@dataclass(frozen=True)
class Measured:
    """One point's raw values, per repeat where they repeat. An axis defaults to its
    option's one value (bench.config.options.point_default), but the memory format and
    the device count, which a point records resolved."""

    batch_size: int  # GLOBAL batch: samples per step over all devices
    precision: str
    memory_format: str = "contiguous"
    compile: str | None = point_default("compile")
    status: str = "ok"
    error: str | None = None
    devices: int = 1
    warmup_times_s: tuple[tuple[float, ...], ...] = ()  # one row per repeat
    step_times_s: tuple[tuple[float, ...], ...] = ()
    epoch_times_s: tuple[tuple[float, ...], ...] | None = None
    peak_memory_bytes: tuple[int | None, ...] = ()
    memory_kind: str | None = None
    memory_unavailable: str | None = None
    loss_first: tuple[float | None, ...] = ()
    loss_last: tuple[float | None, ...] = ()
    parameters: int | None = None
    flops_per_sample: float | None = None
    # Per repeat: {"window_s", "per_device_j", "sources", "epoch_j"}, or None.
    energy: tuple[dict[str, Any] | None, ...] = ()
    energy_unavailable: str | None = None
    # Per repeat: {device: {"draw_w", "limit_w"}} read before the child's work, or None.
    power_before: tuple[dict[str, Any] | None, ...] = ()
    # Per repeat, with ranks: {"world_size", "nodes", "hosts", "mean_step_s" (per rank),
    # "slowest_rank", "slowest_step_times_s", "bindings"}, or None.
    ranks: tuple[dict[str, Any] | None, ...] = ()
    # Per repeat: was the machine busy over the measured window (trackers/busy.py).
    busy: tuple[dict[str, Any] | None, ...] = ()
    # Why the figure is noisier than asked (--repeats auto that missed its target).
    noise: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    # The child's memory allocator, OpenMP runtime and NUMA binding (bench.run.runtime);
    # None: as bench was launched. `runtime`: what was applied.
    allocator: str | None = point_default("allocator")
    openmp: str | None = point_default("openmp")
    numa: str | None = point_default("numa")
    runtime: dict[str, Any] | None = None
    # The framework's whole-model optimisation (torch: 'ipex', ipex.optimize), or None.
    optimize: str | None = point_default("optimize")
    # Activation checkpointing of the model's blocks (bench.parallel.checkpoint).
    activation_checkpointing: str = point_default("activation_checkpointing")
    # A decoder's levers (bench.workloads._levers): the attention kernel held, the loss
    # whole or in chunks, the vocabulary's multiple (0: unpadded).
    attention: str = point_default("attention")
    cross_entropy: str = point_default("cross_entropy")
    pad_vocab: int = point_default("pad_vocab")
    # The input pipeline's levers, sweep axes: the loader's workers and the batches each
    # prepares ahead (None: PyTorch's own).
    num_workers: int = point_default("num_workers")
    prefetch_factor: int | None = point_default("prefetch_factor")
    # the batch as the host sends it, its page-locked memory (None: the platform's), and
    # where its JPEGs are decoded
    input_dtype: str = point_default("input_dtype")
    pin_memory: str | None = point_default("pin_memory")
    decode: str = point_default("decode")
    # On a real dataset, per repeat: each step's wait for its batch (s), and the
    # accuracy record {"metric", "target", "epochs": [{"epoch", "top1", "train_s",
    # "eval_s", ...}]}.
    input_wait_s: tuple[tuple[float, ...], ...] = ()
    accuracy: tuple[dict[str, Any] | None, ...] = ()
    # After training on a dataset, the same session on one synthetic batch (repeat 1).
    synthetic_step_times_s: tuple[float, ...] = ()
    # Trained to a validation loss (--train-to-loss), per repeat: the plan (target,
    # tokens_per_step, budget, eval cadence and size, recipe), "curve": [{"step", "tokens",
    # "sequences", "loss", "train_s", "eval_s", "train_loss"}], "stopped", "val".
    loss: tuple[dict[str, Any] | None, ...] = ()
