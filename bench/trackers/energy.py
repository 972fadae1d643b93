"""Energy over the measured window (and per epoch): hardware counters, never estimates.

Sources, in order of preference:
  zeus (the ML.ENERGY meter): NVIDIA's cumulative energy counter through NVML, AMD's
    through amdsmi, CPU packages and DRAM through RAPL; GPUs without a counter
    (before Volta) are polled for power and integrated;
  nvidia-ml-py read directly, when zeus is not installed: the same NVML counter, or
    power polling.
Where nothing can be read (no counter, no permission, a TPU, a VM) the energy is
None with the reason. Nothing is ever derived from TDP or utilisation.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from bench.platforms.base import Platform


class EnergySource(Protocol):
    """Cumulative joules per device since some fixed moment."""

    kind: str  # how it is read: nvml_counter, amdsmi_counter, rapl, power_poll, ...

    def read(self) -> dict[str, float]: ...

    def close(self) -> None: ...


class CounterSource:
    """A cumulative counter: one callable per device returning joules."""

    def __init__(self, kind: str, counters: dict[str, Callable[[], float]]) -> None:
        self.kind, self.counters = kind, counters

    def read(self) -> dict[str, float]:
        return {device: counter() for device, counter in self.counters.items()}

    def close(self) -> None:
        pass


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
    if platform.energy_counter == "nvml_counter":  # NVML alone, where zeus is missing
        openers.append(("nvidia-ml-py", _nvml_sources))
    for name, opener in openers:
        try:
            sources = opener(platform)
        except ImportError:
            reasons.append(f"{name} is not installed (pip install 'bench[energy]')")
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
    laps: list[float] = field(default_factory=list)
    _start: dict[str, float] = field(default_factory=dict)
    _kinds: dict[str, str] = field(default_factory=dict)  # device -> its source's kind
    _lap_start: float = 0.0
    _t0: float = 0.0
    _result: dict[str, Any] | None = None

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
            self._lap_start = total

    def __exit__(self, *exc: object) -> None:
        if not self.sources:
            return
        end = self._read()
        self._result = {
            "window_s": self.clock() - self._t0,
            "per_device_j": {d: end[d] - self._start[d] for d in end},
            "sources": dict(self._kinds),
            "epoch_j": list(self.laps) or None,
        }

    def fields(self) -> dict[str, Any]:
        return {
            "energy": self._result,
            "energy_unavailable": None if self._result else self.unavailable_reason,
        }
