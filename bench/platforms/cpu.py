"""The host CPU. Memory is the child process's own: peak RSS, capped with an rlimit."""

from __future__ import annotations

import contextlib
import resource
from pathlib import Path

from bench.platforms.base import MemoryReading, Platform

_STATUS = Path("/proc/self/status")


def _status_kib(field: str) -> int | None:
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


class CpuPlatform(Platform):
    name = "cpu"
    precisions = frozenset({"fp32", "bf16", "fp16"})
    auto_priority = 0
    torch_device = "cpu"

    def unavailable_reason(self) -> str | None:
        return None

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

    def peak_memory(self) -> MemoryReading:
        kib = _status_kib("VmHWM")
        if kib is None:
            # ru_maxrss is in KiB on Linux; it cannot be reset, so it may include start-up.
            kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return MemoryReading(peak_bytes=kib * 1024, kind="host_peak_rss")

    def describe(self) -> dict:
        return {"platform": self.name, "accelerator": None, "accelerator_count": 0}


PLATFORM = CpuPlatform()
