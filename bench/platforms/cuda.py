"""NVIDIA GPUs through PyTorch's torch.cuda (ROCm subclasses this: same API over HIP)."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from bench.platforms.base import MemoryReading, Platform, XlaFramework, device_summary
from bench.util.errors import BenchError

if TYPE_CHECKING:
    import torch

_NVIDIACTL = Path("/dev/nvidiactl")  # the NVIDIA driver's control device
NO_GPU_HINT = (
    "in Docker, run with --gpus all (NVIDIA Container Toolkit); "
    "or pass --device cpu to run on the CPU"
)


@contextlib.contextmanager
def _nvml() -> Iterator[Any]:
    """nvidia-ml-py, initialised for the block; None where it is missing or no driver
    answers."""
    try:
        import pynvml  # nvidia-ml-py

        pynvml.nvmlInit()
    except Exception:
        yield None
        return
    try:
        yield pynvml
    finally:
        pynvml.nvmlShutdown()


def _driver_version() -> str | None:
    """The NVIDIA kernel driver version, without creating a CUDA context."""
    with _nvml() as nv:
        if nv is not None:
            try:
                version = nv.nvmlSystemGetDriverVersion()
                return version.decode() if isinstance(version, bytes) else version
            except Exception:
                pass
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        )
        return out.stdout.splitlines()[0].strip()
    except (OSError, subprocess.SubprocessError, IndexError):
        return None


def _nvml_read(read: Callable[..., Any], *args: Any, scale: float | None = None) -> Any:
    """One NVML reading, or None where this GPU, driver or VM refuses it."""
    try:
        value = read(*args)
    except Exception:
        return None
    return value * scale if scale is not None else value


def _nvml_facts() -> dict[str, list[Any]] | None:
    """What sets a GPU's speed besides its model: power limits, clocks, persistence,
    ECC, and why the clocks are held back right now (NVML's bit mask of reasons)."""
    with _nvml() as nv:
        if nv is None:
            return None
        reasons = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
            nv, "nvmlDeviceGetCurrentClocksThrottleReasons", None
        )
        try:
            facts: dict[str, list[Any]] = {}
            for i in range(nv.nvmlDeviceGetCount()):
                h = nv.nvmlDeviceGetHandleByIndex(i)
                ecc = _nvml_read(nv.nvmlDeviceGetEccMode, h)
                for name, value in {
                    "power_limit_w": _nvml_read(nv.nvmlDeviceGetEnforcedPowerLimit, h, scale=1e-3),
                    "default_power_limit_w": _nvml_read(
                        nv.nvmlDeviceGetPowerManagementDefaultLimit, h, scale=1e-3
                    ),
                    "max_sm_clock_mhz": _nvml_read(
                        nv.nvmlDeviceGetMaxClockInfo, h, nv.NVML_CLOCK_SM
                    ),
                    "max_memory_clock_mhz": _nvml_read(
                        nv.nvmlDeviceGetMaxClockInfo, h, nv.NVML_CLOCK_MEM
                    ),
                    "sm_clock_mhz_at_start": _nvml_read(
                        nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_SM
                    ),
                    "temperature_c_at_start": _nvml_read(
                        nv.nvmlDeviceGetTemperature, h, nv.NVML_TEMPERATURE_GPU
                    ),
                    "clock_limit_reasons_at_start": _nvml_read(reasons, h) if reasons else None,
                    "persistence_mode": _nvml_read(nv.nvmlDeviceGetPersistenceMode, h),
                    "ecc_enabled": ecc[0] if ecc else None,
                }.items():
                    facts.setdefault(name, []).append(value)
            return facts
        except Exception:
            return None


def _nvml_devices() -> dict[str, Any]:
    """The GPUs as NVML sees them, without opening them in any framework (JAX would
    open the GPUs, and a memory cap must be set before that happens)."""

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

    with _nvml() as nv:
        try:
            found = read(nv) if nv is not None else None
        except Exception:
            found = None
    return found or {"accelerator": None, "unavailable": "nvidia-ml-py could not read the GPUs"}


def _first_gpu_memory() -> int:
    """GPU 0's memory, from NVML: without opening the GPU in any framework."""
    with _nvml() as nv:
        try:
            return int(nv.nvmlDeviceGetMemoryInfo(nv.nvmlDeviceGetHandleByIndex(0)).total)
        except Exception:  # no NVML (None), or it cannot read the GPU
            pass
    raise BenchError("memory_limit: the GPU's memory size is unknown (no nvidia-ml-py)")


# NVML's clock event reasons that slow a GPU below what it could run at (idle, the
# application clock setting, sync boost and display clocks are left out).
_SLOWDOWNS = {
    0x4: "power_cap",
    0x8: "hw_slowdown",
    0x20: "sw_thermal",
    0x40: "hw_thermal",
    0x80: "hw_power_brake",
}


class CudaPlatform(Platform):
    name = "cuda"
    precisions = frozenset({"fp32", "tf32", "fp16", "bf16", "fp8"})
    auto_priority = 20
    torch_device = "cuda"
    distributed_backend = "nccl"  # RCCL on ROCm, under the same name
    energy_counter = "nvml_counter"  # Volta and newer; older GPUs are polled for power
    xla_device: ClassVar[str | None] = "gpu"
    mlx_device: ClassVar[str | None] = "gpu"  # MLX's CUDA backend (mlx[cuda], Linux)
    mlx_install: ClassVar[str] = "pip install 'mlx[cuda]'"
    # Fixed shapes: cuDNN (MIOpen on ROCm) times its algorithms once, in warm-up, and
    # keeps the fastest, as every published GPU training benchmark does.
    torch_autotunes_convolutions = True
    torch_pins_host_memory = True
    torch_decodes_jpeg = True
    torch_replays_graphs = True  # HIP graphs on ROCm, through the same API
    # An H100's GPT-2 ladder: the fp32 sweep's batch 32 held 38.7 GiB, compiled bf16
    # 15.7 GiB, so the climb's top ran at a batch chosen for another configuration.
    ladder_batch_doublings: ClassVar[int] = 3
    # FlashAttention-2 (fp16/bf16, Ampere and newer), memory-efficient (xFormers', fp32
    # too), cuDNN's fused attention (Hopper's fastest in PyTorch 2.5+) and math.
    torch_attention_kernels: ClassVar[tuple[str, ...]] = ("flash", "efficient", "cudnn", "math")

    def torch_device_here(self) -> torch.device:
        """The rank's GPU (bind_rank set it), or GPU 0."""
        import torch

        return torch.device(self.torch_device, torch.cuda.current_device())

    def torch_ddp_device_ids(self, device: torch.device) -> list[int] | None:
        return [device.index] if device.index is not None else None

    def torch_timing_event(self) -> Callable[[], Any] | None:
        import torch

        return lambda: torch.cuda.Event(enable_timing=True)

    def xla_unavailable(self, framework: XlaFramework) -> str | None:
        missing = framework.cuda_missing()
        if missing:
            return f"{missing}; use the {framework.cuda_image} image"
        if not _NVIDIACTL.exists():
            return f"no NVIDIA device is visible to {framework.label}: {NO_GPU_HINT}"
        return None

    def xla_limit_memory(self, nbytes: int, framework: XlaFramework) -> None:
        """The framework's allocator is capped on each GPU (the platform's own cap is
        PyTorch's), before the framework opens one."""
        framework.cap_device_memory(nbytes, _first_gpu_memory)

    def xla_describe(self, framework: XlaFramework) -> dict[str, Any]:
        return {
            "platform": self.name,
            **_nvml_devices(),
            "driver_version": _driver_version(),
            **framework.build_facts(),
        }

    def tensorflow_strategy(self, tf: Any) -> Any:
        gpus = tf.config.list_logical_devices("GPU")
        if not gpus:
            raise BenchError(f"TensorFlow sees no GPU: {NO_GPU_HINT}")
        if len(gpus) > 1:
            return tf.distribute.MirroredStrategy([g.name for g in gpus])
        return tf.distribute.OneDeviceStrategy(gpus[0].name)

    def ladder_rungs(self, compiler: str | None) -> tuple[tuple[str, dict[str, Any]], ...]:
        """A GPU's climb: TF32 then bf16 tensor cores, channels_last, the
        compiler, then its CUDA graphs (torch.compile's reduce-overhead mode: one launch
        for a step's hundreds of kernels), then the fused optimizer (one kernel for
        every parameter's update), then a decoder's levers: attention held to the flash
        kernel, its loss in chunks, its vocabulary padded to a multiple of 64 (each
        skipped, in one line, on a workload that takes none). A rung the framework or
        this GPU cannot run is skipped, or fails in its child, with the reason in one
        line."""
        graphs = [] if compiler is None else [
            (f"CUDA graphs ({compiler}:reduce-overhead)",
             {"compile": f"{compiler}:reduce-overhead"}),
        ]  # fmt: skip
        return (
            ("tf32", {"precision": "tf32"}),
            ("bf16", {"precision": "bf16"}),
            ("channels_last", {"memory_format": "channels_last"}),
            (f"compile ({compiler})", {"compile": compiler}),
            *graphs,
            ("fused optimizer", {"optimize": "fused"}),
            ("flash attention", {"attention": "flash"}),
            ("chunked loss", {"cross_entropy": "chunked"}),
            ("vocabulary padded to 64", {"pad_vocab": 64}),
        )

    def devices_here(self) -> int:
        import torch

        return torch.cuda.device_count()

    def memory_per_rank(self, local_ranks: int) -> int | None:
        """The largest GPU's memory (NVML, no CUDA context): a model state above it fits
        on none of them."""
        with _nvml() as nv:
            if nv is None:
                return None
            try:
                count = nv.nvmlDeviceGetCount()
                totals = [
                    int(nv.nvmlDeviceGetMemoryInfo(nv.nvmlDeviceGetHandleByIndex(i)).total)
                    for i in range(count)
                ]
            except Exception:  # an NVML error: not known, the child finds out
                return None
            return max(totals, default=None)

    def bind_rank(self, local_rank: int, local_ranks: int) -> dict[str, Any]:
        import torch

        torch.cuda.set_device(local_rank)  # "cuda" now means this rank's GPU
        return {"device_index": local_rank}

    def _runtime_missing(self, torch) -> str | None:
        if torch.version.cuda is None:
            return "this PyTorch build has no CUDA support"
        return None

    def unavailable_reason(self) -> str | None:
        try:
            import torch
        except ImportError:
            return "PyTorch is not installed (pip install 'bench[torch]')"
        missing = self._runtime_missing(torch)
        if missing:
            return missing
        if not torch.cuda.is_available():
            return f"no {self.name.upper()} device is visible to PyTorch: {NO_GPU_HINT}"
        return None

    def precision_unsupported(self, precision: str) -> str | None:
        reason = super().precision_unsupported(precision)
        if reason:
            return reason
        import torch

        major, minor = torch.cuda.get_device_capability()
        if precision == "tf32" and major < 8:
            return f"tf32 needs compute capability 8.0 or newer; this GPU is {major}.{minor}"
        if precision == "fp8" and (major, minor) < (8, 9):
            return (
                f"fp8 needs float8 tensor cores, compute capability 8.9 or newer (Ada, Hopper, "
                f"Blackwell); this GPU is {major}.{minor}"
            )
        if precision == "bf16" and not torch.cuda.is_bf16_supported(including_emulation=False):
            return (
                f"bf16 is not supported natively by this GPU (compute capability {major}.{minor})"
            )
        return None

    def synchronize(self) -> None:
        import torch

        torch.cuda.synchronize()

    def limit_memory(self, nbytes: int) -> None:
        import torch

        total = torch.cuda.get_device_properties(0).total_memory
        # The caching allocator refuses allocations past this fraction of the card,
        # so a large GPU answers "what fits on a smaller one".
        torch.cuda.set_per_process_memory_fraction(min(1.0, nbytes / total))

    def reset_peak_memory(self) -> None:
        import torch

        torch.cuda.reset_peak_memory_stats()

    def release_memory(self) -> None:
        import torch

        torch.cuda.empty_cache()  # the caching allocator's free blocks, back to the driver

    def peak_memory(self) -> MemoryReading:
        import torch

        return MemoryReading(
            peak_bytes=int(torch.cuda.max_memory_allocated()), kind="device_peak_allocated"
        )

    def describe(self) -> dict[str, Any]:
        import torch

        count = torch.cuda.device_count()
        props = [torch.cuda.get_device_properties(i) for i in range(count)]
        return {
            "platform": self.name,
            "accelerator": props[0].name if props else None,
            "accelerator_count": count,
            "accelerator_memory_bytes": [p.total_memory for p in props],
            "compute_capability": [f"{p.major}.{p.minor}" for p in props],
            "driver_version": _driver_version(),
            "cuda_runtime": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(),
            "nvml": _nvml_facts(),
        }

    def throttle_reasons(self) -> dict[str, list[str]]:
        with _nvml() as nv:
            if nv is None:
                return {}
            read = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
                nv, "nvmlDeviceGetCurrentClocksThrottleReasons", None
            )
            try:
                reasons = {}
                for i in range(nv.nvmlDeviceGetCount()):
                    mask = _nvml_read(read, nv.nvmlDeviceGetHandleByIndex(i)) if read else None
                    if mask is not None:
                        reasons[f"gpu{i}"] = [n for bit, n in _SLOWDOWNS.items() if mask & bit]
                return reasons
            except Exception:
                return {}

    def power_readings(self) -> dict[str, dict[str, float]]:
        with _nvml() as nv:
            if nv is None:
                return {}
            try:
                readings = {}
                for i in range(nv.nvmlDeviceGetCount()):
                    h = nv.nvmlDeviceGetHandleByIndex(i)
                    draw = _nvml_read(nv.nvmlDeviceGetPowerUsage, h, scale=1e-3)
                    limit = _nvml_read(nv.nvmlDeviceGetEnforcedPowerLimit, h, scale=1e-3)
                    if draw is not None and limit is not None:
                        readings[f"gpu{i}"] = {"draw_w": draw, "limit_w": limit}
                return readings
            except Exception:
                return {}


PLATFORM = CudaPlatform()
