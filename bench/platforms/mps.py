"""Apple Silicon GPUs through PyTorch's Metal backend, and MLX's (runs natively, not in
Docker). The chip is named as macOS names it (sysctl machdep.cpu.brand_string: "Apple
M2 Max"), with its GPU cores (system_profiler SPDisplaysDataType) and its unified memory
(hw.memsize): two Macs are told apart in a report. Each is read by a bounded command,
an argv list, never a shell; one that fails or times out leaves its fact null."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from typing import Any

from bench.platforms.base import MemoryReading, Platform
from bench.util.errors import BenchError

COMMAND_TIMEOUT_S = 10  # system_profiler takes about a second; a hung one must not stall a run


def command_output(argv: list[str]) -> str | None:
    """stdout of `argv` (no shell), or None where it fails, is missing or times out."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _whole(text: str | None) -> int | None:
    text = (text or "").strip()
    return int(text) if text.isdigit() else None


def gpu_cores(profile: str | None) -> int | None:
    """The GPU core count from `system_profiler SPDisplaysDataType -json` (its
    "sppci_cores", a string such as "38"), or None where it says none."""
    try:
        displays = json.loads(profile or "")["SPDisplaysDataType"]
    except (ValueError, KeyError, TypeError):
        return None
    for display in displays if isinstance(displays, list) else []:
        cores = _whole(str(display.get("sppci_cores", ""))) if isinstance(display, dict) else None
        if cores:
            return cores
    return None


def describe_chip(run: Callable[[list[str]], str | None] = command_output) -> dict[str, Any]:
    """The chip's name, GPU cores and unified memory as macOS reports them, each None
    where its command says nothing (`run`: a test's recorded outputs)."""
    chip = (run(["sysctl", "-n", "machdep.cpu.brand_string"]) or "").strip() or None
    memory = _whole(run(["sysctl", "-n", "hw.memsize"]))
    cores = gpu_cores(run(["system_profiler", "SPDisplaysDataType", "-json"]))
    return {
        "platform": "mps",
        # The GPU of that chip, its cores named: an M2 Max has 30 or 38.
        "accelerator": f"{chip} ({cores}-core GPU)" if chip and cores else chip,
        "chip": chip,
        "gpu_cores": cores,
        "accelerator_count": 1,
        # Unified: the CPU and the GPU share it, so it is the GPU's memory too.
        "accelerator_memory_bytes": [memory],
        "memory": "unified",
    }


class MpsPlatform(Platform):
    name = "mps"
    precisions = frozenset({"fp32", "fp16", "bf16"})
    auto_priority = 10
    torch_device = "mps"
    xla_instead = (
        "TensorFlow and JAX reach Apple's GPU only through the tensorflow-metal and "
        "jax-metal plug-ins, which bench does not drive: on a Mac, --framework mlx or torch"
    )
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
        # What the allocator cached before the window is given back, so that what the
        # driver holds at its end was taken for the window's own work.
        import torch

        torch.mps.empty_cache()

    def release_memory(self) -> None:
        import torch

        torch.mps.empty_cache()

    def peak_memory(self) -> MemoryReading:
        """PyTorch's MPS backend keeps no peak. torch.mps.driver_allocated_memory() is what
        the Metal driver holds for this process (live tensors and the allocator's cached
        buffers): read at the window's end, it holds the largest need of the window unless
        memory pressure made the allocator give some back, so it is recorded as what it
        is. torch.mps.current_allocated_memory() counts live tensors only, which at the
        window's end would miss the step's activations: not used."""
        import torch

        return MemoryReading(
            int(torch.mps.driver_allocated_memory()), "mps_driver_allocated_at_end"
        )

    def describe(self) -> dict[str, Any]:
        return describe_chip()


PLATFORM = MpsPlatform()
