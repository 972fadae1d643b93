"""The Xeon CPU training study's ladder, climbed by bench on the machine it runs on.

The study started ResNet-50 at batch 128 in fp32 (system allocator, GNU OpenMP), swept
the batch size, then added one optimisation at a time on top of the best so far: bf16,
channels_last, torch.compile, TCMalloc with Intel OpenMP, then Intel Extension for
PyTorch (ipex.optimize, where it is installed: bench:xeon-ipex). Here every rung is a
point like any other (a fresh child per repeat); a change is kept only when it is faster
beyond noise: the lower end of the 95% interval of its ratio to the best so far
(stats.ratio_interval) is above 1, or, with a single run on either side, when its mean
is higher (said to be untested). After the batch sweep, on data a loader feeds (--data
loader or a dataset of images), the input pipeline: the loader's workers (1, 2, 4, ...
up to the CPUs, at most 16), a prefetch depth of 4, the batch sent as uint8, pinned
memory switched from the platform's default (skipped in one line where the platform has
no copy to a GPU to pin for) and the JPEGs decoded on the device (skipped in one line
where the platform has no decoder bench drives); all skipped in one line on synthetic
data, where no loader feeds the step. The rungs after those are the platform's
(Platform.ladder_rungs): on a CPU the study's; on a CUDA GPU TF32, bf16, channels_last,
the compiler, its CUDA graphs (inductor:reduce-overhead), the fused optimizer, and a
decoder's flash attention, chunked loss and vocabulary padded to 64, each a lever a user
can also set by hand; then, on a GPU, the best batch doubled while that is faster
(Platform.ladder_batch_doublings). A change that does not apply here (no bf16 on this
device, no compiler in this framework, a compile mode or optimisation the framework
lacks, a library not installed) is skipped with its reason in one line, before any
child; one the device itself cannot run (TF32 on a V100) fails in its child, and its
rung says why. A rung that bench tune's cost model (bench.run.cost) predicts will not fit in
memory, from the peaks of the batches measured before it (a 2-core VM of 24 GiB: ResNet-50
at batch 256 in fp32 takes 21.7 GiB) or a smaller batch that ran out, is skipped with that
reason instead of swapping the machine for minutes. Every rung, kept or not, is in the
result's `ladder`, in order, and its points are the result's points.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from typing import Any

from bench import registry
from bench.config.run_config import PointConfig, RunConfig
from bench.result import Point
from bench.run import cost, runtime
from bench.run.runner import Runner
from bench.stats.estimate import ratio_interval
from bench.util.errors import UsageError

DEFAULT_BATCHES = (32, 64, 128, 256)
START_BATCH = 128  # the study's baseline: batch 128, fp32
# The input pipeline's rungs (on data a loader feeds): the loader's workers, powers of two
# up to the CPUs bench may use and at most this many (each rung a fresh child), then each
# worker's queue deepened from PyTorch's 2 batches to PREFETCH.
MOST_WORKERS = 16
PREFETCH = 4
# The PointConfig fields of the input pipeline's levers (the options declared feeds=True
# that the ladder sets).
FEED_LEVERS = frozenset({"num_workers", "prefetch_factor", "input_dtype", "pin_memory", "decode"})


def loader_workers() -> tuple[int, ...]:
    """The worker counts the ladder climbs and tune tries on data a loader feeds: 1, 2,
    4, ... up to the CPUs bench may use here (at most MOST_WORKERS)."""
    affinity = getattr(os, "sched_getaffinity", None)
    cpus = min((len(affinity(0)) if affinity else os.cpu_count()) or 1, MOST_WORKERS)
    return tuple(2**k for k in range(cpus.bit_length()) if 2**k <= cpus)


def feed_rungs(point: PointConfig) -> tuple[tuple[str, dict[str, Any]], ...]:
    """The input pipeline's rungs, each on top of the best so far: the workers, the
    prefetch depth (which needs workers: skipped where none was kept), the batch sent as
    uint8, pinned memory switched from the platform's default, and the JPEGs decoded on
    the device (each skipped in one line where it does not apply: uint8 and the
    device's decode on a dataset of images, pinned memory where the platform copies to a
    GPU, the decode where the platform has a decoder). Where no loader feeds the point,
    one rung, skipped in one line."""
    if not fed_by_a_loader(point):
        return (("input pipeline", {"num_workers": 1}),)
    pins = "off" if registry.platform(point.device).torch_pins_host_memory else "on"
    return (
        *((f"loader workers {n}", {"num_workers": n}) for n in loader_workers()),
        (f"prefetch {PREFETCH}", {"prefetch_factor": PREFETCH}),
        ("input uint8", {"input_dtype": "uint8"}),
        (f"pin memory {pins}", {"pin_memory": pins}),
        ("decode on the device", {"decode": "device"}),
    )


def fed_by_a_loader(point: PointConfig) -> bool:
    """Whether a loader feeds this point (--data loader or a dataset of images)."""
    return point.data == "loader" or point.dataset is not None


def steps(framework: str, device: str = "cpu") -> tuple[tuple[str, dict[str, Any]], ...]:
    """The changes, in the order the platform climbs them (Platform.ladder_rungs: on a
    CPU the study's), each tried on top of the best so far."""
    compiler = registry.framework(framework).default_compiler
    return registry.platform(device).ladder_rungs(compiler)


def start_batch(config: RunConfig) -> int:
    return START_BATCH if START_BATCH in config.batch_sizes else config.batch_sizes[0]


def not_applicable(point: PointConfig, change: dict[str, Any]) -> str | None:
    """Why this change cannot be tried here, or None."""
    if FEED_LEVERS & set(change):
        if not fed_by_a_loader(point):
            return (
                f"--data {point.data}: no loader to feed (the input pipeline's levers apply "
                "with --data loader or a dataset of images)"
            )
        if "prefetch_factor" in change and not point.num_workers:
            return "--prefetch-factor: no loader workers kept to prepare batches ahead"
    if change.get("compile", "") is None:
        return f"{point.framework} has no compiler to switch on"
    framework = registry.framework(point.framework)
    if change.get("optimize") and change["optimize"] not in framework.optimizations:
        return (
            f"--optimize {change['optimize']}: not in {point.framework}; it has "
            f"{', '.join(framework.optimizations) or 'none'}"
        )
    precision = change.get("precision")
    platform = registry.platform(point.device)
    if precision and precision not in platform.precisions:
        return platform.precision_unsupported(precision) or f"no {precision} on {point.device}"
    try:
        candidate = dataclasses.replace(point, **change)
        runtime.check((change.get("allocator"),), (change.get("openmp"),))
        framework.check_compile(candidate.compile)
        framework.check_platform(registry.platform(point.device), (candidate.compile,),
                                 (candidate.optimize,))  # fmt: skip
        framework.preflight([candidate])
    except UsageError as error:
        return str(error)
    if change.get("memory_format") == "channels_last" and point.spec.takes_seq_len:
        return f"{point.workload} takes tokens: no image tensor to lay out channels last"
    multiple, vocab = change.get("pad_vocab"), point.spec.num_classes
    if multiple and vocab % multiple == 0:
        return f"{point.workload}'s vocabulary ({vocab:,}) is a multiple of {multiple} already"
    return None


def verdict(candidate: Point, best: Point) -> tuple[bool, str]:
    """Keep the change? And the line that says why."""
    if candidate.status != "ok" or candidate.throughput is None or best.throughput is None:
        return False, f"{candidate.status}: {candidate.error_line}"
    ratio = candidate.throughput.value / best.throughput.value
    interval = ratio_interval(candidate.repeat_throughputs(), best.repeat_throughputs())
    if interval is None:
        kept = ratio > 1
        return kept, f"{ratio:.2f}x the best so far (one run on a side: untested)"
    kept = interval[0] > 1
    found = f"{ratio:.2f}x [{interval[0]:.2f}–{interval[1]:.2f}] the best so far"
    if kept:
        return True, found
    return False, found + (": slower" if interval[1] < 1 else ": not faster beyond noise")


class LadderRunner(Runner):
    """A Runner whose points are the ladder's rungs, decided as it climbs. Resumable as
    any run: a rung measured before (an interrupted file) is taken, not measured again."""

    bench_command = "ladder"

    def _sweep(self) -> None:
        self.result.ladder = []
        # What tune's search predicts memory with: each measured rung's peak (the child's
        # time is not used: the ladder runs every rung whole).
        self.costs = cost.CostModel(cost.memory_limit(self.config))
        for _ in self._climb():
            self._save()

    def _take(self, point: PointConfig) -> Point:
        for measured in self.result.points:
            if self._same(measured, point):
                break
        else:
            measured = self._measure(point)
            self.result.points.append(measured)
        self.costs.learn(point, measured, child_s=0.0)
        return measured

    def _try(self, name: str, candidate: PointConfig) -> Point | None:
        """The rung's measurement, or None where memory rules it out (said in its rung)."""
        why = self.costs.past_memory(candidate)
        if why is not None:
            self._rung(name, candidate, None, f"skipped: {why}")
            return None
        return self._take(candidate)

    def _rung(self, name: str, point: PointConfig, kept: bool | None, why: str) -> None:
        self.result.ladder.append(
            {"rung": name, "point": point.to_dict(), "kept": kept, "why": why}
        )

    def _climb(self) -> Iterator[None]:
        config = self.config
        base = next(p for p in config.points() if p.batch_size == start_batch(config))
        # The study's start: fp32, and where the platform climbs the host's runtime (the
        # CPU's TCMalloc + Intel OpenMP rung) the system allocator and PyTorch's own (GNU)
        # OpenMP, also where a launcher makes others the default (bench:xeon's), so that
        # the rung measures them. A GPU's climb leaves the host's runtime as launched.
        base = dataclasses.replace(base, precision="fp32")
        if any("allocator" in change for _, change in steps(config.framework, config.device)):
            base = dataclasses.replace(base, allocator="system", openmp="gnu")
        best_config, best = base, self._take(base)
        start = "the study's start" if base.batch_size == START_BATCH else "the start"
        self._rung("baseline", base, True, f"{start}: batch {base.batch_size}, fp32")
        yield
        if best.status != "ok":
            return
        for batch in config.batch_sizes:  # the batch sweep, in fp32
            if batch == base.batch_size:
                continue
            candidate = dataclasses.replace(base, batch_size=batch)
            if (measured := self._try(f"batch {batch}", candidate)) is None:
                yield
                continue
            kept, why = verdict(measured, best)
            if kept:
                best_config, best = candidate, measured
            self._rung(f"batch {batch}", candidate, kept, why)
            yield
        for name, change in (*feed_rungs(base), *steps(config.framework, config.device)):
            reason = not_applicable(best_config, change)
            if reason:
                self._rung(name, best_config, None, f"skipped: {reason}")
                yield
                continue
            candidate = dataclasses.replace(best_config, **change)
            if (measured := self._try(name, candidate)) is None:
                yield
                continue
            kept, why = verdict(measured, best)
            if kept:
                best_config, best = candidate, measured
            self._rung(name, candidate, kept, why)
            yield
        yield from self._double_batch(best_config, best)

    def _double_batch(self, best_config: PointConfig, best: Point) -> Iterator[None]:
        """The batch again, on top of the best: a lower precision and a compiler change
        what a batch holds, so where the platform says so (ladder_batch_doublings) the
        best batch is doubled while each doubling trains, fits the search's limit and is
        faster beyond noise."""
        for _ in range(registry.platform(best_config.device).ladder_batch_doublings):
            batch = best_config.batch_size * 2
            if batch > self.config.max_batch_limit:
                return
            name = f"batch {batch} (doubled on top)"
            candidate = dataclasses.replace(best_config, batch_size=batch)
            if (measured := self._try(name, candidate)) is None:
                yield
                return
            kept, why = verdict(measured, best)
            self._rung(name, candidate, kept, why)
            yield
            if not kept:
                return
            best_config, best = candidate, measured
