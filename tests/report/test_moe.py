"""compare's and report's MoE view: tokens/s per device, MFU of the active parameters,
the all-to-all's share of the step, the load balance and the dropped assignments of
each mixture of experts' point, read with its types and bounds checked; nothing for
dense models. The fixtures are two real runs of `bench moe-tiny --device cpu --steps 3`
(one process; two gloo ranks with --expert-parallel 2)."""

from __future__ import annotations

import copy
import dataclasses
import io
import json
import math
from pathlib import Path

import pytest

from bench import result
from bench.report import compare as cmp
from bench.report import grids, records
from bench.report.moe import Experts
from bench.result import Point
from tests.conftest import DATA
from tests.report.test_compare import A100, machine, point

ONE, SPLIT = DATA / "moe-tiny-cpu.json", DATA / "moe-tiny-cpu-ep2.json"
XEON = "Intel(R) Xeon(R) Processor (2 cores)"
EPYC = "AMD EPYC 9654 96-Core Processor"


def _loaded(path: Path, cpu: str | None = None, faster: float = 1.0, peak: float | None = None):
    """A fixture as another CPU would have run it: its steps `faster` times shorter, its
    MFU against `peak` FLOP/s where given."""
    res = result.load(path)
    if cpu is None:
        return path, res
    env = copy.deepcopy(res.environment)
    env["cpu"]["model"] = cpu
    env["host"]["hostname"] = cpu.split()[0].lower()
    points = []
    for p in res.points:
        details = copy.deepcopy(p.details)
        if peak is not None:
            details["mfu"]["peak_flops"] = peak
        steps = tuple(tuple(s / faster for s in repeat) for repeat in p.step_times_s)
        points.append(dataclasses.replace(p, step_times_s=steps, details=details))
    res = dataclasses.replace(res, environment=env, points=points)
    return path.with_name(f"{cpu.split()[0].lower()}-{path.name}"), res


def _two_machines():
    return [
        _loaded(ONE),
        _loaded(SPLIT),
        _loaded(ONE, EPYC, faster=3.0, peak=2e12),
        _loaded(SPLIT, EPYC, faster=3.0, peak=2e12),
    ]


def _moe(details: dict) -> Experts | None:
    return Experts.of(Point(batch_size=4, precision="fp32", details=details))


def test_a_runs_experts_are_read_from_its_result():
    (split,) = result.load(SPLIT).points
    experts = Experts.of(split)
    assert experts is not None
    assert (experts.experts, experts.top_k, experts.expert_parallel) == (8, 2, 2)
    assert experts.all_to_all_share == pytest.approx(0.20268731865352096)
    assert experts.balance == pytest.approx(1.2333984375)
    assert (experts.assignments, experts.dropped, experts.dropped_share) == (8192, 0, 0.0)
    assert experts.matmuls == "torch.nn.functional.grouped_mm"
    assert experts.all_to_all_text() == "all-to-all 20.3%"
    assert experts.balance_text() == "balance 1.23" and experts.dropped_text() == "none dropped"
    (one,) = result.load(ONE).points
    local = Experts.of(one)
    assert local is not None and not local.exchanged
    assert local.all_to_all_text() == "no all-to-all"  # every expert on its one process
    assert Experts.of(point(64, [100])) is None  # a dense model has no experts


GOOD = {"experts": 8, "top_k": 2, "assignments": 100, "dropped_assignments": 4,
        "balance_max_over_mean": 1.5, "all_to_all_share": 0.25,
        "expert_parallel": {"expert_parallel": 2}}  # fmt: skip


@pytest.mark.parametrize(
    ("change", "read"),
    [
        ({}, lambda e: e.dropped_text() == "dropped 4 (4.0%)"),
        ({"experts": "8"}, lambda e: e is None),
        ({"experts": True}, lambda e: e is None),
        ({"top_k": 9}, lambda e: e is None),  # more than its experts
        ({"expert_parallel": {"expert_parallel": 16}}, lambda e: e is None),
        ({"expert_parallel": None}, lambda e: e.expert_parallel == 1),  # one process
        ({"all_to_all_share": math.nan}, lambda e: e.all_to_all_text() == "all-to-all n/a"),
        ({"all_to_all_share": 7.0}, lambda e: e.all_to_all_share is None),
        ({"balance_max_over_mean": 9.0}, lambda e: e.balance_text() == "balance n/a"),
        ({"balance_max_over_mean": "1.5"}, lambda e: e.balance is None),
        ({"dropped_assignments": 101}, lambda e: e.dropped_text() == "dropped n/a"),
        ({"assignments": -1}, lambda e: e.assignments is None and e.dropped is None),
        ({"expert_matmuls": "x" * 10_000}, lambda e: len(e.matmuls) == 80),
    ],
)
def test_a_moe_record_is_read_with_its_types_and_bounds_checked(change, read):
    """A result file is anyone's to write: a value bench would not write is not measured."""
    assert read(_moe({"moe": {**GOOD, **change}}))
    assert _moe({"moe": "not a record"}) is None


def test_expert_parallelism_is_a_row_of_its_own():
    """One process and two ranks splitting the experts pooled into one cell (and one
    interval, from 0.0993 to 360 k samples/s)."""
    comparison = cmp.compare([_loaded(ONE), _loaded(SPLIT)], None)
    assert [key[5] for key, _ in comparison.rows] == ["64 tokens", "64 tokens · expert-parallel=2"]


def test_compare_shows_the_experts_figures_per_machine():
    comparison = cmp.compare(_two_machines(), "xeon")
    headers, body = grids.moe_grid(comparison)
    assert headers[-2:] == [XEON, EPYC + " (2 cores)"]
    one, split = (dict(zip(headers, row, strict=True)) for row in body)
    assert one[XEON] == (
        "21.9 k tokens/s · MFU (active) n/a · no all-to-all · balance 1.53 · none dropped"
    )
    assert split[XEON] == (
        "3,339 tokens/s · MFU (active) n/a · all-to-all 20.3% · balance 1.23 · none dropped"
    )
    # Three times faster: tokens/s per device, and MFU against the peak the result gives.
    (epyc,) = result.load(SPLIT).points
    mfu = epyc.flops_per_sample * epyc.throughput.value * 3 / 2e12
    assert split[EPYC + " (2 cores)"].startswith(f"10.0 k tokens/s · MFU (active) {mfu:.1%} · ")
    markdown = grids.to_markdown(comparison)
    assert grids.MOE_CAPTION + ":" in markdown and "all-to-all 20.3%" in markdown


def test_dense_results_show_no_moe_table_and_keep_their_records():
    runs = [(Path("a.json"), machine(A100, [point(64, [100, 101, 99])]))]
    comparison = cmp.compare(runs, None)
    assert grids.moe_grid(comparison)[1] == []
    assert "Mixtures of experts" not in grids.to_markdown(comparison)
    assert not {"all_to_all_share", "experts"} & set(records.records(comparison)[0])


def test_csv_and_json_carry_the_experts_figures_of_moe_rows():
    found = records.records(cmp.compare(_two_machines(), "xeon"))
    split = next(r for r in found if r["machine"] == XEON and "expert-parallel=2" in r["setup"])
    assert split["tokens_per_s_per_device"] == pytest.approx(3339.3780715264634)
    assert split["all_to_all_share"] == pytest.approx(0.20268731865352096)
    assert (split["expert_parallel"], split["dropped_assignments"]) == (2, 0)
    assert "all_to_all_share" in grids.to_csv(cmp.compare(_two_machines(), "xeon"))


def test_the_terminal_tables_wrap_within_100_columns(monkeypatch, capsys):
    from rich.console import Console

    from bench.cli import main
    from bench.commands import compare as command

    out = io.StringIO()
    monkeypatch.setattr(command, "console", lambda: Console(width=100, file=out))
    assert main(["compare", str(ONE), str(SPLIT)]) == 0
    text = out.getvalue()
    assert "Mixtures of experts" in text and "all-to-all 20.3%" in text.replace("│\n", "")
    assert max(len(line) for line in text.splitlines()) <= 100


@pytest.fixture
def report(monkeypatch):
    pytest.importorskip("altair")
    from bench.report import page, views

    monkeypatch.setattr(views, "bundle", lambda: "/* vega bundle */")

    def made(runs, baseline=None):
        _, html = page.texts(cmp.compare(runs, baseline))
        found = html.split("<script type='application/json' id='bench-data'>")[1]
        return json.loads(found.split("</script>")[0])

    return made


def test_the_report_draws_an_moe_view_of_moe_rows_only(report):
    data = report([*_two_machines(), (Path("r.json"), machine(A100, [point(64, [100])]))], "xeon")
    (view,) = [v for v in data["views"] if v["id"] == "experts"]
    assert view["needs"] == "experts" and view["data"] == "points"
    assert "_part" in json.dumps(view["spec"])  # the all-to-all's share of each bar
    moe = [r for r in data["points"] if r["workload"] == "moe-tiny"]
    dense = [r for r in data["points"] if r["workload"] == "resnet50"]
    assert len(moe) == 4 and all(r["experts"] == 8 for r in moe) and dense
    assert not any(k in r for r in dense for k in ("experts", "a2a", "experts_text"))
    split = next(r for r in moe if r["machine"] == XEON and r.get("expert_parallel") == 2)
    assert split["a2a"] == pytest.approx(0.20268731865352096, rel=1e-4)  # the page rounds
    assert split["experts_text"] == "all-to-all 20.3% · balance 1.23 · none dropped"
    assert next(r for r in moe if r["machine"] == XEON and "expert" not in r["config"])["a2a"] == 0


def test_no_moe_point_no_moe_view(report):
    data = report([(Path("r.json"), machine(A100, [point(64, [100])]))])
    assert "experts" not in {v["id"] for v in data["views"]}
