"""--optimize ipex and --compile ipex: checked in the parent, applied in the child. The real
IPEX runs in bench:xeon-ipex (its smoke run); here a fake package of the same name
records each ipex.optimize call, so the tests see what the child really did."""

import json

import pytest

from bench import result
from bench.commands.tune import default_axes
from bench.config.run_config import PointConfig, RunConfig
from bench.frameworks import _ipex
from bench.util.errors import UsageError
from tests.conftest import make_fake_ipex, only_result, run_bench


def test_ipex_is_a_torch_cpu_axis_named_in_one_line():
    config = RunConfig(workload="tiny", optimizations=(None, "ipex"), batch_sizes=(8, 16))
    assert [(p.optimize, p.batch_size) for p in config.points()] == [
        (None, 8), (None, 16), ("ipex", 8), ("ipex", 16)
    ]  # fmt: skip
    with pytest.raises(UsageError, match="optimize: 'fast' is not available with torch; it "):
        PointConfig(workload="tiny", optimize="fast")
    with pytest.raises(UsageError, match="optimize: 'ipex' is not available with jax; it offers"):
        PointConfig(workload="cnn-s", framework="jax", optimize="ipex")
    with pytest.raises(UsageError, match=r"ipex: runs on the cpu device only .* not 'cuda'"):
        PointConfig(workload="tiny", device="cuda", compile="ipex")
    with pytest.raises(UsageError, match="optimizations: the max-batch search takes one value"):
        RunConfig(workload="tiny", optimizations=(None, "ipex"), find_max_batch=True)


def test_without_ipex_the_run_stops_before_anything_is_measured(tmp_path):
    done = run_bench(
        "tiny", "--device", "cpu", "--optimize", "none,ipex", "--compile", "ipex",
        "--output-dir", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 2 and not list(tmp_path.glob("*.json"))
    assert done.stderr.strip() == (
        "bench: error: --optimize ipex and --compile ipex: intel-extension-for-pytorch is not "
        "installed; use the bench:xeon-ipex image, or pip install "
        "intel-extension-for-pytorch==2.8.0 with torch 2.8 (its last CPU release)"
    )


def test_an_ipex_made_for_another_torch_is_named(tmp_path, monkeypatch):
    make_fake_ipex(tmp_path, monkeypatch, "2.8.0")
    reason = _ipex.unavailable()
    assert reason is not None and reason.startswith(
        "intel-extension-for-pytorch 2.8.0 runs with torch 2.8.*, this is torch "
    )


@pytest.mark.slow
def test_the_child_applies_ipex_optimize_and_records_it(tmp_path, fake_ipex):
    done = run_bench(
        "tiny", "--device", "cpu", "--steps", "2", "--warmup-steps", "1", "--batch-size", "8",
        "--precision", "fp32,bf16", "--optimize", "none,ipex", "--output-dir", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    points = only_result(tmp_path)["points"]
    assert [(p["optimize"], p["precision"]) for p in points] == [
        (None, "fp32"), (None, "bf16"), ("ipex", "fp32"), ("ipex", "bf16")
    ]  # fmt: skip
    assert all(p["status"] == "ok" for p in points)
    assert "ipex_optimize" not in points[0]["details"]
    version = points[2]["details"]["ipex_optimize"]["version"]
    assert points[2]["details"]["ipex_optimize"] == {
        "dtype": "torch.float32", "weights_prepack": True, "version": version
    }  # fmt: skip
    assert points[3]["details"]["ipex_optimize"]["dtype"] == "torch.bfloat16"
    # one call per child that trained with it (the FLOPs child counts the bare model),
    # on a model in training mode
    calls = [json.loads(line) for line in fake_ipex.read_text().splitlines()]
    assert calls == [
        {"dtype": "torch.float32", "weights_prepack": True, "training": True},
        {"dtype": "torch.bfloat16", "weights_prepack": True, "training": True},
    ]
    assert "optimize=ipex" in done.stdout  # the table's label
    assert result.load(next(tmp_path.glob("*.json"))).points[2].optimize == "ipex"


def test_tune_adds_ipex_where_it_is_installed(fake_ipex):
    config = RunConfig(workload="tiny")
    assert default_axes(config, set())["optimizations"] == (None, "ipex")
    assert "optimizations" not in default_axes(config, {"--optimize"})
    jax = RunConfig(workload="cnn-s", framework="jax")
    assert "optimizations" not in default_axes(jax, set())


def test_tune_leaves_ipex_out_where_it_is_not(tmp_path, monkeypatch):
    make_fake_ipex(tmp_path, monkeypatch, "2.8.0")  # made for another torch
    assert default_axes(RunConfig(workload="tiny"), set())["optimizations"] == (None,)


def test_the_table_and_comparisons_tell_ipex_points_apart():
    import dataclasses

    from rich.console import Console

    from bench.report.compare import row_key
    from bench.report.table import tables
    from tests.result.test_drift import machine, noisy_point

    bare = noisy_point(64, 0.1)
    ipex = dataclasses.replace(noisy_point(64, 0.08), optimize="ipex")
    run = machine("A", [bare, ipex])
    console = Console(width=250, record=True)
    for table in tables(run):
        console.print(table)
    rows = [line for line in console.export_text().splitlines() if line.startswith("│")]
    assert [row.split("│")[3].strip() for row in rows[:2]] == ["none", "ipex"]
    assert row_key(run, bare) != row_key(run, ipex)
    assert row_key(run, ipex)[-1] == "optimize=ipex"


def test_a_frameworks_preflight_stops_the_run_before_any_child(tmp_path, monkeypatch, capsys):
    """IPEX is torch's own concern: the running commands ask the framework what this
    machine lacks (Framework.preflight), and say its one line."""
    from bench import cli, registry

    seen = []

    def lacks(self, points):
        seen.extend(points)
        raise UsageError("--optimize thing: not installed here")

    monkeypatch.setattr(type(registry.framework("torch")), "preflight", lacks)
    code = cli.main(["run", "tiny", "--batch-size", "8,16", "--output-dir", str(tmp_path)])
    assert code == 2 and not list(tmp_path.glob("*.json"))
    assert capsys.readouterr().err == "bench: error: --optimize thing: not installed here\n"
    assert [p.batch_size for p in seen] == [8, 16]


def test_ipex_decisions_are_the_frameworks():
    from bench import registry

    torch, jax = registry.framework("torch"), registry.framework("jax")
    cpu, cuda = registry.platform("cpu"), registry.platform("cuda")
    assert torch.usable_optimizations(cuda) == () and jax.usable_optimizations(cpu) == ()
    with pytest.raises(UsageError, match=r"^ipex: runs on the cpu device only .* not 'cuda'$"):
        torch.check_platform(cuda, (None,), ("ipex",))
    torch.check_platform(cpu, ("ipex",), ("ipex",))
    jax.preflight([PointConfig(workload="cnn-s", framework="jax")])
