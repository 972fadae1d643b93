"""A comparison's verdict in words, from a ratio and its 95% interval: the one rule that
`bench diff`, `bench rerun` and `bench compare` share.

pyperf's `compare_to` says "1.05x faster" or "not significant". Not significant is not
"the same": a 3-repeat interval of 0.31x to 1.03x says nothing either way. So:

- faster / slower: the interval lies wholly above / below 1;
- the same: the whole interval lies within the margin (1/(1+m) to 1+m: an equivalence
  test, two one-sided tests at 2.5% each), whatever the point estimate;
- cannot tell: anything else, with about how many values a side would likely settle it
  (an interval narrows as 1/sqrt(n): the n at which it would clear 1, or fit within the
  margin, if the estimate stayed where it is).

A ratio is new/old or machine/baseline of a quantity where more is better (throughput).

The same words hold for a sequential interval (bench.stats.sequential: one that stays 95%
however often it is looked at, for --settle); its sentence says so, and it names no
number of repeats that would settle it: --settle runs them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

FASTER, SLOWER, SAME, CANNOT_TELL = "faster", "slower", "the same", "cannot tell"
DEFAULT_MARGIN = 0.02
PRACTICAL_N = 1000  # values a side past which no number of repeats is a practical answer


@dataclass(frozen=True)
class Verdict:
    word: str
    ratio: float
    interval: tuple[float, float]  # 95%, of the ratio
    margin: float
    settle_n: int | None = None  # for CANNOT_TELL: values a side that would likely settle it
    sequential: bool = False  # the interval is bench.stats.sequential's, valid at every look
    why: str | None = None  # for CANNOT_TELL whatever the interval: the repeats disagree

    def sentence(self, unit: str = "repeats") -> str:
        """'1.05x faster (95% CI 1.02x to 1.08x)', '1.25x slower: 0.80x (95% CI 0.79x to
        0.81x)' (the ratio beside its interval in one direction, then turned over in
        words), 'cannot tell (...): about 9 repeats a side would likely settle it'."""
        low, high = self.interval
        digits = 3 if high - low < 0.02 else 2  # a narrow interval keeps its ends apart

        def times(value: float) -> str:
            return f"{value:.{digits}f}x"

        # The words, the interval put between the verdict and why it cannot tell.
        said, _, reason = self.words(self.ratio, times, unit).partition(": ")
        if self.word == FASTER:
            said = f"{times(self.ratio)} {said}"
        elif self.word == SLOWER:
            said = f"{said}: {times(self.ratio)}"
        kind = "sequential 95% CI" if self.sequential else "95% CI"
        said += f" ({kind} {times(low)} to {times(high)})"
        return f"{said}: {reason}" if reason else said

    def words(self, ratio: float, times: Callable[[float], str], unit: str = "repeats") -> str:
        """The verdict as it follows a figure, `ratio`, and its interval (bench.report.words):
        'faster', '2.26x slower' (the figure turned over, written by `times`), 'the same
        within ±2%', 'cannot tell: about 9 repeats a side would likely settle it' (a
        sequential interval names no repeats: --settle runs them)."""
        if self.word == FASTER:
            return FASTER
        if self.word == SLOWER:
            return f"{times(1 / ratio)} slower"
        if self.word == SAME:
            return f"the same within ±{self.margin:.0%}"
        if self.why:
            return f"{CANNOT_TELL}: {self.why}"
        if self.sequential:
            return CANNOT_TELL
        if self.settle_n is None:
            return f"{CANNOT_TELL}: too noisy for any practical number of {unit}"
        return f"{CANNOT_TELL}: about {self.settle_n} {unit} a side would likely settle it"


def judge(
    ratio: float,
    interval: tuple[float, float],
    n: int,
    margin: float = DEFAULT_MARGIN,
    sequential: bool = False,
    disagree: str | None = None,
) -> Verdict:
    """The verdict on `ratio` whose 95% interval is `interval`, from `n` values a side;
    `sequential`: the interval is a confidence sequence's (bench.stats.sequential);
    `disagree`: why the values on a side cannot be pooled (their repeats disagree), which
    makes it cannot tell whatever the interval."""
    low, high = interval
    if not 0 < low <= ratio <= high or not 0 <= margin < 1:
        raise ValueError(f"not a ratio within a positive interval: {ratio} in {interval}")
    if disagree:
        return Verdict(CANNOT_TELL, ratio, interval, margin, sequential=sequential, why=disagree)
    bound = math.log1p(margin)
    if -bound <= math.log(low) and math.log(high) <= bound:
        word = SAME
    elif low > 1:
        word = FASTER
    elif high < 1:
        word = SLOWER
    elif sequential:
        return Verdict(CANNOT_TELL, ratio, interval, margin, sequential=True)
    else:
        return Verdict(CANNOT_TELL, ratio, interval, margin, _settle_n(ratio, interval, n, bound))
    return Verdict(word, ratio, interval, margin, sequential=sequential)


def _settle_n(ratio: float, interval: tuple[float, float], n: int, bound: float) -> int | None:
    half = (math.log(interval[1]) - math.log(interval[0])) / 2
    center = abs(math.log(ratio))
    # The room the half-width must shrink to: below |center| to clear 1, below
    # bound - |center| to fit within the margin. The larger room is the nearer answer.
    room = max(center, bound - center)
    if room <= 0:
        return None
    needed = math.ceil(max(n, 1) * (half / room) ** 2)
    return max(needed, n + 1) if needed <= PRACTICAL_N else None
