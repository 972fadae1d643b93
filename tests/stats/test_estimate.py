import math

import pytest

from bench.stats.estimate import (
    Estimate,
    Summary,
    percentile,
    ratio_interval,
    relative_stdev,
    t_quantile_975,
    throughput,
)
from bench.util.units import axis_tick, human


def test_percentile_interpolates_like_numpy():
    values = [4.0, 1.0, 3.0, 2.0, 5.0]
    assert percentile(values, 0) == 1.0
    assert percentile(values, 50) == 3.0
    assert percentile(values, 100) == 5.0
    # numpy.percentile([1,2,3,4,5], 5) == 1.2 and 95 -> 4.8
    assert percentile(values, 5) == pytest.approx(1.2)
    assert percentile(values, 95) == pytest.approx(4.8)
    assert percentile([7.0], 95) == 7.0


@pytest.mark.parametrize("bad", [-1, 101])
def test_percentile_rejects_out_of_range(bad):
    with pytest.raises(ValueError):
        percentile([1.0], bad)


def test_summary_of_step_times():
    s = Summary.of([0.1, 0.2, 0.3, 0.4], "s")
    assert (s.n, s.mean, s.median, s.unit) == (4, pytest.approx(0.25), pytest.approx(0.25), "s")
    assert s.stdev == pytest.approx(0.1290994, rel=1e-6)
    assert Summary.of([0.5], "s").stdev is None


def test_estimate_confidence_interval_uses_student_t():
    e = Estimate.of([100.0, 102.0, 104.0], "samples/s")
    # mean 102, stdev 2, n 3: half width = t(0.975, 2) * 2 / sqrt(3) = 4.303 * 1.1547
    half = 4.303 * 2 / math.sqrt(3)
    assert e.value == pytest.approx(102.0)
    assert (e.ci95_low, e.ci95_high) == (pytest.approx(102 - half), pytest.approx(102 + half))
    single = Estimate.of([100.0], "samples/s")
    assert single.ci95_low is None and single.ci95_high is None


def test_t_quantiles():
    assert t_quantile_975(1) == 12.706
    assert t_quantile_975(30) == 2.042
    assert t_quantile_975(1000) == pytest.approx(1.96, abs=1e-3)
    with pytest.raises(ValueError):
        t_quantile_975(0)


def test_overlapping_intervals():
    a = Estimate(100, 98, 102, 3, "samples/s")
    assert a.overlaps(Estimate(103, 101, 105, 3, "samples/s"))
    assert not a.overlaps(Estimate(110, 108, 112, 3, "samples/s"))
    assert not a.overlaps(Estimate(100, None, None, 1, "samples/s"))


def test_relative_stdev_and_throughput():
    assert relative_stdev([10.0]) is None
    assert relative_stdev([9.0, 11.0]) == pytest.approx(math.sqrt(2) / 10)
    # 32 samples per step, 4 steps in 2 s -> 64 samples/s
    assert throughput(32, [0.5, 0.5, 0.25, 0.75]) == pytest.approx(64.0)
    with pytest.raises(ValueError):
        throughput(32, [])


def test_a_throughput_interval_never_goes_below_zero():
    spread = [10.0, 100.0]  # two repeats far apart: the plain interval goes far below zero
    assert Estimate.of(spread, "samples/s").ci95_low < 0
    e = Estimate.of(spread, "samples/s", positive=True)
    assert e.value == pytest.approx(math.sqrt(10.0 * 100.0))  # the geometric mean: its centre
    assert 0 < e.ci95_low < 10 and e.ci95_high > 100  # t-interval of the logs
    assert e.ci95_low * e.ci95_high == pytest.approx(10.0 * 100.0)  # symmetric in log
    close = Estimate.of([100.0, 102.0, 104.0], "samples/s", positive=True)
    plain = Estimate.of([100.0, 102.0, 104.0], "samples/s")
    assert close.ci95_low == pytest.approx(plain.ci95_low, rel=0.01)


def test_the_ratio_interval_is_welchs_on_the_logs():
    stats = pytest.importorskip("scipy.stats")
    a, b = [299.0, 300.0, 303.0, 298.0], [99.0, 100.0, 104.0]
    low, high = ratio_interval(a, b)
    welch = stats.ttest_ind(
        [math.log(v) for v in a], [math.log(v) for v in b], equal_var=False
    ).confidence_interval(0.95)
    # rounded-down degrees of freedom: the same interval or a little wider, never narrower
    assert low <= math.exp(welch.low) < math.exp(welch.high) <= high
    assert low == pytest.approx(math.exp(welch.low), rel=0.01)
    assert ratio_interval([100.0, 100.0], [50.0, 50.0]) == pytest.approx((2.0, 2.0))  # exact
    assert ratio_interval([100.0], [50.0, 51.0]) is None  # one run: nothing to test
    assert ratio_interval([100.0, 0.0], [50.0, 51.0]) is None


def test_human_numbers():
    assert human(84.3e6, "samples/$") == "84.3 M samples/$"
    assert human(5437) == "5,437" and human(12_345) == "12.3 k"
    assert human(999_960) == "1.00 M"  # not '1,000 k'
    assert human(0.0123, "J") == "0.0123 J" and human(99.96) == "100"
    assert human(8e-21, "J") == "8.00e-21 J" and human(-3.2e-5) == "-3.20e-05"
    assert human(2.5e18, "FLOP/s") == "2.50e+18 FLOP/s" and human(0.0) == "0"
    assert human(None) == "n/a" and human(float("nan")) == "n/a"
    assert "e" not in human(999.4e12) + human(1e-4)  # the prefixes' reach, no further
    assert axis_tick(0.25) == "0.25" and axis_tick(50_000) == "50 k"


def test_a_small_ratio_keeps_two_significant_digits_as_the_page_shows_it():
    from bench.util.units import ratio

    # The page (JavaScript's toPrecision(2)) and the Python tables say the same thing.
    assert [ratio(v) for v in (1.2549, 0.1, 0.044, 0.0036, 0.00196)] == [
        "1.25", "0.10", "0.044", "0.0036", "0.0020",
    ]  # fmt: skip


def test_a_ratio_and_its_interval_keep_the_digits_that_tell_them_apart():
    """report.md printed a CPU at 0.0020x of a GPU as '0.00x', and a tight interval as
    '1.10x [1.10x–1.10x]', which reads as no spread at all."""
    from bench.report.words import ratio
    from bench.util.units import ratio_with_interval

    assert ratio({"rel": 0.00196}) == "0.0020x (no interval)"
    assert ratio({"rel": 0.00196, "rel_lo": 0.0018, "rel_hi": 0.0021}) == (
        "0.0020x [0.0018x–0.0021x]"
    )
    assert ratio_with_interval(1.1, 1.097, 1.103) == "1.100x [1.097x–1.103x]"
    assert ratio_with_interval(1.25, 1.21, 1.30) == "1.25x [1.21x–1.30x]"


def test_a_throughputs_figure_lies_inside_its_own_interval():
    """One repeat far faster than the others: the arithmetic mean (4,106) lay outside
    the interval of the logs ([234-1,901]); the geometric mean is its centre."""
    from bench.stats.estimate import Estimate, geometric_mean

    values = [143.0, 12_000.0, 175.0]
    est = Estimate.of(values, "samples/s", positive=True)
    assert est.ci95_low <= est.value <= est.ci95_high
    assert est.value == pytest.approx(geometric_mean(values))
    assert est.value < 4_106 / 2  # not the arithmetic mean


def test_a_ratio_of_two_figures_lies_inside_ratio_interval():
    from bench.stats.estimate import Estimate, ratio_interval

    a, b = [100.0, 300.0, 110.0], [90.0, 95.0, 400.0]
    ratio = Estimate.of(a, "x", positive=True).value / Estimate.of(b, "x", positive=True).value
    low, high = ratio_interval(a, b)
    assert low <= ratio <= high
    assert ratio == pytest.approx((low * high) ** 0.5)


def test_stdev_and_variance_are_statistics_own_floats():
    """The whole-number variance gives statistics' floats bit for bit: over repeats'
    throughputs and their logs, tiny and huge magnitudes, equal values, and what it
    leaves to statistics (ints, infinities)."""
    import random
    import statistics

    from bench.stats import estimate

    rng = random.Random(65)
    samples = [[1.0, 1.0], [0.1, 0.2, 0.3], [1e-12, 3e-12], [1e21, 2e21, 5e20], [1, 2, 4]]
    for _ in range(3000):
        n = rng.randint(2, 12)
        scale = 10 ** rng.uniform(-12, 21)
        values = [scale * rng.uniform(0.5, 1.5) for _ in range(n)]
        samples += [values, [math.log(v) for v in values]]
    for values in samples:
        assert estimate.stdev(values) == statistics.stdev(values), values
        assert estimate.variance(values) == statistics.variance(values), values
    assert estimate._variance_fraction([1.0, math.inf]) is None
    assert estimate._variance_fraction([1, 2]) is None
