"""MLX, Apple's array framework: mlx.nn models trained with mlx.optimizers.

MLX runs on Apple's GPU through Metal on a Mac, on the CPU elsewhere (the `mlx[cpu]`
wheel on Linux) and on NVIDIA GPUs through `mlx[cuda]`; which device a platform gives
it is the platform's `mlx_device`. MLX is lazy: a step builds the graph of the forward
pass, the gradients and the optimizer's update, and nothing runs until it is evaluated.
Each step therefore ends as a plain MLX training loop's does, with `mx.eval` of the
loss, the updated parameters and the optimizer state, so a step's time on the host
clock is the whole step done. `--compile mlx` wraps the step in mx.compile (the
model's, the optimizer's and the random state as its inputs and outputs, as
mlx-examples compile theirs). Parameters are float32, or bfloat16 throughout for
--precision bf16 (MLX has no autocast; the loss is taken in float32). Peak memory is
MLX's own allocator's, on every device.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING, Any, cast

from bench import registry
from bench.frameworks import _xla
from bench.frameworks.base import Framework, Session
from bench.platforms.base import MemoryReading
from bench.workloads.contract import MlxWorkload

if TYPE_CHECKING:
    from bench.config.run_config import PointConfig
    from bench.platforms.base import Platform
    from bench.workloads.base import WorkloadSpec

INSTALL = "pip install 'bench[mlx]'"
# bench's precisions that MLX trains at: float32, or every parameter, activation and
# optimizer moment in bfloat16. fp16 would need loss scaling, which MLX leaves to the
# loop; tf32 is a CUDA matmul mode MLX does not expose.
PRECISIONS = ("fp32", "bf16")


def _parameter_count(model: Any) -> int:
    from mlx.utils import tree_flatten

    flat = cast("list[tuple[str, Any]]", tree_flatten(model.trainable_parameters()))
    return sum(v.size for _, v in flat)


class MlxSession(Session):
    def __init__(self, point: PointConfig, platform: Platform) -> None:
        import mlx.core as mx
        import mlx.nn as nn
        import mlx.optimizers as optim
        import numpy as np

        self.mx, self.point, self.platform = mx, point, platform
        self.impl = MlxWorkload.load(point.spec)
        mx.set_default_device(mx.Device(getattr(mx.DeviceType, platform.mlx_device or "cpu")))
        mx.random.seed(point.seed)
        dtype = mx.bfloat16 if point.precision == "bf16" else mx.float32
        self.model = model = self.impl.build_model(point.spec, point)
        if dtype != mx.float32:
            model.set_dtype(dtype)
        model.train()
        self.parameters = _parameter_count(model)
        optimizer = optim.SGD(learning_rate=0.01, momentum=0.9)
        described = "SGD(lr=0.01, momentum=0.9)"
        if self.impl.optimizer is not None:  # the workload's own (AdamW for decoders)
            optimizer, described = self.impl.optimizer()
        optimizer.init(model.trainable_parameters())
        self.optimizer = optimizer

        inputs, targets = self.impl.make_batch(point.spec, point, point.batch_size, point.seed)
        if np.issubdtype(inputs.dtype, np.floating):
            inputs = inputs.astype(np.float32)
        self.batch = (mx.array(inputs).astype(dtype) if inputs.dtype == np.float32
                      else mx.array(inputs), mx.array(targets))  # fmt: skip
        loss_of = self.impl.loss

        def loss(model, x, y):
            return loss_of(model(x), y)

        loss_and_grad = nn.value_and_grad(model, loss)

        def train_step(x, y):
            value, grads = loss_and_grad(model, x, y)
            optimizer.update(model, grads)
            return value

        # What a step changes: evaluated at its end, and mx.compile's inputs and outputs.
        self.state = [model.state, optimizer.state, mx.random.state]
        if point.compile == "mlx":
            train_step = mx.compile(train_step, inputs=self.state, outputs=self.state)
        self._train_step = train_step
        self.details = {
            "optimizer": described,
            "device": str(mx.default_device()),
            "param_dtype": "bfloat16" if dtype == mx.bfloat16 else "float32",
            "compiled": point.compile == "mlx",
            "layout": "NHWC" if point.spec.sample_shape else None,
            "step_end": "mx.eval(loss, parameters, optimizer state)",
        }

    def step(self) -> Any:
        loss = self._train_step(*self.batch)
        self.mx.eval(loss, self.state)  # the step done, as a plain MLX loop ends one
        return loss

    def loss_value(self, handle: Any) -> float:
        return float(handle.item())

    def synchronize(self) -> None:
        self.mx.synchronize()

    def reset_peak_memory(self) -> None:
        self.mx.reset_peak_memory()

    def peak_memory(self) -> MemoryReading:
        return MemoryReading(int(self.mx.get_peak_memory()), "mlx_peak_allocated")

    def count_flops(self) -> float | None:
        return _xla.table_flops(self.point)  # PyTorch's count of the same work


class MlxFramework(Framework):
    name = "mlx"
    memory_formats = ("channels_last",)  # MLX's convolutions take NHWC
    data_sources = ("synthetic",)
    sets_threads = False  # MLX's CPU backend has no thread setting
    precisions = PRECISIONS
    default_compiler = "mlx"

    def check_compile(self, compile: str | None) -> None:
        _xla.reject_compile(self.name, compile, ("mlx",), "mlx: the step through mx.compile")

    def flops_point(self, point: PointConfig) -> PointConfig:
        return _xla.reference_point(point)

    def known_flops(self, point: PointConfig) -> float | None:
        return _xla.table_flops(point)

    def unavailable_reason(self, platform: Platform) -> str | None:
        if importlib.util.find_spec("mlx") is None:
            return f"MLX is not installed ({INSTALL})"
        if platform.mlx_device is None:
            where = [n for n, p in registry.platforms().items() if p.mlx_device is not None]
            return f"bench runs MLX on {', '.join(where)}, not {platform.name}"
        return platform.mlx_unavailable()

    def precision_unsupported(self, platform: Platform, precision: str) -> str | None:
        if precision not in PRECISIONS:
            return (
                f"precision {precision!r} is not available with mlx (no loss scaling or TF32 "
                f"in bench's MLX step); choose from: {', '.join(PRECISIONS)}"
            )
        return None

    def limit_memory(self, platform: Platform, nbytes: int) -> None:
        platform.mlx_limit_memory(nbytes)

    def describe_devices(self, platform: Platform) -> dict[str, Any]:
        import mlx.core as mx

        return {**platform.describe(), "mlx_device_info": dict(mx.device_info())}

    def versions(self) -> dict[str, Any]:
        from importlib import metadata

        import mlx.core  # noqa: F401 - the worker imports the framework here
        import numpy

        backends = {}
        for name in ("mlx-metal", "mlx-cpu", "mlx-cuda-12", "mlx-cuda-13"):
            try:
                backends[name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                continue
        return {"mlx": metadata.version("mlx"), "backends": backends, "numpy": numpy.__version__}

    def prepare(self, point: PointConfig, platform: Platform) -> Session:
        return MlxSession(point, platform)

    def count_parameters(self, spec: WorkloadSpec, point: PointConfig) -> int:
        return _parameter_count(MlxWorkload.load(spec).build_model(spec, point))

    def is_out_of_memory(self, error: BaseException) -> bool:
        text = str(error)
        return isinstance(error, MemoryError) or "Attempting to allocate" in text


FRAMEWORK = MlxFramework()
