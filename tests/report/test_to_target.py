"""Time to a target over several runs in `bench show`, `bench compare` (tables, JSON,
Markdown) and the report: each run's time, MLPerf's score with its interval, a run far
faster than the others, the speedrun's test of the final losses; and steps in the
history of a configuration measured on many dates. Simulated runs, known numbers."""

from __future__ import annotations

import dataclasses
import importlib.util
import io
import json
import math
import statistics
from pathlib import Path

import pytest

from bench import result
from bench.cli import main
from bench.report import compare as cmp
from bench.report import grids, records, tidy
from bench.report.history import daily
from bench.report.table import tables, to_target_table
from bench.report.to_target import of as to_target
from bench.result import Result
from tests.conftest import DATA
from tests.report.test_compare import A100, V100, machine, point

FIXTURE = DATA / "result-v12.json"  # gpt2 trained to loss 5
TIMES = [100.0, 102.0, 98.0, 130.0, 101.0]  # each run's seconds to the target
FINALS = [4.90, 4.92, 4.95, 4.91, 4.93]  # each run's last validation loss


def _loss_record(seconds: float, final: float, seed: int | None = None) -> dict:
    """A run that evaluates three times (1 s each) and reaches loss 5 at the third,
    `seconds` after its first step, ending at `final`."""
    train = seconds / 3 - 1.0
    curve = [
        {"step": 10 * (i + 1), "tokens": 6400 * (i + 1), "sequences": 100 * (i + 1),
         "loss": loss, "train_s": train, "eval_s": 1.0, "train_loss": loss}
        for i, loss in enumerate([6.0, 5.5, final])
    ]  # fmt: skip
    record = {"metric": "val_loss", "target": 5.0, "curve": curve, "stopped": None}
    return {**record, "seed": seed} if seed is not None else record


def _to_loss(times=TIMES, finals=FINALS, seeds=None) -> Result:
    loaded = result.load(FIXTURE)
    [p] = loaded.points
    seeds = seeds or [None] * len(times)
    records = tuple(_loss_record(t, f, s) for t, f, s in zip(times, finals, seeds, strict=True))
    steps = tuple(p.step_times_s[0] for _ in times)
    trained = dataclasses.replace(p, loss=records, step_times_s=steps, energy=(),
                                  warmup_times_s=(), busy=())  # fmt: skip
    return dataclasses.replace(loaded, points=[trained], pricing={"usd_per_hour": 36.0})


def _rendered(table: object) -> str:
    from rich.console import Console

    out = Console(width=400, file=io.StringIO())
    out.print(table)
    return out.file.getvalue()


def test_a_points_runs_to_a_loss_each_keep_their_own_time_tokens_and_final_loss():
    runs = to_target(_to_loss().points[0])
    assert runs is not None and runs.metric == "loss" and runs.target == 5.0
    assert [r.time_s for r in runs.runs] == pytest.approx(TIMES)
    assert [r.amount for r in runs.runs] == [19200] * 5 and [r.final for r in runs.runs] == FINALS
    assert runs.score.value == pytest.approx((100 + 102 + 101) / 3)
    assert runs.score.dropped == (3, 4) and runs.reaches.reaches  # mean 4.922, tight
    assert runs.times_words() == "100.0 102.0 (98.0) (130.0) 101.0"


def test_bench_show_lists_each_runs_time_the_score_and_what_to_check():
    shown = _to_loss()
    assert any("scored as MLPerf does" in str(t.title) for t in tables(shown))
    text = _rendered(to_target_table(shown))
    row = next(line for line in text.splitlines() if "batch" in line)
    for cell in ("5 of 5", "100.0 102.0 (98.0) (130.0) 101.0", "19.2 k tokens each",
                 "101.0 s [", "reaches 5: p = "):  # fmt: skip
        assert cell in row, (cell, row)
    cost = f"${(100 + 102 + 101) / 3 / 100:.2f}"[:4]  # 36 USD/h: a cent a second
    assert cost in row
    # one run: no table of runs (the loss table says it all)
    [p] = shown.points
    once = dataclasses.replace(p, loss=p.loss[:1], step_times_s=p.step_times_s[:1])
    single = dataclasses.replace(shown, points=[once])
    assert to_target_table(single) is None


def test_bench_show_says_why_there_is_no_score():
    two = _to_loss(times=[100.0, 101.0], finals=[4.9, 4.9])
    text = _rendered(to_target_table(two))
    assert "no score: 2 runs: MLPerf's score drops the fastest and the slowest" in text
    assert "every run ended at the same figure" in text
    seeded = _to_loss(seeds=[7] * 5)
    assert "every run trained with seed 7" in _rendered(to_target_table(seeded))


def test_compare_gives_the_score_its_interval_and_cost_in_the_table_json_and_markdown():
    loaded = _to_loss()
    comparison = cmp.compare([(Path("a.json"), loaded)], None)
    _, [row] = grids.loss_grid(comparison)
    cell = row[-1]
    assert "score 101.0 s [" in cell and "MLPerf's mean of 3 of 5 runs" in cell
    assert "the fastest (run 3) and the slowest (run 4) dropped" in cell
    assert "reaches 5: p = " in cell and "MLPerf's mean of 3 of 5" in grids.to_markdown(comparison)
    [record] = records.records(comparison)
    assert record["score_s"] == pytest.approx(101.0)
    assert record["score_ci95_low_s"] < 101.0 < record["score_ci95_high_s"]
    assert record["score_usd"] == pytest.approx(101.0 / 100)
    assert record["run_times_to_target_s"] == pytest.approx(TIMES)
    assert record["run_tokens_to_target"] == [19200] * 5 and record["run_final_loss"] == FINALS
    assert record["runs_reached"] == 5 and record["all_reached"] is True
    assert record["score_runs_dropped"] == [3, 4] and record["reaches"] is True
    assert record["far_faster_runs"] is None
    data = json.loads(json.dumps(grids.as_dict(comparison)))  # what --format json writes
    assert data["points"][0]["score_s"] == pytest.approx(101.0)
    assert "score_s" in grids.to_csv(comparison).splitlines()[0]


def test_a_run_far_faster_and_runs_that_missed_are_said_beside_the_score():
    fast = _to_loss(times=[100.0, 40.0, 104.0, 98.0, 102.0])
    comparison = cmp.compare([(Path("a.json"), fast)], None)
    _, [row] = grids.loss_grid(comparison)
    assert "run 2 reached it 2.5x faster than the others' median" in row[-1]
    assert records.records(comparison)[0]["far_faster_runs"] == [2]
    # two runs never reach 5: no score, and why
    missed = _to_loss(finals=[4.9, 5.2, 5.3, 4.9, 4.9])
    _, [row] = grids.loss_grid(cmp.compare([(Path("a.json"), missed)], None))
    assert "no score: 2 of 5 runs did not reach the target" in row[-1]
    assert "runs 2 and 3 did not reach it" in row[-1]


def _accuracy_record(seconds: float, reached: bool = True) -> dict:
    epochs = [
        {"epoch": e, "top1": top1, "train_s": seconds / 2 - 1.0, "eval_s": 1.0}
        for e, top1 in enumerate([0.5, 0.8 if reached else 0.7], 1)
    ]
    return {"metric": "top1", "target": 0.75, "epochs": epochs}


def test_runs_to_a_top1_are_scored_the_same_way():
    times = [100.0, 50.0, 104.0, 98.0, 102.0]
    p = dataclasses.replace(point(64, [100.0] * 5),
                            accuracy=tuple(_accuracy_record(t) for t in times))  # fmt: skip
    comparison = cmp.compare([(Path("a.json"), machine(V100, [p], price=3.6))], None)
    _, [row] = grids.accuracy_grid(comparison)
    assert "score 100.0 s [" in row[-1] and "run 2 reached it 2.0x faster" in row[-1]
    [record] = records.records(comparison)
    assert record["run_epochs_to_target"] == [2, 2, 2, 2, 2]
    assert record["score_usd"] == pytest.approx(0.1) and record["reaches"] is None


# --- steps in history -----------------------------------------------------------------


def _history(name: str, levels: list[float], spread: float = 0.01) -> list[tuple[Path, Result]]:
    """One machine's pinned reruns, a day apart: run i at levels[i] samples/s, its three
    repeats spread by `spread` (a fixed pattern: no random numbers)."""
    runs = []
    for i, level in enumerate(levels):
        wobble = 1 + spread * math.sin(3.7 * i)
        res = machine(name, [point(64, [level * wobble * f for f in (0.995, 1.0, 1.005)])])
        res = dataclasses.replace(res, started=f"2026-03-{i + 1:02d}T10:00:00+00:00")
        runs.append((Path(f"{name[:4]}-{i:02d}.json"), res))
    return runs


STEPPED = [100.0] * 7 + [120.0] * 7  # 20% faster from the 8th run (2026-03-08)


def test_a_history_that_stepped_says_where_by_how_much_and_with_an_interval():
    loaded = _history(V100, STEPPED) + _history(A100, [300.0] * 14)
    comparison = cmp.compare(loaded, "v100")
    [step] = comparison.steps[0]
    assert step.machine == V100 and step.after[0].startswith("2026-03-08")
    assert step.before[0].startswith("2026-03-07") and step.step.at == 7
    assert step.step.ratio == pytest.approx(1.2, rel=0.01)
    assert step.step.interval[0] < 1.2 < step.step.interval[1]
    assert step.step.verdict.word == "faster"
    data = grids.as_dict(comparison)
    [record] = data["steps"]
    assert record["from_started"].startswith("2026-03-08") and record["verdict"] == "faster"
    assert record["text"].startswith("1.2") and data["steps_note"] is None
    marked = [r for r in data["history"] if r["step"]]
    assert [r["started"][:10] for r in marked] == ["2026-03-08"]
    markdown = grids.to_markdown(comparison)
    assert "Steps in history" in markdown and "2026-03-08T10:00:00" in markdown
    _, [row] = grids.steps_grid(comparison)
    assert row[:2] == [V100, "resnet50"] and row[4].startswith("1.2")


def test_noise_is_no_step():
    steady = [100.0 * (1 + 0.02 * math.sin(2.3 * i)) for i in range(14)]
    comparison = cmp.compare(_history(V100, steady), None)
    assert comparison.steps == ([], None)
    assert grids.steps_grid(comparison)[1] == [] and "Steps in history" not in grids.to_markdown(
        comparison
    )
    assert all("step" not in r for r in tidy.tidy(comparison).history)


def test_the_report_marks_the_step_on_the_history_view():
    comparison = cmp.compare(_history(V100, STEPPED), None)
    rows = tidy.tidy(comparison).history
    [marked] = [r for r in rows if "step" in r]
    assert marked["date"].startswith("2026-03-08") and marked["step_ratio"] == pytest.approx(
        1.2, rel=0.01
    )
    assert marked["step"].startswith("1.2")
    if importlib.util.find_spec("altair") is None:
        return
    from bench.report import views

    [history] = [v for v in views.views(tidy.tidy(comparison)) if v.id == "history"]
    assert "A dashed rule: a step" in history.caption
    spec = json.dumps(history.spec)
    assert '"rule"' in spec and "isValid(datum.step_ratio)" in spec


def test_a_day_of_many_runs_keeps_the_step_that_began_that_day():
    rows = [
        {"date": "2026-03-08T09:00:00", "tp": 100.0, "tp_lo": 99.0, "tp_hi": 101.0, "runs": 1},
        {"date": "2026-03-08T10:00:00", "tp": 120.0, "tp_lo": 119.0, "tp_hi": 121.0, "runs": 1,
         "step": "1.20x faster", "step_ratio": 1.2},
        {"date": "2026-03-08T11:00:00", "tp": 121.0, "tp_lo": 120.0, "tp_hi": 122.0, "runs": 1},
    ]  # fmt: skip
    [day] = daily(rows)
    assert day["step"] == "1.20x faster" and day["runs"] == 3


def test_bench_compare_prints_the_steps(tmp_path, capsys):
    for path, res in _history(V100, STEPPED):
        result.create(res, tmp_path / path.stem)
    assert main(["compare", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "steps in history" in out and "2026-03-08" in out and "faster" in out


def test_the_score_is_derived_when_read_never_stored(tmp_path):
    """The result file holds each repeat's loss record; a saved and loaded file scores
    the same."""
    loaded = _to_loss()
    path = result.create(loaded, tmp_path)
    again = result.load(path)
    assert "score" not in json.dumps(json.loads(path.read_text())["points"][0]["to_loss"])
    assert to_target(again.points[0]).score == to_target(loaded.points[0]).score
    assert statistics.fmean([100.0, 102.0, 101.0]) == pytest.approx(
        to_target(again.points[0]).score.value
    )
