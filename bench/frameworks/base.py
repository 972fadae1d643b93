"""The framework interface. Each framework is one module defining FRAMEWORK.

A framework turns a PointConfig into a Session that trains one step at a time; the
worker times the steps. The framework imports its library lazily, in methods.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, ClassVar

from bench.platforms.base import MemoryReading
from bench.trackers.timing import StepTimer

if TYPE_CHECKING:
    from bench.config.run_config import PointConfig
    from bench.parallel.ranks import RankShare
    from bench.platforms.base import Platform
    from bench.workloads.base import WorkloadSpec


class Session(ABC):
    """A model, optimizer and data, ready to train on one device or data-parallel on many."""

    platform: Platform
    parameters: int  # trainable parameters, each shared tensor counted once
    details: dict[str, Any]  # facts about this setup that belong in the result
    devices: int = 1  # devices the GLOBAL batch is split over
    training: Any = None  # bench.datasets.Training when the point trains on a dataset

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

    # Training on a real dataset (--data KIND:PATH), for frameworks whose data_sources
    # hold "dataset": the framework's own input pipeline, one step on one of its
    # batches, and top-1 over the validation split.
    def train_batches(self, epoch: int) -> Iterator[Any]:
        raise NotImplementedError(f"{type(self).__name__} trains on synthetic data only")

    def train_on(self, batch: Any) -> Any:
        """One training step on `batch`; returns a handle to the loss, as step()."""
        raise NotImplementedError(f"{type(self).__name__} trains on synthetic data only")

    def evaluate(self) -> tuple[int, int]:
        """(correct, samples): top-1 over the whole validation split, in eval mode."""
        raise NotImplementedError(f"{type(self).__name__} trains on synthetic data only")

    def synthetic_batch(self) -> Any:
        """One random batch of the training batches' shape, on the device, for train_on."""
        raise NotImplementedError(f"{type(self).__name__} trains on synthetic data only")

    def moe_report(self, step_times_s: list[float]) -> dict[str, Any] | None:
        """A mixture of experts' own account of its measured steps (tokens per expert,
        dropped tokens, the all-to-all: `details.moe`), or None for any other model."""
        return None

    def gather(self, mine: RankShare) -> list[RankShare]:
        """Every rank's share, in rank order (a single process: just its own)."""
        return [mine]

    def close(self) -> None:  # noqa: B027 - most hold nothing to release
        """Release what outlives the process otherwise (a process group)."""

    def timer(self, clock: Callable[[], float] = time.perf_counter) -> StepTimer:
        """How steps are timed: the host clock after a device sync, unless the
        framework has device events (then the host never waits inside the window)."""
        return StepTimer(self.synchronize, clock)

    # Peak memory comes from the platform unless the framework keeps its own books
    # (TensorFlow's and XLA's allocators on accelerators).
    def reset_peak_memory(self) -> None:
        self.platform.reset_peak_memory()

    def peak_memory(self) -> MemoryReading:
        return self.platform.peak_memory()


class Framework(ABC):
    name: ClassVar[str]
    # What this framework can run; the first memory format is its default.
    memory_formats: ClassVar[tuple[str, ...]] = ("contiguous", "channels_last")
    data_sources: ClassVar[tuple[str, ...]] = ("synthetic", "loader")
    sets_threads: ClassVar[bool] = True  # whether --threads can be honoured
    # The precisions it trains at wherever it runs (checked in the parent); None: each
    # platform's own (Platform.precisions).
    precisions: ClassVar[tuple[str, ...] | None] = None
    prefetches_batches: ClassVar[bool] = False  # whether --prefetch-factor can be honoured
    pins_memory: ClassVar[bool] = False  # whether --pin-memory can be honoured
    sends_uint8: ClassVar[bool] = False  # whether --input-dtype uint8 can be honoured
    decodes_on_device: ClassVar[bool] = False  # whether --decode device can be honoured
    # Whether a point can be spread over ranks that torchrun launches (--devices,
    # --nnodes); the others use every local device from one process.
    launches_ranks: ClassVar[bool] = False
    default_compiler: ClassVar[str | None] = None  # what a bare --compile means
    # Whole-model optimisations --optimize may name (torch: 'ipex', ipex.optimize).
    optimizations: ClassVar[tuple[str, ...]] = ()
    # Whether it applies activation checkpointing (bench.parallel.checkpoint).
    activation_checkpointing: ClassVar[bool] = False
    # Whether it trains in float8 (--precision fp8, bench.parallel.float8).
    float8: ClassVar[bool] = False
    # Whether it takes the decoders' levers (--attention, --loss, --pad-vocab:
    # bench.workloads._levers).
    llm_levers: ClassVar[bool] = False
    # Whether a max-batch search's probes may follow one another in one process: the
    # memory a probe held (an out-of-memory one's too) is freed and its peak reset there
    # (bench.child.worker); else each probe is a fresh child's.
    probes_in_process: ClassVar[bool] = False

    def configure(self, platform: Platform) -> None:  # noqa: B027 - most need nothing
        """Settings that must precede the framework's import in the child (environment)."""

    def flops_point(self, point: PointConfig) -> PointConfig:
        """The point whose count_flops child gives this point's model FLOPs."""
        return point

    def known_flops(self, point: PointConfig) -> float | None:
        """This point's model FLOPs per sample where the parent knows them without any
        child (a table bench ships); None: flops_point's child counts them."""
        return None

    def check_compile(self, compile: str | None) -> None:  # noqa: B027 - any backend name may be valid
        """Raise UsageError unless `compile` (None: the default) means something here."""

    def check_platform(  # noqa: B027 - most run every option on every platform they run on
        self,
        platform: Platform,
        compilers: tuple[str | None, ...],
        optimizations: tuple[str | None, ...],
    ) -> None:
        """Raise UsageError when one of these compilers or whole-model optimisations
        never runs on `platform` (a check of every config: nothing is imported)."""

    def unused_optimization(self, spec: WorkloadSpec, optimize: str) -> str | None:
        """Why the whole-model optimisation `optimize` would change nothing on this
        workload (torch: --optimize fused reaches bench's SGD, not a workload's own
        optimizer), or None. Checked with every config, so no result claims a lever that
        did not act; the ladder and tune skip it with this line."""
        return None

    def preflight(self, points: Iterable[PointConfig]) -> None:  # noqa: B027 - most need nothing
        """In the parent, before any child starts: one line (UsageError) when these
        points need something this machine lacks (torch: IPEX, made for this torch),
        judged from package metadata without importing the framework."""

    def optimization_note(self, platform: Platform, optimize: str) -> str | None:
        """One line to say before `optimize` runs on `platform` where it runs but was not
        made for it (torch: IPEX on a CPU that is not an Intel one with AVX-512 or AMX)."""
        return None

    def usable_optimizations(self, platform: Platform) -> tuple[str, ...]:
        """The whole-model optimisations that can run on `platform` on this machine
        (installed): those bench tune tries when it is not told."""
        return ()

    # Whether the device works, and at which precisions, is the framework's question:
    # TensorFlow may see no GPU where PyTorch sees one. The defaults ask the platform,
    # whose checks are written against PyTorch.
    def unavailable_reason(self, platform: Platform) -> str | None:
        return platform.unavailable_reason()

    def precision_unsupported(self, platform: Platform, precision: str) -> str | None:
        return platform.precision_unsupported(precision)

    def limit_memory(self, platform: Platform, nbytes: int) -> None:
        platform.limit_memory(nbytes)

    def describe_devices(self, platform: Platform) -> dict[str, Any]:
        return platform.describe()

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
