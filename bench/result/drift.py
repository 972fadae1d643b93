"""Did the number move, and why? Two results of the same config, point by point.

For each point: a two-sample Welch t-test (scipy.stats) of the new values against the
old, the change of the mean in percent with its 95% interval, and a verdict. The values
are the per-repeat throughputs when both points ran in at least two processes (repeats
are independent), else the per-step throughputs (batch / step time): steps of one
process share its state (clocks, allocator, autotuned kernels), so their interval is
narrower than the spread between processes; the verdict says which it used.

The verdict is bench.stats.verdict's, from the 95% interval of the ratio new/old (Welch on the
logs, as bench compare's): faster or slower where the interval excludes 1; the same only
where the whole interval lies within the threshold (2% by default); otherwise cannot
tell, with about how many values a side would settle it. A change counts as drift only
when it is faster or slower AND its estimate is at least the threshold: large samples
make tiny, real but irrelevant changes significant.

Beside the figures: what changed between the two environments (image, lock, framework
and library versions, driver, accelerator, CPU, speed-relevant variables, host).
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from bench.config import data_ref
from bench.config.run_config import RunConfig
from bench.config.sweep import NAMES as AXIS_NAMES
from bench.result import Point, Result, point_axes
from bench.stats import sequential, verdict
from bench.stats.estimate import geometric_mean, ratio_interval
from bench.util.errors import UsageError

ALPHA = 0.05
DEFAULT_THRESHOLD = 0.02
SAME, FASTER, SLOWER, CANNOT_TELL = "same", "faster", "slower", "cannot tell"
MISSING_OLD, MISSING_NEW, FAILED, UNTESTABLE = "new point", "missing", "failed", "untestable"
DRIFTED = frozenset({FASTER, SLOWER, MISSING_NEW, FAILED})

# Environment fields that change on every run and say nothing about speed.
_VOLATILE = ("_at_start", "started", "finished", "command", "intra_op_threads")
# Config fields that say how many repeats, how long a child may take or where the ranks
# meet, not what one repeat measures (nor the sweep, matched point by point): results
# differing only in these are repeats of one configuration, which --settle pools.
_HOW_OFTEN = frozenset({
    "repeats", "min_repeats", "max_repeats", "target_rsd", "timeout_s", "node_rank",
    "rdzv_endpoint", "max_batch_limit", "max_batch_step", "max_batch_start", "probe_steps",
    *AXIS_NAMES,
})  # fmt: skip
# The environment that makes repeats of one configuration one measurement: the machine
# and the software that ran them. Not bench's own commit, the host's name, speed
# variables or the libraries a child loaded: they differ between a parent and its child
# and between two containers of one machine.
_MACHINE = ("cpu.", "accelerator.", "host.memory_bytes", "host.os_release", "host.kernel")
_SOFTWARE = ("framework.", "image.", "host.python")


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
        """Its reason is bench.stats.verdict's sentence, which says the verdict itself."""
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
    # The figures the interval is of (bench.stats.estimate): geometric means, as every view's.
    old_mean, new_mean = geometric_mean(a), geometric_mean(b)
    if min(len(a), len(b)) < 2:
        return PointDrift(
            label, old_mean, new_mean, new_mean / old_mean - 1, None, None, basis, UNTESTABLE,
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
    disagree = next((f"the {side} point's {why}" for side, p in (("old", old), ("new", new))
                     if (why := p.repeats_disagree)), None)  # fmt: skip
    said = verdict.judge(math.sqrt(low * high), (low, high), min(len(a), len(b)), threshold,
                         disagree=disagree)  # fmt: skip
    unit = "repeats" if basis.startswith("repeats") else "steps"
    return _said(label, old_mean, new_mean, p_value, basis, said, unit, threshold)


def _said(
    label: str, old_mean: float, new_mean: float, p_value: float | None, basis: str,
    said: verdict.Verdict, unit: str, threshold: float,
) -> PointDrift:  # fmt: skip
    change = new_mean / old_mean - 1
    low, high = said.interval
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


def settle_point(old: Point, new: Point, threshold: float, plan: int) -> PointDrift:
    """The verdict of --settle on one point: bench.stats.sequential's interval over the
    repeats (never the steps: --settle adds repeats), 95% at every look at once; `plan`:
    the most repeats the new side may reach. Too few repeats for a spread is cannot
    tell, which --settle goes on from."""
    label = new.label
    if not new.measured or new.status != "ok":
        return PointDrift(label, _mean(old), None, verdict=FAILED, reason=new.error_line)
    if not old.measured:
        return PointDrift(label, None, _mean(new), verdict=UNTESTABLE, reason="old point failed")
    a, b = old.repeat_throughputs(), new.repeat_throughputs()
    if not a or not b:  # an epoch-mode point, or a file whose repeats hold no steps
        side = "old" if not a else "new"
        return PointDrift(label, _mean(old), _mean(new), verdict=UNTESTABLE,
                          reason=f"the {side} point has no per-repeat throughput")  # fmt: skip
    basis = f"repeats ({len(a)} vs {len(b)}), sequential"
    old_mean, new_mean = geometric_mean(a), geometric_mean(b)
    looked = sequential.interval(b, a, plan)
    if looked is None:
        why = (
            "fewer than 3 repeats in all, no spread yet"
            if len(a) + len(b) < 3
            else "the repeats spread too far for an interval"
        )
        return PointDrift(
            label, old_mean, new_mean, new_mean / old_mean - 1, basis=basis,
            verdict=CANNOT_TELL, reason=f"cannot tell: {why}",
        )  # fmt: skip
    ratio, interval = looked
    said = verdict.judge(ratio, interval, min(len(a), len(b)), threshold, sequential=True)
    return _said(label, old_mean, new_mean, None, basis, said, "repeats", threshold)


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


def compare(
    old: Result, new: Result, threshold: float = DEFAULT_THRESHOLD, plan: int | None = None
) -> list[PointDrift]:
    """Point by point; `plan`: judged as --settle judges (settle_point, toward that cap)."""
    check_comparable(old, new)
    new_points = {_axes(p): p for p in new.points}
    old_points = {_axes(p): p for p in old.points}
    drifts = []
    for axes, point in old_points.items():
        if axes in new_points and plan is not None:
            drifts.append(settle_point(point, new_points[axes], threshold, plan))
        elif axes in new_points:
            drifts.append(compare_points(point, new_points[axes], threshold))
        else:
            drifts.append(PointDrift(point.label, _mean(point), None, verdict=MISSING_NEW))
    drifts += [
        PointDrift(p.label, None, _mean(p), verdict=MISSING_OLD)
        for axes, p in new_points.items()
        if axes not in old_points
    ]
    return drifts


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_same_config(old: RunConfig, new: RunConfig) -> None:
    """One line unless the two configs measure one thing in each point (--settle pools
    repeats of one configuration): only how many repeats, the child's timeout, where the
    ranks meet and which points were swept may differ; data by its kind (a rerun trains
    on its own copy)."""
    for side, config in (("OLD", old), ("NEW", new)):
        if config.searches:
            raise UsageError(
                f"--settle: {side} searched the largest batch or sequence length: its points "
                "are probes, not repeats to settle"
            )
    for name in (f.name for f in dataclasses.fields(RunConfig) if f.name not in _HOW_OFTEN):
        a, b = getattr(old, name), getattr(new, name)
        if name in ("data", "val_data"):
            a, b = (_kind(value) for value in (a, b))
        if a != b:
            raise UsageError(
                f"--settle: the results differ in {name} ({_short(a)} vs {_short(b)}): "
                "--settle pools repeats of one configuration; compare them without --settle"
            )


def _kind(data: str | None) -> str | None:
    ref = data_ref.parse(data) if data is not None else None
    return f"{ref.kind}:PATH" if ref is not None else data


def _flatten(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _flatten(inner, f"{prefix}.{key}" if prefix else str(key))
    else:
        yield prefix, value


def environment_changes(old: Result, new: Result) -> list[tuple[str, Any, Any]]:
    """(field, old, new) for every provenance field that differs, volatile ones left out."""
    return _changes(old.environment or {}, new.environment or {})


def _changes(
    old: dict[str, Any], new: dict[str, Any], within: tuple[str, ...] = ("",)
) -> list[tuple[str, Any, Any]]:
    a, b = dict(_flatten(old)), dict(_flatten(new))
    changes = []
    for key in sorted(a.keys() | b.keys()):
        if any(mark in key for mark in _VOLATILE) or not key.startswith(within):
            continue
        if a.get(key) != b.get(key):
            changes.append((key, a.get(key), b.get(key)))
    return changes


def unlike(measured: dict[str, Any], here: dict[str, Any], software: bool = True) -> str | None:
    """Why repeats run with environment `here` would not pool with those measured in
    `measured` (another machine, or other software): the first field that differs, or
    None. software=False: the machine only (what a parent reads of itself, before any
    child tells it the accelerator and framework; the keys `here` lacks are not asked)."""
    within = _MACHINE + _SOFTWARE if software else _MACHINE
    if not software:  # the parent knows its host and CPU, not the accelerator
        measured = {key: measured.get(key) for key in here}
    for key, a, b in _changes(measured, here, within):
        return f"{key}: {_short(a)} there, {_short(b)} here"
    return None
