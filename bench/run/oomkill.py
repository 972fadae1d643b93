"""Evidence of the kernel's out-of-memory killer: its kill counters, read around a child.

A child that dies of SIGKILL was not necessarily killed for memory: `docker stop` after
its grace period, a user's `kill -9`, a cluster's pre-emption send the same signal. The
kernel counts every OOM kill in the victim's memory cgroup (cgroup v2 `memory.events`,
v1 `memory.oom_control`) and host-wide (`/proc/vmstat`, Linux 4.13+); a counter that rose
while the child ran is the evidence. Each counter says where it was read.
"""

from __future__ import annotations

from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


def _field(path: Path, name: str) -> int | None:
    """The value of line `name N` in a kernel key-value file; None if unreadable."""
    try:
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == name:
                return int(value)
    except (OSError, ValueError):
        pass
    return None


def _cgroup_files(proc_cgroup: Path) -> list[Path]:
    """This process's cgroup OOM counter files, v2 then v1 (with and without a cgroup
    namespace, where the container sees its own cgroup at the mount's root)."""
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        relative = path.lstrip("/")
        if controllers == "":  # cgroup v2 unified hierarchy
            found += [CGROUP_ROOT / relative / "memory.events", CGROUP_ROOT / "memory.events"]
        elif "memory" in controllers.split(","):
            v1 = CGROUP_ROOT / "memory"
            found += [v1 / relative / "memory.oom_control", v1 / "memory.oom_control"]
    return list(dict.fromkeys(found))


def count(proc: Path = Path("/proc")) -> dict[str, int]:
    """Every OOM-kill counter readable here, by the file it came from ({} off Linux)."""
    counters = {}
    for path in [*_cgroup_files(proc / "self" / "cgroup"), proc / "vmstat"]:
        value = _field(path, "oom_kill")
        if value is not None:
            counters[str(path)] = value
    return counters


def evidence(before: dict[str, int], after: dict[str, int]) -> str | None:
    """'oom_kill in FILE rose from A to B', or None when no counter rose."""
    for source, value in after.items():
        if source in before and value > before[source]:
            return f"oom_kill in {source} rose from {before[source]} to {value}"
    return None
