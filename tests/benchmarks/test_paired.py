"""benchmarks/paired.py: the overhead scripts' median ratio, its 95% interval and verdict."""

from __future__ import annotations

import importlib.util
import random

from tests.conftest import ROOT

PAIRED = ROOT / "benchmarks" / "paired.py"
_spec = importlib.util.spec_from_file_location("paired", PAIRED)
paired = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(paired)  # type: ignore[union-attr]


def test_the_interval_holds_the_median_at_least_95_times_in_100_whatever_the_noise():
    rng = random.Random(0)
    for n in (6, 9, 16, 40):
        # lognormal(0, s): median 1; exponential(1): median ln 2, a skewed noise
        for draw, truth in (
            (lambda: rng.lognormvariate(0, 0.2), 1.0),
            (lambda: rng.expovariate(1.0), 0.6931471805599453),
        ):
            held = 0
            for _ in range(2000):
                low, high = paired.median_interval([draw() for _ in range(n)])
                held += low <= truth <= high
            assert held / 2000 >= 0.94, (n, held / 2000)  # 0.95 and sampling error


def test_the_interval_is_as_narrow_as_the_level_allows():
    # n = 16: P(Binomial(16, 1/2) <= 3) = 0.0106, <= 4: 0.0384; so x_4 .. x_13.
    assert paired.median_interval(list(range(1, 17))) == (4, 13)
    assert paired.median_interval([5, 1, 4, 2, 3, 6]) == (1, 6)  # 1 - 2/64 = 0.969
    assert paired.median_interval([1, 2, 3, 4, 5]) is None  # 1 - 2/32 = 0.9375


def test_the_verdict_says_within_below_or_not_settled():
    assert paired.verdict((0.975, 1.01), 0.97).startswith("within")
    assert paired.verdict((0.90, 0.965), 0.97).startswith("below")
    assert paired.verdict((0.90, 1.02), 0.97).startswith("not settled")
    assert paired.verdict(None, 0.97).startswith("too few rounds")
