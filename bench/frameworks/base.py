"""The framework interface. Each framework is one module defining FRAMEWORK.

A framework turns a PointConfig into a Session that trains one step at a time; the
worker times the steps. The framework imports its library lazily, in methods.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from bench.config import PointConfig
    from bench.platforms.base import Platform
    from bench.workloads.base import WorkloadSpec


class Session(ABC):
    """A model, optimizer and data, ready to train on one device."""

    parameters: int  # trainable parameters, each shared tensor counted once
    details: dict[str, Any]  # facts about this setup that belong in the result

    @abstractmethod
    def step(self) -> Any:
        """One training step (forward, backward, update). Returns a handle to the loss
        without waiting for the device."""

    @abstractmethod
    def loss_value(self, handle: Any) -> float: ...

    @abstractmethod
    def synchronize(self) -> None:
        """Block until the device has finished all work queued so far."""

    @abstractmethod
    def count_flops(self) -> float | None:
        """Model FLOPs per sample for one forward and backward pass, or None."""


class Framework(ABC):
    name: ClassVar[str]

    @abstractmethod
    def versions(self) -> dict[str, Any]:
        """Library versions and build facts for provenance."""

    @abstractmethod
    def prepare(self, point: PointConfig, platform: Platform) -> Session: ...

    @abstractmethod
    def count_parameters(self, spec: WorkloadSpec, point: PointConfig) -> int:
        """Parameters of the workload's model, without allocating its weights."""

    def is_out_of_memory(self, error: BaseException) -> bool:
        """Whether `error` means the device (or the memory cap) ran out of memory."""
        return isinstance(error, MemoryError)
