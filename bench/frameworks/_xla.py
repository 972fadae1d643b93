"""What TensorFlow and JAX share: light device checks, precision rules, memory readings.

Both compile through XLA and both open the device on first use, so nothing here
imports them: the parent process asks these questions, and only the child may open a
GPU or (one process at a time) a TPU.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench import registry
from bench.errors import UsageError
from bench.platforms import tpu
from bench.platforms.base import MemoryReading, Platform

if TYPE_CHECKING:
    from bench.config import PointConfig

NO_GPU_HINT = (
    "in Docker, run with --gpus all (NVIDIA Container Toolkit); "
    "or pass --device cpu to run on the CPU"
)
NO_TPU_HINT = (
    "run on a Cloud TPU VM; in Docker with --privileged --network host "
    "(nox -s run does); or pass --device cpu"
)


def configure(platform: Platform) -> None:
    """Environment both frameworks read at import, set before the child imports them."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # C++ info lines would bury bench's
    if platform.xla_device != "tpu":
        # With libtpu installed (the TPU images), importing TensorFlow or JAX asks the
        # GCE metadata server about the TPU, and waits for ever without a network.
        os.environ.setdefault("TPU_SKIP_MDS_QUERY", "1")


def missing(label: str, module: str, install: str) -> str | None:
    if importlib.util.find_spec(module) is None:
        return f"{label} is not installed ({install})"
    return None


def platforms() -> list[str]:
    """The platforms TensorFlow and JAX run on in bench: those with an XLA device."""
    return [name for name, p in registry.platforms().items() if p.xla_device is not None]


def device_missing(
    label: str, platform: Platform, cuda_missing: str | None, images: tuple[str, str]
) -> str | None:
    """Why `platform` cannot run `label` here, judged without opening any device.

    cuda_missing: why this install cannot use CUDA, or None; images: the framework's
    CUDA and TPU images."""
    if platform.xla_device is None:
        return f"bench runs {label} on {', '.join(platforms())}, not {platform.name}"
    if platform.xla_device == "gpu":
        if cuda_missing:
            return f"{cuda_missing}; use the {images[0]} image"
        if not Path("/dev/nvidiactl").exists():
            return f"no NVIDIA device is visible to {label}: {NO_GPU_HINT}"
    if platform.xla_device == "tpu":
        if importlib.util.find_spec("libtpu") is None:
            return f"libtpu is not installed for {label}; use the {images[1]} image"
        if not tpu.device_files():
            return f"no TPU device is visible (/dev/accel*, /dev/vfio): {NO_TPU_HINT}"
    return None


def precision_unsupported(platform: Platform, precision: str) -> str | None:
    # The platform's static list; its own override asks PyTorch about the GPU.
    return Platform.precision_unsupported(platform, precision)


def reject_compile(framework: str, compile: str | None, allowed: tuple[str, ...], why: str) -> None:
    if compile is not None and compile not in allowed:
        choices = ", ".join(("none", *allowed))
        raise UsageError(
            f"compile: {compile!r} is not available with {framework} ({why}); "
            f"choose from: {choices}"
        )


def max_peak(peaks: list[int | None], kind: str) -> MemoryReading:
    """The largest per-device peak: the device that runs out first sets the batch limit."""
    known = [p for p in peaks if p is not None]
    if not known:
        return MemoryReading(None, kind, "the framework reported no peak for these devices")
    return MemoryReading(max(known), kind)


def split_batch(batch_size: int, devices: int) -> int:
    """The per-device batch of a GLOBAL batch, which must split evenly."""
    from bench.errors import BenchError

    if batch_size % devices:
        raise BenchError(
            f"batch_size: {batch_size} does not split evenly over {devices} devices; "
            f"use a multiple of {devices}"
        )
    return batch_size // devices


def device_summary(kind: str, names: list[str], memory: list[Any]) -> dict[str, Any]:
    return {
        "accelerator": names[0] if names else None,
        "accelerator_count": len(names),
        "accelerator_memory_bytes": memory,
        "device_kind": kind,
    }


def nvidia_driver() -> str | None:
    from bench.platforms.cuda import _driver_version

    return _driver_version()


def reference_point(point: PointConfig) -> PointConfig:
    """The point whose FLOP count is the reference: the same workload and input shape in
    PyTorch (FlopCounterMode), so that model FLOPs and MFU mean one thing in every
    framework. Counted in a PyTorch child of its own: PyTorch and TensorFlow cannot
    share a process (importing torchvision after TensorFlow crashes it).
    Without PyTorch, the framework's own child reads the shipped table instead."""
    if importlib.util.find_spec("torch") is None or "torch" not in point.spec.frameworks():
        return point
    return dataclasses.replace(
        point,
        framework="torch",
        device="cpu",
        precision="fp32",
        memory_format="",
        compile=None,
        threads=None,
        memory_limit_bytes=None,
    )


def table_flops(point: PointConfig) -> float | None:
    """PyTorch's count for this workload and input shape from the table bench ships
    (tests keep it equal to a live count); None for shapes it lacks."""
    from bench import catalog

    return catalog.reference_flops(point.workload, point.spec.input_shape(point.seq_len))


def _nvml(read):
    try:
        import pynvml  # nvidia-ml-py

        pynvml.nvmlInit()
        try:
            return read(pynvml)
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        return None


def nvidia_memory_bytes() -> int | None:
    """GPU 0's memory, from NVML: without opening the GPU in any framework."""
    return _nvml(lambda nv: int(nv.nvmlDeviceGetMemoryInfo(nv.nvmlDeviceGetHandleByIndex(0)).total))


def describe_nvidia(platform: Platform) -> dict[str, Any]:
    """The GPUs as NVML sees them. Not through the framework: JAX would open the GPUs,
    and a memory cap must be set before that happens."""

    def read(nv) -> dict[str, Any]:
        handles = [nv.nvmlDeviceGetHandleByIndex(i) for i in range(nv.nvmlDeviceGetCount())]
        names = [nv.nvmlDeviceGetName(h) for h in handles]
        return {
            **device_summary(
                "gpu",
                [n.decode() if isinstance(n, bytes) else n for n in names],
                [int(nv.nvmlDeviceGetMemoryInfo(h).total) for h in handles],
            ),
            "compute_capability": [
                "{}.{}".format(*nv.nvmlDeviceGetCudaComputeCapability(h)) for h in handles
            ],
        }

    found = _nvml(read) or {
        "accelerator": None,
        "unavailable": "nvidia-ml-py could not read the GPUs",
    }
    return {"platform": platform.name, **found, "driver_version": nvidia_driver()}
