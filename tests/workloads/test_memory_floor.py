"""A model whose weights, gradients and optimizer state cannot fit is refused before any
child starts (a run), or answered 'no batch fits' (a max-batch search), from its
parameter count alone."""

import json

import pytest

from bench import registry
from bench.config.run_config import PointConfig, RunConfig
from bench.platforms import cpu, cuda
from bench.run.runner import Runner
from bench.workloads import llama3, memory_floor

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("name", ["llama3-tiny", "llama3-1b", "llama3-8b"])
def test_the_parameter_formula_counts_the_model_built_on_the_meta_device(name):
    spec = registry.workload(name)
    with torch.device("meta"):
        model = spec.implementation("torch").build_model(spec, PointConfig(workload=name))
    assert llama3.parameters(llama3.SIZES[name]) == sum(p.numel() for p in model.parameters())


def test_the_state_is_16_bytes_a_parameter_for_adamw_in_fp32():
    state, what = registry.workload("llama3-8b").model_state()
    assert state == 16 * 8_030_261_248 and "AdamW" in what and "8,030,261,248" in what


def test_a_run_whose_state_cannot_fit_is_one_line_with_status_2_and_starts_nothing(
    capsys, tmp_path
):
    from bench.cli import main

    # llama3-1b holds 19.8 GB of state; a 1 GiB limit is a smaller device.
    code = main(["llama3-1b", "--device", "cpu", "--memory-limit", "1GiB", "--output-dir",
                 str(tmp_path)])  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "llama3-1b does not fit on one cpu device with 1.00 GiB" in err
    assert "18.42 GiB" in err and "--devices" in err
    assert not list(tmp_path.iterdir())  # no result file: nothing was run


def test_sharding_divides_the_state_over_every_rank_of_every_machine():
    config = RunConfig(workload="llama3-1b", memory_limit_bytes=3 * 2**30, devices=(8,))
    assert memory_floor.shortfall(config, 8) is None  # 19.8 GB / 8 = 2.3 GiB a rank
    assert "does not fit on 4 cpu ranks with 3.00 GiB each" in memory_floor.shortfall(config, 4)
    two = RunConfig(workload="llama3-1b", memory_limit_bytes=3 * 2**30, devices=(4,), nnodes=2,
                    rdzv_endpoint="10.0.0.1:29500", repeats=1)  # fmt: skip
    assert memory_floor.shortfall(two, 4) is None


def test_a_workload_without_a_state_formula_is_never_refused():
    config = RunConfig(workload="resnet50", memory_limit_bytes=1)
    assert memory_floor.shortfall(config, None) is None


def test_the_max_batch_search_answers_no_batch_fits_with_the_reason_and_no_probe(tmp_path):
    def spawn(point, job, progress):
        raise AssertionError("no probe for a model whose state cannot fit")

    config = RunConfig(workload="llama3-1b", memory_limit_bytes=2**30, find_max_batch=True)
    runner = Runner(config, output_dir=tmp_path, spawn=spawn)
    outcome = runner.run()
    (search,) = outcome.max_batch
    assert search.status == "done" and search.largest_ok is None and not search.probes
    assert search.display == "*" and "does not fit" in search.error
    saved = json.loads(runner.path.read_text())
    assert saved["max_batch"][0]["error"] == search.error


def test_the_cpu_offers_each_rank_its_share_of_the_machine_s_memory():
    total = cpu.PLATFORM.memory_per_rank(1)
    assert total > 2**30 and cpu.PLATFORM.memory_per_rank(4) == total // 4


def test_a_gpu_machine_offers_its_largest_gpu_as_read_by_nvml(monkeypatch):
    import contextlib
    from types import SimpleNamespace

    sizes = [16 * 2**30, 80 * 2**30]
    nv = SimpleNamespace(
        nvmlDeviceGetCount=lambda: len(sizes),
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetMemoryInfo=lambda h: SimpleNamespace(total=sizes[h]),
    )
    monkeypatch.setattr(cuda, "_nvml", lambda: contextlib.nullcontext(nv))
    assert cuda.PLATFORM.memory_per_rank(2) == 80 * 2**30
    monkeypatch.setattr(cuda, "_nvml", lambda: contextlib.nullcontext(None))
    assert cuda.PLATFORM.memory_per_rank(1) is None  # no driver: the child finds out
