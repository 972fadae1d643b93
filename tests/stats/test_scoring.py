"""Time to a target scored as MLPerf scores it, and the speedrun's test of the final
losses (bench.stats.scoring), on known inputs."""

import math
import statistics

import pytest

from bench.stats.scoring import (
    FAR_FASTER,
    Reaches,
    Score,
    mlperf_score,
    numbered,
    reaches_target,
)
from bench.util.errors import UsageError


def test_five_runs_score_the_mean_of_the_three_between_the_fastest_and_the_slowest():
    score = mlperf_score([100.0, 102.0, 98.0, 130.0, 101.0])
    assert score.value == pytest.approx((100 + 102 + 101) / 3)
    assert score.counted == (1, 2, 5) and score.dropped == (3, 4)
    assert score.runs == 5 and score.reached == 5 and score.all_reached
    assert score.note is None and score.why is None and score.far_faster == ()


def test_the_interval_is_the_trimmed_means_from_the_winsorized_spread():
    """Tukey and McLaughlin: the dropped runs set to their neighbours (98 -> 100, 130 ->
    102), the standard error s_w / ((1 - 2/5) sqrt(5)), Student's t of 5 - 3 = 2 degrees
    of freedom (4.303)."""
    score = mlperf_score([100.0, 102.0, 98.0, 130.0, 101.0])
    winsorized = [100.0, 102.0, 100.0, 102.0, 101.0]
    se = statistics.stdev(winsorized) / (0.6 * math.sqrt(5))
    centre = 101.0
    assert score.ci95 == pytest.approx((centre - 4.303 * se, centre + 4.303 * se))
    # wider than a t interval over the three kept runs alone would claim
    kept = [100.0, 102.0, 101.0]
    naive = 4.303 * statistics.stdev(kept) / math.sqrt(3)
    assert score.ci95[1] - centre > naive


def test_one_run_that_missed_is_the_slowest_and_two_make_no_score():
    one = mlperf_score([100.0, None, 104.0, 98.0, 102.0])
    assert one.dropped == (4, 2) and one.counted == (1, 3, 5)
    assert one.value == pytest.approx((100 + 104 + 102) / 3)
    assert one.reached == 4 and not one.all_reached and one.ci95 is not None
    two = mlperf_score([100.0, None, None, 98.0, 102.0])
    assert two.value is None and two.ci95 is None
    assert "2 of 5 runs did not reach the target" in two.why
    assert "more make the result invalid" in two.why


def test_fewer_than_three_runs_have_no_score_and_fewer_than_five_say_which_runs_count():
    for times in ([], [100.0], [100.0, 101.0]):
        score = mlperf_score(times)
        assert score.value is None and "needs 3 runs or more" in score.why
    three = mlperf_score([100.0, 90.0, 120.0])
    assert three.value == 100.0 and three.counted == (1,)
    assert three.ci95 is None and "no interval" in three.why  # one kept run: no spread
    assert "fewer than the 5 MLPerf asks" in three.note and "the mean of run 1" in three.note
    four = mlperf_score([100.0, 90.0, 120.0, 104.0])
    assert four.counted == (1, 4) and four.ci95 is not None
    assert "runs 1 and 4" in four.note


def test_a_run_far_faster_than_the_others_is_flagged_with_by_how_much():
    score = mlperf_score([100.0, 50.0, 104.0, 98.0, 102.0])
    [(run, factor)] = score.far_faster
    assert run == 2 and factor == pytest.approx(101.0 / 50.0) and factor > FAR_FASTER
    assert mlperf_score([100.0, 80.0, 104.0, 98.0, 102.0]).far_faster == ()  # 1.26x: noise
    # the others' median missed: any run that reached it is infinitely faster
    assert mlperf_score([100.0, None, None]).far_faster == ((1, math.inf),)
    assert mlperf_score([100.0, 20.0]).far_faster == ()  # of two, neither is "the others"


def test_a_cost_scales_the_score_and_its_interval():
    score = mlperf_score([100.0, 102.0, 98.0, 130.0, 101.0])
    value, ci = score.scaled(3.6 / 3600)
    assert value == pytest.approx(0.101) and ci == pytest.approx(
        tuple(c / 1000 for c in score.ci95)
    )
    assert score.scaled(None) is None and mlperf_score([1.0]).scaled(1.0) is None


@pytest.mark.parametrize("bad", [0.0, -3.0, math.nan, math.inf, "12"])
def test_a_time_that_is_not_a_positive_number_is_one_line(bad):
    with pytest.raises(UsageError, match=r"run 2's time to the target: .* is not allowed"):
        mlperf_score([100.0, bad, 101.0])


def test_a_score_checks_itself():
    with pytest.raises(UsageError, match=r"reached: 4 is not within 0\.\.3"):
        Score(3, 4, 1.0, None, (), (), (), None, None)
    with pytest.raises(UsageError, match="says why"):
        Score(3, 3, None, None, (), (), (), None, None)


def test_runs_well_below_the_target_reach_it_as_the_speedrun_asks():
    """modded-nanogpt's rule for a record: the runs' mean final loss below 3.28 at p <
    0.01; scipy's one-sided one-sample t-test on known inputs."""
    from scipy import stats

    finals = [3.270, 3.272, 3.268, 3.271, 3.269]
    found = reaches_target(finals, 3.28)
    expected = stats.ttest_1samp(finals, 3.28, alternative="less").pvalue
    assert found.p_value == pytest.approx(expected) and found.p_value < 0.01
    assert found.reaches and found.sentence().startswith("reaches 3.28: p < 0.0001 (")
    close = reaches_target([3.27, 3.275, 3.26, 3.27, 3.279], 3.28)
    assert close.p_value > 0.01 and close.reaches is False
    assert close.sentence().startswith("not shown to reach 3.28")
    above = reaches_target([0.76, 0.762, 0.761, 0.763], 0.75, below=False)  # a top-1: above it
    assert above.reaches and "final top-1" in above.sentence()


def test_the_speedrun_test_without_a_spread_or_a_second_run_says_why():
    assert reaches_target([3.2], 3.28).why.startswith("1 run: the test needs 2 or more")
    same = reaches_target([3.2, 3.2, 3.2], 3.28)
    assert same.p_value is None and "no spread" in same.why and same.reaches is None
    with pytest.raises(UsageError, match=r"run 2's final figure: nan is not a finite"):
        reaches_target([3.2, math.nan], 3.28)
    with pytest.raises(UsageError, match=r"p_value: 1\.5 is not a probability"):
        Reaches(2, 3.2, 3.28, True, 1.5)


def test_numbered_lists_runs_in_words():
    assert [numbered(x) for x in ([2], [2, 3], [1, 2, 5])] == ["2", "2 and 3", "1, 2 and 5"]
