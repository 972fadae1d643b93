"""TensorFlow and JAX: the same work as PyTorch, the same CLI, the same result schema.

TensorFlow and PyTorch cannot share a process (importing torchvision after TensorFlow
crashes), so everything TensorFlow runs in a child: bench's own, or a small script.
"""

import importlib.util
import json
import subprocess
import sys

import pytest

from bench import registry
from bench.config.run_config import PointConfig
from bench.result import catalog
from tests.conftest import only_result, run_bench

FRAMEWORKS = [
    pytest.param(
        name,
        marks=pytest.mark.skipif(
            importlib.util.find_spec(module) is None, reason=f"{module} is not installed"
        ),
    )
    for name, module in (("tensorflow", "tensorflow"), ("jax", "jax"))
]
WORKLOADS = ["tiny", "cnn-s", "cnn-m", "cnn-l", "cnn-xl", "resnet50", "resnet50-cifar", "bert-base",
             "bert-large", "gpt2", "vit-b16", "transformer-big"]  # fmt: skip

COUNT_SCRIPT = """
import json, sys
from bench import registry
from bench.config.run_config import PointConfig
framework = registry.framework(sys.argv[1])
counts = {}
for name in sys.argv[2:]:
    point = PointConfig(workload=name, framework=sys.argv[1], batch_size=2)
    counts[name] = framework.count_parameters(point.spec, point)
print(json.dumps(counts))
"""


def _torch_count(name: str) -> int:
    point = PointConfig(workload=name, batch_size=2)
    return registry.framework("torch").count_parameters(point.spec, point)


@pytest.mark.long
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_workload_has_the_torch_parameter_count_within_one_percent(framework):
    pytest.importorskip("torch")
    assert all(framework in registry.workload(w).frameworks() for w in WORKLOADS)
    done = subprocess.run(
        [sys.executable, "-c", COUNT_SCRIPT, framework, *WORKLOADS],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    counts = json.loads(done.stdout.splitlines()[-1])
    for name in WORKLOADS:
        reference = _torch_count(name)
        assert abs(counts[name] - reference) / reference < 0.01, (name, counts[name], reference)
    # Where the architectures are written layer for layer, the counts are exact.
    assert counts["bert-base"] == 109_514_298 and counts["cnn-xl"] == 1_662_794
    assert counts["bert-large"] == 335_174_458 and counts["gpt2"] == 124_439_808
    assert counts["vit-b16"] == 86_567_656 and counts["transformer-big"] == 214_249_472


@pytest.mark.slow
@pytest.mark.long
@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("workload", ["gpt2", "transformer-big"])
def test_token_models_learn_and_report_tokens_per_second(tmp_path, framework, workload):
    done = run_bench(
        workload, "--framework", framework, "--device", "cpu", "--seq-len", "16",
        "--batch-size", "4", "--steps", "4", "--warmup-steps", "1", "--output-dir", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    point = only_result(tmp_path)["points"][0]
    assert point["status"] == "ok", point["error"]
    # At the start about ln(vocabulary): ln(50,257) = 10.8, ln(37,000) = 10.5.
    assert point["loss_last"][0] < point["loss_first"][0] < 12
    assert point["unit_throughput"]["unit"] == "tokens/s"
    assert point["unit_throughput"]["value"] == pytest.approx(16 * point["throughput"]["value"])


@pytest.mark.slow
@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("workload", ["tiny", "cnn-s"])
def test_training_loss_falls_and_the_result_has_the_torch_schema(tmp_path, framework, workload):
    done = run_bench(
        workload,
        "--framework",
        framework,
        "--device",
        "cpu",
        "--batch-size",
        "32",
        "--steps",
        "25",
        "--warmup-steps",
        "2",
        "--output-dir",
        str(tmp_path),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    saved = only_result(tmp_path)
    point = saved["points"][0]
    assert point["status"] == "ok", point["error"]
    assert len(point["warmup_times_s"][0]) == 2 and len(point["step_times_s"][0]) == 25
    assert point["loss_last"][0] < 0.8 * point["loss_first"][0]
    assert point["devices"] == 1 and point["details"]["per_device_batch"] == 32
    assert point["memory_format"] == "channels_last"  # NHWC, recorded as what it is
    assert point["throughput"]["unit"] == "samples/s" and point["throughput"]["value"] > 0
    assert point["parameters"] == {"tiny": 5354, "cnn-s": 122_570}[workload]
    assert point["peak_memory_bytes"][0] > 0
    # Model FLOPs are PyTorch's count of the same workload, for every framework.
    reference = catalog.reference_flops(workload, registry.workload(workload).input_shape())
    assert point["flops_per_sample"] == pytest.approx(reference, rel=1e-9)
    env = saved["environment"]
    assert env["framework"]["name"] == framework and env["framework"][framework]
    assert "torch" not in env["framework"]  # the run's own framework, not the FLOP counter's


@pytest.mark.slow
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_mixed_precision_trains(tmp_path, framework):
    done = run_bench(
        "tiny",
        "--framework",
        framework,
        "--device",
        "cpu",
        "--precision",
        "bf16,fp16",
        "--batch-size",
        "16",
        "--steps",
        "20",
        "--output-dir",
        str(tmp_path),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    points = only_result(tmp_path)["points"]
    assert [p["precision"] for p in points] == ["bf16", "fp16"]
    for point in points:
        assert point["status"] == "ok", point["error"]
        assert point["loss_last"][0] < point["loss_first"][0]


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="no tensorflow")
def test_tensorflow_xla_compile_is_a_sweep_axis(tmp_path):
    done = run_bench(
        "tiny",
        "--framework",
        "tensorflow",
        "--device",
        "cpu",
        "--compile",
        "none,xla",
        "--steps",
        "5",
        "--output-dir",
        str(tmp_path),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    points = only_result(tmp_path)["points"]
    assert [(p["compile"], p["details"]["jit_compile"]) for p in points] == [
        (None, False),
        ("xla", True),
    ]


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="no jax")
def test_jax_compiles_ahead_of_time_outside_the_steps(tmp_path):
    done = run_bench(
        "tiny",
        "--framework",
        "jax",
        "--device",
        "cpu",
        "--steps",
        "5",
        "--output-dir",
        str(tmp_path),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    point = only_result(tmp_path)["points"][0]
    details = point["details"]
    assert details["compile_s"] > 0 and details["mesh"] == {"data": 1}
    # XLA's own count of the whole step (optimizer included) is near the reference.
    assert 0.5 < details["xla_flops_per_sample"] / point["flops_per_sample"] < 2
    # Compiled before warm-up: no step takes as long as the compilation did.
    assert max(point["warmup_times_s"][0] + point["step_times_s"][0]) < details["compile_s"]


@pytest.mark.parametrize(
    ("framework", "args", "named"),
    [
        ("tensorflow", ["--compile", "inductor"], "compile: 'inductor'"),
        ("jax", ["--compile", "xla"], "compile: 'xla'"),
        ("jax", ["--threads", "2"], "threads:"),
        ("tensorflow", ["--memory-format", "contiguous"], "--memory-format: 'contiguous'"),
        ("jax", ["--data", "loader"], "data: 'loader'"),
        ("tensorflow", ["--precision", "tf32"], "precision 'tf32'"),
        ("jax", ["--device", "mps"], "device 'mps' is not available"),
        ("mxnet", [], "unknown framework 'mxnet'"),
        ("torch", ["--compile", "inductor:fast"], "compile: 'inductor:fast'"),
        ("torch", ["--compile", "aot_eager:reduce-overhead"], "inductor:reduce-overhead"),
        ("torch", ["--optimize", "fuse"], "optimize: 'fuse'"),
    ],
)
def test_bad_input_is_one_line_naming_the_value(framework, args, named):
    if framework == "tensorflow" and importlib.util.find_spec("tensorflow") is None:
        pytest.skip("no tensorflow")
    done = run_bench(
        "tiny", "--framework", framework, "--device", "cpu", *args, "--output-dir", "/nonexistent"
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and named in lines[0], done.stderr


@pytest.mark.full  # the JAX platform says why: JAX must be installed
def test_tpu_without_a_tpu_says_why_and_how():
    done = run_bench("tiny", "--framework", "jax", "--device", "tpu")
    assert done.returncode == 2
    assert "device 'tpu' is not available" in done.stderr
    assert "libtpu" in done.stderr or "no TPU device is visible" in done.stderr


def test_torch_on_tpu_points_to_the_frameworks_that_drive_it():
    done = run_bench("tiny", "--device", "tpu")
    assert done.returncode == 2 and "--framework jax or --framework tensorflow" in done.stderr


@pytest.mark.slow
def test_reference_flops_table_equals_a_live_pytorch_count():
    pytest.importorskip("torch")
    for name, spec in registry.workloads().items():
        if not catalog.in_reference_flops(spec):
            assert catalog.reference_flops(name, spec.input_shape()) is None, name
            continue  # counted live where it runs: only PyTorch runs it
        point = PointConfig(workload=name, batch_size=spec.min_batch_size)
        session = registry.framework("torch").prepare(point, registry.platform("cpu"))
        live = session.count_flops()
        assert catalog.reference_flops(name, spec.input_shape()) == pytest.approx(live), name


@pytest.mark.parametrize(("framework", "label"), [("tensorflow", "TensorFlow"), ("jax", "JAX")])
def test_tensorflow_and_jax_run_where_the_platform_has_an_xla_device(framework, label):
    pytest.importorskip(framework)
    reason = registry.framework(framework).unavailable_reason(registry.platform("rocm"))
    assert reason == f"bench runs {label} on cpu, cuda, tpu, not rocm"
    assert registry.framework(framework).unavailable_reason(registry.platform("cpu")) is None


@pytest.mark.parametrize("framework", ["tensorflow", "jax"])
def test_off_tpu_the_child_skips_libtpus_metadata_query(monkeypatch, framework):
    # In the TPU images, importing either framework off a TPU VM would wait for ever on
    # the GCE metadata server (found by CI's smoke run of bench:tpu, --network none).
    for name in ("TPU_SKIP_MDS_QUERY", "JAX_PLATFORMS"):
        monkeypatch.delenv(name, raising=False)
    registry.framework(framework).configure(registry.platform("cpu"))
    import os

    assert os.environ["TPU_SKIP_MDS_QUERY"] == "1"
    if framework == "jax":
        assert os.environ["JAX_PLATFORMS"] == "cpu"
    monkeypatch.delenv("TPU_SKIP_MDS_QUERY")
    registry.framework(framework).configure(registry.platform("tpu"))
    assert "TPU_SKIP_MDS_QUERY" not in os.environ


def test_a_global_batch_must_split_evenly_over_the_devices():
    from bench.frameworks import _xla
    from bench.util.errors import BenchError

    assert _xla.split_batch(1024, 8) == 128  # the TPUv2 vs V100 comparison: a TPU v2-8
    with pytest.raises(BenchError, match="batch_size: 1000 does not split evenly over 16"):
        _xla.split_batch(1000, 16)
