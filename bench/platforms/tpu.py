"""Google Cloud TPUs, driven by JAX or TensorFlow through libtpu (PyTorch/XLA is not wired).

The framework owns the TPU: it opens the chips, synchronises and reads their memory
statistics. This module holds what bench knows of TPUs without opening one, because a
TPU admits a single process and the parent must leave it to the measuring child.
"""

from __future__ import annotations

import glob
import importlib.util
from typing import Any

from bench.platforms.base import MemoryReading, Platform, XlaFramework
from bench.util.errors import BenchError

NO_TPU_HINT = (
    "run on a Cloud TPU VM; in Docker with --privileged --network host "
    "(nox -s run does); or pass --device cpu"
)


def device_files() -> list[str]:
    """TPU device nodes: /dev/accel* (v2 to v4), /dev/vfio/N (v5e and later)."""
    return sorted(glob.glob("/dev/accel*") + glob.glob("/dev/vfio/[0-9]*"))


class TpuPlatform(Platform):
    name = "tpu"
    # TPUs compute in bf16 and fp32; there are no fp16 units and no TF32 mode.
    precisions = frozenset({"fp32", "bf16"})
    auto_priority = 30
    torch_device = "xla"
    energy_unavailable = "Cloud TPUs expose no energy or power counter to the VM"
    xla_device = "tpu"

    def xla_environment(self) -> dict[str, str]:
        return {}  # libtpu asks the metadata server which TPU this VM has

    def xla_unavailable(self, framework: XlaFramework) -> str | None:
        if importlib.util.find_spec("libtpu") is None:
            image = framework.tpu_image
            return f"libtpu is not installed for {framework.label}; use the {image} image"
        if not device_files():
            return f"no TPU device is visible (/dev/accel*, /dev/vfio): {NO_TPU_HINT}"
        return None

    def xla_describe(self, framework: XlaFramework) -> dict[str, Any]:
        return {**self.describe(), **framework.opened_devices("tpu")}

    def tensorflow_strategy(self, tf: Any) -> Any:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="local")
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        return tf.distribute.TPUStrategy(resolver)

    def unavailable_reason(self) -> str | None:
        # Asked only for PyTorch, which bench runs on TPUs not at all.
        return "bench drives TPUs with --framework jax or --framework tensorflow"

    def limit_memory(self, nbytes: int) -> None:
        raise BenchError("memory_limit: a TPU's memory cannot be capped; leave it out on tpu")

    def reset_peak_memory(self) -> None:
        pass

    def peak_memory(self) -> MemoryReading:
        return MemoryReading(None, "device_peak_allocated", "read by the framework on TPUs")

    def describe(self) -> dict[str, Any]:
        return {"platform": self.name, "device_files": device_files()}


PLATFORM = TpuPlatform()
