"""Did the number move, and why? Two results of the same config, point by point.

For each point: a two-sample Welch t-test (scipy.stats) of the new values against the
old, the change of the mean in percent with its 95% interval, and a verdict. The values
are the per-repeat throughputs when both points ran in at least two processes (repeats
are independent), else the per-step throughputs (batch / step time): steps of one
process share its state (clocks, allocator, autotuned kernels), so their interval is
narrower than the spread between processes; the verdict says which it used.

The verdict is bench.verdict's, from the 95% interval of the ratio new/old (Welch on the
logs, as bench compare's): faster or slower where the interval excludes 1; the same only
where the whole interval lies within the threshold (2% by default); otherwise cannot
tell, with about how many values a side would settle it. A change counts as drift only
when it is faster or slower AND its estimate is at least the threshold: large samples
make tiny, real but irrelevant changes significant.

Beside the figures: what changed between the two environments (image, lock, framework
and library versions, driver, accelerator, CPU, speed-relevant variables, host).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from bench import verdict
from bench.errors import UsageError
from bench.result import Point, Result, point_axes
from bench.stats import ratio_interval

ALPHA = 0.05
DEFAULT_THRESHOLD = 0.02
SAME, FASTER, SLOWER, CANNOT_TELL = "same", "faster", "slower", "cannot tell"
MISSING_OLD, MISSING_NEW, FAILED, UNTESTABLE = "new point", "missing", "failed", "untestable"
DRIFTED = frozenset({FASTER, SLOWER, MISSING_NEW, FAILED})

# Environment fields that change on every run and say nothing about speed.
_VOLATILE = ("_at_start", "started", "finished", "command", "intra_op_threads")


@dataclass(frozen=True)
class PointDrift:
    label: str
    old: float | None  # mean throughput, samples/s
    new: float | None
    change: float | None = None  # new / old - 1
    ci95: tuple[float, float] | None = None  # of `change`
    p_value: float | None = None
    basis: str = ""  # "repeats (3 vs 3)" or "steps (20 vs 20)"
    verdict: str = SAME
    reason: str = ""  # why a verdict is what it is, when the figures do not say
    drifted: bool = False  # faster or slower by at least the threshold, missing or failed

    @property
    def judged(self) -> bool:
        """Its reason is bench.verdict's sentence, which says the verdict itself."""
        return self.verdict in (SAME, FASTER, SLOWER, CANNOT_TELL)

    def __post_init__(self) -> None:
        if self.verdict in (MISSING_NEW, FAILED):
            object.__setattr__(self, "drifted", True)


def _axes(point: Point) -> tuple[Any, ...]:
    # The device count too: one GPU and eight are two measurements, not one that moved.
    return (*point_axes(point), point.devices)


def _samples(old: Point, new: Point) -> tuple[list[float], list[float], str]:
    old_repeats, new_repeats = old.repeat_throughputs(), new.repeat_throughputs()
    if len(old_repeats) >= 2 and len(new_repeats) >= 2:
        return old_repeats, new_repeats, f"repeats ({len(old_repeats)} vs {len(new_repeats)})"

    def per_step(point: Point) -> list[float]:
        return [point.batch_size / t for row in point.step_times_s for t in row]

    a, b = per_step(old), per_step(new)
    return a, b, f"steps ({len(a)} vs {len(b)})"


def compare_points(old: Point, new: Point, threshold: float = DEFAULT_THRESHOLD) -> PointDrift:
    from scipy import stats  # the parent's only scientific import, for this command

    label = new.label
    if not new.measured or new.status != "ok":
        return PointDrift(label, _mean(old), None, verdict=FAILED, reason=new.error_line)
    if not old.measured:
        return PointDrift(label, None, _mean(new), verdict=UNTESTABLE, reason="old point failed")
    a, b, basis = _samples(old, new)
    old_mean, new_mean = sum(a) / len(a), sum(b) / len(b)
    change = new_mean / old_mean - 1
    if min(len(a), len(b)) < 2:
        return PointDrift(
            label, old_mean, new_mean, change, None, None, basis, UNTESTABLE,
            "fewer than two values on one side",
        )  # fmt: skip
    with warnings.catch_warnings():
        # Nearly equal values (epoch times, or a file's copied figures) make scipy warn of
        # precision loss on stderr; the verdict below is what the user reads.
        warnings.simplefilter("ignore", RuntimeWarning)
        p_value = float(stats.ttest_ind(b, a, equal_var=False).pvalue)
    if p_value != p_value:  # NaN: both sides without spread
        p_value = 0.0 if new_mean != old_mean else 1.0
    low, high = ratio_interval(b, a) or (new_mean / old_mean,) * 2
    said = verdict.judge(math.sqrt(low * high), (low, high), min(len(a), len(b)), threshold)
    unit = "repeats" if basis.startswith("repeats") else "steps"
    word = {verdict.FASTER: FASTER, verdict.SLOWER: SLOWER, verdict.SAME: SAME}.get(
        said.word, CANNOT_TELL
    )
    drifted = word in (FASTER, SLOWER) and abs(change) >= threshold
    reason = said.sentence(unit)
    if word in (FASTER, SLOWER) and not drifted:
        reason += f"; by less than the {threshold:.0%} threshold: not drift"
    return PointDrift(
        label, old_mean, new_mean, change, (low - 1, high - 1), p_value, basis, word, reason,
        drifted,
    )  # fmt: skip


def _mean(point: Point) -> float | None:
    tp = point.throughput
    return tp.value if tp else None


def check_comparable(old: Result, new: Result) -> None:
    """One line when the two results did not measure the same thing."""
    for name in ("workload", "framework", "device", "seq_len", "data", "epochs"):
        a, b = getattr(old.config, name), getattr(new.config, name)
        if a != b:
            raise UsageError(
                f"the results differ in {name} ({a!r} vs {b!r}): not the same benchmark"
            )


def compare(old: Result, new: Result, threshold: float = DEFAULT_THRESHOLD) -> list[PointDrift]:
    check_comparable(old, new)
    new_points = {_axes(p): p for p in new.points}
    old_points = {_axes(p): p for p in old.points}
    drifts = []
    for axes, point in old_points.items():
        if axes in new_points:
            drifts.append(compare_points(point, new_points[axes], threshold))
        else:
            drifts.append(PointDrift(point.label, _mean(point), None, verdict=MISSING_NEW))
    drifts += [
        PointDrift(p.label, None, _mean(p), verdict=MISSING_OLD)
        for axes, p in new_points.items()
        if axes not in old_points
    ]
    return drifts


def _flatten(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _flatten(inner, f"{prefix}.{key}" if prefix else str(key))
    else:
        yield prefix, value


def environment_changes(old: Result, new: Result) -> list[tuple[str, Any, Any]]:
    """(field, old, new) for every provenance field that differs, volatile ones left out."""
    a = dict(_flatten(old.environment or {}))
    b = dict(_flatten(new.environment or {}))
    changes = []
    for key in sorted(a.keys() | b.keys()):
        if any(mark in key for mark in _VOLATILE):
            continue
        if a.get(key) != b.get(key):
            changes.append((key, a.get(key), b.get(key)))
    return changes
