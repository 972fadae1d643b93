"""A 95% interval of new/old that stays 95% however often it is looked at, for `bench
diff --settle` and `bench rerun --settle`, which look after every repeat and stop once
the verdict is decided.

Why not the plain interval: each look at a fixed-sample 95% interval is another 5%
chance of a wrong verdict; re-judged after every new repeat from 3 to 20, an A/A pair
(nothing changed, a 3% spread) is called faster or slower in 11% of simulated pairs, not
5% (tests/stats/test_sequential.py; benchmarks/verdict_calibration.py prints the table).
So this is an always-valid confidence sequence, Robbins' two-sided normal mixture
(Robbins 1970; Howard, Ramdas, McAuliffe and Sekhon, "Time-uniform, nonparametric,
nonasymptotic confidence sequences", Annals of Statistics 2021), not a group-sequential
design: it needs no plan of
when bench looks, so a look after every repeat, a budget that ends the settle early and
Ctrl-C all keep it valid; a group-sequential design would need its looks and largest
sample fixed in advance, and a numerical recursion to place its boundaries.

The rule. The logs of the repeats' throughputs, n new and m old (only the new side
grows here, but the rule holds whichever does); D the difference of their means; s the
pooled standard deviation (n + m - 2 degrees of freedom); x = 1 / (1/n + 1/m), the
effective number of repeats (the variance of D is sigma^2 / x). x D / sigma is a
Brownian motion in x (with drift), whichever side grows: the canonical form of a
sequential two-sample statistic. So, by Ville's inequality, with probability 1 - alpha
the true difference lies, at every x at once, within

    D +- sigma / sqrt(x) * z(x),  z(x)^2 = (1 + rho/x) * log((x + rho) / (rho alpha^2)).

rho sets where the sequence is narrowest: at the x of the cap (`plan`), where z is about
3.0 for alpha = 5% (a fixed-sample interval's is 1.96): the price of looking at will.
As n grows with m fixed, x tends to m: the old side's repeats bound how narrow the
interval can get, and no number of new repeats narrows it past that.

Where it is approximate: sigma is not known; s stands in for it and z is mapped to
Student's t of the pooled degrees of freedom with the same tail (a look at 3 + 3 repeats
is as wide as a t-interval would be), which is a per-look correction, not a proof over
all looks. Repeats are taken as independent and log-normal with one spread on both sides
(exactly what "nothing changed" means; a machine whose speed wanders between the two
results, or heavy-tailed repeats, break it). tests/stats/test_sequential.py and
benchmarks/verdict_calibration.py measure the false-alarm rate over simulated A/A pairs:
about 1%, well under its 5% bound, for log-normal repeats (Ville's bound is loose:
the price is power, which the calibration table shows).
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Sequence

ALPHA = 0.05  # the chance that the sequence misses the true ratio at any look at all


@functools.cache
def _shape(alpha: float) -> float:
    """rho / x where z(x) is least: the root of log(1 + 1/r) + 2 log(1/alpha) = 1/r
    (0.122 for alpha = 5%); it does not depend on x."""
    from scipy.optimize import brentq

    wide = 2 * math.log(1 / alpha)
    return float(brentq(lambda r: math.log1p(1 / r) + wide - 1 / r, 1e-6, 1e3))


def effective(n: int, m: int) -> float:
    """x = 1 / (1/n + 1/m): the variance of a difference of means is sigma^2 / x."""
    return 1 / (1 / n + 1 / m)


@functools.cache
def multiplier(n: int, m: int, plan: int, alpha: float = ALPHA) -> float:
    """The half-width of the sequence over s / sqrt(x), at n new and m old repeats, for
    a sequence narrowest at n = `plan`: the normal mixture's z(x), mapped to Student's t
    of n + m - 2 degrees of freedom (the same two-sided tail). Depends on the counts
    only, never on the data: a plan made from the data would not be valid."""
    from scipy import stats

    x, rho = effective(n, m), _shape(alpha) * effective(plan, m)
    z = math.sqrt((1 + rho / x) * math.log((x + rho) / (rho * alpha**2)))
    return float(stats.t.isf(stats.norm.sf(z), n + m - 2))


def interval(
    new: Sequence[float], old: Sequence[float], plan: int, alpha: float = ALPHA
) -> tuple[float, tuple[float, float]] | None:
    """The ratio of the geometric means new/old and its sequence's interval at this
    look, from per-repeat throughputs; `plan`: the new side's cap (where the sequence is
    narrowest). None with fewer than three values in all (no spread to speak of), a
    value that is not positive, or an interval too wide for a float (a factor past
    e^700 either way: a crafted file's repeats, a second and a million seconds)."""
    logs = _logs(new, old)
    if logs is None:
        return None
    (center, s), n, m = logs, len(new), len(old)
    half = multiplier(n, m, plan, alpha) * s / math.sqrt(effective(n, m))
    if not math.isfinite(half) or abs(center) + half > _MAX_LOG:
        return None
    return math.exp(center), (math.exp(center - half), math.exp(center + half))


_MAX_LOG = 700.0  # math.exp overflows past 709.78, and its inverse is 0 below -745


def _logs(new: Sequence[float], old: Sequence[float]) -> tuple[float, float] | None:
    """The difference of the mean logs and their pooled standard deviation; None with
    fewer than three values in all or one that is not positive."""
    n, m = len(new), len(old)
    if n < 1 or m < 1 or n + m < 3 or min(*new, *old) <= 0:
        return None
    a, b = [math.log(v) for v in new], [math.log(v) for v in old]
    mean_a, mean_b = statistics.fmean(a), statistics.fmean(b)
    squares = sum((v - mean_a) ** 2 for v in a) + sum((v - mean_b) ** 2 for v in b)
    return mean_a - mean_b, math.sqrt(squares / (n + m - 2))


def futile(
    new: Sequence[float], old: Sequence[float], plan: int, margin: float, alpha: float = ALPHA
) -> float | None:
    """Whether more new repeats, up to `plan` in all, would very likely not decide: the
    same within `margin` is out of reach (at the cap the interval, at the present spread,
    would still be wider than the margin), and every change still plausible (the estimate
    +- 2 standard errors) is smaller than that interval's half-width, so the cap could not
    show it either. The half-width (a fraction) when futile, else None. Stopping here
    decides nothing, so it adds no false alarm; over simulated pairs it cost no power
    and ended A/A settles after about 6 repeats instead of at the cap (of 20)."""
    logs = _logs(new, old)
    if logs is None:
        return None
    center, s = logs
    n, m = max(plan, len(new)), len(old)
    at_cap = multiplier(n, m, plan, alpha) * s / math.sqrt(effective(n, m))
    plausible = abs(center) + 2 * s / math.sqrt(effective(len(new), m))
    if at_cap >= math.log1p(margin) and plausible < at_cap:
        return math.expm1(min(at_cap, _MAX_LOG))
    return None
