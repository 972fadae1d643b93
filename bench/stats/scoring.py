"""Time to a target over several runs, scored as MLPerf Training scores it, and whether a
recipe reaches a target loss as the GPT-2 speedrun asks. Pure rules over numbers:
nothing here reads a result file (bench.report.to_target hands a point's runs over).

MLPerf's score (training rules, "Benchmark results"): each run's time to the target;
the fastest and the slowest run dropped and the mean of the others taken; a single run
that did not reach the target counts as the slowest and is dropped, and more than one
makes the result invalid. MLPerf asks 5 runs of most benchmarks (10 or more of some).
Here:

- 3 runs or more give a score (the fewest with a run between the fastest and the
  slowest); with fewer than MLPerf's 5 the score says so and which runs it counts.
  Below 3, or with more than one run that missed, the score is None with the reason.
- Its 95% interval is the trimmed mean's (Tukey and McLaughlin 1963; Wilcox,
  "Introduction to Robust Estimation", 3.6): the standard error from the winsorized
  variance (the dropped runs set to their neighbours), over (1 - 2g/n) sqrt(n), with
  Student's t of n - 2g - 1 degrees of freedom, g = 1 run trimmed each side. A plain
  t interval over the kept runs alone would be too narrow: trimming took the spread's
  ends away. It needs 4 runs (one degree of freedom); its low end is never below 0 s.
- A run far faster than the others (FAR_FASTER times faster than the others' median,
  a missed run counting as slower than any) is flagged: a lucky seed, or an evaluation
  it skipped, is worth a look before the score is quoted.

Whether the recipe reaches a target loss (the speedrun's rule for a record, p < 0.01):
a one-sided one-sample t-test that the runs' mean final loss lies below the target
(scipy.stats.ttest_1samp, alternative "less"); for a top-1, above it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from bench.stats.estimate import t_quantile_975
from bench.util.errors import UsageError

MLPERF_RUNS = 5  # what MLPerf asks of most benchmarks (image classification, detection)
FEWEST_RUNS = 3  # the fewest with a run between the fastest and the slowest
FAR_FASTER = 1.5  # a run this many times faster than the others' median is flagged
SPEEDRUN_P = 0.01  # the GPT-2 speedrun's bar for "reaches the target"


def _check_times(times: Sequence[float | None]) -> None:
    for i, t in enumerate(times, 1):
        if t is not None and not (isinstance(t, int | float) and math.isfinite(t) and t > 0):
            raise UsageError(
                f"run {i}'s time to the target: {t!r} is not allowed (a positive number of "
                "seconds, or None for a run that did not reach it)"
            )


@dataclass(frozen=True)
class Score:
    """MLPerf's score of the runs' times to a target (s): the mean of the runs between
    the fastest and the slowest, with its interval; None where there is none, and why."""

    runs: int
    reached: int  # runs that reached the target
    value: float | None  # s
    ci95: tuple[float, float] | None
    counted: tuple[int, ...]  # the runs (from 1) the mean is over
    dropped: tuple[int, ...]  # the fastest and the slowest (a missed run: the slowest)
    # (run, how many times faster than the others' median) past FAR_FASTER; inf: the
    # others' median missed the target
    far_faster: tuple[tuple[int, float], ...]
    why: str | None  # why there is no value, or no interval
    note: str | None  # what a reader should know of a score that is given

    def __post_init__(self) -> None:
        if not 0 <= self.reached <= self.runs:
            raise UsageError(f"reached: {self.reached} is not within 0..{self.runs} runs")
        if self.value is None and not self.why:
            raise UsageError("a score without a value says why")
        if self.ci95 is not None and not self.ci95[0] <= self.ci95[1]:
            raise UsageError(f"ci95: {self.ci95} is not an interval (low above high)")

    @property
    def all_reached(self) -> bool:
        return self.runs > 0 and self.reached == self.runs

    def scaled(self, factor: float | None) -> tuple[float, tuple[float, float] | None] | None:
        """The score and its interval times `factor` (USD per second: the cost to the
        target); None without a score or a factor. A trimmed mean scales as its runs do."""
        if self.value is None or factor is None:
            return None
        ci = (self.ci95[0] * factor, self.ci95[1] * factor) if self.ci95 else None
        return self.value * factor, ci


def mlperf_score(times: Sequence[float | None]) -> Score:
    """The score of runs whose times to the target are `times` (s; None: the run did not
    reach it), in the order they ran."""
    _check_times(times)
    n, reached = len(times), sum(t is not None for t in times)
    flagged = _far_faster(times)
    ordered = sorted(range(n), key=lambda i: (math.inf if times[i] is None else times[i], i))
    if n < FEWEST_RUNS:
        why = (
            f"{n} run{'s' if n != 1 else ''}: MLPerf's score drops the fastest and the slowest "
            f"and needs {FEWEST_RUNS} runs or more (it asks {MLPERF_RUNS} of most benchmarks; "
            "--repeats sets how many)"
        )
        return Score(n, reached, None, None, (), (), flagged, why, None)
    if n - reached > 1:
        why = (
            f"{n - reached} of {n} runs did not reach the target: MLPerf drops one such run "
            "as the slowest, and more make the result invalid"
        )
        return Score(n, reached, None, None, (), (), flagged, why, None)
    kept = ordered[1:-1]
    spans = [math.inf if t is None else t for t in times]  # a miss: slower than any
    value = statistics.fmean(spans[i] for i in kept)  # (a kept run reached it)
    ci, no_interval = _trimmed_interval(spans)
    counted = tuple(sorted(i + 1 for i in kept))
    dropped = (ordered[0] + 1, ordered[-1] + 1)
    note = None
    if n < MLPERF_RUNS:
        note = (
            f"{n} runs, fewer than the {MLPERF_RUNS} MLPerf asks of most benchmarks: the "
            f"mean of run{'s' if len(counted) > 1 else ''} {numbered(counted)}"
        )
    return Score(n, reached, value, ci, counted, dropped, flagged, no_interval, note)


def numbered(numbers: Sequence[int]) -> str:
    """'2', '2 and 3', '2, 3 and 4'."""
    words = [str(x) for x in numbers]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _trimmed_interval(times: list[float]) -> tuple[tuple[float, float] | None, str | None]:
    """The trimmed mean's 95% interval, one run trimmed each side (see the module's
    docstring), or None and why."""
    n, g = len(times), 1
    df = n - 2 * g - 1
    if df < 1:
        return None, (
            f"no interval: {n} runs leave one between the fastest and the slowest "
            f"({FEWEST_RUNS + 1} runs or more give one)"
        )
    ordered = sorted(times)
    winsorized = [ordered[g]] * g + ordered[g : n - g] + [ordered[n - g - 1]] * g
    centre = statistics.fmean(ordered[g : n - g])
    se = statistics.stdev(winsorized) / ((1 - 2 * g / n) * math.sqrt(n))
    half = t_quantile_975(df) * se
    return (max(0.0, centre - half), centre + half), None


def _far_faster(times: Sequence[float | None]) -> tuple[tuple[int, float], ...]:
    """The runs (from 1) FAR_FASTER times faster than the median of the others (a run that
    missed is slower than any), and by how much; none with fewer than 3 runs: of two,
    neither is 'the others'."""
    if len(times) < 3:
        return ()
    spans = [math.inf if t is None else t for t in times]
    found = []
    for i, own in enumerate(spans):
        others = statistics.median(spans[:i] + spans[i + 1 :])
        if math.isfinite(own) and others > FAR_FASTER * own:
            found.append((i + 1, others / own))
    return tuple(found)


@dataclass(frozen=True)
class Reaches:
    """Whether the recipe's runs end beyond the target: the one-sided t-test's p-value
    over their final figures (None and why where it cannot be had)."""

    runs: int
    mean_final: float | None
    target: float
    below: bool  # True: a loss (lower is better); False: a top-1
    p_value: float | None
    why: str | None = None

    def __post_init__(self) -> None:
        if self.p_value is not None and not 0 <= self.p_value <= 1:
            raise UsageError(f"p_value: {self.p_value} is not a probability")
        if self.p_value is None and not self.why:
            raise UsageError("a test without a p-value says why")

    @property
    def reaches(self) -> bool | None:
        """The speedrun's verdict: p below SPEEDRUN_P; None where there is no test."""
        return None if self.p_value is None else self.p_value < SPEEDRUN_P

    def sentence(self) -> str:
        """'reaches 3.28: p = 0.004 (one-sided t-test over 5 runs' final loss, mean 3.271;
        the speedrun asks p < 0.01)', or why there is no test."""
        if self.p_value is None:
            return str(self.why)
        what = "loss" if self.below else "top-1"
        shown = f"p = {self.p_value:.2g}" if self.p_value >= 1e-4 else "p < 0.0001"
        verdict = "reaches" if self.reaches else "not shown to reach"
        return (
            f"{verdict} {self.target:g}: {shown} (one-sided t-test over {self.runs} runs' "
            f"final {what}, mean {self.mean_final:.4g}; the speedrun asks p < {SPEEDRUN_P:g})"
        )


def reaches_target(finals: Sequence[float], target: float, below: bool = True) -> Reaches:
    """The one-sided one-sample t-test that the runs' mean final figure (`finals`: each
    run's last validation loss, or top-1 where `below` is False) lies beyond `target`."""
    for i, value in enumerate(finals, 1):
        if not (isinstance(value, int | float) and math.isfinite(value)):
            raise UsageError(f"run {i}'s final figure: {value!r} is not a finite number")
    if not math.isfinite(target):
        raise UsageError(f"target: {target!r} is not a finite number")
    n = len(finals)
    mean = statistics.fmean(finals) if finals else None
    if n < 2:
        return Reaches(n, mean, target, below, None, f"{n} run{'s' * (n != 1)}: the test "
                       "needs 2 or more (--repeats)")  # fmt: skip
    if len(set(finals)) == 1:
        return Reaches(n, mean, target, below, None, "every run ended at the same figure "
                       "(one seed for all?): no spread to test")  # fmt: skip
    try:
        from scipy import stats
    except ImportError:
        return Reaches(n, mean, target, below, None,
                       "the test needs scipy: pip install 'bench[report]'")  # fmt: skip
    tested = stats.ttest_1samp(list(finals), target, alternative="less" if below else "greater")
    return Reaches(n, mean, target, below, float(tested.pvalue))
