"""The platform interface: one module per kind of hardware, found by discovery.

Everything that differs between kinds of hardware is here, asked for by what it means:
the frameworks never test a device's type (tests/project/test_imports.py). What PyTorch does
differently on a device is a `torch_*` attribute or method; what TensorFlow and JAX do
(both through XLA) an `xla_*` one, some of which ask the framework back through
`XlaFramework`. Platform code imports its framework lazily, inside methods, so that
discovery and the parent process stay light. A platform never asks which workload or
framework runs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from bench.util.errors import BenchError

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class MemoryReading:
    """A peak-memory figure with what it counts, or None with the reason."""

    peak_bytes: int | None
    kind: str  # e.g. "device_peak_allocated", "host_peak_rss"
    unavailable_reason: str | None = None


def device_summary(kind: str, names: list[str], memory: list[Any]) -> dict[str, Any]:
    """The accelerators as provenance records them: model, count, memory, XLA's kind."""
    return {
        "accelerator": names[0] if names else None,
        "accelerator_count": len(names),
        "accelerator_memory_bytes": memory,
        "device_kind": kind,
    }


class XlaFramework(Protocol):
    """TensorFlow or JAX as a platform with an XLA device asks it back, where what the
    platform does depends on the framework too (bench/frameworks/tensorflow.py, jax.py)."""

    label: str  # "TensorFlow", "JAX": how messages name it
    cuda_image: str  # bench's images of the framework for NVIDIA GPUs and for TPUs
    tpu_image: str

    def cuda_missing(self) -> str | None:
        """Why this install of the framework cannot use CUDA, or None."""

    def cap_device_memory(self, nbytes: int, device_memory: Callable[[], int]) -> None:
        """Cap what the framework's allocator takes of each accelerator to `nbytes`, before
        it opens one; `device_memory()`: one device's bytes (a BenchError where unknown)."""

    def build_facts(self) -> dict[str, Any]:
        """The accelerator libraries the framework was built with, for provenance."""

    def opened_devices(self, kind: str) -> dict[str, Any]:
        """The devices of XLA's `kind` as the framework sees them once opened (their
        model and memory), or {} where it leaves them unopened."""


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
    # Where xla_device is None: what a user of TensorFlow or JAX here can do instead.
    xla_instead: ClassVar[str | None] = None
    # MLX's device for this platform ("cpu", "gpu": Metal on a Mac, CUDA through
    # mlx[cuda]), or None where bench runs no MLX; and how to install the MLX backend
    # it needs, said when that backend is missing.
    mlx_device: ClassVar[str | None] = None
    mlx_install: ClassVar[str] = "pip install 'bench[mlx]'"
    # What bench tune tries here when it is not told: the reduced precisions worth a
    # try (among `precisions`), and whether the host runtimes (allocator, OpenMP
    # runtime) are an axis, as where the CPU itself trains.
    tune_precisions: ClassVar[tuple[str, ...]] = ("bf16", "fp16")
    tunes_host_runtimes: ClassVar[bool] = False

    # PyTorch here (bench/frameworks/torch.py): whether its convolution library (cuDNN,
    # MIOpen on ROCm) times its algorithms once and keeps the fastest; whether batches
    # come through page-locked host memory (DataLoader's pin_memory); whether
    # torch.compile's reduce-overhead and max-autotune modes replay CUDA graphs; whether
    # Intel Extension for PyTorch has a build for it (its CPU build).
    torch_autotunes_convolutions: ClassVar[bool] = False
    torch_pins_host_memory: ClassVar[bool] = False
    # Whether torchvision's decode_jpeg decodes a batch of JPEGs on this device (nvJPEG on
    # a CUDA GPU: --decode device).
    torch_decodes_jpeg: ClassVar[bool] = False
    torch_replays_graphs: ClassVar[bool] = False
    torch_runs_ipex: ClassVar[bool] = False
    # The kernels of scaled_dot_product_attention PyTorch has here, as --attention names
    # them (bench.workloads._attention); every device has the math one. Whether one runs
    # a given shape and precision (flash wants fp16 or bf16 on a GPU) is the child's.
    torch_attention_kernels: ClassVar[tuple[str, ...]] = ("math",)
    # JAX here: the JAX_PLATFORMS its child is started with (None: JAX chooses).
    jax_platforms: ClassVar[str | None] = None
    # Whether XLA's devices here keep memory statistics (peaks); where they do not, the
    # framework reads the platform's own (the host process's).
    xla_memory_stats: ClassVar[bool] = True
    # Whether a probing child (bench.child.worker.serve_probes) trains each probe in a
    # fork of itself, the framework imported and nothing run, rather than in its own
    # process: where the memory cap counts what the process ever mapped, which a probe
    # in it keeps (the CPU's RLIMIT_DATA).
    probes_fork: ClassVar[bool] = False
    # How many times bench ladder doubles the best batch after its rungs, each doubling
    # kept only when faster beyond noise: where precision and compilation free memory
    # the start's sweep could not use (0: the sweep is the batch's only rung).
    ladder_batch_doublings: ClassVar[int] = 0

    def pin_memory_unfit(self) -> str | None:
        """Why --pin-memory on does nothing here (None where the batch is copied to a
        device from host memory, as to a CUDA GPU): one line, before any child."""
        if self.torch_pins_host_memory:
            return None
        return (f"pin_memory: {self.name} has no copy from page-locked host memory to "
                "speed up (it is a CUDA or ROCm GPU's); leave --pin-memory out")  # fmt: skip

    def device_decode_unfit(self) -> str | None:
        """Why --decode device cannot run here (None where torchvision decodes JPEGs on
        the device, as nvJPEG on a CUDA GPU): one line, before any child."""
        if self.torch_decodes_jpeg:
            return None
        return (f"decode: {self.name} has no JPEG decoder of its own that bench drives "
                "(torchvision's decode_jpeg on a device is nvJPEG, a CUDA GPU's); leave "
                "--decode out or use --decode cpu")  # fmt: skip

    def torch_ipex_unfit(self) -> str | None:
        """Why IPEX's kernels were not made for this device, where it runs all the same
        (said in one line when --optimize ipex runs here), or None."""
        return None

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

    def attention_unsupported(self, kernel: str, dropout: bool = False) -> str | None:
        """None if PyTorch has `kernel` (or chooses one: auto) here, for an attention
        with dropout where `dropout`, else why not."""
        if kernel == "auto" or kernel in self.torch_attention_kernels:
            return None
        return (
            f"attention: {kernel!r} is not available on {self.name}; it has: auto, "
            f"{', '.join(self.torch_attention_kernels)}"
        )

    def precision_unsupported(self, precision: str) -> str | None:
        """None if the present device runs `precision`, else why not."""
        if precision not in self.precisions:
            return (
                f"precision {precision!r} is not available on {self.name}; "
                f"{self.name} supports: {', '.join(sorted(self.precisions))}"
            )
        return None

    def torch_device_here(self) -> torch.device:
        """The torch.device this process trains on, once bind_rank has run."""
        import torch

        return torch.device(self.torch_device)

    def torch_rank_threads(self) -> int | None:
        """Intra-op threads for a rank torchrun started (torchrun sets OMP_NUM_THREADS=1),
        where it needs more; None: leave torch's setting."""
        return None

    def torch_ddp_device_ids(self, device: torch.device) -> list[int] | None:
        """DistributedDataParallel's device_ids for a model on `device` (None: a module
        on the host, or on several devices)."""
        return None

    def torch_timing_event(self) -> Callable[[], Any] | None:
        """A maker of the device's timing events (record, synchronize, elapsed_time in
        ms, as torch.cuda.Event), or None where steps are timed by the host's clock."""
        return None

    def xla_environment(self) -> dict[str, str]:
        """Environment TensorFlow and JAX read at import, set (unless already set) before
        the child imports them. Off a TPU, libtpu (installed in the TPU images) would ask
        the GCE metadata server about the TPU, and wait for ever without a network."""
        return {"TPU_SKIP_MDS_QUERY": "1"}

    def xla_unavailable(self, framework: XlaFramework) -> str | None:
        """Why `framework` cannot open this platform's XLA devices here, judged without
        opening any (only the child may open a GPU, and one process a TPU); None: it can.
        Asked only where xla_device is set."""
        return None

    def xla_limit_memory(self, nbytes: int, framework: XlaFramework) -> None:
        """Cap the memory `framework` may train in: here, as for PyTorch, the platform's."""
        self.limit_memory(nbytes)

    def xla_describe(self, framework: XlaFramework) -> dict[str, Any]:
        """Accelerator facts for provenance, from a TensorFlow or JAX child."""
        return self.describe()

    def mlx_unavailable(self) -> str | None:
        """Why MLX cannot train on this platform's device here (its backend missing from
        the MLX installed), or None. Asked only where mlx_device is set; imports MLX,
        which opens no device."""
        try:
            import mlx.core as mx
        except ImportError as error:  # on Linux, mlx without mlx[cpu] or mlx[cuda]
            return f"MLX cannot load here ({error}): {self.mlx_install}"
        if mx.is_available(mx.Device(getattr(mx.DeviceType, self.mlx_device or "cpu"))):
            return None
        return f"this MLX has no {self.mlx_device} backend for {self.name} ({self.mlx_install})"

    def mlx_limit_memory(self, nbytes: int) -> None:
        """Cap the memory MLX may train in; here, as for PyTorch, the platform's."""
        self.limit_memory(nbytes)

    def tensorflow_strategy(self, tf: Any) -> Any:
        """The tf.distribute strategy over every local device of this platform."""
        raise BenchError(f"bench runs TensorFlow on no {self.name} device")

    def synchronize(self) -> None:  # noqa: B027 - a no-op is right for host-synchronous devices
        """Wait for all queued device work; called before every clock read."""

    @abstractmethod
    def limit_memory(self, nbytes: int) -> None:
        """Cap the memory this process may use for training, so it fails like a smaller device."""

    @abstractmethod
    def reset_peak_memory(self) -> None: ...

    @abstractmethod
    def peak_memory(self) -> MemoryReading: ...

    def release_memory(self) -> None:  # noqa: B027 - nothing to give back where nothing caches
        """Give back what the allocator keeps of memory a finished probe freed, so that
        the next probe in this process (bench.child.worker's probing child) meets the
        memory a fresh process would; the caller collects the garbage first."""

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
