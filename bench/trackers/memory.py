"""Peak memory over a window: device peak allocated on accelerators, peak RSS on CPU."""

from __future__ import annotations

from typing import Any, Protocol

from bench.platforms.base import MemoryReading


class PeakMemory(Protocol):
    """A platform, or a session whose framework keeps its own allocator statistics."""

    def reset_peak_memory(self) -> None: ...

    def peak_memory(self) -> MemoryReading: ...


class MemoryTracker:
    """Context manager: resets the peak counter on entry, reads it on exit."""

    def __init__(self, platform: PeakMemory) -> None:
        self.platform = platform
        self.reading: MemoryReading | None = None

    def __enter__(self) -> MemoryTracker:
        self.platform.reset_peak_memory()
        return self

    def __exit__(self, *exc: object) -> None:
        self.reading = self.platform.peak_memory()

    def fields(self) -> dict[str, Any]:
        reading = self.reading
        if reading is None:
            return {}
        return {
            "peak_memory_bytes": reading.peak_bytes,
            "memory_kind": reading.kind,
            "memory_unavailable": reading.unavailable_reason,
        }
