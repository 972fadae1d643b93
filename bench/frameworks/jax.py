"""JAX with Flax (linen) and Optax: one jax.jit-compiled step, data parallel over a mesh.

The GLOBAL batch is sharded over every local device of the platform along a 'data'
mesh axis; parameters and optimizer state are replicated, and XLA inserts the
gradient all-reduce (batch-norm statistics are global, as with synchronised BN). A
workload whose spec says sharding="fsdp" has its whole state sharded along the same
axis instead (bench.parallel.jax_fsdp), and XLA inserts the all-gathers and
reduce-scatters.
The step is compiled ahead of time, so compilation is timed apart from the steps and
XLA's cost analysis is at hand. Parameters stay float32; bf16 and fp16 are the
compute dtype (Flax casts parameters and activations), fp16 with dynamic loss scaling.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from bench import datasets
from bench.datasets import pipeline, tokens
from bench.frameworks import _xla
from bench.frameworks.base import Framework, Session
from bench.platforms.base import MemoryReading, device_summary
from bench.trackers.timing import CompletionTimer, StepTimer
from bench.workloads.contract import JaxWorkload, WorkloadError

if TYPE_CHECKING:
    from bench.config.run_config import PointConfig
    from bench.platforms.base import Platform
    from bench.workloads.base import WorkloadSpec

# Matmul precision per bench precision: IEEE float32 unless TF32 is asked for.
_MATMUL = {"fp32": "highest", "tf32": "tensorfloat32", "bf16": "default", "fp16": "default"}
# Dynamic loss scaling for fp16, as PyTorch's GradScaler: halve on overflow, double
# after this many finite steps.
_SCALE_INIT, _SCALE_GROWTH_INTERVAL = 2.0**15, 2000


def _dtype(precision: str):
    import jax.numpy as jnp

    return {"bf16": jnp.bfloat16, "fp16": jnp.float16}.get(precision, jnp.float32)


def _cost_flops(compiled) -> float | None:
    analysis = compiled.cost_analysis()
    if isinstance(analysis, list):  # older JAX: one dict per computation
        analysis = analysis[0] if analysis else {}
    flops = (analysis or {}).get("flops")
    return float(flops) if flops else None


def _train_step(model: Any, tx: Any, loss_of: Any, key: Any, fp16: bool) -> Any:
    """One training step over a state dict, pure, to be jitted: the loss scaled where fp16
    (the update skipped on overflow and the scale halved, as PyTorch's GradScaler)."""
    import jax
    import optax

    def train_step(state, x, y):
        dropout = jax.random.fold_in(key, state["step"])

        def scaled_loss(params):
            variables = {"params": params, "batch_stats": state["batch_stats"]}
            logits, updates = model.apply(
                variables, x, train=True, mutable=["batch_stats"], rngs={"dropout": dropout}
            )
            loss = loss_of(logits.astype(jax.numpy.float32), y)
            return loss * state["loss_scale"], (loss, updates.get("batch_stats", {}))

        grads, (loss, batch_stats) = jax.grad(scaled_loss, has_aux=True)(state["params"])
        grads = jax.tree.map(lambda g: g / state["loss_scale"], grads)
        updates, opt_state = tx.update(grads, state["opt_state"], state["params"])
        new = {
            **state,
            "params": optax.apply_updates(state["params"], updates),
            "opt_state": opt_state,
            "batch_stats": batch_stats,
            "step": state["step"] + 1,
        }
        if fp16:  # skip the update on overflow and halve the scale, as GradScaler
            finite = jax.numpy.stack(
                [jax.numpy.isfinite(g).all() for g in jax.tree.leaves(grads)]
            ).all()
            new = jax.tree.map(lambda n, o: jax.numpy.where(finite, n, o), new, state)
            grown = state["good_steps"] + 1 >= _SCALE_GROWTH_INTERVAL
            new["loss_scale"] = jax.numpy.where(
                finite,
                jax.numpy.where(grown, state["loss_scale"] * 2, state["loss_scale"]),
                state["loss_scale"] / 2,
            )
            new["good_steps"] = jax.numpy.where(finite & ~grown, state["good_steps"] + 1, 0)
            new["step"] = state["step"] + 1
        return new, loss

    return train_step


class JaxSession(Session):
    def __init__(self, point: PointConfig, platform: Platform) -> None:
        import jax
        import numpy as np
        import optax
        from jax.sharding import Mesh, NamedSharding
        from jax.sharding import PartitionSpec as P

        self.point, self.platform = point, platform
        self.impl = JaxWorkload.load(point.spec)
        jax.config.update("jax_default_matmul_precision", _MATMUL[point.precision])
        devices = jax.devices(platform.xla_device)
        self.jax_devices = devices
        self.devices = len(devices)
        per_device = _xla.split_batch(point.batch_size, self.devices)
        mesh = Mesh(np.array(devices), ("data",))
        replicated, sharded = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))

        dtype = _dtype(point.precision)
        self.model = model = self.impl.build_model(point.spec, point, dtype)
        inputs, targets = self.impl.make_batch(point.spec, point, point.batch_size, point.seed)
        key = jax.random.key(point.seed)
        self.training = datasets.training(point) if point.dataset else None
        tx, loss_of, optimizer = self._optimizer(optax)
        fp16 = point.precision == "fp16"

        def initial_state(key):
            variables = model.init(key, inputs[:1], train=False)
            return {
                "params": variables["params"],
                "batch_stats": variables.get("batch_stats", {}),
                "opt_state": tx.init(variables["params"]),
                "step": jax.numpy.zeros((), jax.numpy.int32),
                "loss_scale": jax.numpy.asarray(_SCALE_INIT if fp16 else 1.0, jax.numpy.float32),
                "good_steps": jax.numpy.zeros((), jax.numpy.int32),
            }

        # Shapes first: a sharded state is made in place on the devices, never whole on one.
        shapes = jax.eval_shape(initial_state, key)
        self.parameters = sum(x.size for x in jax.tree.leaves(shapes["params"]))
        self.sharding: dict[str, Any] | None = None
        state_sharding: Any = replicated
        if point.spec.sharding == "fsdp":
            from bench.parallel import jax_fsdp

            state_sharding, self.sharding = jax_fsdp.apply_fsdp(shapes, mesh, "data")

        train_step = _train_step(model, tx, loss_of, key, fp16)

        # Synthetic data, made once and placed on the devices: each holds its slice (on a
        # dataset, its shapes are those of every batch).
        self.sharded = sharded
        self.state = jax.jit(initial_state, out_shardings=state_sharding)(key)
        self.batch = jax.device_put((inputs, targets), sharded)
        # A token file (checked whole in the parent): each step reads its windows on the
        # host, checks them again, and places them, as a training loop reads its batch.
        self.token_file = self._token_file()
        self.token_step = 0
        jitted = jax.jit(
            train_step,
            in_shardings=(state_sharding, sharded, sharded),
            out_shardings=(state_sharding, replicated),
            donate_argnums=0,  # the old state's buffers hold the new one
        )
        started = time.perf_counter()
        self.compiled = jitted.lower(self.state, *self.batch).compile()
        compile_s = time.perf_counter() - started
        xla_flops = _cost_flops(self.compiled)
        self.last_loss: Any = None
        self.details = self._describe(optimizer, per_device, dtype, compile_s, xla_flops)

    def _optimizer(self, optax: Any) -> tuple[Any, Any, str]:
        """The optimizer, the loss and the optimizer's name: the dataset's recipe, else the
        workload's own (AdamW for LLMs), else SGD with momentum."""
        if self.training is not None:
            tx, loss_of = self._recipe(optax)
            return tx, loss_of, "SGD(recipe)"
        if self.impl.optimizer is not None:
            tx, optimizer = self.impl.optimizer()
            return tx, self.impl.loss, optimizer
        return (
            optax.sgd(learning_rate=0.01, momentum=0.9),
            self.impl.loss,
            ("SGD(lr=0.01, momentum=0.9)"),
        )

    def _token_file(self) -> tokens.TokenFile | None:
        """A token file (checked whole in the parent): each step reads its windows on the
        host, checks them again, and places them, as a training loop reads its batch."""
        if self.point.tokens is None:
            return None
        if self.impl.token_batch is None:
            raise datasets.DatasetError(
                f"data: {self.point.workload} has no token_batch in jax; it trains on "
                "synthetic tokens only"
            )
        return tokens.for_point(self.point)

    def _describe(
        self, optimizer: str, per_device: int, dtype: Any, compile_s: float, xla_flops: Any
    ) -> dict[str, Any]:
        """The session's details for the result."""
        import numpy as np

        fp16 = self.point.precision == "fp16"
        details: dict[str, Any] = {
            "optimizer": optimizer,
            "per_device_batch": per_device,
            "mesh": {"data": self.devices},
            "sharding": self.sharding["kind"] if self.sharding else None,  # else replicated
            "compute_dtype": str(np.dtype(dtype)),
            "param_dtype": "float32",
            "matmul_precision": _MATMUL[self.point.precision],
            "loss_scaling": "dynamic" if fp16 else None,
            "layout": "NHWC" if self.point.spec.sample_shape else None,
            "compile_s": compile_s,  # ahead of time, outside every timed step
            # XLA's count for the whole compiled step (optimizer and elementwise work
            # included), a cross-check on the reference model FLOPs.
            "xla_flops_per_sample": xla_flops / self.point.batch_size if xla_flops else None,
        }
        if self.sharding:
            details["fsdp"] = self.sharding
        if self.token_file is not None:
            details["dataset"] = self.token_file.describe()
        if self.point.activation_checkpointing != "none":  # as the PyTorch session records it
            blocks = self.impl.checkpointed_blocks
            if blocks is None:
                raise WorkloadError(
                    f"workload {self.point.workload!r}: its jax.py has no checkpointed_blocks, "
                    "which activation checkpointing needs"
                )
            details["activation_checkpointing"] = {
                "mode": self.point.activation_checkpointing,
                "blocks": blocks(self.point.spec, self.point),
            }
        return details

    def _recipe(self, optax):
        """The dataset's recipe: SGD with L2 weight decay (added to the gradient, as
        torch.optim.SGD), its learning rate scheduled per step inside the compiled step;
        cross-entropy with label smoothing."""
        import jax

        plan, classes = self.training, self.point.spec.num_classes
        recipe, total = plan.recipe, plan.total_steps
        peak = recipe.peak_lr(self.point.batch_size)

        def schedule(count):
            return peak * recipe.lr_factor(count, total, jax.numpy)

        tx = optax.chain(
            optax.add_decayed_weights(recipe.weight_decay),
            optax.sgd(learning_rate=schedule, momentum=recipe.momentum, nesterov=recipe.nesterov),
        )

        def loss(logits, targets):
            smooth = optax.smooth_labels(jax.nn.one_hot(targets, classes), recipe.label_smoothing)
            return optax.softmax_cross_entropy(logits, smooth).mean()

        return tx, loss

    def _host_batches(self, split: datasets.Split, epoch: int, train: bool):
        """The shared host pipeline (a thread pool, --num-workers threads), each batch
        placed on the devices, split along the mesh, as soon as it is made."""
        import jax

        plan = self.training
        for batch in pipeline.batches(
            split, self.point.batch_size, seed=plan.seed, epoch=epoch, train=train,
            workers=plan.workers,
        ):  # fmt: skip
            yield jax.device_put(batch, self.sharded)

    def train_batches(self, epoch: int):
        return self._host_batches(self.training.dataset.train, epoch, train=True)

    def train_on(self, batch: Any) -> Any:
        self.state, self.last_loss = self.compiled(self.state, *batch)
        return self.last_loss

    @functools.cached_property
    def _hits(self):
        """Correct top-1 predictions and real samples in a batch, compiled once."""
        import jax

        model = self.model

        @jax.jit
        def hits(state, images, labels):
            variables = {"params": state["params"], "batch_stats": state["batch_stats"]}
            predicted = model.apply(variables, images, train=False).argmax(axis=1)
            return (predicted == labels).sum(), (labels >= 0).sum()

        return hits

    def evaluate(self) -> tuple[int, int]:
        """Top-1 in inference mode; the last batch is padded whole (labels -1)."""
        counts = [
            self._hits(self.state, *batch)
            for batch in self._host_batches(self.training.dataset.val, 0, train=False)
        ]
        return sum(int(c) for c, _ in counts), sum(int(n) for _, n in counts)

    def synthetic_batch(self) -> Any:
        return self.batch

    def step(self) -> Any:
        make = self.impl.token_batch  # never None with a token file (checked in __init__)
        if self.token_file is None or make is None:
            return self.train_on(self.batch)
        import jax

        point = self.point
        windows = self.token_file.batch(self.token_step, point.batch_size, point.spec)
        self.token_step += 1
        return self.train_on(jax.device_put(make(windows), self.sharded))

    def close(self) -> None:
        if self.token_file is not None:
            self.token_file.close()

    def loss_value(self, handle: Any) -> float:
        return float(handle)

    def timer(self, clock: Callable[[], float] = time.perf_counter) -> StepTimer:
        """Steps timed as each one's loss is ready, the next already dispatched: the
        device never idles while the host launches a step, as in a plain jax.jit loop
        (synchronising around every step, bench measured 0.93x such a loop's ResNet-50
        rate on an H200). The loss is an output of the step's one XLA computation."""
        import jax

        return CompletionTimer(self.synchronize, jax.block_until_ready, clock)

    def synchronize(self) -> None:
        # The step is one XLA computation: when its outputs (the new state and the
        # loss) are ready, all of its work on every device is done.
        import jax

        jax.block_until_ready((self.state, self.last_loss))

    def reset_peak_memory(self) -> None:
        if not self.platform.xla_memory_stats:
            self.platform.reset_peak_memory()
        # XLA's device statistics cannot be reset: their peak counts from start-up.

    def peak_memory(self) -> MemoryReading:
        if not self.platform.xla_memory_stats:
            return self.platform.peak_memory()
        peaks = [(d.memory_stats() or {}).get("peak_bytes_in_use") for d in self.jax_devices]
        return _xla.max_peak(peaks, "device_peak_in_use_since_start")

    def count_flops(self) -> float | None:
        return _xla.table_flops(self.point)  # see _xla.reference_point


class JaxFramework(Framework):
    name = "jax"
    label = "JAX"  # what a platform with an XLA device asks (bench.platforms.base.XlaFramework)
    cuda_image, tpu_image = "bench:cuda-jax", "bench:tpu-jax"
    memory_formats = ("channels_last",)  # Flax convolutions take NHWC
    data_sources = ("synthetic", "dataset", "tokens")
    sets_threads = False  # XLA's CPU thread pool has no supported setting
    activation_checkpointing = True  # the Llama blocks, through flax.linen.remat

    def check_compile(self, compile: str | None) -> None:
        _xla.reject_compile(self.name, compile, (), "jax.jit always compiles with XLA")

    def configure(self, platform: Platform) -> None:
        _xla.configure(platform)
        if platform.jax_platforms is not None:
            os.environ["JAX_PLATFORMS"] = platform.jax_platforms

    def flops_point(self, point: PointConfig) -> PointConfig:
        return _xla.reference_point(point)

    def known_flops(self, point: PointConfig) -> float | None:
        return _xla.table_flops(point)

    def unavailable_reason(self, platform: Platform) -> str | None:
        return _xla.missing("JAX", "jax", "pip install 'bench[jax]'") or _xla.device_missing(
            self, platform
        )

    def cuda_missing(self) -> str | None:
        plugins = ("jax_cuda13_plugin", "jax_cuda12_plugin")
        if not any(importlib.util.find_spec(p) for p in plugins):
            return "this JAX has no CUDA plugin (pip install 'jax[cuda12]')"
        return None

    def precision_unsupported(self, platform: Platform, precision: str) -> str | None:
        return _xla.precision_unsupported(platform, precision)

    def limit_memory(self, platform: Platform, nbytes: int) -> None:
        platform.xla_limit_memory(nbytes, self)

    def cap_device_memory(self, nbytes: int, device_memory: Callable[[], int]) -> None:
        # Read when JAX first opens a device, which has not happened yet in this process.
        fraction = min(1.0, nbytes / device_memory())
        os.environ["XLA_PYTHON_CLIENT_MEM_FRACTION"] = f"{fraction:.4f}"

    def describe_devices(self, platform: Platform) -> dict[str, Any]:
        return platform.xla_describe(self)

    def build_facts(self) -> dict[str, Any]:
        return {}

    def opened_devices(self, kind: str) -> dict[str, Any]:
        import jax

        devices = jax.devices(kind)  # opens them: this child is the one to use them
        memory = [(d.memory_stats() or {}).get("bytes_limit") for d in devices]
        return device_summary(kind, [d.device_kind for d in devices], memory)

    def versions(self) -> dict[str, Any]:
        import flax
        import jax
        import jaxlib
        import numpy
        import optax

        return {
            "jax": jax.__version__,
            "jaxlib": jaxlib.__version__,
            "flax": flax.__version__,
            "optax": optax.__version__,
            "numpy": numpy.__version__,
        }

    def prepare(self, point: PointConfig, platform: Platform) -> Session:
        return JaxSession(point, platform)

    def count_parameters(self, spec: WorkloadSpec, point: PointConfig) -> int:
        import jax
        import jax.numpy as jnp

        impl = JaxWorkload.load(spec)
        model = impl.build_model(spec, point, jnp.float32)
        inputs, _ = impl.make_batch(spec, point, 1, point.seed)  # the session's shape and dtype
        shapes = jax.eval_shape(lambda: model.init(jax.random.key(0), inputs, train=False))
        return sum(x.size for x in jax.tree.leaves(shapes["params"]))

    def is_out_of_memory(self, error: BaseException) -> bool:
        return isinstance(error, MemoryError) or "RESOURCE_EXHAUSTED" in str(error)


FRAMEWORK = JaxFramework()
