"""The platform interface: one module per kind of hardware, found by discovery.

Platform code imports its framework lazily, inside methods, so that discovery and the
parent process stay light. A platform never asks which workload or framework runs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True)
class MemoryReading:
    """A peak-memory figure with what it counts, or None with the reason."""

    peak_bytes: int | None
    kind: str  # e.g. "device_peak_allocated", "host_peak_rss"
    unavailable_reason: str | None = None


class Platform(ABC):
    name: ClassVar[str]
    # Precisions this kind of hardware can run at all; the child checks the actual
    # device (e.g. bf16 needs an Ampere GPU) through precision_unsupported().
    precisions: ClassVar[frozenset[str]]
    # --device auto takes the available platform with the highest priority.
    auto_priority: ClassVar[int] = 0
    # The device string PyTorch uses for this platform.
    torch_device: ClassVar[str]
    # torch.distributed's backend for ranks on this hardware; None: no ranks here.
    distributed_backend: ClassVar[str | None] = None
    rank_resource: ClassVar[str] = "devices"  # what each rank needs one of
    # Energy (bench.trackers.energy): the kind of cumulative energy counter this
    # hardware's devices have, as the tracker records it ("nvml_counter": NVIDIA's,
    # through NVML; "amdsmi_counter": AMD's), or None where they have none bench reads;
    # and why no energy at all can be read here, the host's RAPL included, or None.
    energy_counter: ClassVar[str | None] = None
    energy_unavailable: ClassVar[str | None] = None
    # XLA's kind of device for this platform, as TensorFlow and JAX name it ("cpu":
    # the host, "gpu", "tpu"), or None where bench runs neither of them.
    xla_device: ClassVar[str | None] = None
    # What bench tune tries here when it is not told: the reduced precisions worth a
    # try (among `precisions`), and whether the host runtimes (allocator, OpenMP
    # runtime) are an axis, as where the CPU itself trains.
    tune_precisions: ClassVar[tuple[str, ...]] = ("bf16", "fp16")
    tunes_host_runtimes: ClassVar[bool] = False

    def ladder_rungs(self, compiler: str | None) -> tuple[tuple[str, dict[str, Any]], ...]:
        """What bench ladder climbs here after its batch sweep, in order, each tried on
        top of the best so far: (the rung's name, the point fields it sets), each a lever
        a user can also set by hand. `compiler`: the framework's (None: it has none, and
        its rung is skipped with that reason). Here: bf16, channels_last, the compiler."""
        return (
            ("bf16", {"precision": "bf16"}),
            ("channels_last", {"memory_format": "channels_last"}),
            (f"compile ({compiler})", {"compile": compiler}),
        )

    @abstractmethod
    def unavailable_reason(self) -> str | None:
        """None if this platform can run here, else why not and how to fix it."""

    def precision_unsupported(self, precision: str) -> str | None:
        """None if the present device runs `precision`, else why not."""
        if precision not in self.precisions:
            return (
                f"precision {precision!r} is not available on {self.name}; "
                f"{self.name} supports: {', '.join(sorted(self.precisions))}"
            )
        return None

    def synchronize(self) -> None:  # noqa: B027 - a no-op is right for host-synchronous devices
        """Wait for all queued device work; called before every clock read."""

    @abstractmethod
    def limit_memory(self, nbytes: int) -> None:
        """Cap the memory this process may use for training, so it fails like a smaller device."""

    @abstractmethod
    def reset_peak_memory(self) -> None: ...

    @abstractmethod
    def peak_memory(self) -> MemoryReading: ...

    def devices_here(self) -> int:
        """How many ranks this machine can hold, one device each (the parent asks, to
        turn --devices all into a number and to refuse more than there are)."""
        return 1

    def all_devices(self) -> int:
        """What --devices all means here: every device (one rank each)."""
        return self.devices_here()

    def memory_per_rank(self, local_ranks: int) -> int | None:
        """Bytes one of `local_ranks` ranks on this machine may hold at most, known
        without opening a device (the parent asks, to refuse a model whose weights,
        gradients and optimizer state cannot fit); None: not known before a run."""
        return None

    def bind_rank(self, local_rank: int, local_ranks: int) -> dict[str, Any]:
        """Give this rank its own device before the framework opens one; the facts."""
        return {}

    def describe(self) -> dict[str, Any]:
        """Accelerator facts for provenance: model, count, memory, driver."""
        return {"platform": self.name}

    def throttle_reasons(self) -> dict[str, list[str]]:
        """Per device, why its clocks are held back now (power cap, heat); {} where
        the hardware does not say."""
        return {}

    def power_readings(self) -> dict[str, dict[str, float]]:
        """Each device's power draw now and its enforced limit, in W ({"gpu0":
        {"draw_w": ..., "limit_w": ...}}); empty where no counter can be read."""
        return {}
