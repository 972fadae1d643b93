"""bench.stats.sequential: the interval --settle looks at after every repeat, and its error rate
over simulated A/A pairs (seeded: the same pairs every run)."""

import importlib.util
import math
import random

import pytest

from bench.stats import sequential, verdict
from bench.stats.estimate import ratio_interval

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("scipy") is None, reason="bench[report] (scipy) is not installed"
)


def test_at_its_plan_the_sequence_is_about_three_standard_errors_wide():
    # The normal mixture at its narrowest: z = 3.04 for 5% (Howard et al. 2021), not 1.96.
    assert sequential.multiplier(10**6, 10**6, 10**6) == pytest.approx(3.035, abs=0.01)
    # A look at 3 + 3 repeats: the z mapped to Student's t of 4 degrees of freedom.
    assert sequential.multiplier(3, 3, 20) > 2 * sequential.multiplier(10**6, 10**6, 10**6)


def test_the_interval_holds_the_ratio_and_is_wider_than_a_fixed_sample_one():
    new, old = [90.0, 92.0, 88.0, 91.0], [100.0, 103.0, 97.0]
    ratio, (low, high) = sequential.interval(new, old, plan=20)
    geometric = math.exp(sum(map(math.log, new)) / len(new) - sum(map(math.log, old)) / len(old))
    assert ratio == pytest.approx(geometric)
    fixed_low, fixed_high = ratio_interval(new, old)
    assert low < fixed_low < ratio < fixed_high < high


def test_more_new_repeats_narrow_it_only_down_to_what_the_old_side_allows():
    old = [100.0, 103.0, 97.0]
    widths = []
    for n in (3, 10, 100, 1000):
        new = [100.0 * (1 + 0.03 * (i % 3 - 1)) for i in range(n)]
        _, (low, high) = sequential.interval(new, old, plan=1000)
        widths.append(math.log(high / low))
    assert widths == sorted(widths, reverse=True)
    assert widths[-1] > 0.5 * widths[1]  # three old repeats bound it: no 1/sqrt(n) collapse


@pytest.mark.parametrize(
    ("new", "old"), [([90.0], [100.0]), ([90.0, 0.0], [100.0]), ([], [100.0, 101.0])]
)
def test_too_few_repeats_or_a_non_positive_one_has_no_interval(new, old):
    assert sequential.interval(new, old, plan=20) is None


def settle(rng, shift, *, sigma=0.03, old_n=3, start=3, cap=20, relook=False, futile=False):
    """One simulated --settle: log-normal repeats, the new side `shift` (log) away, one
    more new repeat per look until the verdict is decided or the cap (or, `futile`, more
    repeats would very likely not decide); `relook`: the mistake it replaces, the
    fixed-sample interval judged again at every look."""

    def draw(mu):
        return 100 * math.exp(mu + rng.gauss(0, sigma))

    old = [draw(0.0) for _ in range(old_n)]
    new = [draw(shift) for _ in range(start)]
    while True:
        if relook:
            low, high = ratio_interval(new, old)
            said = verdict.judge(math.sqrt(low * high), (low, high), len(new))
        else:
            ratio, interval = sequential.interval(new, old, plan=cap)
            said = verdict.judge(ratio, interval, len(new), sequential=True)
            stuck = said.word == verdict.CANNOT_TELL and futile
            if stuck and sequential.futile(new, old, cap, verdict.DEFAULT_MARGIN) is not None:
                return "futile", len(new)
        if said.word != verdict.CANNOT_TELL or len(new) >= cap:
            return said.word, len(new)
        new.append(draw(shift))


def alarms(relook=False, pairs=2000, **kwargs):
    rng = random.Random(53)
    words = [settle(rng, 0.0, relook=relook, **kwargs)[0] for _ in range(pairs)]
    return sum(w in (verdict.FASTER, verdict.SLOWER) for w in words) / pairs


def test_over_2000_simulated_a_a_pairs_false_alarms_stay_within_five_percent():
    # Binomial sd of a 5% rate over 2,000 pairs is 0.5%: 5% is far above what is seen.
    assert alarms() <= sequential.ALPHA
    assert alarms(old_n=1, start=2) <= sequential.ALPHA  # one old repeat: the spread of new


def test_the_fixed_sample_interval_judged_at_every_look_breaks_its_five_percent():
    """What --settle must not do, measured on the same pairs: the test above can fail."""
    assert alarms(relook=True, pairs=500) > 1.5 * sequential.ALPHA  # 11.6% here


def test_a_ten_percent_slowdown_is_found_and_settling_stops_when_decided():
    rng = random.Random(7)
    runs = [settle(rng, math.log(1 / 1.1), sigma=0.02) for _ in range(200)]
    found = [n for word, n in runs if word == verdict.SLOWER]
    assert len(found) >= 0.9 * len(runs)
    assert not any(word == verdict.FASTER for word, _ in runs)
    assert sum(found) / len(found) < 8  # stopped at the look that decided, not the cap


def test_a_settle_that_cannot_decide_stops_early_and_one_that_can_goes_on():
    """Two identical sides with three old repeats spread 2%: 'the same within 2%' is out
    of reach; without the futility stop each pair ran to the cap of 20."""
    rng = random.Random(11)
    same = [settle(rng, 0.0, sigma=0.02, futile=True) for _ in range(300)]
    assert sum(n for _, n in same) / len(same) < 8
    assert sum(word in (verdict.FASTER, verdict.SLOWER) for word, _ in same) <= 0.05 * 300
    slower = [settle(rng, math.log(1 / 1.1), sigma=0.02, futile=True) for _ in range(300)]
    assert sum(word == verdict.SLOWER for word, _ in slower) >= 0.9 * 300


def test_futile_names_the_half_width_the_cap_could_reach():
    old, new = [100.0, 106.0, 94.0], [102.0, 94.0, 104.0]
    assert sequential.futile(new, old, 20, 0.02) == pytest.approx(0.129, abs=0.001)
    assert sequential.futile(new, old, 20, 0.20) is None  # the same is within reach
    assert sequential.futile([90.0, 91.0, 89.0], old, 20, 0.02) is None  # 10% off: go on
