"""bench tune: successive halving over a grid, decided by a fake child with known speeds,
and one real search on the CPU."""

import json

import pytest

from bench import registry, result, tune
from bench.commands.options import duration
from bench.commands.tune import default_axes, versus_runner_up
from bench.config import RunConfig
from bench.errors import UsageError
from bench.runner import Runner
from bench.tune import TuneRunner, command_line

from .conftest import only_result, run_bench
from .test_runner import FakeChild, ok_response

RATE = {32: 100.0, 64: 120.0, 128: 110.0, 256: 90.0}  # samples/s in fp32: best at 64
GAIN = {"bf16": 2.0, "channels_last": 0.9, "inductor": 1.3}


def speed(point) -> float:
    rate = RATE[point.batch_size]
    for axis in (point.precision, point.memory_format, point.compile):
        rate *= GAIN.get(axis, 1.0)
    return rate


def answer(point, n):
    jitter = 1 + 0.005 * (n % 3 - 1)
    return ok_response(step_s=point.batch_size / (speed(point) * jitter))


GRID = {
    "batch_sizes": (32, 64, 128, 256),
    "precisions": ("fp32", "bf16"),
    "memory_formats": ("contiguous", "channels_last"),
    "compilers": (None, "inductor"),
}


def search(tmp_path, answer=answer, budget_s=3600.0, **config):
    config = RunConfig(workload="tiny", steps=20, repeats=3, **{**GRID, **config})
    child = FakeChild(answer)
    runner = TuneRunner(config, tmp_path, spawn=child, budget_s=budget_s)
    return runner, runner.run(), child


def test_halving_finds_the_fastest_of_the_grid(tmp_path):
    runner, outcome, child = search(tmp_path)
    rounds = outcome.tune["rounds"]
    # 32 configurations, a third go on each round, steps x3 up to the run's 20
    assert [(r["of"], len(r["points"]), r["steps"], r["repeats"]) for r in rounds] == [
        (32, 32, 3, 1),
        (11, 11, 9, 1),
        (4, 4, 20, 3),
    ]
    best = outcome.points[0]
    assert (best.batch_size, best.precision, best.memory_format, best.compile) == (
        64, "bf16", "contiguous", "inductor"
    )  # fmt: skip
    assert len(outcome.points) == 4 and outcome.tune["stopped"] is None
    ranked = [p.throughput.value for p in outcome.points]
    assert ranked == sorted(ranked, reverse=True)
    # each probe is a child with the round's steps: 32 + 11 + 4 x 3 repeats
    measured = [p for p, task in child.calls if task == "measure"]
    assert len(measured) == 32 + 11 + 12
    assert {p.steps for p in measured[:32]} == {3} and {p.steps for p in measured[-12:]} == {20}
    # every probe is saved and loads back
    saved = result.load(runner.path)
    assert saved.tune == json.loads(json.dumps(outcome.tune)) and len(saved.points) == 4
    said = versus_runner_up(best, outcome.points[1])  # batch 128: 110 vs 120 samples/s
    assert said.startswith("1.09x [") and said.endswith("the runner-up: faster beyond noise")
    assert command_line(best, outcome.config) == (
        "bench run tiny --framework torch --device cpu --batch-size 64 --precision bf16 "
        "--memory-format contiguous --compile inductor"
    )


def test_a_failing_probe_drops_out_with_its_reason(tmp_path):
    def oom_at_256(point, n):
        if point.batch_size == 256:
            return {"status": "oom", "error": "out of memory"}
        return answer(point, n)

    _, outcome, _ = search(tmp_path, answer=oom_at_256)
    first = outcome.tune["rounds"][0]["points"]
    assert sum(p["status"] == "oom" for p in first) == 8
    assert all(p.batch_size != 256 and p.status == "ok" for p in outcome.points)


def test_a_lone_survivor_is_still_measured_in_full(tmp_path):
    def only_one_fits(point, n):
        if (point.batch_size, point.precision, point.memory_format, point.compile) != (
            32, "fp32", "contiguous", None
        ):  # fmt: skip
            return {"status": "oom", "error": "out of memory"}
        return answer(point, n)

    _, outcome, _ = search(tmp_path, answer=only_one_fits)
    last = outcome.tune["rounds"][-1]
    assert (last["of"], last["steps"], last["repeats"]) == (1, 20, 3)
    assert len(outcome.points) == 1 and len(outcome.points[0].repeat_throughputs()) == 3


def test_the_budget_stops_round_one_and_later_rounds(tmp_path, monkeypatch):
    """A fake clock: each probe takes 10 s of overhead plus its steps."""
    clock = [0.0]
    monkeypatch.setattr(tune.time, "monotonic", lambda: clock[0])

    def slow(point, n):
        clock[0] += 10 + (point.steps + point.warmup_steps) * point.batch_size / speed(point)
        return answer(point, n)

    _, outcome, _ = search(tmp_path, answer=slow, budget_s=200.0)
    rounds, stopped = outcome.tune["rounds"], outcome.tune["stopped"]
    probed = len(rounds[0]["points"])
    assert 5 <= probed < 32  # half the budget: about ten seconds each
    assert stopped.startswith(f"budget: round 1 probed {probed} of the 32 configurations")
    # an even smaller budget: the later rounds do not fit, the ranking is round 1's
    clock[0] = 0.0
    _, outcome, _ = search(tmp_path, answer=slow, budget_s=60.0)
    assert outcome.tune["stopped"].startswith("budget: round 1 probed")
    assert len(outcome.tune["rounds"]) <= 2


@pytest.mark.parametrize(
    ("text", "seconds"), [("20m", 1200), ("90s", 90), ("1.5h", 5400), ("45", 45)]
)
def test_budget_accepts_times_with_units(text, seconds):
    assert duration(text) == seconds


def test_the_grid_holds_what_the_platform_says_is_worth_tuning(monkeypatch):
    cpu = RunConfig(workload="tiny")
    axes = default_axes(cpu, set())
    assert axes["precisions"] == ("fp32", "bf16") and "allocators" in axes
    gpu = default_axes(RunConfig(workload="tiny", device="cuda"), set())
    assert gpu["precisions"] == ("fp32", "bf16", "fp16") and "allocators" not in gpu
    # the command asks the platform; it knows no platform by name
    monkeypatch.setattr(type(registry.platform("cpu")), "tune_precisions", ("fp16",))
    monkeypatch.setattr(type(registry.platform("cpu")), "tunes_host_runtimes", False)
    axes = default_axes(cpu, set())
    assert axes["precisions"] == ("fp32", "fp16") and "allocators" not in axes


@pytest.mark.slow
def test_tune_on_the_cpu_prints_the_winner_as_a_command(tmp_path):
    done = run_bench(
        "tune", "tiny", "--budget", "5m", "--batch-size", "8,16", "--precision", "fp32",
        "--compile", "none", "--allocator", "system", "--openmp", "gnu", "--steps", "4",
        "--warmup-steps", "1", "--repeats", "1", "--threads", "1", "--output-dir", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "tune: 4 configurations" in done.stdout
    assert (
        "best: batch " in done.stdout and "the runner-up (one run a side: untested)" in done.stdout
    )
    assert "bench run tiny --framework torch" in done.stdout
    data = only_result(tmp_path)
    rounds = data["tune"]["rounds"]
    assert [len(r["points"]) for r in rounds] == [4, 2]  # 4 probed, the best 2 measured
    assert len(data["points"]) == 2 and data["schema_version"] == result.SCHEMA_VERSION
    json.dumps(data)  # plain JSON all through
    # bad budget: one line, exit 2
    done = run_bench("tune", "tiny", "--budget", "soon")
    assert done.returncode == 2 and "expected a positive time such as 20m" in done.stderr


def _interrupted(tmp_path, config, stop_at, **kwargs):
    """A tune stopped by Ctrl-C at its `stop_at`-th child: its saved file."""

    def stopping(point, n):
        if n == stop_at:
            raise KeyboardInterrupt
        return kwargs.get("answer", answer)(point, n)

    runner = TuneRunner(config, tmp_path, spawn=FakeChild(stopping), command=["bench", "tune"],
                        budget_s=kwargs.get("budget_s", 3600.0))  # fmt: skip
    with pytest.raises(KeyboardInterrupt):
        runner.run()
    assert result.load(runner.path).status == "interrupted"
    return runner.path


def test_an_interrupted_search_goes_on_without_measuring_again(tmp_path):
    config = RunConfig(workload="tiny", steps=20, repeats=3, **GRID)
    path = _interrupted(tmp_path, config, stop_at=40)  # in round 2, after 7 of its probes
    child = FakeChild(answer)
    again = TuneRunner(config, tmp_path, spawn=child, command=["bench", "tune"])
    again.resume(path)
    outcome = again.run()
    measured = [p for p, task in child.calls if task == "measure"]
    assert len(measured) == (11 - 7) + 4 * 3  # the rest of round 2, then the finalists
    assert again.path == path and result.load(path).status == "complete"
    _, fresh, _ = search(tmp_path / "fresh")
    assert [(r["of"], len(r["points"]), r["steps"]) for r in outcome.tune["rounds"]] == [
        (r["of"], len(r["points"]), r["steps"]) for r in fresh.tune["rounds"]
    ]
    assert outcome.points[0].label == fresh.points[0].label


def test_a_resumed_search_counts_the_time_spent_before(tmp_path, monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(tune.time, "monotonic", lambda: clock[0])

    def ten_seconds(point, n):
        clock[0] += 10
        return answer(point, n)

    config = RunConfig(workload="tiny", steps=20, repeats=3, **GRID)
    path = _interrupted(tmp_path, config, stop_at=20, answer=ten_seconds, budget_s=600.0)
    assert result.load(path).tune["spent_s"] == 190.0  # 19 probes of round 1 saved
    clock[0] = 0.0  # a new process: its clock starts anew
    again = TuneRunner(config, tmp_path, spawn=FakeChild(ten_seconds), command=["bench", "tune"],
                       budget_s=300.0)  # fmt: skip
    again.resume(path)
    outcome = again.run()
    # half the new budget (150 s) was gone before the interruption: the 19 probes are
    # kept, no new one is taken in round 1 (counting from 0 s, it would probe all 32)
    assert outcome.tune["stopped"].startswith("budget: round 1 probed 19 of the 32")


def test_only_a_tune_of_the_same_config_is_resumed(tmp_path):
    config = RunConfig(workload="tiny", steps=20, repeats=3, **GRID)
    path = _interrupted(tmp_path, config, stop_at=5)
    other = TuneRunner(RunConfig(workload="tiny", steps=20, repeats=3), tmp_path,
                       command=["bench", "tune"])  # fmt: skip
    with pytest.raises(UsageError, match="a run of another config; bench cannot go on"):
        other.resume(path)
    plain = Runner(config, tmp_path, spawn=FakeChild(answer), command=["bench", "run"])
    plain_file = plain.run() and plain.path
    with pytest.raises(UsageError, match="not a bench tune result; bench tune cannot go on"):
        TuneRunner(config, tmp_path, command=["bench", "tune"]).resume(plain_file)
