"""The input pipeline alone, without a model (`bench loader`): how fast a loader hands
out batches, on how many cores, and how many such cores a device's rate would need.

A loader is timed from the host clock around each `next`: the first batches (worker
processes starting, files first read) are warm-up, kept apart; the rest are the
measured batches, every one kept. The CPU it used over the measured batches is read
at their edges: bench's process (every thread) and each of the loader's worker
processes (Linux's /proc/PID/stat, in clock ticks of 10 ms); cores = those CPU seconds
over the measured wall seconds, and images/s per core = images per CPU second. On a
shared machine the wall clock (and so images/s) suffers from the others' work; the CPU
seconds, and so the rate per core, far less.

Nothing here imports a framework: the caller hands in the loader (bench.commands.loader
builds PyTorch's, as a run on real data does) and the clock.
"""

from __future__ import annotations

import math
import os
import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.stats.estimate import Summary

LOADER_KIND = "bench-loader"  # the `kind` of the JSON `bench loader` writes


def cpu_seconds(pids: Iterable[int] = ()) -> float | None:
    """CPU seconds (user + system) of this process, every thread, and of the processes
    `pids` (a loader's workers) so far; None where a worker's cannot be read (no /proc)."""
    total = time.process_time()
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return None
        fields = stat[stat.rindex(")") + 2 :].split()  # after the command's name
        total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total


@dataclass(frozen=True)
class FeedRow:
    """One loader measured: its worker count, batch size, and raw times (seconds)."""

    workers: int
    batch_size: int
    warmup_times_s: tuple[float, ...]
    batch_times_s: tuple[float, ...]
    cpu_s: float | None  # CPU seconds over the measured batches (bench and the workers)

    @property
    def images_per_s(self) -> float:
        return self.batch_size * len(self.batch_times_s) / math.fsum(self.batch_times_s)

    @property
    def cores(self) -> float | None:
        """Cores kept busy on average over the measured batches (at least a hundredth:
        a window shorter than a clock tick may read none)."""
        if self.cpu_s is None:
            return None
        return max(0.01, self.cpu_s / math.fsum(self.batch_times_s))

    @property
    def per_core(self) -> float | None:
        """Images per CPU second: images/s per core kept busy."""
        cores = self.cores
        return self.images_per_s / cores if cores else None

    @property
    def batch_time(self) -> Summary:
        return Summary.of(self.batch_times_s, "s")

    def to_json(self) -> dict[str, Any]:
        return {
            "workers": self.workers,
            "batch_size": self.batch_size,
            "warmup_times_s": list(self.warmup_times_s),
            "batch_times_s": list(self.batch_times_s),
            "cpu_s": self.cpu_s,
            "images_per_s": self.images_per_s,
            "cores": self.cores,
            "images_per_s_per_core": self.per_core,
            "batch_time_median_s": statistics.median(self.batch_times_s),
            "units": {"times": "s", "images_per_s": "images/s", "cores": "CPU cores"},
        }


def measure(
    start: Callable[[], Iterable[Any]],
    *,
    workers: int,
    batch_size: int,
    warmup: int,
    steps: int,
    clock: Callable[[], float] = time.perf_counter,
    cpu: Callable[[Any], float | None] = lambda batches: cpu_seconds(),
    stop: Callable[[Any], None] = lambda batches: None,
) -> FeedRow:
    """Time `warmup` then `steps` batches of the loader `start()` makes (the first
    warm-up batch includes the loader's start, its workers'); `cpu(batches)` is read at
    the measured batches' edges (bench's CPU seconds and the loader's workers'), and
    `stop(batches)` ends the loader."""
    batches = iter(start())
    times: list[float] = []
    used: float | None = None
    last = clock()
    for i in range(warmup + steps):
        if i == warmup:
            used = cpu(batches)
            last = clock()
        next(batches)
        now = clock()
        times.append(now - last)
        last = now
    after = cpu(batches)
    stop(batches)
    spent = after - used if after is not None and used is not None else None
    return FeedRow(workers, batch_size, tuple(times[:warmup]), tuple(times[warmup:]), spent)


@dataclass(frozen=True)
class DeviceRate:
    """What a device trains at on synthetic data, in images/s, and whose rate it is."""

    images_per_s: float
    source: str  # 'given' or the result file's path
    name: str  # 'the device', or the device of the result ('NVIDIA H100 80GB HBM3')


def fastest(rows: list[FeedRow]) -> FeedRow:
    return max(rows, key=lambda row: row.images_per_s)


def cores_needed(device: DeviceRate, row: FeedRow) -> float | None:
    return device.images_per_s / row.per_core if row.per_core else None


def feeding_sentence(device: DeviceRate, row: FeedRow) -> str:
    """What feeds the device: 'an H100's 5,700 images/s needs about 38 of these cores at
    150 images/s each (the fastest loader here: 2 workers)', or that this loader does."""
    need = cores_needed(device, row)
    said = f"{device.name}'s {device.images_per_s:,.0f} images/s"
    if need is None or row.per_core is None or row.cores is None:
        return f"{said}: the loader's CPU time could not be read here, so no count of cores"
    at = (f"at {row.per_core:,.0f} images/s each (the fastest loader here: "
          f"{row.workers} worker{'s' if row.workers != 1 else ''})")  # fmt: skip
    if row.images_per_s >= device.images_per_s:
        return (f"{said} is fed: this loader made {row.images_per_s:,.0f} images/s on "
                f"{row.cores:.1f} cores, {at}")  # fmt: skip
    return f"{said} needs about {math.ceil(need):,} of these cores {at}"
