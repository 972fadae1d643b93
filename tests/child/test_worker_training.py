"""Real training in real child processes, on the CPU (seconds each)."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from bench import result
from tests.conftest import only_result, run_bench

pytest.importorskip("torch")
pytestmark = pytest.mark.slow


def test_tiny_training_run_loss_falls_and_result_is_complete(tmp_path):
    done = run_bench(
        "tiny",
        "--device",
        "cpu",
        "--batch-size",
        "16",
        "--steps",
        "30",
        "--output-dir",
        str(tmp_path),
        "--json",
    )
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)  # --json: stdout carries only the result
    saved = only_result(tmp_path)
    assert printed == saved
    point = saved["points"][0]
    assert point["status"] == "ok"
    assert len(point["warmup_times_s"][0]) == 5 and len(point["step_times_s"][0]) == 30
    assert point["loss_last"][0] < 0.5 * point["loss_first"][0]
    assert point["throughput"]["value"] > 0 and point["throughput"]["unit"] == "samples/s"
    assert point["flops_per_sample"] > 0 and point["parameters"] == 5354
    env = saved["environment"]
    assert env["framework"]["torch"] and env["cpu"]["logical_cores"] >= 1
    assert env["accelerator"]["platform"] == "cpu"
    assert env["bench"]["version"] and env["command"][:3] == ["bench", "tiny", "--device"]
    assert saved["config"]["batch_sizes"] == [16] and saved["status"] == "complete"


def test_precisions_memory_format_and_data_loader(tmp_path):
    done = run_bench(
        "tiny",
        "--device",
        "cpu",
        "--precision",
        "fp32,bf16,fp16",
        "--channels-last",
        "--data",
        "loader",
        "--num-workers",
        "1",
        "--steps",
        "3",
        "--warmup-steps",
        "1",
        "--output-dir",
        str(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    points = only_result(tmp_path)["points"]
    assert [(p["precision"], p["status"], p["memory_format"]) for p in points] == [
        ("fp32", "ok", "channels_last"),
        ("bf16", "ok", "channels_last"),
        ("fp16", "ok", "channels_last"),
    ]
    assert [p["details"]["grad_scaler"] for p in points] == [False, False, True]


def test_epoch_mode_keeps_every_epoch(tmp_path):
    done = run_bench(
        "cnn-s",
        "--device",
        "cpu",
        "--epochs",
        "3",
        "--epoch-samples",
        "256",
        "--batch-size",
        "64",
        "--output-dir",
        str(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    point = only_result(tmp_path)["points"][0]
    assert len(point["epoch_times_s"][0]) == 3 and len(point["step_times_s"][0]) == 12
    assert point["warmup_times_s"] == [[]]
    assert point["epoch_time"]["n"] == 2  # epochs 2..3


def test_max_batch_search_against_a_memory_cap(tmp_path):
    done = run_bench(
        "resnet50",
        "--device",
        "cpu",
        "--find-max-batch",
        "--memory-limit",
        "1500MiB",
        "--output-dir",
        str(tmp_path),
    )
    search = only_result(tmp_path)["max_batch"][0]
    assert done.returncode == 0, search  # the probes say what went wrong
    assert search["status"] == "done"
    largest, failing = search["largest_ok"], search["first_failing"]
    assert largest is not None and failing == largest + 1
    for probe in search["probes"]:
        assert probe["status"] == ("ok" if probe["batch_size"] <= largest else "oom")


def test_nothing_fits_is_a_star(tmp_path):
    done = run_bench(
        "resnet50",
        "--device",
        "cpu",
        "--find-max-batch",
        "--memory-limit",
        "600MiB",
        "--output-dir",
        str(tmp_path),
    )
    loaded = result.load(next(tmp_path.glob("*.json")))
    assert done.returncode == 0, loaded.max_batch[0].probes
    assert loaded.max_batch[0].display == "*" and loaded.max_batch[0].first_failing == 1
    assert "*" in done.stdout


def test_ctrl_c_keeps_finished_points(tmp_path):
    bench = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bench",
            "tiny",
            "--device",
            "cpu",
            "--batch-size",
            "8,16,32,64",
            "--steps",
            "1500",
            "--output-dir",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        files = list(tmp_path.glob("*.json"))
        if files and json.loads(files[0].read_text())["points"]:
            break
        time.sleep(0.2)
    else:
        bench.kill()
        pytest.fail("no point finished in time")
    bench.send_signal(signal.SIGINT)
    _, stderr = bench.communicate(timeout=60)
    assert bench.returncode == 130, stderr
    saved = json.loads(files[0].read_text())
    assert saved["status"] == "interrupted"
    assert 1 <= len(saved["points"]) < 4 and saved["points"][0]["status"] == "ok"
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def test_rerun_repeats_the_saved_config(tmp_path):
    first = run_bench(
        "tiny",
        "--device",
        "cpu",
        "--batch-size",
        "4",
        "--steps",
        "3",
        "--output-dir",
        str(tmp_path / "a"),
    )
    assert first.returncode == 0, first.stderr
    original = next((tmp_path / "a").glob("*.json"))
    again = run_bench("rerun", str(original), "--output-dir", str(tmp_path / "b"))
    # 0: the same, or cannot tell; 3: drifted (3 steps on a busy 2-core machine may)
    assert again.returncode in (0, 3), again.stderr
    assert only_result(tmp_path / "b")["config"] == json.loads(original.read_text())["config"]
    assert "drift per point (new against old)" in again.stdout
    assert "batch 4 fp32" in again.stdout and (
        "no drift" in again.stdout or "drift: 1" in again.stdout or "cannot tell: 1" in again.stdout
    )


def test_show_prints_the_table_again(fixture_v1):
    done = run_bench("show", str(fixture_v1))
    assert done.returncode == 0 and "samples/s" in done.stdout and "bf16" in done.stdout


def test_torch_compile_keeps_compilation_in_warmup(tmp_path):
    done = run_bench(
        "tiny",
        "--device",
        "cpu",
        "--compile",
        "inductor",
        "--steps",
        "5",
        "--warmup-steps",
        "2",
        "--output-dir",
        str(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    point = only_result(tmp_path)["points"][0]
    assert point["compile"] == "inductor" and point["status"] == "ok"
    # The first warm-up step compiles: far slower than any measured step.
    assert point["warmup_times_s"][0][0] > 10 * max(point["step_times_s"][0])


@pytest.mark.full  # two compilations: 15 s
def test_compile_modes_and_the_fused_optimizer_train_and_are_recorded(tmp_path):
    # The levers of the GPU campaign's ResNet-50 table; on the CPU, reduce-overhead's CUDA
    # graphs are skipped by inductor and the step still trains.
    done = run_bench(
        "tiny", "--device", "cpu", "--compile", "inductor:reduce-overhead",
        "--optimize", "none,fused", "--steps", "3", "--warmup-steps", "2",
        "--output-dir", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    points = only_result(tmp_path)["points"]
    assert [(p["compile"], p["optimize"], p["status"]) for p in points] == [
        ("inductor:reduce-overhead", None, "ok"), ("inductor:reduce-overhead", "fused", "ok"),
    ]  # fmt: skip
    optimizers = [p["details"]["optimizer"] for p in points]
    assert "fused" not in optimizers[0] and "fused=True" in optimizers[1], optimizers


def test_compile_arguments_name_the_backend_and_the_mode():
    from bench.frameworks._torch_compile import compile_arguments, uses_cuda_graphs

    assert compile_arguments("inductor") == ("inductor", None)
    assert compile_arguments("inductor:max-autotune") == ("inductor", "max-autotune")
    assert uses_cuda_graphs("inductor:reduce-overhead") and uses_cuda_graphs(
        "inductor:max-autotune"
    )
    assert not uses_cuda_graphs("inductor:max-autotune-no-cudagraphs")
    assert not uses_cuda_graphs("inductor") and not uses_cuda_graphs(None)


def test_a_child_past_its_timeout_is_stopped_and_reported():
    from bench.config.run_config import PointConfig
    from bench.run.launchers.process import spawn_worker

    point = PointConfig(workload="tiny", steps=100_000)
    response = spawn_worker(point, "measure", lambda *a: None, timeout_s=0.5)
    assert response.to_json() == {"status": "error", "error": "timed out after 0.5 s"}
