"""--settle (bench diff, bench rerun): more repeats of the new side, one child each, until
bench.stats.sequential decides, at a cap or at a budget, on a fake machine and a fake clock (as
tests/search/test_tune.py fakes its children); every finished repeat saved, Ctrl-C or not."""

import dataclasses
import importlib.util
import json
import signal
import time

import pytest

from bench import result
from bench.cli import main
from bench.commands.diff import EXIT_DRIFT
from bench.config.run_config import RunConfig
from bench.result import POINT_AXES, Point, Result, point_axes
from bench.run import launchers, provenance, stopping
from tests.run.test_runner import ok_response

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("scipy") is None, reason="bench[report] (scipy) is not installed"
)

OLD = [100.0, 106.0, 94.0]  # samples/s of three repeats: a 6% spread
SLOWER = [92.0, 86.0, 89.0]  # 11% slower, but three repeats a side cannot tell yet
NEAR = [96.0, 90.0, 93.0]  # 7% slower: OLD's 3 repeats need many of new to tell
SAME = [102.0, 94.0, 104.0]


def here() -> dict:
    """This machine as a child of bench would record it (torch on the CPU)."""
    collected = provenance.collect()
    return {
        "host": collected["host"],
        "cpu": collected["cpu"],
        "accelerator": {"platform": "cpu", "accelerator": None, "accelerator_count": 0},
        "framework": {"name": "torch", "torch": "2.14.1"},
    }


def point(rates, batch=16) -> Point:
    """A point whose repeats train at `rates` samples/s (three equal steps each)."""
    return Point(
        batch_size=batch, precision="fp32", step_times_s=tuple((batch / r,) * 3 for r in rates)
    )


def saved(tmp_path, name, rates, environment=None, **config) -> str:
    res = Result(
        config=RunConfig(workload="tiny", batch_sizes=(16,), repeats=3, steps=3, **config),
        environment=environment or here(),
        points=[point(rates)],
        command=["bench", "run", "tiny"],
    )
    path = tmp_path / f"{name}.json"
    path.write_text(result.dumps(res))
    return str(path)


class Machine:
    """A fake child on a fake clock: each repeat costs `repeat_s` seconds and trains at
    rate(n) samples/s, n counting the repeats; `stop_at`: the repeat a SIGTERM stops."""

    def __init__(self, rate, repeat_s=30.0, environment=None, stop_at=None):
        self.rate, self.repeat_s, self.stop_at = rate, repeat_s, stop_at
        self.environment = environment or here()
        self.clock, self.repeats, self.timeouts = 0.0, 0, []

    def __call__(self, point, job, on_progress, timeout_s=None):
        if job == "count_flops":
            return {"status": "ok", "flops_per_sample": 2e6, "environment": self.environment}
        self.repeats += 1
        self.timeouts.append(timeout_s)
        if self.repeats == self.stop_at:
            raise stopping.Interrupted(signal.SIGTERM)
        self.clock += self.repeat_s
        response = ok_response(point.batch_size / self.rate(self.repeats))
        return {**response, "environment": self.environment}


@pytest.fixture
def machine(monkeypatch):
    """Install a Machine as bench's launcher and its clock as bench's: machine(rate, ...)."""

    def install(rate, **kwargs):
        fake = Machine(rate, **kwargs)
        monkeypatch.setattr(launchers, "spawn", fake)
        monkeypatch.setattr(time, "monotonic", lambda: fake.clock)
        return fake

    return install


def around(mean):
    """Repeats at mean -2, mean, mean +2 samples/s, in turn."""
    return lambda n: mean + (n % 3 - 1) * 2


def settled_file(tmp_path) -> Result:
    [path] = (tmp_path / "out").glob("*.json")
    return result.load(path)


def test_a_slowdown_too_noisy_for_three_repeats_is_settled_slower_and_stops(
    tmp_path, machine, capsys
):
    old, new = saved(tmp_path, "old", OLD), saved(tmp_path, "new", SLOWER)
    assert main(["diff", old, new]) == 0  # the fixed-sample verdict: cannot tell
    assert "cannot tell" in capsys.readouterr().out
    fake = machine(around(89.0))
    code = main(["diff", old, new, "--settle", "--output-dir", str(tmp_path / "out")])
    shown = capsys.readouterr().out
    assert code == EXIT_DRIFT
    assert fake.repeats == 4  # decided at 7 repeats of NEW: 3 of its file, 4 run here
    assert "1.12x slower: 0.89x (sequential 95% CI 0.80x to 0.99x)" in shown
    assert "settle: batch 16 fp32: decided; 4 repeats run here, repeats (3 vs 7), sequential" in (
        " ".join(shown.split())
    )
    assert "each has at most a 5% chance" in shown
    added = settled_file(tmp_path)  # NEW's config, its own file: the 4 repeats run here
    assert added.status == "complete" and added.label == result.load(new).label
    assert [round(r) for r in added.points[0].repeat_throughputs()] == [89, 91, 87, 89]


def test_a_change_near_what_the_old_side_allows_stops_at_the_cap(tmp_path, machine, capsys):
    old, new = saved(tmp_path, "old", OLD), saved(tmp_path, "new", NEAR)
    fake = machine(around(94.0))
    code = main(["diff", old, new, "--settle", "--max-repeats", "8",
                 "--output-dir", str(tmp_path / "out")])  # fmt: skip
    shown = " ".join(capsys.readouterr().out.split())
    assert code == 0 and fake.repeats == 5  # 8 in all: NEW's 3 and 5 more
    assert "settle: batch 16 fp32: the cap of 8 repeats; 5 repeats run here" in shown
    assert "cannot tell (sequential 95% CI" in shown
    assert len(settled_file(tmp_path).points[0].repeat_throughputs()) == 5


def test_two_identical_sides_the_old_too_noisy_for_the_margin_stop_as_futile(
    tmp_path, machine, capsys
):
    old, new = saved(tmp_path, "old", OLD), saved(tmp_path, "new", SAME)
    fake = machine(around(100.0))
    assert main(["diff", old, new, "--settle", "--output-dir", str(tmp_path / "out")]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert fake.repeats == 0  # OLD's three repeats spread 6%: no new repeat could settle it
    assert not (tmp_path / "out").exists()  # no file for no repeat
    assert (
        "settle: batch 16 fp32: futile: at the cap of 20 repeats the interval would still be "
        "about ±12.9%, wider than the ±2% margin, and no change it still allows is as large"
    ) in shown


def test_the_budget_ends_the_settle_before_a_repeat_that_would_not_fit(tmp_path, machine, capsys):
    old, new = saved(tmp_path, "old", OLD), saved(tmp_path, "new", NEAR)
    fake = machine(around(94.0), repeat_s=100.0)
    code = main(["diff", old, new, "--settle", "--budget", "250s",
                 "--output-dir", str(tmp_path / "out")])  # fmt: skip
    shown = " ".join(capsys.readouterr().out.split())
    # 100 s, 200 s: the third would end at 300 s, past the 250 s budget
    assert code == 0 and fake.repeats == 2
    assert "the budget of 4.2 min: 50 s left, a repeat takes up to 100 s; 2 repeats run here" in (
        shown
    )


def test_sigterm_keeps_every_finished_repeat_and_says_the_verdict_so_far(tmp_path, machine, capsys):
    old, new = saved(tmp_path, "old", OLD), saved(tmp_path, "new", NEAR)
    fake = machine(around(94.0), stop_at=4)  # SIGTERM during the fourth repeat
    on_disk = []  # repeats in the saved file as each child starts: a kill -9 keeps these
    spawn = fake.__call__

    def watched(point, job, on_progress, timeout_s=None):
        if job == "measure":
            files = list((tmp_path / "out").glob("*.json"))
            on_disk.append(len(settled_file(tmp_path).points[0].repeat_throughputs())
                           if files and result.load(files[0]).points else 0)  # fmt: skip
        return spawn(point, job, on_progress, timeout_s)

    launchers.spawn = watched  # the machine fixture's monkeypatch restores it
    code = main(["diff", old, new, "--settle", "--output-dir", str(tmp_path / "out")])
    shown = " ".join(capsys.readouterr().out.split())
    assert code == 128 + signal.SIGTERM
    assert on_disk == [0, 1, 2, 3]  # saved after every repeat, not only at the end
    kept = settled_file(tmp_path)
    assert kept.status == "interrupted" and len(kept.points[0].repeat_throughputs()) == 3
    assert "settle: batch 16 fp32: interrupted; 3 repeats run here, repeats (3 vs 6)" in shown
    assert "cannot tell (sequential 95% CI" in shown


def test_repeats_of_other_software_are_kept_but_not_pooled(tmp_path, machine, capsys):
    old, new = saved(tmp_path, "old", OLD), saved(tmp_path, "new", SLOWER)
    other = {**here(), "framework": {"name": "torch", "torch": "2.15.0"}}
    fake = machine(around(89.0), environment=other)
    code = main(["diff", old, new, "--settle", "--output-dir", str(tmp_path / "out")])
    shown = " ".join(capsys.readouterr().out.split())
    assert code == 0 and fake.repeats == 1
    assert (
        "not pooled: the repeats here differ from NEW in framework.torch: '2.14.1' there, "
        "'2.15.0' here; 1 repeat run here, repeats (3 vs 3)"
    ) in shown
    assert len(settled_file(tmp_path).points[0].repeat_throughputs()) == 1


def test_new_measured_on_another_machine_is_not_run_again(tmp_path, machine, capsys):
    elsewhere = here()
    elsewhere["cpu"] = {**elsewhere["cpu"], "model": "AMD EPYC 9R14"}
    old = saved(tmp_path, "old", OLD)
    new = saved(tmp_path, "new", SLOWER, environment=elsewhere)
    fake = machine(around(89.0))
    assert main(["diff", old, new, "--settle"]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert fake.repeats == 0
    assert "settle: batch 16 fp32: not run: " in shown
    assert "was measured on another machine (cpu.model: 'AMD EPYC 9R14' there," in shown


def test_new_asking_for_more_threads_than_this_machine_has_is_not_run(tmp_path, machine, capsys):
    old = saved(tmp_path, "old", OLD, threads=4096)
    new = saved(tmp_path, "new", SLOWER, threads=4096)  # a file may say up to 4096
    fake = machine(around(89.0))
    assert main(["diff", old, new, "--settle"]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert fake.repeats == 0
    assert "new.json asks for 4096 threads or loader workers, more than the" in shown


def test_no_child_runs_past_the_budget(tmp_path, machine, capsys):
    old = saved(tmp_path, "old", OLD)
    new = saved(tmp_path, "new", NEAR, timeout_s=86400.0)
    fake = machine(around(94.0), repeat_s=100.0)
    main(["diff", old, new, "--settle", "--budget", "250s", "--output-dir", str(tmp_path / "out")])
    # each child gets what is left of the budget, never NEW's day: 250 s, 150 s
    assert fake.timeouts == [250.0, 150.0]
    assert settled_file(tmp_path).config.timeout_s == 86400.0  # NEW's config, as it was


def test_a_point_already_decided_runs_nothing(tmp_path, machine, capsys):
    old = saved(tmp_path, "old", [100.0, 100.5, 99.5])
    new = saved(tmp_path, "new", [80.0, 80.4, 79.6])
    fake = machine(around(80.0))
    assert main(["diff", old, new, "--settle", "--format", "json"]) == EXIT_DRIFT
    document = json.loads(capsys.readouterr().out)
    assert fake.repeats == 0
    assert document["points"][0]["verdict"] == "slower"
    assert document["points"][0]["basis"] == "repeats (3 vs 3), sequential"
    assert document["settle"]["points"] == {} and document["settle"]["alpha"] == 0.05


@pytest.mark.parametrize(
    ("option", "value", "said"),
    [
        ("--budget", "0", "argument --budget: '0': expected a positive time"),
        ("--budget", "-5m", "argument --budget: '-5m': expected a positive time"),
        ("--budget", "9" * 400 + "h", "use a positive time up to 30 days"),
        ("--max-repeats", "0", "argument --max-repeats: '0' is not allowed; use a whole number"),
        ("--max-repeats", "-3", "argument --max-repeats: '-3' is not allowed"),
        ("--max-repeats", "1001", "from 1 to 1000"),
    ],
)
def test_a_bad_bound_is_one_line(tmp_path, machine, capsys, option, value, said):
    old, new = saved(tmp_path, "old", OLD), saved(tmp_path, "new", SLOWER)
    fake = machine(around(89.0))
    assert main(["diff", old, new, "--settle", f"{option}={value}"]) == 2
    assert fake.repeats == 0
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1


def test_a_bound_without_settle_is_one_line(tmp_path, capsys):
    old, new = saved(tmp_path, "old", OLD), saved(tmp_path, "new", SLOWER)
    assert main(["diff", old, new, "--budget", "10m"]) == 2
    assert "--budget: only with --settle" in capsys.readouterr().err


def test_settle_on_results_of_different_configurations_is_one_line(tmp_path, machine, capsys):
    machine(around(89.0))  # nothing runs: were it to, on a fake machine
    old = saved(tmp_path, "old", OLD)
    new = saved(tmp_path, "new", SLOWER, threads=1)
    assert main(["diff", old, new]) == 0  # a plain diff says what it sees
    capsys.readouterr()
    assert main(["diff", old, new, "--settle"]) == 2
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1
        and (
            "--settle: the results differ in threads (None vs 1): --settle pools repeats of one "
            "configuration"
        )
        in err
    )


def test_rerun_settle_adds_repeats_to_the_rerun_s_own_file(tmp_path, machine, capsys):
    old = saved(tmp_path, "old", OLD)
    rates = [92.0, 86.0, 89.0] + [89.0 + (n % 3 - 1) * 2 for n in range(1, 30)]
    fake = machine(lambda n: rates[n - 1])
    code = main(["rerun", old, "--settle", "--output-dir", str(tmp_path / "out")])
    shown = " ".join(capsys.readouterr().out.split())
    assert code == EXIT_DRIFT and fake.repeats == 7  # the rerun's 3, then 4 more
    assert "settle: batch 16 fp32: decided; 4 repeats run here, repeats (3 vs 7)" in shown
    rerun = settled_file(tmp_path)  # one file: the rerun and its settle
    assert rerun.status == "complete" and len(rerun.points[0].repeat_throughputs()) == 7


def test_rerun_settle_with_json_prints_one_document_the_file_as_settled(tmp_path, machine, capsys):
    old = saved(tmp_path, "old", OLD)
    rates = [92.0, 86.0, 89.0] + [89.0 + (n % 3 - 1) * 2 for n in range(1, 30)]
    machine(lambda n: rates[n - 1])
    code = main(["rerun", old, "--settle", "--json", "--output-dir", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert code == EXIT_DRIFT and "1.12x slower: 0.89x (sequential" in err
    document = json.loads(out)  # one document: neither the rerun's nor the settle's twice
    assert len(document["points"][0]["step_times_s"]) == 7


def test_rerun_settle_where_no_repeat_could_decide_adds_none(tmp_path, machine, capsys):
    old = saved(tmp_path, "old", OLD)
    fake = machine(lambda n: SAME[(n - 1) % 3])
    assert main(["rerun", old, "--settle", "--output-dir", str(tmp_path / "out")]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert fake.repeats == 3  # the rerun's own repeats, then nothing: futile at once
    assert shown.count("result: ") == 1  # the rerun's file, not resumed to add nothing
    assert "settle: batch 16 fp32: futile: at the cap of 20 repeats" in shown
    assert "0 repeats run here, repeats (3 vs 3), sequential" in shown
    assert settled_file(tmp_path).status == "complete"


def test_rerun_without_settle_is_as_before_and_its_bounds_need_settle(tmp_path, machine, capsys):
    old = saved(tmp_path, "old", OLD)
    fake = machine(around(100.0))
    assert main(["rerun", old, "--output-dir", str(tmp_path / "out")]) == 0
    shown = capsys.readouterr().out
    assert fake.repeats == 3 and "95% CI" in shown and "sequential" not in shown
    assert main(["rerun", old, "--max-repeats", "9"]) == 2
    assert "--max-repeats: only with --settle" in capsys.readouterr().err


def test_rerun_settle_of_a_ladder_is_one_line(tmp_path, capsys):
    path = tmp_path / "ladder.json"
    res = result.load(saved(tmp_path, "old", OLD))
    axes = dict(zip(POINT_AXES, point_axes(res.points[0]), strict=True))
    rung = {"rung": "fp32", "why": "the baseline", "kept": True, "point": axes}
    path.write_text(result.dumps(dataclasses.replace(res, ladder=[rung])))
    assert main(["rerun", str(path), "--settle"]) == 2
    assert "is a ladder's result: it chose its points as it ran" in capsys.readouterr().err


def test_crafted_repeats_that_overflow_or_hold_no_throughput_are_a_verdict_not_a_traceback():
    """Valid files, found by review: a second and a million seconds a step (one degree of
    freedom: exp() of the interval overflowed), and an epoch-mode point with more epochs
    than steps (no per-repeat throughput: fmean([]) raised)."""
    from bench.result import drift

    wild = Point(batch_size=16, precision="fp32", step_times_s=((1e-6,), (1e6,)))
    new = Point(batch_size=16, precision="fp32", step_times_s=((0.16,),))
    said = drift.settle_point(wild, new, 0.02, 20)
    assert said.verdict == drift.CANNOT_TELL and "spread too far" in said.reason
    empty = Point(batch_size=1, precision="fp32", step_times_s=((0.1,),) * 3,
                  epoch_times_s=((1.0,) * 18,) * 3)  # fmt: skip
    assert empty.repeat_throughputs() == []
    said = drift.settle_point(empty, new, 0.02, 20)
    assert said.verdict == drift.UNTESTABLE and "old point has no per-repeat" in said.reason


def test_a_repeat_cut_short_by_the_budget_is_said_cut_short_not_another_machine(
    tmp_path, machine, capsys
):
    """The budget's cap stopped the first child before it recorded its machine: it was
    'not pooled: the repeats here differ from NEW in accelerator.accelerator_count: 0
    there, None here'."""
    old, new = saved(tmp_path, "old", OLD), saved(tmp_path, "new", NEAR)
    fake = machine(around(94.0), repeat_s=100.0)
    measured = fake.__call__

    def cut_short(point, job, on_progress, timeout_s=None):
        if job != "measure":
            return measured(point, job, on_progress, timeout_s)
        fake.repeats += 1
        fake.clock += timeout_s
        return {"status": "error", "error": f"timed out after {timeout_s:g} s", "devices": 1}

    launchers.spawn = cut_short  # the machine fixture's monkeypatch restores it
    main(["diff", old, new, "--settle", "--budget", "250s", "--output-dir", str(tmp_path / "out")])
    shown = " ".join(capsys.readouterr().out.split())
    assert fake.repeats == 1
    assert "not pooled" not in shown and "differ from NEW" not in shown, shown
    assert (
        "settle: batch 16 fp32: a repeat failed: cut short by the budget after 4.2 min, "
        "before it recorded its machine"
    ) in shown, shown
