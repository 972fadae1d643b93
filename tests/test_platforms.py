"""What differs between devices is asked of their platform (bench/platforms/): PyTorch's
`torch_*` answers, TensorFlow's and JAX's `xla_*` ones. No device is opened here: the
frameworks are fakes, or bench's own modules without their library."""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace
from typing import Any

import pytest

from bench import registry
from bench.platforms import cuda, tpu
from bench.util.errors import BenchError


class _Xla:
    """A TensorFlow or JAX as the platforms ask it (bench.platforms.base.XlaFramework)."""

    label, cuda_image, tpu_image = "FakeXLA", "bench:cuda-fake", "bench:tpu-fake"

    def __init__(self, cuda_missing: str | None = None) -> None:
        self.missing, self.capped = cuda_missing, []

    def cuda_missing(self) -> str | None:
        return self.missing

    def cap_device_memory(self, nbytes, device_memory) -> None:
        self.capped.append((nbytes, device_memory))

    def build_facts(self) -> dict[str, Any]:
        return {"cudnn": 90100}

    def opened_devices(self, kind: str) -> dict[str, Any]:
        return {"device_kind": kind, "accelerator_count": 4}


def test_pytorch_asks_the_platform_what_its_device_does():
    cpu, gpu, amd, mac = (registry.platform(n) for n in ("cpu", "cuda", "rocm", "mps"))
    for platform in (gpu, amd):  # ROCm's HIP through torch.cuda: the same answers
        assert platform.torch_autotunes_convolutions and platform.torch_pins_host_memory
        assert platform.torch_replays_graphs and not platform.torch_runs_ipex
    for platform in (cpu, mac):
        assert not platform.torch_pins_host_memory and not platform.torch_replays_graphs
        assert platform.torch_timing_event() is None
        assert platform.torch_ddp_device_ids(SimpleNamespace(index=None)) is None
    assert cpu.torch_runs_ipex and not mac.torch_runs_ipex
    assert gpu.torch_ddp_device_ids(SimpleNamespace(index=1)) == [1]


def test_a_cpu_rank_takes_the_cores_it_was_given_and_no_gpu_counts_them():
    cores = len(os.sched_getaffinity(0))
    assert registry.platform("cpu").torch_rank_threads() == cores
    assert registry.platform("cuda").torch_rank_threads() is None


def test_a_platform_with_timing_events_times_pytorch_steps_by_them():
    from bench.frameworks.torch import TorchSession
    from bench.trackers.timing import EventTimer

    platform = SimpleNamespace(torch_timing_event=lambda: object)
    session = SimpleNamespace(platform=platform, rank=None, synchronize=lambda: None)
    assert isinstance(TorchSession.timer(session), EventTimer)  # type: ignore[arg-type]


def test_xla_frameworks_keep_the_cpus_books_and_ask_the_gpus():
    cpu, gpu, chip = (registry.platform(n) for n in ("cpu", "cuda", "tpu"))
    assert not cpu.xla_memory_stats and gpu.xla_memory_stats and chip.xla_memory_stats
    assert cpu.jax_platforms == "cpu" and gpu.jax_platforms is None
    assert cpu.xla_environment() == gpu.xla_environment() == {"TPU_SKIP_MDS_QUERY": "1"}
    assert chip.xla_environment() == {}


def test_a_gpu_says_why_an_xla_framework_cannot_open_it(tmp_path, monkeypatch):
    gpu = registry.platform("cuda")
    assert gpu.xla_unavailable(_Xla("no CUDA in this build")) == (
        "no CUDA in this build; use the bench:cuda-fake image"
    )
    monkeypatch.setattr(cuda, "_NVIDIACTL", tmp_path / "nvidiactl")
    assert gpu.xla_unavailable(_Xla()).startswith("no NVIDIA device is visible to FakeXLA: ")
    (tmp_path / "nvidiactl").touch()
    assert gpu.xla_unavailable(_Xla()) is None
    assert registry.platform("cpu").xla_unavailable(_Xla("no CUDA")) is None


def test_a_tpu_says_why_an_xla_framework_cannot_open_it(monkeypatch):
    chip = registry.platform("tpu")
    monkeypatch.setattr(tpu.importlib.util, "find_spec", lambda name: None)
    assert chip.xla_unavailable(_Xla()) == (
        "libtpu is not installed for FakeXLA; use the bench:tpu-fake image"
    )
    monkeypatch.setattr(tpu.importlib.util, "find_spec", lambda name: object())
    monkeypatch.setattr(tpu, "device_files", lambda: [])
    assert chip.xla_unavailable(_Xla()).startswith("no TPU device is visible")
    monkeypatch.setattr(tpu, "device_files", lambda: ["/dev/accel0"])
    assert chip.xla_unavailable(_Xla()) is None
    assert chip.xla_describe(_Xla()) == {
        "platform": "tpu", "device_files": ["/dev/accel0"], "device_kind": "tpu",
        "accelerator_count": 4,
    }  # fmt: skip


def test_on_a_gpu_the_xla_framework_caps_its_own_allocator(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # no NVML: the size is unknown
    framework = _Xla()
    registry.platform("cuda").xla_limit_memory(2**30, framework)
    [(nbytes, device_memory)] = framework.capped
    assert nbytes == 2**30
    with pytest.raises(BenchError, match="the GPU's memory size is unknown"):
        device_memory()
    described = registry.platform("cuda").xla_describe(framework)
    assert described["platform"] == "cuda" and described["cudnn"] == 90100
    assert described["unavailable"] == "nvidia-ml-py could not read the GPUs"


def test_elsewhere_the_platform_caps_an_xla_framework_as_it_caps_pytorch(monkeypatch):
    capped = []
    cpu = registry.platform("cpu")
    monkeypatch.setattr(type(cpu), "limit_memory", lambda self, nbytes: capped.append(nbytes))
    framework = _Xla()
    cpu.xla_limit_memory(2**30, framework)
    assert capped == [2**30] and framework.capped == []
    with pytest.raises(BenchError, match="a TPU's memory cannot be capped"):
        registry.platform("tpu").xla_limit_memory(2**30, framework)


def test_jax_caps_a_fraction_of_the_gpu_before_it_opens_one(monkeypatch):
    monkeypatch.delenv("XLA_PYTHON_CLIENT_MEM_FRACTION", raising=False)
    jax = registry.framework("jax")  # its module imports JAX only inside methods
    jax.cap_device_memory(2**30, lambda: 2**32)
    assert os.environ["XLA_PYTHON_CLIENT_MEM_FRACTION"] == "0.2500"
    assert jax.build_facts() == {}


class _FakeTf:
    """tf.config and tf.distribute, as far as the strategies use them."""

    def __init__(self, gpus: int) -> None:
        self.hidden: list[tuple[list, str]] = []
        devices = [SimpleNamespace(name=f"/device:GPU:{i}") for i in range(gpus)]
        self.config = SimpleNamespace(
            list_logical_devices=lambda kind: devices,
            set_visible_devices=lambda found, kind: self.hidden.append((found, kind)),
        )
        self.distribute = SimpleNamespace(
            OneDeviceStrategy=lambda name: ("one", name),
            MirroredStrategy=lambda names: ("mirrored", names),
        )


def test_tensorflow_spreads_over_the_devices_its_platform_names():
    assert registry.platform("cuda").tensorflow_strategy(_FakeTf(1)) == ("one", "/device:GPU:0")
    assert registry.platform("cuda").tensorflow_strategy(_FakeTf(2))[0] == "mirrored"
    with pytest.raises(BenchError, match="TensorFlow sees no GPU"):
        registry.platform("cuda").tensorflow_strategy(_FakeTf(0))
    tf = _FakeTf(2)  # --device cpu on a GPU machine: TensorFlow is kept off the GPUs
    assert registry.platform("cpu").tensorflow_strategy(tf) == ("one", "/cpu:0")
    assert tf.hidden == [([], "GPU")]
    with pytest.raises(BenchError, match="bench runs TensorFlow on no mps device"):
        registry.platform("mps").tensorflow_strategy(tf)


def _cpuinfo(vendor: str, flags: str) -> str:
    return f"processor\t: 0\nvendor_id\t: {vendor}\nmodel name\t: X\nflags\t\t: {flags}\n"


@pytest.mark.parametrize(
    ("vendor", "flags", "said"),
    [
        ("AuthenticAMD", "avx2 avx512f avx512_bf16", "not an Intel CPU (AuthenticAMD)"),
        ("GenuineIntel", "avx2 fma", "an Intel CPU without AVX-512 or AMX"),
        ("GenuineIntel", "avx2 avx512f amx_tile", None),
    ],
)
def test_ipex_on_a_cpu_it_was_not_made_for_is_said_with_what_it_measured(
    vendor, flags, said, tmp_path, monkeypatch
):
    from bench.platforms import cpu

    (tmp_path / "cpuinfo").write_text(_cpuinfo(vendor, flags))
    monkeypatch.setattr(cpu, "_CPUINFO", tmp_path / "cpuinfo")
    torch_framework, platform = registry.framework("torch"), registry.platform("cpu")
    note = torch_framework.optimization_note(platform, "ipex")
    if said is None:
        assert note is None
    else:
        assert note.startswith(f"--optimize ipex: this is {said}, which IPEX was not made for")
        assert "0.91-0.93x of the same run without IPEX" in note
    assert torch_framework.optimization_note(platform, "fused") is None
