"""The verdict rule that bench diff, rerun and compare share (bench.stats.verdict)."""

import pytest

from bench.stats.verdict import CANNOT_TELL, FASTER, PRACTICAL_N, SAME, SLOWER, judge


def test_an_interval_above_or_below_one_is_faster_or_slower_in_pyperf_words():
    faster = judge(1.05, (1.03, 1.07), n=5)
    assert faster.word == FASTER and faster.sentence() == "1.05x faster (95% CI 1.03x to 1.07x)"
    slower = judge(0.5, (0.45, 0.55), n=5)
    assert slower.word == SLOWER and slower.sentence().startswith("2.00x slower")


def test_the_same_only_when_the_whole_interval_lies_within_the_margin():
    assert judge(1.0, (0.99, 1.01), n=5).word == SAME
    assert judge(1.0, (0.99, 1.01), n=5).sentence().startswith("the same within ±2%")
    assert judge(1.0, (0.97, 1.03), n=5).word == CANNOT_TELL  # holds 1, but wider than ±2%
    assert judge(1.0, (0.97, 1.03), n=5, margin=0.05).word == SAME
    # Significant but wholly inside the margin: the same, as an equivalence test says.
    assert judge(1.01, (1.005, 1.015), n=50).word == SAME


def test_a_wide_interval_is_cannot_tell_with_the_repeats_that_would_settle_it():
    said = judge(0.68, (0.31, 1.03), n=3)
    assert said.word == CANNOT_TELL
    # Half-width ln(1.03/0.31)/2 = 0.60 must shrink below |ln 0.68| = 0.39: 3 * (0.60/0.39)^2.
    assert said.settle_n == 8
    assert said.sentence() == (
        "cannot tell (95% CI 0.31x to 1.03x): about 8 repeats a side would likely settle it"
    )


def test_an_estimate_on_the_margin_cannot_be_settled_by_any_practical_number():
    # An estimate 1% off with a 2% margin: the interval must shrink below 1% either way.
    said = judge(1.01, (0.7, 1.45), n=3)
    assert said.word == CANNOT_TELL and said.settle_n is None
    assert "too noisy for any practical number of repeats" in said.sentence()
    # Centred on 1: the interval must fit within ±2%, half-width 0.05 -> 0.0198: 3 * 6.4.
    assert judge(1.0, (0.95, 1.05), n=3).settle_n == 20 < PRACTICAL_N


def test_the_sentence_and_the_words_after_a_figure_say_one_verdict():
    """The sentence leads with the verdict and puts its interval before why it cannot
    tell; the report's words follow a figure written its own way (bench.report.words)."""
    times = "{:.1f}x".format
    said = judge(0.68, (0.31, 1.03), n=3)
    assert said.words(0.68, times) == "cannot tell: about 8 repeats a side would likely settle it"
    assert judge(0.5, (0.45, 0.55), n=5).words(0.5, times) == "2.0x slower"
    sequential = judge(1.0, (0.9, 1.1), n=3, sequential=True)  # names no repeats either way
    assert sequential.words(1.0, times) == CANNOT_TELL
    assert sequential.sentence() == "cannot tell (sequential 95% CI 0.90x to 1.10x)"


@pytest.mark.parametrize(
    "ratio, interval", [(1.0, (0.0, 1.0)), (1.0, (1.1, 1.2)), (float("nan"), (0.9, 1.1))]
)
def test_a_ratio_outside_its_positive_interval_is_a_programming_error(ratio, interval):
    with pytest.raises(ValueError, match="not a ratio within a positive interval"):
        judge(ratio, interval, n=3)
