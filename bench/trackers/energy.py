"""Energy over the measured window (and per epoch): hardware counters, never estimates.

Sources, in order of preference:
  zeus (the ML.ENERGY meter): NVIDIA's cumulative energy counter through NVML, AMD's
    through amdsmi, CPU packages and DRAM through RAPL; GPUs without a counter
    (before Volta) are polled for power and integrated;
  nvidia-ml-py read directly, when zeus is not installed: the same NVML counter, or
    power polling;
  zeus-apple-silicon on a Mac (IOReport, no sudo): CPU, GPU, DRAM and ANE energy of
    Apple Silicon. On recent macOS these counters publish in batches (an M5 Max about
    every 2 s, an M1 Max only at power-management events), so the source is polled and
    its moves kept: a window the counter did not cover is None with the reason, never
    the 0 J or the doubled figure its two ends would read (counter_coverage).
Where nothing can be read (no counter, no permission, a TPU, a VM) the energy is
None with the reason. Nothing is ever derived from TDP or utilisation.
"""

from __future__ import annotations

import itertools
import math
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from bench.platforms.base import Platform


class EnergySource(Protocol):
    """Cumulative joules per device since some fixed moment."""

    kind: str  # how it is read: nvml_counter, amdsmi_counter, rapl, power_poll, ...

    def read(self) -> dict[str, float]: ...

    def coverage(self, start: float, end: float, steps: int | None) -> Coverage | None:
        """How the counter covered the window [start, end] (this source's clock), for
        counters that publish in batches; None where every read is current."""

    def close(self) -> None: ...


# A batched counter's window is read only when it spans this many of the counter's
# observed update periods: its two ends are each up to one period stale, so the error
# is at most 1/MIN_PERIODS of the window's energy (10%).
MIN_PERIODS = 10


@dataclass(frozen=True)
class Coverage:
    """How a cumulative counter covered a window, read from its polled readings."""

    updates: int  # times the counter moved inside the window
    period_s: float | None  # the median time between its moves, as observed; None: < 2 moves
    window_s: float
    reason: str | None  # why the window's energy cannot be told; None: it can

    def fields(self) -> dict[str, Any]:
        return {"updates": self.updates, "period_s": self.period_s, "window_s": self.window_s}


def counter_coverage(
    readings: Sequence[tuple[float, float]], start: float, end: float, steps: int | None = None
) -> Coverage:
    """Whether the counter read at (time, cumulative value) `readings` (every poll, in
    order, from before the window on) covered [start, end]: it moved on every read
    there (a live counter), or it moved in batches and the window spans MIN_PERIODS of
    its observed period. Else the reason, with what to measure instead (`steps`: the
    window's steps, to say how many would do)."""
    moves = [t1 for (_, v0), (t1, v1) in itertools.pairwise(readings) if v1 != v0]
    inside = [(t0, t1) for (t0, _), (t1, _) in itertools.pairwise(readings) if start < t1 <= end]
    moved = [t for t in moves if start < t <= end]
    gaps = [b - a for a, b in itertools.pairwise(moves)]
    period = statistics.median(gaps) if gaps else None
    window = end - start
    if inside and len(moved) == len(inside):  # live: every read inside the window is current
        return Coverage(len(moved), period, window, None)
    if period is not None and window >= MIN_PERIODS * period:
        return Coverage(len(moved), period, window, None)
    said = f"the counter updated {len(moved)} times in {window:.3g} s"
    if period is None:
        return Coverage(len(moved), None, window, (
            f"{said} and no update period was seen here (such counters may publish only at "
            "power-management events): this window's energy cannot be told"
        ))  # fmt: skip
    need_s = MIN_PERIODS * period
    need = f"at least {need_s:.3g} s"
    if steps:
        need = f"at least {math.ceil(round(need_s / window * steps, 6))} steps ({need_s:.3g} s)"
    return Coverage(len(moved), period, window, (
        f"{said}; it updates about every {period:.2g} s here: measure {need}"
    ))  # fmt: skip


class CounterSource:
    """A cumulative counter: one callable per device returning joules."""

    def __init__(self, kind: str, counters: dict[str, Callable[[], float]]) -> None:
        self.kind, self.counters = kind, counters

    def read(self) -> dict[str, float]:
        return {device: counter() for device, counter in self.counters.items()}

    def coverage(self, start: float, end: float, steps: int | None) -> Coverage | None:
        return None  # every read is current

    def close(self) -> None:
        pass


class BatchedCounterSource(CounterSource):
    """A cumulative counter that may publish in batches (Apple's IOReport): polled on a
    thread every `period_s`, every reading kept with its time, so that how often the
    counter moves is read from the readings themselves (counter_coverage)."""

    def __init__(
        self, kind: str, counters: dict[str, Callable[[], float]], period_s: float = 0.1,
        clock: Callable[[], float] = time.perf_counter, poll: bool = True,
    ) -> None:  # fmt: skip
        super().__init__(kind, counters)
        self.period_s, self.clock = period_s, clock
        self.readings: list[tuple[float, float]] = []  # (time, the devices' sum)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True) if poll else None
        self.read()
        if self._thread is not None:
            self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.period_s):
            self.read()

    def read(self) -> dict[str, float]:
        with self._lock:
            values = super().read()
            self.readings.append((self.clock(), sum(values.values())))
        return values

    def coverage(self, start: float, end: float, steps: int | None) -> Coverage | None:
        with self._lock:
            readings = list(self.readings)
        return counter_coverage(readings, start, end, steps)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1)


class PowerPollSource:
    """Integrates instantaneous power (W) sampled on a thread (trapezoids), for GPUs
    whose driver has no energy counter. The samples are real readings, so the integral
    is a measurement, at the sampling period's resolution."""

    kind = "power_poll"

    def __init__(
        self, watts: dict[str, Callable[[], float]], period_s: float = 0.05,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:  # fmt: skip
        self.watts, self.period_s, self.clock = watts, period_s, clock
        self.joules = dict.fromkeys(watts, 0.0)
        self._last = (clock(), {d: w() for d, w in watts.items()})
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        now, power = self.clock(), {d: w() for d, w in self.watts.items()}
        with self._lock:
            then, before = self._last
            for device, watts in power.items():
                self.joules[device] += (watts + before[device]) / 2 * (now - then)
            self._last = (now, power)

    def _run(self) -> None:
        while not self._stop.wait(self.period_s):
            self._sample()

    def read(self) -> dict[str, float]:
        self._sample()
        with self._lock:
            return dict(self.joules)

    def coverage(self, start: float, end: float, steps: int | None) -> Coverage | None:
        return None  # integrated up to every read

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=1)


def _scaled(read: Callable[[int], float], index: int, scale: float) -> Callable[[], float]:
    """read(index) * scale, as a no-argument reader (mJ -> J, mW -> W)."""
    return lambda: read(index) * scale


def _zeus_sources(platform: Platform) -> list[EnergySource]:
    from zeus.device import get_cpus, get_gpus

    sources: list[EnergySource] = []
    kind = platform.energy_counter  # zeus reads NVIDIA's through NVML, AMD's through amdsmi
    if kind is not None:
        gpus = get_gpus()
        indices = range(len(gpus))
        counted = [i for i in indices if gpus.supportsGetTotalEnergyConsumption(i)]
        polled = [i for i in indices if i not in counted]
        if counted:  # zeus reports millijoules and milliwatts
            counters = {
                f"gpu{i}": _scaled(gpus.getTotalEnergyConsumption, i, 1e-3) for i in counted
            }
            sources.append(CounterSource(kind, counters))
        if polled:
            watts = {f"gpu{i}": _scaled(gpus.getInstantPowerUsage, i, 1e-3) for i in polled}
            sources.append(PowerPollSource(watts))
    try:
        cpus = get_cpus()
        packages = range(len(cpus))
    except Exception:  # no RAPL here, or no permission to read it
        packages = range(0)
    rapl: dict[str, Callable[[], float]] = {}
    for i in packages:
        rapl[f"cpu{i}"] = _scaled(lambda i: cpus.getTotalEnergyConsumption(i).cpu_mj, i, 1e-3)
        if cpus.supportsGetDramEnergyConsumption(i):
            rapl[f"dram{i}"] = _scaled(lambda i: cpus.getTotalEnergyConsumption(i).dram_mj, i, 1e-3)
    if rapl:
        sources.append(CounterSource("rapl", rapl))
    return sources


# zeus-apple-silicon's fields (millijoules) by the device bench names them.
APPLE_FIELDS = {"cpu": "cpu_total_mj", "gpu": "gpu_mj", "dram": "dram_mj", "ane": "ane_mj"}


def apple_counters(metrics: Callable[[], Any]) -> dict[str, Callable[[], float]]:
    """A joules reader per device whose field `metrics()` (zeus-apple-silicon's
    AppleEnergyMetrics) gives on this chip (None where the chip has no such counter)."""
    first = metrics()

    def reader(name: str) -> Callable[[], float]:
        return lambda: getattr(metrics(), name) * 1e-3

    return {
        device: reader(name)
        for device, name in APPLE_FIELDS.items()
        if getattr(first, name, None) is not None
    }


def _apple_sources(platform: Platform) -> list[EnergySource]:
    if platform.energy_counter != "ioreport_counter":
        return []
    from zeus_apple_silicon import AppleEnergyMonitor

    counters = apple_counters(AppleEnergyMonitor().get_cumulative_energy)
    return [BatchedCounterSource("ioreport_counter", counters)] if counters else []


def _nvml_sources(platform: Platform) -> list[EnergySource]:
    if platform.energy_counter != "nvml_counter":
        return []
    import pynvml

    pynvml.nvmlInit()
    handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
    counted: dict[str, Callable[[], float]] = {}
    polled: dict[str, Callable[[], float]] = {}

    def energy_mj(i: int) -> float:
        return pynvml.nvmlDeviceGetTotalEnergyConsumption(handles[i])

    def power_mw(i: int) -> float:
        return pynvml.nvmlDeviceGetPowerUsage(handles[i])

    for i in range(len(handles)):
        try:  # Volta and newer: a cumulative counter
            energy_mj(i)
            counted[f"gpu{i}"] = _scaled(energy_mj, i, 1e-3)
        except pynvml.NVMLError:
            polled[f"gpu{i}"] = _scaled(power_mw, i, 1e-3)
    sources: list[EnergySource] = []
    if counted:
        sources.append(CounterSource("nvml_counter", counted))
    if polled:
        sources.append(PowerPollSource(polled))
    return sources


def open_sources(platform: Platform) -> tuple[list[EnergySource], str | None]:
    """The energy sources for this platform, or none and the reason."""
    if platform.energy_unavailable:
        return [], platform.energy_unavailable
    reasons = []
    openers = [("zeus", _zeus_sources)]  # RAPL on CPUs; NVML or amdsmi on GPUs
    install = {"zeus-apple-silicon": "apple"}
    if platform.energy_counter == "ioreport_counter":  # Apple Silicon: its own package
        openers = [("zeus-apple-silicon", _apple_sources)]
    if platform.energy_counter == "nvml_counter":  # NVML alone, where zeus is missing
        openers.append(("nvidia-ml-py", _nvml_sources))
    for name, opener in openers:
        try:
            sources = opener(platform)
        except ImportError:
            reasons.append(
                f"{name} is not installed (pip install 'bench[{install.get(name, 'energy')}]')"
            )
            continue
        except Exception as error:  # a library present but no device or no permission
            reasons.append(f"{name}: {type(error).__name__}: {error}")
            continue
        if sources:
            return sources, None
        reasons.append(f"{name} found no energy counter for {platform.name}")
    return [], "; ".join(reasons)


@dataclass
class EnergyTracker:
    """Context manager around the measured window; lap() closes an epoch.

    The device is synchronised at every edge, so the window holds exactly the work
    queued inside it.
    """

    sources: list[EnergySource]
    synchronize: Callable[[], None]
    unavailable_reason: str | None = None
    clock: Callable[[], float] = time.perf_counter
    steps: int | None = None  # the window's steps, where known: said when it is too short
    laps: list[float] = field(default_factory=list)
    lap_ends: list[float] = field(default_factory=list)
    _start: dict[str, float] = field(default_factory=dict)
    _kinds: dict[str, str] = field(default_factory=dict)  # device -> its source's kind
    _lap_start: float = 0.0
    _t0: float = 0.0
    _result: dict[str, Any] | None = None
    counter: dict[str, Any] = field(default_factory=dict)

    def _read(self) -> dict[str, float]:
        self.synchronize()
        joules: dict[str, float] = {}
        for source in self.sources:
            reading = source.read()
            joules.update(reading)
            self._kinds.update(dict.fromkeys(reading, source.kind))
        return joules

    def _total(self, now: dict[str, float]) -> float:
        return sum(now[d] - self._start[d] for d in now)

    def __enter__(self) -> EnergyTracker:
        if self.sources:
            self._start = self._read()
            self._t0 = self.clock()
        return self

    def lap(self) -> None:
        if self.sources:
            total = self._total(self._read())
            self.laps.append(total - self._lap_start)
            self.lap_ends.append(self.clock())
            self._lap_start = total

    def __exit__(self, *exc: object) -> None:
        if not self.sources:
            return
        end = self._read()
        stop = self.clock()
        self._result = {
            "window_s": stop - self._t0,
            "per_device_j": {d: end[d] - self._start[d] for d in end},
            "sources": dict(self._kinds),
            "epoch_j": list(self.laps) or None,
        }
        self._check_coverage(stop)

    def _check_coverage(self, stop: float) -> None:
        """A batched counter that did not cover the window (or an epoch): its energy is
        None with the reason, never what its two stale ends read."""
        edges = [self._t0, *self.lap_ends]
        for source in self.sources:
            whole = source.coverage(self._t0, stop, self.steps)
            if whole is None:
                continue
            self.counter = {**whole.fields(), "kind": source.kind}
            if whole.reason is not None:
                self._result, self.unavailable_reason = None, whole.reason
                return
            laps = [source.coverage(a, b, None) for a, b in itertools.pairwise(edges)]
            short = next((c.reason for c in laps if c is not None and c.reason), None)
            if short is not None and self._result is not None:
                self._result["epoch_j"] = None
                self.counter["epoch_unavailable"] = short

    def fields(self) -> dict[str, Any]:
        return {
            "energy": self._result,
            "energy_unavailable": None if self._result else self.unavailable_reason,
        }

    def details(self) -> dict[str, Any]:
        """How a batched counter covered the window (its observed update period), for the
        point's details; {} for counters read live."""
        return {"energy_counter": self.counter} if self.counter else {}
