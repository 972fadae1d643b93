"""bench tune on a new user's machine: a cold compile is priced before it is tried, the
cheap variants of each change come first, and the whole budget is used (before: on a
quiet 2-core Zen 4, `bench tune resnet50 --device cpu --budget 12m` measured one
configuration, ran a compiled probe into its cap and stopped at 4.9 minutes unranked)."""

import dataclasses
import random

import pytest

from bench.config.run_config import RunConfig
from bench.result import Point
from bench.run import launchers
from bench.search import tune
from bench.search.tune import TuneRunner, command_line
from tests.search.test_tune import Machine

RESNET50_FLOPS = 2.43e10  # per sample, as bench counts ResNet-50's training step

# The issue's grid: bench tune's default axes for ResNet-50 on a CPU without TCMalloc or
# Intel OpenMP installed.
ISSUE_GRID = {
    "batch_sizes": (32, 64, 128, 256),
    "precisions": ("fp32", "bf16"),
    "memory_formats": ("contiguous", "channels_last"),
    "compilers": (None, "inductor"),
}


def issue_step_s(point):
    """The issue's figures: fp32 batch 32 at 2.5 samples/s; bf16 channels_last batch 64
    at about 14 samples/s without compiling; a compiled step 15% faster."""
    per_sample = 0.4 * (0.25 if point.precision == "bf16" else 1.0)
    per_sample *= 0.8 if point.memory_format == "channels_last" else 1.0
    per_sample *= {32: 1.0, 64: 0.9, 128: 0.92, 256: 0.95}[point.batch_size]
    per_sample *= 0.85 if point.compile else 1.0
    return point.batch_size * per_sample


class CompilingMachine(Machine):
    """A Machine whose compiled children first compile for `compile_s` (cold each time:
    another precision or format is another graph), and whose FLOP count is `flops`."""

    def __init__(self, step_s, compile_s, flops, **kwargs):
        super().__init__(step_s, **kwargs)
        self.compile_s, self.flops = compile_s, flops

    def __call__(self, point, job, on_progress, timeout_s=None):
        if job == "count_flops":
            self.clock += self.start_s
            return {"status": "ok", "flops_per_sample": self.flops, "environment": {"host": {}}}
        extra = self.compile_s if point.compile else 0.0
        if timeout_s is not None and extra >= timeout_s:
            self.children.append(point)
            self.clock += timeout_s
            return {"status": "error", "error": f"timed out after {timeout_s:g} s"}
        self.clock += extra
        left = None if timeout_s is None else timeout_s - extra
        return super().__call__(point, job, on_progress, left)


@pytest.fixture
def two_cores(monkeypatch):
    """A CompilingMachine as bench's launcher and clock, on a machine of 2 cores (the
    cold compile's prior scales with the cores)."""
    monkeypatch.setattr("bench.run.cost.usable_cores", lambda: 2)
    # The machine's own FLOP count (its child), not the shipped table's for "tiny": the
    # cost model prices a cold compile from it.
    monkeypatch.setattr("bench.result.catalog.reference_flops", lambda workload, shape: None)

    def install(**kwargs):
        fake = CompilingMachine(**kwargs)
        monkeypatch.setattr(launchers, "spawn", fake)
        monkeypatch.setattr(tune.time, "monotonic", lambda: fake.clock)
        return fake

    return install


def test_the_issues_two_core_search_ranks_without_a_compile_that_cannot_fit(tmp_path, two_cores):
    fake = two_cores(step_s=issue_step_s, compile_s=221.0, flops=RESNET50_FLOPS, start_s=15.0)
    config = RunConfig(workload="tiny", steps=20, repeats=3, **ISSUE_GRID)
    outcome = TuneRunner(config, tmp_path, budget_s=12 * 60.0).run()
    record = outcome.tune
    # before: one configuration measured, a compiled probe into its cap, unranked at 4.9 min
    assert record["ranked"], record["not_ranked"]
    assert fake.clock <= 12 * 60 * (1 + tune.SOFT_OVERRUN)
    assert record["coverage"]["measured"] >= 3
    assert not any(c.compile for c in fake.children)  # no compile fits: none was started
    best = outcome.points[0]
    assert (best.precision, best.memory_format, best.compile) == ("bf16", "channels_last", None)
    assert "--compile" not in command_line(best, outcome.config)


def test_a_compile_that_fits_is_still_tried_after_its_cheap_variant(tmp_path, two_cores):
    fake = two_cores(step_s=issue_step_s, compile_s=150.0, flops=RESNET50_FLOPS, start_s=15.0)
    config = RunConfig(workload="tiny", steps=20, repeats=3, **ISSUE_GRID)
    outcome = TuneRunner(config, tmp_path, budget_s=60 * 60.0).run()
    assert outcome.tune["ranked"]
    assert fake.clock <= 60 * 60 * (1 + tune.SOFT_OVERRUN)
    children = [dataclasses.replace(c, steps=3, warmup_steps=2) for c in fake.children]
    compiled = [i for i, c in enumerate(children) if c.compile]
    assert compiled, "no compiled configuration was tried"
    # each compiled probe came after its configuration without the compiler
    for i in compiled:
        plain = dataclasses.replace(children[i], compile=None)
        assert plain in children[:i]
    # and it won: a compiled step is 15% faster
    best = outcome.points[0]
    assert (best.precision, best.memory_format, best.compile) == (
        "bf16", "channels_last", "inductor",
    )  # fmt: skip


def test_probes_past_their_caps_in_the_first_half_leave_the_second_to_rank(tmp_path, two_cores):
    """The issue's search lost 221 s to a probe that ran into its cap, then stopped at 4.9 of
    its 12 minutes: round 1 took no probe past its half of the budget, though a second
    probe and a final round of two still fitted in the whole. Here the first two probes
    (the seeded order's first two at batch 32 without a compiler) are a hundred times
    slow and run into their caps, a quarter of the 13 minutes each."""
    config = RunConfig(workload="tiny", steps=20, repeats=3, **ISSUE_GRID)
    grid = list(config.points())
    random.Random(tune.SEED).shuffle(grid)
    slow = [p for p in grid if p.batch_size == 32 and p.compile is None][:2]

    def step_s(point):
        same = dataclasses.replace(point, steps=slow[0].steps, warmup_steps=slow[0].warmup_steps)
        return issue_step_s(point) * (100 if same in slow else 1)

    fake = two_cores(step_s=step_s, compile_s=221.0, flops=RESNET50_FLOPS, start_s=15.0)
    outcome = TuneRunner(config, tmp_path, budget_s=13 * 60.0).run()
    record = outcome.tune
    first = [Point.from_json(p) for p in record["rounds"][0]["points"]]
    assert [p.status for p in first[:2]] == ["error", "error"]  # past half the budget
    # before: one probe, nothing measured, "a budget of at least 52 min would let it"
    assert record["ranked"], record["not_ranked"]
    assert fake.clock <= 13 * 60 * (1 + tune.SOFT_OVERRUN)
    best = outcome.points[0]
    assert (best.precision, best.memory_format, best.compile) == ("bf16", "channels_last", None)


def test_the_flop_count_is_no_part_of_the_first_probes_start_up(tmp_path, two_cores):
    """The FLOP count is a child of its own, started once before the first probe: taken
    as that probe's start-up, it doubled every prediction, and a real 4-minute search of
    tiny stopped after one probe ("a budget of about 4.6 min would probe another")."""
    fake = two_cores(step_s=issue_step_s, compile_s=221.0, flops=RESNET50_FLOPS, start_s=15.0)
    config = RunConfig(workload="tiny", steps=20, repeats=3, **ISSUE_GRID)
    runner = TuneRunner(config, tmp_path, budget_s=12 * 60.0)
    runner.run()
    assert fake.clock > 15.0 and runner.cost.seen
    assert runner.cost.seen[0].start_s == pytest.approx(15.0, abs=0.5)  # before: 30
