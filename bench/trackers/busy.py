"""Was the machine busy while it was measured? Facts around the measured window.

A benchmark on a machine where something else runs (a build, a second job, a noisy
neighbour on a VM, a GPU held back by heat or its power cap) gives a lower number that
looks like the hardware's. This tracker records, per repeat:

  load_average      the 1-minute load at the start of the window (os.getloadavg)
  others_cpus       CPUs kept busy by processes outside this benchmark, on average over
                    the window: the system's busy time (/proc/stat) less the CPU time
                    of bench's own process tree (the parent, its children, ranks and
                    DataLoader workers, with the children they reaped: /proc/<pid>/stat)
  steal_cpus        CPUs the hypervisor took away (a VM's 'steal' time), on average
  cpu_mhz, governors  CPU frequency (mean of the CPUs, start and end) and cpufreq
                    governors, where the kernel shows them
  throttle          per GPU, why its clocks were held back at the end of the window
                    (NVML's clock event reasons: power cap, thermal, ...)

Each is None where it cannot be read (not Linux, no cpufreq in a VM, no NVML), never a
guess. Whether a record counts as a busy machine is read from the stored record, by
bench.result.derive.busy_why (Point.busy_note): a file judged years later is judged by
the same rule.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

_PROC = Path("/proc")
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def system_cpu_s() -> tuple[float, float] | None:
    """(busy, steal) CPU-seconds of the whole machine since boot, from /proc/stat."""
    try:
        fields = (_PROC / "stat").read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in fields[1:9])
    return (user + nice + system + irq + softirq) / _TICK, steal / _TICK


def _stat(pid: str) -> tuple[int, float] | None:
    """(parent pid, CPU-seconds) of one process: its own user and system time, and
    that of its children it has reaped (so a child that exits mid-window stays ours)."""
    try:
        text = (_PROC / pid / "stat").read_text()
    except OSError:
        return None
    rest = text[text.rfind(")") + 2 :].split()  # the name may hold spaces and ')'
    utime, stime, cutime, cstime = (int(v) for v in rest[11:15])
    return int(rest[1]), (utime + stime + cutime + cstime) / _TICK


def tree_cpu_s(root: int) -> float | None:
    """CPU-seconds used so far by `root` and all its descendants (living ones)."""
    if not (_PROC / str(root)).is_dir():
        return None
    parents, used = {}, {}
    for entry in _PROC.iterdir():
        if entry.name.isdigit():
            stat = _stat(entry.name)
            if stat is not None:
                parents[int(entry.name)], used[int(entry.name)] = stat
    ours, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent and pid not in ours]
        ours.update(children)
        frontier += children
    return sum(used.get(pid, 0.0) for pid in ours)


def cpu_frequency() -> tuple[float | None, list[str] | None]:
    """Mean current frequency of the CPUs (MHz) and their cpufreq governors."""
    khz, governors = [], set()
    for cpu in Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq"):
        try:
            khz.append(int((cpu / "scaling_cur_freq").read_text()))
            governors.add((cpu / "scaling_governor").read_text().strip())
        except (OSError, ValueError):
            continue
    return (sum(khz) / len(khz) / 1e3 if khz else None), (sorted(governors) or None)


class BusyTracker:
    """Context manager around the measured window; fields() gives {"busy": {...}}."""

    def __init__(
        self,
        root_pid: int,
        throttle: Callable[[], dict[str, list[str]]],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.root_pid, self.throttle, self.clock = root_pid, throttle, clock
        self.record: dict[str, Any] | None = None

    def __enter__(self) -> BusyTracker:
        self.load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        self.mhz_start, _ = cpu_frequency()
        self.system, self.ours = system_cpu_s(), tree_cpu_s(self.root_pid)
        self.start = self.clock()
        return self

    def __exit__(self, *exc: object) -> None:
        window = self.clock() - self.start
        system, ours = system_cpu_s(), tree_cpu_s(self.root_pid)
        mhz_end, governors = cpu_frequency()
        others = steal = None
        if window > 0 and None not in (system, self.system, ours, self.ours):
            busy = system[0] - self.system[0]  # type: ignore[index]
            mine = ours - self.ours  # type: ignore[operator]
            others = max(0.0, busy - mine) / window
            steal = (system[1] - self.system[1]) / window  # type: ignore[index]
        try:
            throttle = self.throttle() or None
        except Exception:  # a reading, never a reason to lose the measurement
            throttle = None
        mhz = [m for m in (self.mhz_start, mhz_end) if m is not None]
        self.record = {
            "window_s": window,
            "load_average": self.load,
            "others_cpus": others,
            "steal_cpus": steal,
            "cpu_mhz": sum(mhz) / len(mhz) if mhz else None,
            "governors": governors,
            "throttle": throttle,
        }

    def fields(self) -> dict[str, Any]:
        return {"busy": self.record}
