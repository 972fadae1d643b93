"""MLX (bench/frameworks/mlx.py): the same work as PyTorch on MLX's CPU backend here, one
line where MLX or its device is missing. Real training needs mlx[cpu]: full tier."""

import importlib.util
import subprocess
import sys

import pytest

from bench import registry
from bench.config.run_config import PointConfig
from tests.conftest import ROOT, only_result, run_bench

needs_mlx = pytest.mark.skipif(importlib.util.find_spec("mlx") is None, reason="no mlx")
# Parameters of each workload's PyTorch model, as counted (the MLX one must equal them).
TORCH_PARAMETERS = {"cnn-s": 122_570, "llama3-tiny": 164_160, "gpt2": 124_439_808,
                    "resnet50": 25_557_032, "resnet50-cifar": 23_528_522}  # fmt: skip

# bench as a user runs it where MLX is not installed: the module hidden from the import system.
WITHOUT_MLX = (
    "import sys; sys.modules['mlx'] = None; from bench.cli import main; "
    "sys.exit(main(sys.argv[1:]))"
)


def test_without_mlx_a_run_is_one_line_naming_the_extra(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_MLX, "cnn-s", "--framework", "mlx", "--device", "cpu",
         "--output-dir", str(tmp_path)],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "MLX is not installed (pip install 'bench[mlx]')" in lines[0]


def test_mlx_runs_where_the_platform_names_an_mlx_device(monkeypatch):
    real = importlib.util.find_spec  # installed or not, the platform's answer comes first
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: object() if n == "mlx" else real(n, *a)
    )
    reason = registry.framework("mlx").unavailable_reason(registry.platform("rocm"))
    assert reason == "bench runs MLX on cpu, cuda, mps, not rocm"
    devices = {name: p.mlx_device for name, p in registry.platforms().items()}
    assert devices == {"cpu": "cpu", "cuda": "gpu", "mps": "gpu", "rocm": None, "tpu": None}


@pytest.mark.parametrize(("precision", "refused"), [("fp32", False), ("bf16", False),
                                                     ("fp16", True), ("tf32", True)])  # fmt: skip
def test_mlx_trains_in_float32_or_bfloat16_only(precision, refused):
    reason = registry.framework("mlx").precision_unsupported(registry.platform("cpu"), precision)
    assert (reason is not None) == refused
    if refused:
        assert f"precision {precision!r} is not available with mlx" in reason


def test_a_precision_mlx_does_not_train_at_is_refused_in_the_parent():
    """Before any child starts, MLX installed or not (the config checks it)."""
    from bench.config.run_config import RunConfig
    from bench.util.errors import UsageError

    with pytest.raises(UsageError, match="precision 'fp16' is not available with mlx; choose"):
        RunConfig("cnn-s", framework="mlx", device="cpu", precisions=("fp16",))
    RunConfig("cnn-s", framework="mlx", device="cpu", precisions=("bf16",))


@pytest.mark.full  # MLX installed: its absence would be the one line
@needs_mlx
@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--compile", "inductor"], "--compile: 'inductor' is not available with mlx"),
        (["--memory-format", "contiguous"], "--memory-format: 'contiguous'"),
    ],
)
def test_bad_input_to_mlx_is_one_line(args, named):
    done = run_bench("cnn-s", "--framework", "mlx", "--device", "cpu", *args,
                     "--output-dir", "/nonexistent")  # fmt: skip
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and named in lines[0], done.stderr


@pytest.mark.full
@needs_mlx
@pytest.mark.parametrize("workload", sorted(TORCH_PARAMETERS))
def test_each_mlx_model_has_the_torch_parameter_count(workload):
    point = PointConfig(workload=workload, framework="mlx", batch_size=2)
    counted = registry.framework("mlx").count_parameters(point.spec, point)
    assert counted == TORCH_PARAMETERS[workload]


@pytest.mark.full
@needs_mlx
@pytest.mark.parametrize(("workload", "args"), [
    ("cnn-s", ["--batch-size", "16", "--steps", "30"]),
    ("resnet50-cifar", ["--batch-size", "4", "--steps", "8"]),  # batch norm's running state
    ("llama3-tiny", ["--steps", "30"]),
    ("llama3-tiny", ["--steps", "30", "--compile", "mlx", "--precision", "bf16"]),
])  # fmt: skip
def test_mlx_trains_its_loss_falls_and_each_step_is_kept(tmp_path, workload, args):
    done = run_bench(workload, "--framework", "mlx", "--device", "cpu", "--warmup-steps", "2",
                     *args, "--output-dir", str(tmp_path))  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    saved = only_result(tmp_path)
    point = saved["points"][0]
    assert point["status"] == "ok", point["error"]
    steps = int(args[args.index("--steps") + 1])
    assert len(point["warmup_times_s"][0]) == 2 and len(point["step_times_s"][0]) == steps
    assert point["loss_last"][0] < 0.9 * point["loss_first"][0]
    assert point["parameters"] == TORCH_PARAMETERS[workload]
    assert point["peak_memory_bytes"][0] > 0
    details = point["details"]
    assert details["step_clock"] == "host_clock_after_sync"
    assert details["device"] == "Device(cpu, 0)"
    assert details["compiled"] == ("--compile" in args)
    assert details["param_dtype"] == ("bfloat16" if "bf16" in args else "float32")
    assert saved["environment"]["framework"]["mlx"]


def test_an_mlx_that_cannot_load_is_one_line_naming_the_install(monkeypatch):
    """On Linux `pip install mlx` without its [cpu] backend: mlx.core fails to import."""
    monkeypatch.setitem(sys.modules, "mlx.core", None)  # importing it raises ImportError
    reason = registry.platform("cpu").mlx_unavailable()
    assert reason.startswith("MLX cannot load here (") and reason.endswith(
        ": pip install 'bench[mlx]'"
    )
