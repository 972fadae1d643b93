"""Apple Silicon GPUs through PyTorch's Metal backend (runs natively, not in Docker)."""

from __future__ import annotations

import platform as host
from typing import Any

from bench.errors import BenchError
from bench.platforms.base import MemoryReading, Platform


class MpsPlatform(Platform):
    name = "mps"
    precisions = frozenset({"fp32", "fp16", "bf16"})
    auto_priority = 10
    torch_device = "mps"
    # Apple Silicon's IOReport energy (CPU, GPU, DRAM, ANE) through zeus-apple-silicon.
    energy_counter = "ioreport_counter"
    mlx_device = "gpu"  # Metal, in the mlx wheel for macOS
    mlx_install = "MLX's Metal backend needs macOS on Apple Silicon: pip install 'bench[mlx]'"

    def unavailable_reason(self) -> str | None:
        try:
            import torch
        except ImportError:
            return "PyTorch is not installed (pip install 'bench[torch]')"
        if not torch.backends.mps.is_available():
            return "no Apple Silicon GPU (MPS) is available; MPS needs macOS on Apple Silicon"
        return None

    def synchronize(self) -> None:
        import torch

        torch.mps.synchronize()

    def limit_memory(self, nbytes: int) -> None:
        import torch

        torch.mps.set_per_process_memory_fraction(
            min(1.0, nbytes / torch.mps.recommended_max_memory())
        )

    def mlx_limit_memory(self, nbytes: int) -> None:
        raise BenchError(
            "bench cannot cap MLX's memory on mps: MLX's own limit (mx.set_memory_limit) "
            "is a guideline its allocator may exceed"
        )

    def reset_peak_memory(self) -> None:
        pass

    def release_memory(self) -> None:
        import torch

        torch.mps.empty_cache()

    def peak_memory(self) -> MemoryReading:
        return MemoryReading(
            peak_bytes=None,
            kind="device_peak_allocated",
            unavailable_reason="PyTorch's MPS backend has no peak-memory counter",
        )

    def describe(self) -> dict[str, Any]:
        import torch

        return {
            "platform": self.name,
            "accelerator": f"Apple {host.machine()} GPU (MPS)",
            "accelerator_count": 1,
            "accelerator_memory_bytes": [torch.mps.recommended_max_memory()],
        }


PLATFORM = MpsPlatform()
