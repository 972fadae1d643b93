"""Steps in a history (bench.stats.changepoint) on simulated histories: a step found where
there is one, with its size and interval; none in noise, at about the rate it claims."""

import math

import numpy as np
import pytest

from bench.stats import changepoint
from bench.stats.changepoint import ALPHA, MIN_RUNS, steps
from bench.util.errors import UsageError


def history(rng, runs, *, step_at=None, size=1.10, day=0.02, repeat=0.01, repeats=3):
    """Each run's repeat throughputs: a level of 100 samples/s (times `size` from run
    `step_at` on), a day's own noise (log-normal, `day`) shared by its repeats, and each
    repeat's (`repeat`)."""
    out = []
    for i in range(runs):
        level = 100.0 * (size if step_at is not None and i >= step_at else 1.0)
        today = level * math.exp(rng.normal(0, day))
        out.append([today * math.exp(rng.normal(0, repeat)) for _ in range(repeats)])
    return out


def test_one_step_is_found_where_it_is_with_its_size_and_interval():
    """40 histories of 20 runs, 10% faster from run 12: found there in nearly all, its
    95% interval holding 1.10 in nearly all (the split is where the sides differ most,
    so a little less than 95%); the segments either side may split again on noise."""
    rng = np.random.default_rng(7)
    found_at, alone, covered = 0, 0, 0
    for _ in range(40):
        found = steps(history(rng, 20, step_at=12, size=1.10))
        at = [s for s in found if s.at == 12]
        found_at += len(at)
        alone += len(found) == 1 and len(at) == 1
        covered += any(s.interval[0] < 1.10 < s.interval[1] for s in at)
        for step in at:
            assert step.verdict.word == "faster" and step.p_value < ALPHA
            assert step.sentence().startswith(f"{step.ratio:.2f}x faster (95% CI")
    assert found_at >= 38 and alone >= 35 and covered >= 34
    [step] = steps(history(np.random.default_rng(8), 20, step_at=12, size=1.10))
    assert (step.at, step.before, step.after) == (12, 12, 8)
    slower = steps(history(rng, 30, step_at=10, size=0.85))
    assert [(s.at, s.verdict.word) for s in slower] == [(10, "slower")]


def test_two_steps_are_both_found():
    rng = np.random.default_rng(3)
    runs = history(rng, 15) + history(rng, 15, step_at=0, size=1.2) + history(rng, 15)
    assert [(s.at, s.verdict.word) for s in steps(runs)] == [(15, "faster"), (30, "slower")]


def test_noise_alone_is_split_about_as_rarely_as_alpha_says():
    """400 simulated histories of 20 runs, day-to-day noise 2% (larger than the repeats'
    1%: pooling repeats would call it steps); a false alarm rate near ALPHA = 1%. The
    count is binomial: 12 or more of 400 at 1% has a chance below 0.001."""
    rng = np.random.default_rng(11)
    alarms = sum(bool(steps(history(rng, 20))) for _ in range(400))
    assert alarms < 12


def test_a_history_too_short_or_steady_has_no_step():
    rng = np.random.default_rng(1)
    short = history(rng, 2 * MIN_RUNS - 1, step_at=MIN_RUNS, size=2.0)
    assert steps(short) == []
    assert steps([[100.0, 100.0]] * 12) == []  # no spread, no step


def test_a_step_without_noise_is_exact():
    found = steps([[100.0]] * 6 + [[120.0]] * 6)
    [step] = found
    assert step.at == 6 and step.ratio == pytest.approx(1.2)
    assert step.interval == pytest.approx((1.2, 1.2))


def test_one_history_gives_one_answer():
    rng = np.random.default_rng(5)
    runs = history(rng, 18, step_at=9, size=1.05, day=0.015)
    assert steps(runs) == steps(runs)


@pytest.mark.parametrize("bad", [[], [100.0, 0.0], [math.nan], [-1.0]])
def test_a_run_without_positive_throughputs_is_one_line(bad):
    with pytest.raises(UsageError, match=r"run 2 of the history: .* is not allowed"):
        changepoint.run_values([[100.0], bad])
