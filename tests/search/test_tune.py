"""bench tune: successive halving over a grid, decided by a fake child with known speeds,
and one real search on the CPU."""

import dataclasses
import json
import random

import pytest

from bench import registry, result
from bench.cli import main
from bench.commands.options import duration
from bench.commands.tune import default_axes, versus_runner_up
from bench.config.run_config import RunConfig
from bench.result import Point
from bench.run import launchers
from bench.run.runner import Runner
from bench.search import tune
from bench.search.tune import TuneRunner, command_line
from bench.util.errors import UsageError
from tests.conftest import only_result, run_bench
from tests.run.test_runner import FakeChild, ok_response

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
    measured = [p for p, job in child.calls if job == "measure"]
    assert len(measured) == 32 + 11 + 12
    assert {p.steps for p in measured[:32]} == {3} and {p.steps for p in measured[-12:]} == {20}
    # every probe is saved and loads back
    saved = result.load(runner.path)
    assert saved.tune == json.loads(json.dumps(outcome.tune)) and len(saved.points) == 4
    said = versus_runner_up(best, outcome.points[1])  # batch 128: 110 vs 120 samples/s
    assert said.startswith("against the runner-up (batch 128 bf16 compile=inductor): 1.09x faster")
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
    # the GPU ladder's levers: CUDA graphs and the fused optimizer (before: inductor only)
    assert gpu["compilers"] == (None, "inductor", "inductor:reduce-overhead")
    assert gpu["optimizations"] == (None, "fused")
    assert axes["compilers"] == (None, "inductor") and "fused" not in axes["optimizations"]
    # a workload with its own optimizer: --optimize fused would not reach it, so not tried
    decoder = default_axes(RunConfig(workload="gpt2", device="cuda"), set())
    assert "fused" not in decoder["optimizations"]
    # the command asks the platform; it knows no platform by name
    monkeypatch.setattr(type(registry.platform("cpu")), "tune_precisions", ("fp16",))
    monkeypatch.setattr(type(registry.platform("cpu")), "tunes_host_runtimes", False)
    axes = default_axes(cpu, set())
    assert axes["precisions"] == ("fp32", "fp16") and "allocators" not in axes


@pytest.mark.slow
@pytest.mark.long
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
    measured = [p for p, job in child.calls if job == "measure"]
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


class Machine:
    """A fake launcher on a fake clock (as pyperf tests its runner): each child costs
    `start_s` plus its warm-up and steps at `step_s(point)` seconds each, and one that
    would run past its timeout is stopped there, as bench.run.launchers.process does."""

    def __init__(self, step_s, start_s=8.0, peak=None, oom=lambda point: False):
        self.step_s, self.start_s, self.peak, self.oom = step_s, start_s, peak, oom
        self.clock = 0.0
        self.children = []

    def __call__(self, point, job, on_progress, timeout_s=None):
        if job == "count_flops":
            self.clock += self.start_s
            return {"status": "ok", "flops_per_sample": 2e6, "environment": {"host": {}}}
        self.children.append(point)
        if self.oom(point):
            self.clock += self.start_s
            return {"status": "oom", "error": "out of memory"}
        step = self.step_s(point)
        cost = self.start_s + (point.warmup_steps + point.steps) * step
        if timeout_s is not None and cost > timeout_s:
            self.clock += timeout_s
            return {"status": "error", "error": f"timed out after {timeout_s:g} s"}
        self.clock += cost
        response = ok_response(step)
        response["warmup_times_s"] = [step] * point.warmup_steps
        response["step_times_s"] = [step * (1 + 0.004 * (len(self.children) % 3 - 1))
                                    for _ in range(point.steps)]  # fmt: skip
        if self.peak is not None:
            response["peak_memory_bytes"] = self.peak(point)
        return response


@pytest.fixture
def machine(monkeypatch):
    """Install a Machine as bench's launcher and clock: machine(step_s, ...), on 2 cores
    (a cold compile's prior scales with them)."""
    monkeypatch.setattr("bench.run.cost.usable_cores", lambda: 2)
    # The machine's own FLOP count (its child), not the shipped table's for "tiny": the
    # cost model prices a cold compile from it.
    monkeypatch.setattr("bench.result.catalog.reference_flops", lambda workload, shape: None)

    def install(step_s, **kwargs):
        fake = Machine(step_s, **kwargs)
        monkeypatch.setattr(launchers, "spawn", fake)
        monkeypatch.setattr(tune.time, "monotonic", lambda: fake.clock)
        return fake

    return install


def shuffled_first(config):
    """The configuration the search of bench 0.x probed first (its seeded shuffle)."""
    grid = list(config.points())
    random.Random(tune.SEED).shuffle(grid)
    return grid[0]


def test_one_configuration_a_hundred_times_slower_is_capped_and_the_rest_ranked(tmp_path, machine):
    config = RunConfig(workload="tiny", steps=20, repeats=3, **GRID)
    slow = shuffled_first(config)  # probed first before: it took the whole budget

    def step_s(point):
        same = dataclasses.replace(point, steps=slow.steps, warmup_steps=slow.warmup_steps)
        return point.batch_size / speed(point) * (100 if same == slow else 1)

    fake = machine(step_s, start_s=5.0)
    outcome = TuneRunner(config, tmp_path, budget_s=600.0).run()
    record = outcome.tune
    final = record["rounds"][-1]  # before: round 1 probed the slow one, then 2 others
    assert len(record["rounds"][0]["points"]) >= 16 and final["repeats"] == 3
    assert record["ranked"] and len(outcome.points) >= 2
    assert fake.clock <= 600 * (1 + tune.SOFT_OVERRUN) and record["spent_s"] == pytest.approx(
        fake.clock, abs=0.01
    )
    # the slow one ran into its cap once and was not tried again
    assert sum(c == dataclasses.replace(slow, steps=c.steps, warmup_steps=c.warmup_steps)
               for c in fake.children) == 1  # fmt: skip
    probes = [Point.from_json(p) for p in record["rounds"][0]["points"]]
    capped = [p for p in probes if p.status != "ok"]
    assert len(capped) == 1 and capped[0].error.startswith("timed out after")
    assert record["coverage"]["measured"] >= 16 and record["coverage"]["failed"] == 1
    # the winner is the fastest the search measured, ranked with intervals
    fastest = max((p for p in probes if p.status == "ok"), key=speed_of)
    assert outcome.points[0].label == fastest.label
    assert outcome.points[0].throughput.ci95_low is not None


def speed_of(point):
    return point.throughput.value


RESNET_GRID = {
    "batch_sizes": (32, 64, 128, 256),
    "precisions": ("fp32", "bf16"),
    "memory_formats": ("contiguous", "channels_last"),
    "allocators": ("system", "tcmalloc"),
}


def resnet50_on_two_cores(point):
    """The issue's machine: fp32 batch 256 takes 107 s a step, bf16 about half."""
    per_sample = 0.42 * (0.5 if point.precision == "bf16" else 1.0)
    per_sample *= 0.95 if point.memory_format == "channels_last" else 1.0
    per_sample *= 0.97 if point.allocator == "tcmalloc" else 1.0
    return point.batch_size * per_sample


def test_a_step_of_a_hundred_seconds_still_ranks_within_the_budget(tmp_path, machine):
    config = RunConfig(workload="tiny", steps=20, repeats=3, **RESNET_GRID)
    fake = machine(resnet50_on_two_cores)
    outcome = TuneRunner(config, tmp_path, budget_s=12 * 60.0).run()
    record = outcome.tune
    assert len(record["rounds"][0]["points"]) >= 4  # before: 1 of 32, a batch 256 in fp32
    assert record["ranked"] and len(outcome.points) >= 2
    assert fake.clock <= 12 * 60 * (1 + tune.SOFT_OVERRUN)
    assert record["coverage"]["measured"] >= 4
    assert max(c.batch_size for c in fake.children) < 256
    assert outcome.points[0].precision == "bf16"  # the fastest kind it could reach
    final = record["rounds"][-1]
    assert final["repeats"] == 3 and final["steps"] < 20  # shortened to fit, and said so
    assert "the final round measures" in record["stopped"]


def tune_cli(tmp_path, capsys, *flags):
    code = main(["tune", "tiny", "--output-dir", str(tmp_path), "--compile", "none", "--openmp",
                 "gnu", "--memory-format", "contiguous", "--threads", "1", *flags])  # fmt: skip
    return code, capsys.readouterr().out


def test_a_budget_too_small_to_rank_says_so_and_recommends_nothing(
    tmp_path, machine, capsys, libraries
):
    """--allocator tcmalloc with TCMalloc faked: the clock is fake, so the library need not
    be real, and the README's test command needs no OS package."""
    machine(resnet50_on_two_cores)
    code, out = tune_cli(tmp_path, capsys, "--budget", "60s", "--batch-size", "32,64,128,256",
                         "--precision", "fp32,bf16", "--allocator", "system,tcmalloc")  # fmt: skip
    said = " ".join(out.split())
    assert "not ranked: could not rank:" in said and "a budget of at least" in said
    assert "no configuration is recommended" in said
    assert "best:" not in said and "bench run" not in said
    assert code in (0, 1)
    saved = only_result(tmp_path)["tune"]
    assert saved["ranked"] is False and saved["not_ranked"] in said


def test_a_ranked_search_prints_coverage_ranking_and_the_winner(tmp_path, machine, capsys):
    machine(lambda p: p.batch_size / speed(p), start_s=2.0)
    code, out = tune_cli(tmp_path, capsys, "--budget", "10m", "--batch-size", "32,64,128",
                         "--precision", "fp32,bf16", "--allocator", "system", "--steps",
                         "10")  # fmt: skip
    said = " ".join(out.split())
    assert code == 0
    assert (
        "coverage: 6 of the 6 configurations measured, 0 failed, 0 left out, 0 not reached" in said
    )
    assert "1. batch 64 bf16" in said and "2. batch 128 bf16" in said
    assert "best: batch 64 bf16 system gnu-omp: against the runner-up (batch 128 bf16" in said
    assert "gnu-omp): 1.091x faster (95% CI 1.08" in said
    assert "bench run tiny --framework torch --device cpu --batch-size 64 --precision bf16" in said


def test_configurations_predicted_past_memory_are_left_out_with_the_reason(tmp_path, machine):
    gib = 2**30
    config = RunConfig(workload="tiny", steps=20, repeats=3, memory_limit_bytes=20 * gib, **GRID)

    def oom(point):  # bf16 channels_last compiled runs out at batch 128
        return (point.precision, point.memory_format, point.compile) == (
            "bf16", "channels_last", "inductor") and point.batch_size >= 128  # fmt: skip

    fake = machine(lambda p: p.batch_size / speed(p), start_s=1.0,
                   peak=lambda p: gib + p.batch_size * 100 * 2**20, oom=oom)  # fmt: skip
    outcome = TuneRunner(config, tmp_path, budget_s=3600.0).run()
    skipped = {s["label"]: s["why"] for s in outcome.tune["skipped"]}
    # batch 256 needs about 26 GiB on the line through batch 64 and 128: none is started
    assert all(c.batch_size < 256 for c in fake.children)
    assert len(skipped) == 8 and all(label.startswith("batch 256 ") for label in skipped)
    assert skipped["batch 256 bf16 channels_last compile=inductor"].startswith(
        "memory: batch 128 of the same precision, format and compiler ran out of memory"
    )
    line = skipped["batch 256 fp32"]
    assert line.startswith("memory: about 26.00 GiB predicted (batch 64: 7.25 GiB, batch 128:")
    assert line.endswith("above 90% of the 20.00 GiB this device has")
    assert outcome.tune["coverage"]["left_out"] == 8 and outcome.tune["ranked"]


def test_one_probe_in_the_budget_runs_no_final_round_of_one(tmp_path, machine):
    config = RunConfig(workload="tiny", steps=20, repeats=3, **RESNET_GRID)
    fake = machine(resnet50_on_two_cores)
    outcome = TuneRunner(config, tmp_path, budget_s=5 * 60.0).run()
    assert len(fake.children) == 1 and len(outcome.tune["rounds"]) == 1  # before: a final of 1
    assert outcome.tune["ranked"] is False
    assert outcome.tune["not_ranked"].startswith(
        "could not rank: round 1 measured one configuration in the 5 min budget"
    )
    assert 5 * 60 < outcome.tune["needed_s"] < 12 * 60  # 12 minutes rank two (test above)
    # the budget it names is enough: round 1 may go past its half for a second probe
    machine(resnet50_on_two_cores)
    enough = TuneRunner(config, tmp_path, budget_s=outcome.tune["needed_s"]).run()
    assert enough.tune["ranked"] and len(enough.points) == 2


def test_survivors_climb_to_a_larger_batch_that_round_one_never_reached(
    tmp_path, machine, monkeypatch
):
    # A slow machine (8 s a step at batch 32, 16 s to start a child): round 1, cheapest
    # first, reaches batch 32 only, and a sample costs 15% less at batch 64. The
    # survivors' batch 64 goes into the next round beside them, and wins. Compiling
    # costs nothing on this machine, and the cost model is told so. (8 minutes: in 10,
    # a compiled probe priced from its uncompiled twin, round 1 reaches batch 64 too.)
    monkeypatch.setattr("bench.run.cost.cold_compile_s", lambda flops, cores: 0.0)
    config = RunConfig(workload="tiny", steps=20, repeats=3, batch_sizes=(32, 64),
                       precisions=("fp32",), memory_formats=("contiguous", "channels_last"),
                       compilers=(None, "inductor"))  # fmt: skip

    def step_s(point):
        per_sample = 0.25 * (0.85 if point.batch_size >= 64 else 1.0)
        per_sample *= 0.8 if point.compile else 1.0
        per_sample *= 0.9 if point.memory_format == "channels_last" else 1.0
        return point.batch_size * per_sample

    fake = machine(step_s, start_s=16.0)
    outcome = TuneRunner(config, tmp_path, budget_s=8 * 60.0).run()
    first, last = outcome.tune["rounds"][0], outcome.tune["rounds"][-1]
    assert {Point.from_json(p).batch_size for p in first["points"]} == {32}
    assert last["batch_ups"] == ["batch 64 fp32 channels_last compile=inductor"]
    assert outcome.tune["ranked"] and outcome.points[0].label == last["batch_ups"][0]
    assert fake.clock <= 8 * 60 * (1 + tune.SOFT_OVERRUN)


@pytest.fixture
def libraries(tmp_path, monkeypatch):
    """TCMalloc, jemalloc and Intel OpenMP 'installed' (the fake child preloads nothing)."""
    from bench.run import runtime

    libs = tmp_path / "lib"
    libs.mkdir()
    for name in ("libtcmalloc.so.4", "libjemalloc.so.2", "libiomp5.so"):
        (libs / name).write_bytes(b"")
    monkeypatch.setattr(runtime, "_library_dirs", lambda: [libs])


def _runtime_search(tmp_path, machine):
    """ResNet-50 on 2 cores with the CPU runtime: 48 configurations, 8 s a step at batch
    32 in fp32; the study's changes each make it faster, all of them 4x."""
    config = RunConfig(workload="tiny", steps=20, repeats=3, batch_sizes=(32, 64),
                       precisions=("fp32", "bf16"), memory_formats=("contiguous", "channels_last"),
                       allocators=("system", "tcmalloc", "jemalloc"), openmps=("gnu", "intel"),
                       threads=1)  # fmt: skip

    def step_s(point):
        speed = 2.5 if point.precision == "bf16" else 1.0
        speed *= 1.1 if point.memory_format == "channels_last" else 1.0
        speed *= 1.15 if point.allocator == "tcmalloc" else 1.0
        speed *= 1.25 if point.openmp == "intel" else 1.0
        return point.batch_size * 0.25 / speed

    machine(step_s, start_s=16.0)
    return TuneRunner(config, tmp_path, budget_s=12 * 60.0).run()


def test_of_probes_alike_in_cost_those_with_the_studys_changes_go_first(
    tmp_path, machine, monkeypatch, libraries
):
    outcome = _runtime_search(tmp_path / "prior", machine)
    best = outcome.points[0]
    assert outcome.tune["ranked"]
    assert (best.precision, best.memory_format, best.allocator, best.openmp) == (
        "bf16", "channels_last", "tcmalloc", "intel",
    )  # fmt: skip
    # The seeded shuffle alone, in the same budget, never probed it (the test's premise).
    monkeypatch.setattr(tune, "study_prior", lambda point: 0)
    shuffled = _runtime_search(tmp_path / "shuffle", machine)
    assert shuffled.tune["coverage"]["not_reached"] > 0
    found = shuffled.points[0]
    assert (found.precision, found.memory_format, found.allocator, found.openmp) != (
        "bf16", "channels_last", "tcmalloc", "intel",
    )  # fmt: skip


def test_a_decoders_search_names_no_memory_format_in_what_it_prints(tmp_path):
    """A token sequence has no memory format, though JAX records its one (NHWC) for
    every point: the ranking and the left-out lines named 'channels_last' for a decoder."""
    from bench.commands.tune import conclusion

    gib = 2**30
    config = RunConfig(workload="gpt2", steps=20, repeats=3, batch_sizes=(32, 64, 128),
                       precisions=("fp32", "bf16"), memory_formats=("channels_last",),
                       memory_limit_bytes=20 * gib, seq_len=256)  # fmt: skip
    runner = TuneRunner(config, tmp_path, spawn=FakeChild(answer), budget_s=3600.0)
    outcome = runner.run()
    lines = conclusion(outcome)
    assert any(line.startswith("best: batch") for line in lines), lines
    assert not any("channels_last" in line for line in lines), lines
    assert outcome.tune["coverage"]["measured"] == 6
    # the winner's command measures it again: at the search's sequence length
    assert lines[-1].strip().endswith("--precision bf16 --seq-len 256"), lines[-1]
