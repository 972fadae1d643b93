"""What a probe will cost before it runs, in seconds and in memory, from what was measured.

A search (bench tune) sizes its probes in seconds, not in steps. One child's time is its
start-up (process, framework, model, the compiler's first pass) plus its steps; a step's
time is its work, the batch times the model's FLOPs per sample, over the rate a
configuration of the same kind reached:

- the same kind (every axis but the batch) measured at another batch: its seconds per
  FLOP at the nearest batch (throughput moves slowly with the batch);
- a compiled kind not measured yet: the same without the compiler, as above (a compile
  seldom slows a step; its price is the cold compile below, so it is probed after);
- else the median seconds per FLOP of everything measured (one short timing of the
  cheapest configuration is enough to start);
- a start-up from the fastest child of the same compiler and optimisation; else, before
  any child of that compiler ran, from the fastest child without one plus a cold compile
  (cold_compile_s: a prior from the model's FLOPs per sample and the machine's cores),
  so that a compiled probe is priced at what its first child costs, not at a plain one's.

Where the FLOPs per sample are not known (not counted yet, the counter failed) the work is
counted in samples: within one workload the two rank configurations alike.

Memory: a configuration is left out, with its reason, when the same precision, format,
compiler and optimisation ran out of memory at a smaller or equal batch, or when the line
through its two largest measured batches' peaks goes past the memory the device has
(HEADROOM of it: a machine's RAM on the CPU, the GPU's own memory, or --memory-limit).
Time: a kind whose probe ran past its time cap at one batch is left out at larger ones.
"""

from __future__ import annotations

import dataclasses
import math
import os
import statistics
from dataclasses import dataclass
from typing import Any

from bench import registry
from bench.config.run_config import PointConfig, RunConfig
from bench.result import Point
from bench.util.units import format_bytes

HEADROOM = 0.9  # of the device's memory a prediction may use before it is left out

# A cold compile's seconds (torch.compile with an empty TORCHINDUCTOR_CACHE_DIR: Dynamo's
# trace, AOTAutograd, Inductor's lowering and the build of its kernels), as FLOPs per
# sample (the model's size, as the parent knows it) -> seconds, measured on 2 cores of an
# "Intel(R) Xeon(R) Processor" (lscpu), PyTorch 2.14.1, 2026-11-27: `bench WORKLOAD
# --device cpu --compile inductor --steps 2 --warmup-steps 1 --batch-size 8 --repeats 1`
# with a fresh cache: its first warm-up step less a step (tiny 27.3 s; resnet50 285 s,
# high: other processes kept 1.74 of the 2 CPUs busy; on the quiet 2-core Zen 4 a
# compiled ResNet-50 probe ran past 221 s). Between and beyond the two, a power law
# through them: a graph grows with the model, its compile much more slowly.
COLD_COMPILE = ((2.52e5, 27.0), (2.43e10, 285.0))  # tiny, resnet50
COLD_COMPILE_CORES = 2  # the cores those were measured on
# Seconds x (COLD_COMPILE_CORES / cores) ** COLD_CORE_EXPONENT: tiny's cold compile took
# 81.7 s on 1 of those cores (taskset), 3x its 2-core figure (a busy machine: steeper than
# the kernels' parallel build alone); taken as 1 (inverse to the cores), and no further
# than COLD_MAX_CORES, past which Dynamo's serial trace is assumed to dominate (not
# measured: the first compiled child's own start-up corrects it).
COLD_CORE_EXPONENT = 1.0
COLD_MAX_CORES = 8


def kind(point: PointConfig) -> tuple[Any, ...]:
    """Every axis that changes a step's speed, but the batch."""
    return (point.workload, point.framework, point.device, point.seq_len, point.precision,
            point.memory_format, point.compile, point.optimize, point.activation_checkpointing,
            point.allocator, point.openmp, point.numa, point.devices, point.nnodes)  # fmt: skip


def memory_kind(point: PointConfig) -> tuple[Any, ...]:
    """Every axis that changes a step's memory, but the batch."""
    return (point.workload, point.framework, point.device, point.seq_len, point.precision,
            point.memory_format, point.compile, point.optimize, point.activation_checkpointing,
            point.devices, point.nnodes)  # fmt: skip


def start_kind(point: PointConfig) -> tuple[Any, ...]:
    """What a child's start-up depends on most: the workload, compiler and optimisation."""
    return (point.workload, point.framework, point.device, point.compile, point.optimize)


def memory_limit(config: RunConfig) -> int | None:
    """Bytes one rank may hold: --memory-limit, else what the platform knows (the
    machine's RAM over its ranks on the CPU, the largest GPU's memory), else None."""
    ranks = config.devices[0] or 1
    known = registry.platform(config.device).memory_per_rank(ranks)
    given = config.memory_limit_bytes
    return min(known, given) if known and given else (given or known)


def memory_line(peaks: dict[int, int]) -> tuple[int, int, float] | None:
    """(low, high, bytes per sample): the line through measured peaks (batch: bytes) that
    predicts a larger batch's, through the two largest batches, or where their peaks do
    not rise (cuDNN picked a smaller workspace at the larger: an H200's ResNet-50 held
    14.4 GiB at batch 112 and 13.6 at 136), through the smallest and the largest; None
    without two batches or a rising line."""
    batches = sorted(peaks)
    if len(batches) < 2:
        return None
    for low, high in ((batches[-2], batches[-1]), (batches[0], batches[-1])):
        slope = (peaks[high] - peaks[low]) / (high - low)
        if slope > 0:
            return low, high, slope
    return None


def cold_compile_s(flops_per_sample: float | None, cores: int) -> float:
    """The seconds a first child of a compiler adds to its start-up, before any child of
    that compiler ran here: COLD_COMPILE's power law at the model's FLOPs per sample
    (the smaller model's figure where they are not known), scaled to this machine's
    cores. A prior only: the first compiled child's own start-up replaces it."""
    (f0, s0), (f1, s1) = COLD_COMPILE
    flops = max(flops_per_sample or f0, f0)
    seconds = s0 * (flops / f0) ** (math.log(s1 / s0) / math.log(f1 / f0))
    cores = min(max(cores, 1), COLD_MAX_CORES)
    return seconds * (COLD_COMPILE_CORES / cores) ** COLD_CORE_EXPONENT


def usable_cores() -> int:
    """The CPUs this process may run on: a compile's workers share them."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def format_seconds(seconds: float) -> str:
    """'45 s', '6.5 min', '2.1 h': a budget as people say it."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.1f} min".replace(".0 min", " min")
    return f"{seconds / 3600:.1f} h"


@dataclass(frozen=True)
class Seen:
    """One finished probe: its configuration, one child's wall time (start-up included),
    the steps each child ran (warm-up included), its mean measured step."""

    point: PointConfig
    child_s: float
    steps: int
    step_s: float
    flops_per_sample: float | None

    @property
    def start_s(self) -> float:
        return max(self.child_s - self.steps * self.step_s, 0.0)

    def s_per_work(self) -> float:
        return self.step_s / (self.point.batch_size * (self.flops_per_sample or 1.0))


class CostModel:
    """Predicts a child's seconds and a configuration's memory from the probes so far."""

    def __init__(self, limit_bytes: int | None = None, cores: int | None = None) -> None:
        self.limit_bytes = limit_bytes
        self.cores = cores or usable_cores()
        self.seen: list[Seen] = []
        self._peaks: dict[tuple[Any, ...], dict[int, int]] = {}
        self._oom: dict[tuple[Any, ...], int] = {}  # memory kind -> smallest batch that ran out
        self._over: dict[tuple[Any, ...], tuple[int, float]] = {}  # kind -> (batch, its cap)
        self._flops: dict[tuple[Any, ...], float] = {}

    def learn(self, point: PointConfig, measured: Point, child_s: float) -> None:
        """A finished probe of `point` (its steps and warm-up as run): `child_s` is one
        child's wall time."""
        if measured.status == "oom":
            key = memory_kind(point)
            self._oom[key] = min(self._oom.get(key, point.batch_size), point.batch_size)
            return
        if measured.status != "ok" or measured.step_time is None:
            return
        if measured.flops_per_sample:
            self._flops[(point.workload, point.seq_len)] = measured.flops_per_sample
        steps = point.steps + point.warmup_steps
        step_s = measured.step_time.mean
        self.seen.append(Seen(point, child_s, steps, step_s, measured.flops_per_sample))
        peaks = [p for p in measured.peak_memory_bytes if p]
        if peaks:
            self._peaks.setdefault(memory_kind(point), {})[point.batch_size] = max(peaks)

    def ran_past(self, point: PointConfig, cap_s: float) -> None:
        """`point`'s probe was stopped at its time cap."""
        key = kind(point)
        if key not in self._over or point.batch_size < self._over[key][0]:
            self._over[key] = (point.batch_size, cap_s)

    def _flops_per_sample(self, point: PointConfig) -> float | None:
        flops = self._flops.get((point.workload, point.seq_len))
        if flops is None and (formula := point.spec.flops(point.seq_len)) is not None:
            flops = float(formula["per_sample"])
        return flops

    def _work(self, point: PointConfig) -> float:
        return point.batch_size * (self._flops_per_sample(point) or 1.0)

    def step_s(self, point: PointConfig) -> float | None:
        """Seconds of one step of `point`, or None before any probe of its workload."""
        plain = dataclasses.replace(point, compile=None)
        for twin in (point, plain) if point.compile else (point,):
            same = [s for s in self.seen if kind(s.point) == kind(twin)]
            if same:
                nearest = min(
                    same, key=lambda s: abs(math.log(s.point.batch_size / point.batch_size))
                )
                return nearest.s_per_work() * self._work(point)
        alike = [s.s_per_work() for s in self.seen if s.point.workload == point.workload]
        return statistics.median(alike) * self._work(point) if alike else None

    def start_s(self, point: PointConfig) -> tuple[float, bool] | None:
        """A child's start-up, and whether a child of its compiler was seen; None: none seen.
        Not seen: the fastest start-up without a compiler (or, where only compiled children
        ran, theirs less the prior of their compile), plus the prior of its own."""
        same = [s.start_s for s in self.seen if start_kind(s.point) == start_kind(point)]
        if same:
            return min(same), True
        if not self.seen:
            return None
        plain = [s.start_s for s in self.seen if s.point.compile is None]
        bare = min(plain) if plain else min(max(s.start_s - self.compile_s(s.point), 0.0)
                                            for s in self.seen)  # fmt: skip
        return bare + self.compile_s(point), False

    def compile_s(self, point: PointConfig) -> float:
        """The prior of `point`'s cold compile (cold_compile_s); 0 without a compiler."""
        if point.compile is None:
            return 0.0
        return cold_compile_s(self._flops_per_sample(point), self.cores)

    def child_s(self, point: PointConfig) -> float | None:
        """One child of `point`, its steps and warm-up as given; None: nothing to go by."""
        step, start = self.step_s(point), self.start_s(point)
        if step is None or start is None:
            return None
        return start[0] + (point.steps + point.warmup_steps) * step

    def steps_that_fit(
        self, points: list[PointConfig], seconds: float, warmup: int, repeats: int, most: int
    ) -> int | None:
        """The most measured steps (at most `most`) that one probe of each of `points`,
        `repeats` children each with `warmup` warm-up steps, fit in `seconds` altogether;
        `most` where the cost cannot be told yet; None where not even one step fits."""
        steps = [s for p in points if (s := self.step_s(p)) is not None]
        starts = [t[0] for p in points if (t := self.start_s(p)) is not None]
        if not points or len(steps) < len(points) or len(starts) < len(points):
            return most
        per_step = sum(steps)
        fixed = sum(starts) + warmup * per_step
        fits = math.floor((seconds / repeats - fixed) / per_step) if per_step > 0 else most
        return min(fits, most) if fits >= 1 else None

    def left_out(self, point: PointConfig) -> str | None:
        """Why `point` is predicted not to fit in memory, or to run past its time cap;
        None: it may run."""
        memory = self.past_memory(point)
        if memory is not None:
            return memory
        over = self._over.get(kind(point))
        if over is not None and point.batch_size >= over[0]:
            return f"time: batch {over[0]} of the same kind ran past its cap of {over[1]:.0f} s"
        return None

    def past_memory(self, point: PointConfig) -> str | None:
        """Why `point` is predicted not to fit in memory; None: it may fit."""
        mem = memory_kind(point)
        if mem in self._oom and point.batch_size >= self._oom[mem]:
            return (f"memory: batch {self._oom[mem]} of the same precision, format and "
                    f"compiler ran out of memory")  # fmt: skip
        predicted = self.peak_bytes(point)
        if (
            predicted is not None
            and self.limit_bytes
            and predicted[0] > HEADROOM * self.limit_bytes
        ):
            return (
                f"memory: about {format_bytes(predicted[0])} predicted ({predicted[1]}), above "
                f"{HEADROOM:.0%} of the {format_bytes(self.limit_bytes)} this device has"
            )
        return None

    def peak_bytes(self, point: PointConfig) -> tuple[int, str] | None:
        """The peak memory of `point` on the line through its kind's two largest measured
        batches below it, and how it was found; None with fewer than two."""
        peaks = self._peaks.get(memory_kind(point), {})
        line = memory_line({b: p for b, p in peaks.items() if b < point.batch_size})
        if line is None:
            return None
        low, high, slope = line
        predicted = int(peaks[high] + slope * (point.batch_size - high))
        how = (f"batch {low}: {format_bytes(peaks[low])}, batch {high}: "
               f"{format_bytes(peaks[high])}")  # fmt: skip
        return predicted, how
