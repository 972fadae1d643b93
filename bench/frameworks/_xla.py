"""What TensorFlow and JAX share: light device checks, precision rules, memory readings.

Both compile through XLA and both open the device on first use, so nothing here
imports them: the parent process asks these questions, and only the child may open a
GPU or (one process at a time) a TPU.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
from typing import TYPE_CHECKING

from bench import registry
from bench.platforms.base import MemoryReading, Platform, XlaFramework
from bench.util.errors import UsageError

if TYPE_CHECKING:
    from bench.config.run_config import PointConfig


def configure(platform: Platform) -> None:
    """Environment both frameworks read at import, set before the child imports them."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # C++ info lines would bury bench's
    for name, value in platform.xla_environment().items():
        os.environ.setdefault(name, value)


def missing(label: str, module: str, install: str) -> str | None:
    if importlib.util.find_spec(module) is None:
        return f"{label} is not installed ({install})"
    return None


def platforms() -> list[str]:
    """The platforms TensorFlow and JAX run on in bench: those with an XLA device."""
    return [name for name, p in registry.platforms().items() if p.xla_device is not None]


def device_missing(framework: XlaFramework, platform: Platform) -> str | None:
    """Why `platform` cannot run `framework` here, judged without opening any device."""
    if platform.xla_device is None:
        instead = f" ({platform.xla_instead})" if platform.xla_instead else ""
        return (
            f"bench runs {framework.label} on {', '.join(platforms())}, not {platform.name}"
            + instead
        )
    return platform.xla_unavailable(framework)


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
    from bench.util.errors import BenchError

    if batch_size % devices:
        raise BenchError(
            f"batch_size: {batch_size} does not split evenly over {devices} devices; "
            f"use a multiple of {devices}"
        )
    return batch_size // devices


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
    from bench.result import catalog

    return catalog.reference_flops(point.workload, point.spec.input_shape(point.seq_len))
