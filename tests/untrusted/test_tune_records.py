"""A tune record someone edited or sent: `bench tune ... --resume FILE` reads the time an
interrupted search spent (spent_s) and each probe's wall time (walls_s) and computes with
them. Every field of the record has a type and a range, checked before any arithmetic;
a bad one is one line naming the file and the field (before: a TypeError traceback,
"inf h of a 40 s budget", a budget that never ran out)."""

import dataclasses
import json
import math
from pathlib import Path

import pytest

from bench import result
from bench.cli import main
from bench.commands import run_options
from bench.commands.options import option_names
from bench.commands.tune import default_axes
from bench.config.run_config import RunConfig
from bench.result import ResultError
from bench.run import launchers
from bench.search.tune import TuneRunner
from tests.run.test_runner import FakeChild, ok_response
from tests.untrusted.test_local import _one_line

CONFIG = RunConfig(workload="tiny", steps=20, repeats=3, batch_sizes=(32, 64),
                   precisions=("fp32", "bf16"))  # fmt: skip


def _answer(point, n):
    return ok_response(step_s=point.batch_size / 100.0)


def interrupted(folder: Path, config: RunConfig = CONFIG) -> Path:
    """A search of 4 configurations stopped by Ctrl-C in its round 2: its saved file,
    whose record holds round 1 whole (4 points, their walls_s and caps_s)."""

    def stopping(point, n):
        if n == 5:
            raise KeyboardInterrupt
        return _answer(point, n)

    runner = TuneRunner(config, folder, spawn=FakeChild(stopping), command=["bench", "tune"],
                        budget_s=3600.0)  # fmt: skip
    with pytest.raises(KeyboardInterrupt):
        runner.run()
    assert len(result.load(runner.path).tune["rounds"][0]["walls_s"]) == 4
    return runner.path


def _edit(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data["tune"])
    path.write_text(json.dumps(data))  # json writes NaN and Infinity as JavaScript does


def _set(field: str, value):
    """A change to one field of the record: 'spent_s', or 'rounds[0].walls_s'."""

    def change(tune):
        where, name = (tune["rounds"][0], field.split(".")[1]) if "." in field else (tune, field)
        where[name] = value

    return change


SECONDS = "expected seconds from 0 to 315360000 (ten years)"
WALLS = "rounds[0].walls_s"
EACH = "expected a list of seconds from 0 to 315360000 (ten years), one per point"
CRAFTED = [
    ("spent_s", "40", f'tune.spent_s: {SECONDS}, found "40"'),
    ("spent_s", "inf", f'tune.spent_s: {SECONDS}, found "inf"'),
    ("spent_s", math.nan, f"tune.spent_s: {SECONDS}, found NaN"),
    ("spent_s", math.inf, f"tune.spent_s: {SECONDS}, found Infinity"),
    ("spent_s", -1e300, f"tune.spent_s: {SECONDS}, found -1e+300"),
    ("spent_s", True, f"tune.spent_s: {SECONDS}, found true"),
    (WALLS, ["text", 1.0, 1.0, 1.0], f'tune.{WALLS}[0]: {EACH}, found "text"'),
    (WALLS, [1.0, "inf", 1.0, 1.0], f'tune.{WALLS}[1]: {EACH}, found "inf"'),
    (WALLS, [1.0, 1.0, math.nan, 1.0], f"tune.{WALLS}[2]: {EACH}, found NaN"),
    (WALLS, [1.0, 1.0, 1.0, -1e300], f"tune.{WALLS}[3]: {EACH}, found -1e+300"),
    (WALLS, [1.0] * 1_000_000,
     "tune.rounds[0].walls_s: expected at most 4 items, found 1,000,000"),
    (WALLS, "1.0", f'tune.rounds[0].walls_s: {EACH}, found "1.0"'),
    ("rounds[0].caps_s", [1e300] * 4, f"tune.rounds[0].caps_s[0]: {EACH}, found 1e+300"),
    ("rounds[0].of", 10**9, "tune.rounds[0].of: expected a whole number from 0 to the grid's 4"),
    ("rounds[0].warmup_steps", -1, "tune.rounds[0].warmup_steps: expected a whole number from 0"),
    ("rounds", [{"round": 1, "steps": 3, "points": []}] * 65,
     "tune.rounds: expected at most 64 items, found 65"),
    ("skipped", [{"label": 1, "why": "x"}], "tune.skipped[0]: expected a list of {label, why}"),
    ("coverage", {"grid": -1}, "tune.coverage: expected null or {name: a count from 0}"),
    ("ranked", "yes", 'tune.ranked: expected true or false, found "yes"'),
]  # fmt: skip


@pytest.mark.parametrize(
    ("field", "value", "said"), CRAFTED, ids=[f"{f}={str(v)[:12]}" for f, v, _ in CRAFTED]
)
def test_a_bad_field_of_a_tune_record_is_one_line_naming_file_and_field(
    tmp_path, field, value, said
):
    path = interrupted(tmp_path)
    _edit(path, _set(field, value))
    again = TuneRunner(CONFIG, tmp_path, spawn=FakeChild(_answer), command=["bench", "tune"])
    with pytest.raises(ResultError) as refused:
        again.resume(path)
    line = _one_line(str(refused.value))
    assert line.startswith(f"{path}: invalid tune record ({said}"), line
    assert again.claim is None  # the file is not held: another try may go on with it


def test_a_good_record_still_goes_on_and_counts_what_it_spent(tmp_path):
    path = interrupted(tmp_path)
    _edit(path, _set("spent_s", 40.0))
    again = TuneRunner(CONFIG, tmp_path, spawn=FakeChild(_answer), command=["bench", "tune"],
                       budget_s=3600.0)  # fmt: skip
    again.resume(path)
    assert again.run().tune["spent_s"] >= 40.0


def test_bench_tune_resume_refuses_an_endless_budget_in_one_line_exit_2(
    tmp_path, monkeypatch, capsys
):
    """As a user runs it: the command line's config, its file edited to spend -1e300 s."""
    options = ["--device", "cpu", "--batch-size", "32,64", "--steps", "20"]
    parsed = run_options.parse_run(["tiny", *options])
    parsed.repeats = 3  # as bench tune sets it
    config = run_options.config_from_args(parsed)
    config = dataclasses.replace(config, **default_axes(config, set(option_names(options))))
    path = interrupted(tmp_path / "results", config)
    _edit(path, _set("spent_s", -1e300))
    monkeypatch.chdir(tmp_path)

    def no_child(*args, **kwargs):  # refused before any: a search with no end, else
        raise AssertionError("a child was started")

    monkeypatch.setattr(launchers, "spawn", no_child)
    code = main(["tune", "tiny", *options, "--budget", "40s", "--resume", str(path)])
    said = capsys.readouterr().err
    errors = [line for line in said.splitlines() if not line.startswith("bench: warning:")]
    assert (
        code == 2
        and "Traceback" not in said
        and errors
        == [f"bench: error: {path}: invalid tune record (tune.spent_s: {SECONDS}, found -1e+300)"]
    )


def test_bench_rerun_of_a_tune_refuses_a_budget_of_a_billion_years_in_one_line(
    tmp_path, monkeypatch, capsys
):
    """A rerun searches again with the file's budget: a sent record's 1e21 s is refused
    as a resume's would be, before any child (it was taken as it stood)."""
    path = interrupted(tmp_path / "results")
    _edit(path, lambda tune: tune.update(budget_s=1e21))
    monkeypatch.chdir(tmp_path)

    def no_child(*args, **kwargs):
        raise AssertionError("a child was started")

    monkeypatch.setattr(launchers, "spawn", no_child)
    code = main(["rerun", str(path), "--output-dir", str(tmp_path / "again")])
    said = capsys.readouterr().err
    errors = [line for line in said.splitlines() if not line.startswith("bench: warning:")]
    assert code == 2 and "Traceback" not in said, said
    # the reader's rule for a budget is --budget's: the file is refused on load
    assert len(errors) == 1 and f"{path}: invalid result (result.tune.budget_s" in errors[0]


def test_the_longest_budget_the_command_line_takes_is_read_back(tmp_path):
    """--budget 87600h (ten years, the most it takes) saves a record bench reads back:
    --budget 100000h was taken and its file then refused, naming no field."""
    from bench.commands.options import tune_budget

    runner = TuneRunner(CONFIG, tmp_path, spawn=FakeChild(_answer), command=["bench", "tune"],
                        budget_s=tune_budget("87600h"))  # fmt: skip
    runner.run()
    assert result.load(runner.path).tune["budget_s"] == 87600 * 3600.0


@pytest.mark.parametrize("budget", [3.6e8, 0.0001, "1h"])
def test_a_budget_the_command_line_refuses_is_refused_on_read_naming_the_field(tmp_path, budget):
    path = interrupted(tmp_path)
    _edit(path, lambda tune: tune.update(budget_s=budget))
    with pytest.raises(ResultError) as refused:
        result.load(path)
    assert "result.tune.budget_s: expected seconds from 30 to 315,360,000 (ten years), found" in (
        str(refused.value)
    )
