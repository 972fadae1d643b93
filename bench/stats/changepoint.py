"""Where a history stepped: one configuration of one machine measured on many dates
(pinned reruns), split where its figure changed level, with how much and an interval;
none where it is noise. Pure rules over numbers (numpy, imported where used).

The method: binary segmentation (Scott and Knott 1974; Killick and Eckley's survey,
"changepoint: an R package", 2014) over the runs in the order they ran, each run one
value: the mean log of its repeats' throughputs. Repeats of one run share that day's
machine, so they are not independent of each other: a run, not a repeat, is the unit
(pooling repeats made day-to-day noise look like steps).

- A segment of runs is split where the two sides differ most: the largest standardised
  difference of their means (the CUSUM statistic, sqrt(k (n - k) / n) times the gap)
  over every split that leaves MIN_RUNS runs a side.
- Whether that is more than noise: a permutation test (PERMUTATIONS shuffles of the
  segment's runs, the same statistic's maximum each time): under no step the runs are
  exchangeable, so its p-value holds whatever the noise's shape, the search over splits
  included. A split needs p < ALPHA; each side is then searched again.
- A step is then the ratio of the geometric means of the segments either side, its 95%
  interval Welch's (bench.stats.estimate.ratio_interval over the runs' values), and the verdict
  bench.stats.verdict gives it; only a step judged faster or slower is reported (a split
  whose interval holds 1 or lies within the margin is not a step worth a line).

So a history of pure noise is split with chance about ALPHA, whatever its length
(tests/stats/test_changepoint.py draws 400 simulated noise histories and counts). A history
needs 2 x MIN_RUNS runs before any step can be found, and a step within MIN_RUNS runs
of either end waits for more runs. The shuffles come from a fixed seed: the same
history gives the same answer in every report.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bench.stats.estimate import ratio_interval
from bench.stats.verdict import FASTER, SLOWER, Verdict, judge
from bench.util.errors import UsageError

MIN_RUNS = 3  # runs each side of a step, at least
ALPHA = 0.01  # the chance a split of pure noise is kept
PERMUTATIONS = 999  # shuffles per test: p-values from 0.001
SEED = 20250101  # the shuffles' seed: one history, one answer


@dataclass(frozen=True)
class Step:
    """The figure changed level before run `at` (from 0, in the order the runs ran)."""

    at: int
    ratio: float  # geometric mean of the runs after / before (the segments either side)
    interval: tuple[float, float]  # 95%, Welch's on the runs' logs
    p_value: float  # the permutation test that split the segment
    verdict: Verdict
    before: int  # runs in the segment before
    after: int  # runs in the segment after

    def __post_init__(self) -> None:
        if self.at < 1 or min(self.before, self.after) < 1:
            raise UsageError(f"a step at run {self.at} needs runs on both sides")

    def sentence(self) -> str:
        """'1.12x faster (95% CI 1.08x to 1.16x), 6 runs before and 8 after'."""
        return (
            f"{self.verdict.sentence('runs')}, {self.before} runs before and {self.after} "
            f"after (permutation p = {self.p_value:.2g})"
        )


def run_values(repeats: Sequence[Sequence[float]]) -> list[float]:
    """Each run's value: the geometric mean of its repeats' throughputs (positive)."""
    values = []
    for i, run in enumerate(repeats, 1):
        if not run or any(
            not (isinstance(v, int | float) and math.isfinite(v) and v > 0) for v in run
        ):
            raise UsageError(
                f"run {i} of the history: {list(run)[:5]!r} is not allowed (each run's "
                "repeats: one or more positive throughputs)"
            )
        values.append(math.exp(math.fsum(math.log(v) for v in run) / len(run)))
    return values


def steps(repeats: Sequence[Sequence[float]]) -> list[Step]:
    """The steps of a history whose runs (oldest first) measured `repeats`: each run's
    repeat throughputs. None found, or fewer than 2 x MIN_RUNS runs: []."""
    values = run_values(repeats)
    if len(values) < 2 * MIN_RUNS:
        return []
    import numpy as np

    logs = np.log(np.asarray(values, dtype=float))
    rng = np.random.default_rng(SEED)
    cuts: list[tuple[int, float]] = []
    _split(logs, 0, len(logs), rng, cuts)
    cuts.sort()
    bounds = [0, *(at for at, _ in cuts), len(values)]
    found = []
    for j, (at, p) in enumerate(cuts):
        before, after = values[bounds[j] : at], values[at : bounds[j + 2]]
        ci = ratio_interval(after, before)
        if ci is None:  # (MIN_RUNS >= 2 a side: never)
            continue
        ratio = math.exp(
            math.fsum(map(math.log, after)) / len(after)
            - math.fsum(map(math.log, before)) / len(before)
        )
        verdict = judge(math.sqrt(ci[0] * ci[1]), ci, min(len(before), len(after)))
        if verdict.word in (FASTER, SLOWER):
            found.append(Step(at, ratio, ci, p, verdict, len(before), len(after)))
    return found


def _split(logs: Any, lo: int, hi: int, rng: Any, cuts: list[tuple[int, float]]) -> None:
    """Binary segmentation of logs[lo:hi]: the best split if the permutation test keeps
    it, then each side."""
    if hi - lo < 2 * MIN_RUNS:
        return
    segment = logs[lo:hi]
    observed, at = _best_split(segment[None, :])
    if not observed[0] > 0:  # no split differs (infinite: sides without noise that do)
        return
    import numpy as np

    shuffled = rng.permuted(np.tile(segment, (PERMUTATIONS, 1)), axis=1)
    null, _ = _best_split(shuffled)
    p = (1 + int(np.sum(null >= observed[0]))) / (PERMUTATIONS + 1)
    if p >= ALPHA:
        return
    cut = lo + int(at[0])
    cuts.append((cut, p))
    _split(logs, lo, cut, rng, cuts)
    _split(logs, cut, hi, rng, cuts)


def _best_split(rows: Any) -> tuple[Any, Any]:
    """For each row (a series), the largest standardised difference of means over the
    splits that leave MIN_RUNS values a side, sqrt(k (n - k) / n) |mean left - mean
    right| (the CUSUM statistic), and where (the first value of the second side).

    No estimate of the noise divides it: the permutation test compares it with the same
    statistic of the shuffled segment, whose spread is the segment's own. A t statistic
    (the gap over the spread either side of the split) lost a segment that went up and
    came back down, whose spread either side held a step; the spread of neighbouring
    runs' differences let a shuffle that happened to keep most neighbours alike look
    like a larger step than a real one."""
    import numpy as np

    n = rows.shape[1]
    centred = rows - rows.mean(axis=1, keepdims=True)  # the whole sums to 0
    sums = np.cumsum(centred, axis=1)
    k = np.arange(MIN_RUNS, n - MIN_RUNS + 1)
    left = sums[:, k - 1]  # the sum of the first k: the left mean is left / k, and the
    # right mean -left / (n - k), so their gap is left n / (k (n - k))
    cusum = np.abs(left) * np.sqrt(n / (k * (n - k)))
    best = np.argmax(cusum, axis=1)
    return cusum[np.arange(rows.shape[0]), best], k[best]
