"""TensorFlow through Keras 3: a custom training step under a tf.distribute strategy.

One replica per device (MirroredStrategy over several GPUs, TPUStrategy on a TPU,
one device otherwise) with a GLOBAL batch split evenly between them, as the TPUv2 vs
V100 comparison ran its TPUs. Keras mixed-precision policies give bf16 and fp16 (fp16
with a loss-scale optimizer); `--compile xla` compiles the replica step with XLA
(jit_compile), as Keras' own fit() does. The step is the same work as PyTorch's: forward, loss,
backward, SGD with momentum.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Callable
from importlib import metadata
from typing import TYPE_CHECKING, Any

from bench import datasets
from bench.datasets import pipeline
from bench.frameworks import _xla
from bench.frameworks.base import Framework, Session
from bench.platforms.base import MemoryReading
from bench.workloads.contract import TensorflowWorkload

if TYPE_CHECKING:
    from bench.config.run_config import PointConfig
    from bench.platforms.base import Platform
    from bench.workloads.base import WorkloadSpec

_POLICIES = {
    "fp32": "float32",
    "tf32": "float32",
    "bf16": "mixed_bfloat16",
    "fp16": "mixed_float16",
}


def _import_tensorflow():
    # TensorFlow's C++ start-up lines would bury bench's own output; errors still show.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    return tf


class TensorFlowSession(Session):
    def __init__(self, point: PointConfig, platform: Platform) -> None:
        tf = _import_tensorflow()  # before keras, which imports TensorFlow
        import keras

        self.tf, self.point, self.platform = tf, point, platform
        self.impl = TensorflowWorkload.load(point.spec)
        if point.threads:
            tf.config.threading.set_intra_op_parallelism_threads(point.threads)
        # TensorFlow uses TF32 on Ampere+ by default; 'fp32' means IEEE float32.
        tf.config.experimental.enable_tensor_float_32_execution(point.precision == "tf32")
        keras.utils.set_random_seed(point.seed)
        keras.mixed_precision.set_global_policy(_POLICIES[point.precision])
        self.strategy = platform.tensorflow_strategy(tf)
        self.devices = self.strategy.num_replicas_in_sync
        per_device = _xla.split_batch(point.batch_size, self.devices)

        self.training = datasets.training(point) if point.dataset else None
        self.loss = self.impl.loss
        with self.strategy.scope():
            self.model = self.impl.build_model(point.spec, point)
            optimizer = keras.optimizers.SGD(learning_rate=0.01, momentum=0.9)
            described = "SGD(lr=0.01, momentum=0.9)"
            if self.training is not None:
                optimizer, described = self._recipe_optimizer(keras), "SGD(recipe)"
            elif self.impl.optimizer is not None:  # the workload's own (AdamW for decoders)
                optimizer, described = self.impl.optimizer()
            if point.precision == "fp16":  # fp16 gradients underflow without loss scaling
                optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
            self.optimizer = optimizer
            self.optimizer.build(self.model.trainable_variables)
        self.parameters = sum(int(v.shape.num_elements()) for v in self.model.trainable_variables)

        self.per_device = per_device
        if self.training is None:  # on a dataset, batches come from train_batches
            self.batch = self.synthetic_batch()
        replica_step = tf.function(self._replica_step, jit_compile=point.compile == "xla")

        @tf.function
        def train_step(batch):
            return self.strategy.run(replica_step, args=batch)

        self._train_step = train_step
        self.details = {
            "optimizer": described,
            "strategy": type(self.strategy).__name__,
            "per_device_batch": per_device,
            "dtype_policy": keras.mixed_precision.global_policy().name,
            "loss_scaling": point.precision == "fp16",
            "jit_compile": point.compile == "xla",
            "layout": "NHWC" if point.spec.sample_shape else None,
            "keras_backend": keras.config.backend(),
        }

    def synthetic_batch(self) -> Any:
        """Synthetic data, made once and placed on each replica's device: its own slice."""
        tf, point, per_device = self.tf, self.point, self.per_device
        inputs, targets = self.impl.make_batch(point.spec, point, point.batch_size, point.seed)

        def replica_slice(context):
            i = context.replica_id_in_sync_group
            part = slice(i * per_device, (i + 1) * per_device)
            return tf.constant(inputs[part]), tf.constant(targets[part])

        return self.strategy.experimental_distribute_values_from_function(replica_slice)

    def _replica_step(self, inputs, targets):
        tf = self.tf
        variables = self.model.trainable_variables
        with tf.GradientTape() as tape:
            outputs = self.model(inputs, training=True)
            loss = self.loss(tf.cast(outputs, tf.float32), targets)
            # The optimizer sums gradients over replicas: scale to the global mean.
            scaled = loss / self.devices
            if self.point.precision == "fp16":
                scaled = self.optimizer.scale_loss(scaled)
        grads = tape.gradient(scaled, variables)
        if self.training is not None and self.training.recipe.weight_decay:
            # L2 on every parameter, added to the gradient as torch.optim.SGD does.
            decay = self.training.recipe.weight_decay
            grads = [g + decay * tf.cast(v, g.dtype) for g, v in zip(grads, variables, strict=True)]
        self.optimizer.apply_gradients(zip(grads, variables, strict=True))
        return loss

    def _recipe_optimizer(self, keras):
        """SGD as the dataset's recipe sets it, its learning rate scheduled per step."""
        plan = self.training
        recipe, total = plan.recipe, plan.total_steps
        peak = recipe.peak_lr(self.point.batch_size)

        class Schedule(keras.optimizers.schedules.LearningRateSchedule):
            def __call__(self, step):
                step = keras.ops.cast(step, "float32")
                return peak * recipe.lr_factor(step, total, keras.ops)

        smoothing, classes = recipe.label_smoothing, self.point.spec.num_classes

        def loss(logits, targets):
            one_hot = keras.ops.one_hot(targets, classes)
            return keras.ops.mean(
                keras.losses.categorical_crossentropy(
                    one_hot, logits, from_logits=True, label_smoothing=smoothing
                )
            )

        self.loss = loss
        return keras.optimizers.SGD(
            learning_rate=Schedule(), momentum=recipe.momentum, nesterov=recipe.nesterov
        )

    def _pipeline(self, split: datasets.Split, epoch: int, train: bool):
        """tf.data over the split in the shared order: each batch decoded and augmented
        by one call into the shared host code (a call per sample costs more than the
        work on small images), --num-workers batches in parallel (0: one at a time),
        prefetched while the step runs. Evaluation pads its last batch (labels -1)."""
        tf, plan, batch = self.tf, self.training, self.point.batch_size
        chosen = pipeline.indices(split, batch, plan.seed, epoch, train)

        def load(i):
            return pipeline.make_batch(split, chosen[int(i)], plan.seed, epoch, train, batch)

        _, height, width = self.point.spec.sample_shape

        def fetch(i):
            images, labels = tf.numpy_function(load, [i], (tf.float32, tf.int32))
            images.set_shape((batch, height, width, 3))
            labels.set_shape((batch,))
            return images, labels

        data = tf.data.Dataset.range(len(chosen))
        data = data.map(fetch, num_parallel_calls=plan.workers or None, deterministic=True)
        return data.prefetch(tf.data.AUTOTUNE) if plan.workers else data

    def _batches(self, data):
        try:
            yield from data
        except self.tf.errors.OpError as error:  # a DatasetError inside tf.data
            pipeline.reraise(error)
            raise

    def train_batches(self, epoch: int):
        data = self._pipeline(self.training.dataset.train, epoch, train=True)
        return self._batches(self.strategy.experimental_distribute_dataset(data))

    def train_on(self, batch: Any) -> Any:
        return self._train_step(batch)

    @functools.cached_property
    def _hits(self):
        """Correct top-1 predictions in a batch, traced once for every evaluation."""
        tf = self.tf

        @tf.function
        def hits(images, labels):
            predicted = tf.argmax(self.model(images, training=False), axis=1, output_type=tf.int32)
            correct = tf.reduce_sum(tf.cast(predicted == labels, tf.int64))
            return correct, tf.reduce_sum(tf.cast(labels >= 0, tf.int64))

        return hits

    def evaluate(self) -> tuple[int, int]:
        """Top-1 in inference mode, one batch at a time on the first device; the last
        batch is padded whole (labels -1)."""
        data = self._batches(self._pipeline(self.training.dataset.val, 0, False))
        counts = [self._hits(images, labels) for images, labels in data]
        return sum(int(c) for c, _ in counts), sum(int(n) for _, n in counts)

    def step(self) -> Any:
        return self._train_step(self.batch)

    def loss_value(self, handle: Any) -> float:
        mean = self.strategy.reduce("MEAN", handle, axis=None)
        return float(mean.numpy())

    def synchronize(self) -> None:
        # Waits for every op queued on every device (made for benchmarks, TF >= 2.13):
        # the whole step, the optimizer's updates included, not just the loss.
        self.tf.test.experimental.sync_devices()

    def _device_names(self) -> list[str]:
        kind = str(self.platform.xla_device).upper()  # "GPU" or "TPU"; the CPU asks its platform
        return [d.name for d in self.tf.config.list_logical_devices(kind)]

    def reset_peak_memory(self) -> None:
        if not self.platform.xla_memory_stats:  # the process's own memory
            return self.platform.reset_peak_memory()
        for name in self._device_names():
            self.tf.config.experimental.reset_memory_stats(name)

    def peak_memory(self) -> MemoryReading:
        if not self.platform.xla_memory_stats:
            return self.platform.peak_memory()
        peaks = [
            self.tf.config.experimental.get_memory_info(name).get("peak")
            for name in self._device_names()
        ]
        return _xla.max_peak(peaks, "device_peak_allocated")

    def count_flops(self) -> float | None:
        return _xla.table_flops(self.point)  # see _xla.reference_point


class TensorFlowFramework(Framework):
    name = "tensorflow"
    # What a platform with an XLA device asks (bench.platforms.base.XlaFramework).
    label, cuda_image, tpu_image = "TensorFlow", "bench:cuda-tf", "bench:tpu"
    # Keras' layout; TensorFlow's CPU convolutions support no other.
    memory_formats = ("channels_last",)
    data_sources = ("synthetic", "dataset")
    default_compiler = "xla"

    def check_compile(self, compile: str | None) -> None:
        _xla.reject_compile(self.name, compile, ("xla",), "XLA via jit_compile")

    def configure(self, platform: Platform) -> None:
        _xla.configure(platform)

    def flops_point(self, point: PointConfig) -> PointConfig:
        return _xla.reference_point(point)

    def known_flops(self, point: PointConfig) -> float | None:
        return _xla.table_flops(point)

    def unavailable_reason(self, platform: Platform) -> str | None:
        return _xla.missing(
            "TensorFlow", "tensorflow", "pip install 'bench[tensorflow]'"
        ) or _xla.device_missing(self, platform)

    def cuda_missing(self) -> str | None:
        """The tensorflow wheel (not tensorflow-cpu) finds cuDNN in the nvidia-* wheels
        that tensorflow[and-cuda] installs."""
        try:
            metadata.distribution("tensorflow")
        except metadata.PackageNotFoundError:
            return "this TensorFlow has no CUDA support (tensorflow-cpu or tensorflow-tpu)"
        if importlib.util.find_spec("nvidia.cudnn") is None:
            return "TensorFlow's CUDA libraries are missing (pip install 'tensorflow[and-cuda]')"
        return None

    def precision_unsupported(self, platform: Platform, precision: str) -> str | None:
        return _xla.precision_unsupported(platform, precision)

    def limit_memory(self, platform: Platform, nbytes: int) -> None:
        platform.xla_limit_memory(nbytes, self)

    def cap_device_memory(self, nbytes: int, device_memory: Callable[[], int]) -> None:
        tf = _import_tensorflow()
        # A logical device of this size on each GPU: TensorFlow's allocator fails past it.
        config = [tf.config.LogicalDeviceConfiguration(memory_limit=nbytes // 2**20)]
        for gpu in tf.config.list_physical_devices("GPU"):
            tf.config.set_logical_device_configuration(gpu, config)

    def describe_devices(self, platform: Platform) -> dict[str, Any]:
        return platform.xla_describe(self)

    def build_facts(self) -> dict[str, Any]:
        build = _import_tensorflow().sysconfig.get_build_info()
        return {"cuda_runtime": build.get("cuda_version"), "cudnn": build.get("cudnn_version")}

    def opened_devices(self, kind: str) -> dict[str, Any]:
        return {}  # bench describes TensorFlow's TPUs by their device files alone

    def versions(self) -> dict[str, Any]:
        tf = _import_tensorflow()
        import keras
        import numpy

        return {
            "tensorflow": tf.__version__,
            "keras": keras.__version__,
            "numpy": numpy.__version__,
            "tensorflow_git": tf.version.GIT_VERSION,
            "built_with_cuda": tf.test.is_built_with_cuda(),
            "onednn": os.environ.get("TF_ENABLE_ONEDNN_OPTS", "default (on for x86)"),
        }

    def prepare(self, point: PointConfig, platform: Platform) -> Session:
        return TensorFlowSession(point, platform)

    def count_parameters(self, spec: WorkloadSpec, point: PointConfig) -> int:
        _import_tensorflow()
        import keras

        keras.mixed_precision.set_global_policy("float32")
        model = TensorflowWorkload.load(spec).build_model(spec, point)
        return sum(int(v.shape.num_elements()) for v in model.trainable_variables)

    def is_out_of_memory(self, error: BaseException) -> bool:
        tf = _import_tensorflow()
        return isinstance(error, tf.errors.ResourceExhaustedError | MemoryError)


FRAMEWORK = TensorFlowFramework()
