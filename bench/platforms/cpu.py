"""The host CPU. Memory is the child process's own: peak RSS, capped with an rlimit."""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
from pathlib import Path
from typing import Any

from bench.platforms.base import MemoryReading, Platform
from bench.util.numa import node_cpus

_STATUS = Path("/proc/self/status")
_CPUINFO = Path("/proc/cpuinfo")
# IPEX's kernels are Intel's, for AVX-512 and AMX. Elsewhere it runs all the same, and
# there it measured slower than the same run without it.
IPEX_MEASURED = (
    "on an AMD EPYC (Zen 4: AVX-512 BF16, no AMX) it trained ResNet-50 at 0.91-0.93x of the"
    " same run without IPEX (batch 16, bf16, channels_last)"
)


def ipex_unfit(cpuinfo: str) -> str | None:
    """Why IPEX was not made for the CPU /proc/cpuinfo describes (not Intel, or without
    AVX-512 and AMX), or None."""
    vendor, flags = "", set()
    for line in cpuinfo.splitlines():
        key, _, value = (part.strip() for part in line.partition(":"))
        if key == "vendor_id":
            vendor = value
        elif key == "flags":
            flags = set(value.split())
    if not vendor:
        return None  # not an x86 cpuinfo: IPEX has no build there anyway
    if vendor != "GenuineIntel":
        what = f"not an Intel CPU ({vendor})"
    elif not {"avx512f", "amx_tile"} & flags:
        what = "an Intel CPU without AVX-512 or AMX"
    else:
        return None
    return f"--optimize ipex: this is {what}, which IPEX was not made for; {IPEX_MEASURED}"


def _status_kib(field: str) -> int | None:
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def rank_cpus(local_rank: int, local_ranks: int, usable: list[int], numa: list[list[int]]
              ) -> tuple[list[int], int | None]:  # fmt: skip
    """This rank's own CPUs: an equal share of the usable ones, taken within one NUMA
    node when the ranks divide evenly over the nodes (each rank then keeps its memory
    local: the Xeon CPU training study's multi-node-per-socket step)."""
    nodes = [[c for c in cpus if c in usable] for cpus in numa]
    nodes = [cpus for cpus in nodes if cpus]
    if len(nodes) > 1 and local_ranks % len(nodes) == 0:
        per_node = local_ranks // len(nodes)
        node = local_rank // per_node
        share = len(nodes[node]) // per_node
        index = local_rank % per_node
        return nodes[node][index * share : (index + 1) * share], node
    share = len(usable) // local_ranks
    return usable[local_rank * share : (local_rank + 1) * share], None


class CpuPlatform(Platform):
    name = "cpu"
    precisions = frozenset({"fp32", "bf16", "fp16"})
    auto_priority = 0
    torch_device = "cpu"
    distributed_backend = "gloo"
    rank_resource = "usable CPU cores"
    xla_device = "cpu"
    # fp16 has no fast path on CPUs (bf16 does, on AVX-512 BF16 and AMX); the allocator
    # and OpenMP runtime are the Xeon CPU training study's launcher settings.
    tune_precisions = ("bf16",)
    tunes_host_runtimes = True
    torch_runs_ipex = True  # IPEX's CPU build
    # PyTorch's CPU flash attention (a fused kernel since 2.2, fp32 too) and the math one.
    torch_attention_kernels = ("flash", "math")
    # Keep JAX off any GPU or TPU here (it would also reserve their memory).
    jax_platforms = "cpu"
    xla_memory_stats = False  # XLA's CPU device keeps none: the process's own memory
    mlx_device = "cpu"  # on Linux, the mlx[cpu] wheel
    # RLIMIT_DATA counts glibc's heap, which keeps what a probe fragmented: in one
    # process, five probes of cnn-s left 220 MiB more mapped, and the largest batch
    # under a 1200 MiB cap was 350, not a fresh child's 600 (forked: 600).
    probes_fork = True

    def torch_ipex_unfit(self) -> str | None:
        try:
            return ipex_unfit(_CPUINFO.read_text())
        except OSError:
            return None

    def torch_rank_threads(self) -> int | None:
        """A CPU rank uses the cores bind_rank gave it."""
        return len(os.sched_getaffinity(0))

    def tensorflow_strategy(self, tf: Any) -> Any:
        # --device cpu on a GPU machine: keep TensorFlow off the GPUs altogether.
        tf.config.set_visible_devices([], "GPU")
        return tf.distribute.OneDeviceStrategy("/cpu:0")

    def attention_unsupported(self, kernel: str, dropout: bool = False) -> str | None:
        """The CPU's flash kernel takes no attention dropout (PyTorch: 'No available
        kernel')."""
        if kernel == "flash" and dropout:
            return (
                "attention: 'flash' on the cpu takes no attention dropout (this workload "
                "trains with it); use math or auto"
            )
        return super().attention_unsupported(kernel, dropout)

    def ladder_rungs(self, compiler: str | None) -> tuple[tuple[str, dict[str, Any]], ...]:
        """The Xeon CPU training study's order: bf16, channels_last, the compiler, then
        its launcher's TCMalloc with Intel OpenMP, then IPEX (ipex.optimize)."""
        return (
            *super().ladder_rungs(compiler),
            ("TCMalloc + Intel OpenMP", {"allocator": "tcmalloc", "openmp": "intel"}),
            ("IPEX (ipex.optimize)", {"optimize": "ipex"}),
        )

    def devices_here(self) -> int:
        """Ranks need a core each at least: the CPUs this process may run on."""
        return (
            len(os.sched_getaffinity(0))
            if hasattr(os, "sched_getaffinity")
            else (os.cpu_count() or 1)
        )

    def all_devices(self) -> int:
        return 1  # the CPU is one device; ranks on it are asked for by number

    def bind_rank(self, local_rank: int, local_ranks: int) -> dict:
        if not hasattr(os, "sched_setaffinity"):
            return {"cpus": None, "reason": "this OS cannot pin a process to CPUs"}
        usable = sorted(os.sched_getaffinity(0))
        cpus, node = rank_cpus(local_rank, local_ranks, usable, list(node_cpus().values()))
        if not cpus:
            return {"cpus": None, "reason": f"{len(usable)} CPUs for {local_ranks} ranks"}
        os.sched_setaffinity(0, cpus)
        return {"cpus": cpus, "numa_node": node}

    def unavailable_reason(self) -> str | None:
        return None

    def memory_per_rank(self, local_ranks: int) -> int | None:
        try:  # the ranks on this machine share its memory
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError):
            return None
        return total // max(local_ranks, 1)

    def limit_memory(self, nbytes: int) -> None:
        # RLIMIT_DATA (Linux >= 4.7) counts heap and private anonymous mappings, which
        # is where tensors live; RLIMIT_AS would also count the framework's shared
        # libraries (GBs of virtual space for CUDA builds) and fail before any tensor.
        resource.setrlimit(resource.RLIMIT_DATA, (nbytes, nbytes))

    def reset_peak_memory(self) -> None:
        # Writing 5 to clear_refs resets VmHWM (peak RSS) to the current RSS, so the
        # peak covers training, not the framework's import. Not on every kernel.
        with contextlib.suppress(OSError):
            Path("/proc/self/clear_refs").write_text("5")

    def release_memory(self) -> None:
        # glibc keeps freed heap for the process's next allocations: malloc_trim gives it
        # back, so the peak RSS of the next probe counts its own memory. Elsewhere (musl,
        # macOS) there is none to call.
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None).malloc_trim(0)

    def peak_memory(self) -> MemoryReading:
        kib = _status_kib("VmHWM")
        if kib is None:
            # ru_maxrss is in KiB on Linux; it cannot be reset, so it may include start-up.
            kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return MemoryReading(peak_bytes=kib * 1024, kind="host_peak_rss")

    def describe(self) -> dict:
        return {"platform": self.name, "accelerator": None, "accelerator_count": 0}


PLATFORM = CpuPlatform()
