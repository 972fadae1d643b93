"""compare at a fleet's scale: a machine is its hardware (its runs at other times pool,
its frameworks are rows), the default baseline is the column most comparable with the
others, and what is set apart or refused is said in a bounded number of lines."""

import importlib.util
import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from bench import result
from bench.config.run_config import RunConfig
from bench.report import compare as cmp
from bench.report import grids, records
from bench.stats.estimate import geometric_mean, ratio_interval
from bench.util.errors import UsageError
from tests.conftest import ROOT
from tests.report.test_compare import A100, V100, machine, point

H100 = "NVIDIA H100 80GB HBM3"


def _dated(res, started, **changes):
    return replace(res, started=started, **changes)


def test_runs_of_one_machine_at_other_times_are_one_column_and_their_repeats_pool():
    first = _dated(machine(V100, [point(64, [100, 101, 99])]), "2026-11-20T10:00:00+00:00")
    again = _dated(machine(V100, [point(64, [104, 105, 103])]), "2026-11-21T10:00:00+00:00")
    for run in (first, again):  # one pinned image, rerun a day later
        run.environment["image"] = {"name": "bench:cuda"}
    other = machine(A100, [point(64, [300, 302, 298])])
    loaded = [(Path("a.json"), first), (Path("b.json"), again), (Path("c.json"), other)]
    comparison = cmp.compare(loaded, "a100")
    assert [m.label for m in comparison.machines] == [V100, A100]
    assert comparison.title == "3 results from 2 machines"  # two runs pooled in one column
    [(_, [v100, a100])] = comparison.rows
    pooled = [100, 101, 99, 104, 105, 103]
    assert v100.point.repeat_throughputs() == pytest.approx(pooled)
    assert v100.throughput.n == 6
    base = a100.point.repeat_throughputs()
    assert v100.relative_ci95 == pytest.approx(ratio_interval(pooled, base))
    assert v100.relative == pytest.approx(geometric_mean(pooled) / geometric_mean(base))
    # each run's own figures stay, for a history: its file, start, image and throughput
    runs = [r for r in records.history_records(comparison) if r["machine"] == V100]
    assert [(r["file"], r["started"][:10], r["image"]) for r in runs] == [
        ("a.json", "2026-11-20", "bench:cuda"),
        ("b.json", "2026-11-21", "bench:cuda"),
    ]
    assert runs[1]["throughput"] == pytest.approx(104, rel=1e-3) and runs[1]["repeats"] == 3
    [record] = [r for r in records.records(comparison) if r["machine"] == V100]
    assert (record["runs"], record["repeats"], record["image"]) == (2, 6, "bench:cuda")
    assert record["started"].startswith("2026-11-21") and record["hardware"] == V100


def test_one_machine_natively_and_in_an_image_is_one_column_and_two_rows_never_pooled():
    # The Xeon CPU study's question: what does bench:xeon's runtime give on this CPU?
    cpu = "AMD EPYC"
    native = machine(cpu, [point(16, [6.5, 6.8, 7.0])])
    xeon = machine(cpu, [point(16, [10.0, 10.3, 10.6])])
    xeon.environment["image"] = {"name": "bench:xeon"}
    comparison = cmp.compare([(Path("n.json"), native), (Path("x.json"), xeon)], None)
    assert [m.label for m in comparison.machines] == [cpu]
    setups = {key[5]: cells[0].throughput.value for key, cells in comparison.rows}
    assert setups == {
        "native": pytest.approx(6.77, abs=0.01),
        "bench:xeon": pytest.approx(10.3, rel=1e-3),
    }


def test_a_machine_whose_run_ran_out_of_memory_once_keeps_the_runs_that_trained():
    ok = _dated(machine(V100, [point(64, [100, 101, 99])]), "2026-11-20")
    oom = _dated(machine(V100, [point(64, [], status="oom")]), "2026-11-21")
    comparison = cmp.compare([(Path("a"), ok), (Path("b"), oom)], None)
    [(_, [cell])] = comparison.rows
    assert cell.point.status == "ok" and cell.throughput.n == 3
    assert [r["status"] for r in records.history_records(comparison)] == ["ok", "oom"]


def test_torch_and_jax_on_one_machine_are_one_column_and_two_rows():
    torch = machine(H100, [point(256, [3000, 3010, 2990])])
    jax = machine(H100, [point(256, [4000, 4010, 3990])])
    jax.config = RunConfig(workload="resnet50", steps=20, framework="jax")
    a100 = machine(A100, [point(256, [2000, 2010, 1990])])
    loaded = [(Path("t.json"), torch), (Path("j.json"), jax), (Path("a.json"), a100)]
    comparison = cmp.compare(loaded, "a100")
    assert [m.label for m in comparison.machines] == [H100, A100]
    rows = {key[5]: cells for key, cells in comparison.rows}
    assert set(rows) == {"jax", "torch"}
    assert rows["jax"][0].throughput.value == pytest.approx(4000, rel=1e-3)
    assert rows["torch"][0].throughput.value == pytest.approx(3000, rel=1e-3)
    assert rows["torch"][1].relative == pytest.approx(1.0) and rows["jax"][1].point is None
    frameworks = {(r["setup"], r["machine"]): r["framework"] for r in records.records(comparison)}
    assert frameworks[("jax", H100)] == "jax" and frameworks[("jax", A100)] is None
    headers, body = grids.grid(comparison)
    assert "setup" in headers and sorted(row[5] for row in body) == ["jax", "torch"]


def _shared(name, batches, started):
    res = machine(name, [point(b, [100.0 + b, 101.0 + b, 99.0 + b]) for b in batches])
    return replace(res, started=started)


def test_the_default_baseline_is_the_machine_sharing_most_rows_not_the_earliest():
    sparse = _shared(H100, [512], "2026-01-01")  # earliest, but shares no row
    loaded = [
        (Path("h.json"), sparse),
        (Path("v.json"), _shared(V100, [64, 128], "2026-01-03")),
        (Path("a.json"), _shared(A100, [64, 128, 512], "2026-01-02")),
    ]
    comparison = cmp.compare(loaded, None)
    assert comparison.baseline.label == A100
    assert comparison.baseline_note.startswith(f"baseline: {A100} (")
    assert "shares the most rows" in comparison.baseline_note
    assert "--baseline" in comparison.baseline_note
    # a tie goes to the earliest
    loaded[2] = (Path("a.json"), _shared(A100, [64, 128], "2026-01-02"))
    assert cmp.compare(loaded, None).baseline.label == A100
    loaded[2] = (Path("a.json"), _shared(A100, [64, 128], "2026-01-04"))
    assert cmp.compare(loaded, None).baseline.label == V100


def test_results_set_apart_are_one_line_per_reason_with_a_count_and_their_files_in_json():
    loaded = [(Path("a.json"), machine(V100, [point(64, [100, 101, 99])]))]
    for n in range(40):  # a memory cap: measured differently
        capped = machine(A100, [point(64, [300])])
        capped.config = RunConfig(workload="resnet50", steps=20, memory_limit_bytes=2**34)
        loaded.append((Path(f"capped-{n}.json"), capped))
    for n in range(3):
        loaded.append((Path(f"long-{n}.json"), machine(A100, [point(64, [300])], steps=50)))
    comparison = cmp.compare(loaded, "v100")
    assert comparison.set_apart == [
        "40 results measured differently (memory_limit_bytes): set apart; "
        "their files are listed under set_apart in bench compare --format json",
        "3 results measured differently (steps): set apart; "
        "their files are listed under set_apart in bench compare --format json",
    ]
    data = grids.as_dict(comparison)["set_apart"]
    assert [(g["reason"], g["count"]) for g in data] == [
        ("measured differently (memory_limit_bytes)", 40),
        ("measured differently (steps)", 3),
    ]
    assert data[0]["files"][0] == {
        "file": "capped-0.json",
        "workload": "resnet50",
        "differs": "memory_limit_bytes 17179869184 (not None)",
        "reference": "a.json",
    }
    assert len(data[0]["files"]) == 40


def test_unreadable_files_in_a_folder_are_one_line_on_the_terminal(tmp_path, capsys):
    from bench.cli import main

    for name, res in (
        ("a", machine(V100, [point(64, [100])])),
        ("b", machine(A100, [point(64, [300])])),
    ):
        result.create(res, tmp_path / name)
    for n in range(30):
        (tmp_path / f"broken-{n}.json").write_text("{not json")
    assert main(["compare", str(tmp_path), "--baseline", "v100", "--format", "json"]) == 0
    captured = capsys.readouterr()
    warnings = [line for line in captured.err.splitlines() if "broken" in line or "30" in line]
    assert len(warnings) == 1 and warnings[0].startswith("bench: warning: 30 files")
    [group] = json.loads(captured.out)["set_apart"]
    assert group["count"] == 30 and group["reason"] == "could not be read as results"
    assert "invalid JSON" in group["files"][0]["error"]


def test_edited_files_in_a_folder_are_one_line_on_the_terminal(tmp_path, capsys):
    from bench.cli import main

    for n in range(20):  # results whose figures were changed after bench sealed them
        path = result.create(machine(V100 if n % 2 else A100, [point(64, [100 + n])]), tmp_path)
        path.write_text(path.read_text().replace('"batch_size": 64', '"batch_size": 65'))
    assert main(["compare", str(tmp_path), "--baseline", "v100"]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if "changed after" in line]
    assert len(lines) == 1, lines  # 20 lines before, one per file
    assert lines[0].startswith("bench: warning: 20 results were changed after bench wrote")


def _many(n):
    return [(Path(f"m{i}.json"), machine(f"Accel {i:02d}", [point(64, [100 + i])]))
            for i in range(n)]  # fmt: skip


@pytest.mark.parametrize(("selector", "how"), [("accel", "matches 40 machines"),
                                               ("tpu", "matches no machine")])  # fmt: skip
def test_a_refused_baseline_is_one_short_line_naming_some_candidates(selector, how):
    loaded = _many(40)
    with pytest.raises(UsageError) as refused:
        cmp.compare(loaded, selector)
    message = str(refused.value)
    assert "\n" not in message and len(message) < 600
    assert how in message and "Accel 00" in message and "(and 30 more)" in message
    assert "Accel 39" not in message


def _fabricate():
    path = ROOT / "benchmarks" / "report_scale.py"
    spec = importlib.util.spec_from_file_location("report_scale", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_fleets_results_make_one_column_per_machine(tmp_path, capsys):
    """200 files from 20 machines (the scale benchmark's own, 10 runs each, some in JAX,
    some capped): 20 columns, a baseline chosen, one line per reason set apart."""
    from bench.cli import main

    scale = _fabricate()
    scale.fabricate(tmp_path / "results", files=200, n_machines=20)
    out = tmp_path / "c.json"
    assert main(["compare", str(tmp_path / "results"), "--format", "json", "-o", str(out)]) == 0
    err = capsys.readouterr().err.splitlines()
    data = json.loads(out.read_text())
    assert len(data["machines"]) == 20
    assert (
        sum(len(m["files"]) for m in data["machines"]) + sum(g["count"] for g in data["set_apart"])
        == 200
    )
    assert len(err) <= 1 + len(data["set_apart"])  # the baseline's line, one per reason
    assert err[0].startswith("bench: baseline: ") and "shares the most rows" in err[0]
    pooled = [r for r in data["points"] if r["runs"] and r["runs"] > 1]
    assert pooled and all(r["repeats"] >= 3 * r["runs"] - 3 for r in pooled)
    assert {r["framework"] for r in data["points"] if r["setup"] == "jax"} <= {"jax", None}
    history = data["history"]
    assert len({(h["file"]) for h in history}) == sum(len(m["files"]) for m in data["machines"])
    assert all(math.isfinite(h["throughput"]) for h in history if h["status"] == "ok")


def test_a_max_batch_search_beside_measured_points_is_compared_not_set_apart():
    """A search alone may differ in its memory cap and in --steps and --warmup-steps
    (its probes run their own steps, none of them warm-up; the H200's memory-cap
    searches with --steps 10 were set apart from every point); what it trains on must
    agree, and agreeing, it is a machine's column like any other result."""
    from bench.result import MaxBatch

    measured = machine(V100, [point(64, [100, 101, 99])])
    search = machine(A100, [], max_batch=[MaxBatch("fp32", largest_ok=512, status="done")])
    search.config = RunConfig(
        workload="resnet50", steps=10, warmup_steps=3, memory_limit_bytes=2**34
    )
    real = machine(
        "NVIDIA H100 80GB HBM3", [], max_batch=[MaxBatch("fp32", largest_ok=9, status="done")]
    )
    real.config = RunConfig(workload="resnet50", data="imagenet:/data/imagenet", epochs=2)
    loaded = [(Path("v.json"), measured), (Path("a.json"), search), (Path("r.json"), real)]
    comparison = cmp.compare(loaded, "v100")
    assert [m.label for m in comparison.machines] == [V100, f"{A100} · memory-limit 16GiB"]
    assert grids.max_batch_grid(comparison)[1] == [
        ["resnet50", "fp32", "contiguous", "none", "", ">=512"]
    ]
    assert comparison.set_apart == [
        "set apart: r.json (resnet50) measured differently from v.json: data imagenet "
        "(not synthetic)"
    ]


def test_a_search_stopped_before_its_answer_shows_what_its_probes_trained():
    """An H200's memory-cap searches were stopped by their time limit: the report read
    'running' and drew nothing. The largest batch a probe trained is a lower bound."""
    from bench.report import tidy
    from bench.result import MaxBatch, Probe

    probes = [Probe(1, "ok", None, 4_905_107_456), Probe(136, "ok", None, 14_654_688_256),
              Probe(272, "oom", "CUDA out of memory", None)]  # fmt: skip
    stopped = MaxBatch("fp32", probes=probes)  # status 'running': no answer yet
    assert stopped.display == ">=136 so far"
    assert MaxBatch("fp32").display == "running"  # no probe trained: nothing to say
    measured = machine(V100, [point(64, [100, 101, 99])])
    search = machine(A100, [], max_batch=[stopped])
    comparison = cmp.compare([(Path("v.json"), measured), (Path("a.json"), search)], "v100")
    [row] = tidy.max_batches(comparison)
    assert (row["largest"], row["display"], row["limit"]) == (136, ">=136 so far", True)


def test_each_memory_cap_is_a_column_of_its_own_and_grids_leave_out_empty_columns():
    """Three unlabelled searches of one machine at 80, 24 and 16 GiB shared one column,
    which showed one of them as the machine's answer; each is now its cap's column (as
    bench suite labels them), and the point grids leave those columns out."""
    from bench.result import MaxBatch

    measured = machine(V100, [point(64, [100, 101, 99], joules=640)])
    caps = []
    for gib, largest in ((24, 192), (16, 136)):
        res = machine(A100, [], max_batch=[MaxBatch("fp32", largest_ok=largest, status="done")])
        res.config = RunConfig(workload="resnet50", memory_limit_bytes=gib * 2**30)
        caps.append((Path(f"{gib}.json"), res))
    comparison = cmp.compare([(Path("v.json"), measured), *caps], "v100")
    labels = [m.label for m in comparison.machines]
    assert labels == [V100, f"{A100} · memory-limit 24GiB", f"{A100} · memory-limit 16GiB"]
    assert grids.max_batch_grid(comparison)[1] == [
        ["resnet50", "fp32", "contiguous", "none", "", ">=192", ">=136"]
    ]
    headers, _ = grids.without_empty_columns(*grids.throughput_grid(comparison))
    assert not any("memory-limit" in h for h in headers)
    ratios = [h for h in grids.grid(comparison)[0] if " vs baseline: " in h]
    assert not any("memory-limit" in h for h in ratios)
    assert "memory-limit" not in grids.markdown_table(*grids.throughput_grid(comparison))
