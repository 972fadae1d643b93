"""Pure statistics over raw measurements. Nothing here reads a clock or a device."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

# Two-sided 95% quantiles of Student's t distribution, t(0.975, df), df = 1..30
# (standard table values). Beyond 30 the normal quantile is within 2% of t.
_T975 = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
)
_Z975 = 1.959964


def t_quantile_975(df: int) -> float:
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    return _T975[df - 1] if df <= len(_T975) else _Z975


def percentile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (NumPy's default method)."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be within 0..100, got {q}")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


@dataclass(frozen=True)
class Summary:
    """Distribution of one measured quantity, with its unit."""

    n: int
    mean: float
    median: float
    p5: float
    p95: float
    stdev: float | None
    unit: str

    @classmethod
    def of(cls, values: Sequence[float], unit: str) -> Summary:
        if not values:
            raise ValueError("summary of no values")
        return cls(
            n=len(values),
            mean=statistics.fmean(values),
            median=statistics.median(values),
            p5=percentile(values, 5),
            p95=percentile(values, 95),
            stdev=stdev(values) if len(values) > 1 else None,
            unit=unit,
        )


def _variance_fraction(values: Sequence[float]) -> tuple[int, int] | None:
    """The sample variance of two or more finite floats as the fraction statistics.variance
    computes exactly (numerator, denominator, lowest terms), in whole numbers: each float
    is a whole number over a power of two, so over the largest such power they add
    exactly, without statistics' Fractions (its cost dominated a report of 10,000 files).
    None for anything else, left to statistics."""
    if len(values) < 2 or not all(type(v) is float and math.isfinite(v) for v in values):
        return None
    ratios = [v.as_integer_ratio() for v in values]
    scale = max(d for _, d in ratios)  # powers of two: the largest is a multiple of each
    whole = [n * (scale // d) for n, d in ratios]
    count = len(whole)
    total = sum(whole)
    numerator = count * sum(w * w for w in whole) - total * total
    denominator = count * (count - 1) * scale * scale
    common = math.gcd(numerator, denominator)
    return numerator // common, denominator // common


_SQRT_OF_FRACTION = getattr(statistics, "_float_sqrt_of_frac", None)


def stdev(values: Sequence[float]) -> float:
    """statistics.stdev, the same float (its correctly rounded square root of the same
    exact fraction), faster for floats."""
    exact = _variance_fraction(values)
    if exact is None or _SQRT_OF_FRACTION is None:
        return statistics.stdev(values)
    return float(_SQRT_OF_FRACTION(*exact))


def variance(values: Sequence[float]) -> float:
    """statistics.variance, the same float (the exact fraction, rounded once), faster
    for floats."""
    exact = _variance_fraction(values)
    return statistics.variance(values) if exact is None else exact[0] / exact[1]


def geometric_mean(values: Sequence[float]) -> float:
    """exp(mean(log v)), the centre of a positive quantity's interval (Estimate.of)."""
    return math.exp(statistics.fmean(math.log(v) for v in values))


@dataclass(frozen=True)
class Estimate:
    """A mean over independent repeats with its 95% confidence interval (None for one
    repeat). For a positive quantity (a throughput) the mean is the geometric mean and
    the interval is around it: one estimator, whose figure lies inside its interval."""

    value: float
    ci95_low: float | None
    ci95_high: float | None
    n: int
    unit: str

    @classmethod
    def of(cls, values: Sequence[float], unit: str, *, positive: bool = False) -> Estimate:
        """The mean with a Student-t interval. positive: for a quantity that cannot be
        zero or negative (a throughput), the geometric mean with the t-interval of the
        logs, exponentiated: it never reaches zero, is asymmetric as a ratio's is, and
        holds its figure (the arithmetic mean beside it did not: one fast repeat put the
        mean of 4,106 outside [234-1,901]). A ratio of two such figures is the ratio of
        geometric means that ratio_interval bounds."""
        if not values:
            raise ValueError("estimate of no values")
        if positive and all(v > 0 for v in values):
            logs = [math.log(v) for v in values]
            center = statistics.fmean(logs)
            if len(values) < 2:
                return cls(math.exp(center), None, None, 1, unit)
            half = t_quantile_975(len(values) - 1) * stdev(logs) / math.sqrt(len(values))
            return cls(math.exp(center), math.exp(center - half), math.exp(center + half),
                       len(values), unit)  # fmt: skip
        mean = statistics.fmean(values)
        if len(values) < 2:
            return cls(mean, None, None, len(values), unit)
        t = t_quantile_975(len(values) - 1)
        half = t * stdev(values) / math.sqrt(len(values))
        return cls(mean, mean - half, mean + half, len(values), unit)

    def overlaps(self, other: Estimate) -> bool:
        """Whether the two 95% intervals overlap (a difference that may not be real)."""
        if None in (self.ci95_low, self.ci95_high, other.ci95_low, other.ci95_high):
            return False
        return self.ci95_low <= other.ci95_high and other.ci95_low <= self.ci95_high  # type: ignore[operator]


def ratio_interval(
    values: Sequence[float], baseline: Sequence[float]
) -> tuple[float, float] | None:
    """95% interval of the ratio of geometric means, geometric_mean(values) /
    geometric_mean(baseline) (Estimate.of's figures for two throughputs), two positive
    quantities measured independently (throughputs of two machines): Welch's t-interval
    of the difference of the mean logs, exponentiated. It never reaches zero and is
    asymmetric, as a ratio's is; it holds 1 when the difference may not be real. Its
    degrees of freedom (Welch-Satterthwaite) are rounded down: a slightly wider, safer
    interval. None when
    a side has fewer than two values or a value is not positive."""
    if min(len(values), len(baseline)) < 2 or min(*values, *baseline) <= 0:
        return None
    a, b = [math.log(v) for v in values], [math.log(v) for v in baseline]
    va, vb = variance(a) / len(a), variance(b) / len(b)
    center = statistics.fmean(a) - statistics.fmean(b)
    if va + vb == 0:  # no spread on either side: the ratio is exact
        return math.exp(center), math.exp(center)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = t_quantile_975(max(1, math.floor(df))) * math.sqrt(va + vb)
    return math.exp(center - half), math.exp(center + half)


def relative_stdev(values: Sequence[float]) -> float | None:
    """Standard deviation over mean; None below two values (no spread to speak of)."""
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    return stdev(values) / mean if mean else None


def throughput(samples_per_step: int, step_times_s: Sequence[float]) -> float:
    """Samples per second over the given steps: total samples over total time."""
    total = math.fsum(step_times_s)
    if total <= 0:
        raise ValueError("throughput over zero time")
    return samples_per_step * len(step_times_s) / total
