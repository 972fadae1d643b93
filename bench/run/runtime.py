"""What a point's child runs on below the framework: the memory allocator and the OpenMP
runtime (preloaded with LD_PRELOAD), and NUMA binding (numactl). These are the Xeon CPU
training study's launcher settings, as sweep axes (--allocator, --openmp, --numa).

NUMA binding: `on` binds or says why not (a note after the run: it was asked for);
`auto` (bench:xeon's default) binds where it can and it helps, on a machine of several
NUMA nodes whose container may bind (Docker: --cap-add SYS_NICE), and otherwise runs
unbound with the reason in the point's record ('not bound (single node)', '(no
SYS_NICE)'), silently; `off` runs unbound.

The parent decides per point and starts the child with them; nothing is changed in the
parent itself. A value of None leaves the child as bench itself was launched (its
LD_PRELOAD, its binding). The settings follow `torch.backends.xeon.run_cpu`: Intel
OpenMP with KMP_AFFINITY=granularity=fine,compact,1,0 and KMP_BLOCKTIME=1, GNU OpenMP
with OMP_SCHEDULE=STATIC and OMP_PROC_BIND=CLOSE, jemalloc with run_cpu's MALLOC_CONF;
a variable the user set already wins. What was applied is recorded in every point.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.util.errors import UsageError
from bench.util.numa import node_cpus

CAP_SYS_NICE = 23  # linux/capability.h

# (axis, value): (library file names, first found wins; how to install it)
_LIBRARIES = {
    ("allocator", "tcmalloc"): (
        ("libtcmalloc.so.4", "libtcmalloc.so", "libtcmalloc_minimal.so.4"),
        "Debian/Ubuntu: apt-get install libgoogle-perftools4; conda: conda install gperftools",
    ),
    ("allocator", "jemalloc"): (
        ("libjemalloc.so.2", "libjemalloc.so"),
        "Debian/Ubuntu: apt-get install libjemalloc2; conda: conda install jemalloc",
    ),
    ("openmp", "intel"): (
        ("libiomp5.so",),
        "pip install intel-openmp (or pip install 'bench[xeon]'), x86-64 only",
    ),
}
_ALLOCATOR_FILES = ("libtcmalloc", "libjemalloc")
_OPENMP_FILES = ("libiomp5", "libgomp")
_SETTINGS = {
    ("openmp", "intel"): {"KMP_AFFINITY": "granularity=fine,compact,1,0", "KMP_BLOCKTIME": "1"},
    ("openmp", "gnu"): {"OMP_SCHEDULE": "STATIC", "OMP_PROC_BIND": "CLOSE"},
    ("allocator", "jemalloc"): {
        "MALLOC_CONF": "oversize_threshold:1,background_thread:true,metadata_thp:auto,"
        "dirty_decay_ms:9000000000,muzzy_decay_ms:9000000000"
    },
}


def _library_dirs() -> list[Path]:
    """The Python environment first (pip's intel-openmp), then conda's, then the OS's."""
    machine = platform.machine()
    dirs = [Path(sys.prefix) / "lib"]
    if os.environ.get("CONDA_PREFIX"):
        dirs.append(Path(os.environ["CONDA_PREFIX"]) / "lib")
    dirs += [Path(f"/usr/lib/{machine}-linux-gnu"), Path("/usr/lib64"), Path("/usr/lib"),
             Path("/usr/local/lib")]  # fmt: skip
    return list(dict.fromkeys(dirs))


def library(axis: str, value: str) -> str | None:
    """The file to preload for this choice (None: nothing, e.g. the system allocator).
    Raises UsageError naming what to install when it is missing."""
    if (axis, value) not in _LIBRARIES:
        return None
    names, how = _LIBRARIES[(axis, value)]
    for folder in _library_dirs():
        for name in names:
            if (folder / name).is_file():
                return str(folder / name)
    raise UsageError(
        f"{axis} {value!r}: {names[0]} is not installed here "
        f"(looked in {', '.join(str(d) for d in _library_dirs())}); {how}"
    )


def check(allocators: tuple[str | None, ...], openmps: tuple[str | None, ...]) -> None:
    """Before anything runs: every library the sweep asks for is here."""
    for value in allocators:
        if value is not None:
            library("allocator", value)
    for value in openmps:
        if value is not None:
            library("openmp", value)


def _bind_cpus() -> tuple[str, str] | None:
    """numactl's -C and -m for this process's CPUs: the first logical CPU of each
    physical core (no hyper-thread siblings, as run_cpu does) and their NUMA nodes."""
    usable = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    seen: set[tuple[str, str]] = set()
    cpus, nodes = [], set()
    node_of = {cpu: node for node, its in node_cpus().items() for cpu in its}
    for cpu in usable:
        topology = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology")
        try:
            core = (
                topology.joinpath("physical_package_id").read_text().strip(),
                topology.joinpath("core_id").read_text().strip(),
            )
        except OSError:
            core = ("", str(cpu))
        if core in seen:
            continue
        seen.add(core)
        cpus.append(cpu)
        nodes.add(node_of.get(cpu, 0))
    if not cpus:
        return None
    return ",".join(map(str, cpus)), ",".join(map(str, sorted(nodes)))


@dataclass(frozen=True)
class ChildRuntime:
    """How to start one point's child: its environment, a command prefix (numactl), and
    the record of what was applied (saved in the point)."""

    env: dict[str, str]
    prefix: tuple[str, ...] = ()
    record: dict[str, Any] = field(default_factory=dict)


def _preload(env: dict[str, str], drop: tuple[str, ...], add: list[str]) -> None:
    kept = [
        entry
        for entry in env.get("LD_PRELOAD", "").replace(" ", ":").split(":")
        if entry and not Path(entry).name.startswith(drop)
    ]
    if kept + add:
        env["LD_PRELOAD"] = ":".join(kept + add)
    else:
        env.pop("LD_PRELOAD", None)


def has_sys_nice(status: Path = Path("/proc/self/status")) -> bool | None:
    """Whether this process holds CAP_SYS_NICE (None: the OS does not say). Docker's
    default seccomp profile lets a process set its memory policy only with it."""
    try:
        for line in status.read_text().splitlines():
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> CAP_SYS_NICE & 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


def _try_binding() -> tuple[tuple[str, ...], str, str]:
    """numactl's prefix for this process's cores and their nodes, tried once with
    `true`; or () and why not, at length (for `on`) and in short (for `auto`)."""
    numactl = shutil.which("numactl")
    bind = _bind_cpus()
    if numactl is None:
        return (), "numactl is not installed (Debian/Ubuntu: apt-get install numactl)", "no numactl"
    if bind is None:
        why = "this OS does not say which CPUs the process may use"
        return (), why, "CPUs unknown"
    prefix = (numactl, "-C", bind[0], "-m", bind[1])
    trial = subprocess.run([*prefix, "true"], capture_output=True, text=True, check=False)
    if trial.returncode == 0:
        return prefix, "", ""
    said = (trial.stderr.strip().splitlines() or ["no message"])[0]
    if has_sys_nice() is False:
        return (
            (),
            f"numactl may not bind here (in Docker: --cap-add SYS_NICE): {said}",
            "no SYS_NICE",
        )
    return (), f"numactl could not bind here: {said}", f"numactl: {said}"


def _numa(mode: str | None) -> tuple[tuple[str, ...], dict[str, Any]]:
    if mode is None:
        return (), {}
    if mode == "off":
        return (), {"numa": "off"}
    if mode == "auto" and len(node_cpus()) < 2:  # nothing to gain: unbound, silently
        return (), {"numa": "auto", "numa_binding": None, "numa_note": "not bound (single node)"}
    prefix, reason, short = _try_binding()
    if prefix:
        return prefix, {"numa": mode, "numa_binding": " ".join(["numactl", *prefix[1:]])}
    if mode == "auto":  # not asked for: recorded, never a warning
        return (), {"numa": "auto", "numa_binding": None, "numa_note": f"not bound ({short})"}
    return (), {"numa": "on", "numa_binding": None, "numa_reason": reason}


def child_runtime(
    allocator: str | None, openmp: str | None, numa: str | None, base: dict[str, str]
) -> ChildRuntime:
    """The child's environment from `base` (the parent's) with these choices applied."""
    env = dict(base)
    record: dict[str, Any] = {}
    settings: list[str] = []
    for axis, value, files in (
        ("allocator", allocator, _ALLOCATOR_FILES),
        ("openmp", openmp, _OPENMP_FILES),
    ):
        if value is None:
            continue
        path = library(axis, value)
        _preload(env, files, [path] if path else [])
        for name, setting in _SETTINGS.get((axis, value), {}).items():
            env.setdefault(name, setting)  # the user's own setting wins
            settings.append(f"{name}={env[name]}")
        record[axis] = value
    if record:
        record["ld_preload"] = env.get("LD_PRELOAD")
        record["settings"] = " ".join(settings) or None
    prefix, numa_record = _numa(numa)
    record.update(numa_record)
    return ChildRuntime(env, prefix, record)
