"""Statistics derived from a point's raw values: throughput, step and epoch times,
energy, time to accuracy, MFU, input wait, and the figures written beside the raw values.

Raw values are stored (per-step times per repeat, per-epoch times, peaks); every
statistic is derived from them here, on save for readers of the JSON and again on
load, so a stored statistic can never disagree with the raw data it came from.
Point's properties (bench/result/point.py) call these functions, each of which reads
a point's record (bench.result.measured.Measured) and the others' results.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from bench.config.bounds import MAX_WHOLE, positive
from bench.stats.estimate import Estimate, Summary, relative_stdev
from bench.stats.estimate import throughput as samples_per_s

if TYPE_CHECKING:
    from bench.result.measured import Measured

THROUGHPUT_UNIT = "samples/s"
BUSY_CPUS = 0.25  # a quarter of a CPU on average, outside bench: a busy machine
# CPU time is counted in clock ticks (10 ms): over a shorter window one stray tick
# would look like a busy machine, so shorter windows are recorded but not flagged.
MIN_WINDOW_S = 0.5
T = TypeVar("T")


def once(compute: Callable[[Measured], T]) -> Callable[[Measured], T]:
    """A point's figure computed once and kept on the point: a point is frozen, so
    its figures cannot change, and a report of 10,000 files asks each several times
    (an interval's exact standard deviation is the dearest thing a report computes)."""
    name = f"_once_{compute.__name__}"

    @functools.wraps(compute)
    def kept(point: Measured) -> T:
        store = point.__dict__  # beside the fields: not compared, copied or saved
        if name not in store:
            store[name] = compute(point)
        return store[name]

    return kept


@dataclass(frozen=True)
class EnergySummary:
    """Energy of a point, derived from the per-repeat windows. Units: J, W."""

    total_j: float  # mean over repeats of the measured window's energy, all devices
    per_sample_j: float
    mean_power_w: float
    per_epoch_j: float | None  # epoch mode: mean of epochs 2..N
    sources: list[str]
    # None: nothing to check against; "ok"; else what lies outside [draw before, limit].
    power_check: str | None = None

    @property
    def samples_per_joule(self) -> float:
        return 1.0 / self.per_sample_j if self.per_sample_j else float("inf")


@dataclass(frozen=True)
class ToAccuracy:
    """Training to a target top-1, derived from the per-epoch records of the repeats.
    Times are wall clock from the first step: training plus each epoch's evaluation,
    as MLPerf and DAWNBench count time to train. Units: s, J."""

    target: float | None
    repeats: int
    reached: int  # repeats that reached the target
    epochs_to_target: float | None  # mean over the repeats that reached it
    time_to_target_s: float | None
    energy_to_target_j: float | None  # None unless every such repeat measured energy
    best_top1: float
    curve: list[float]  # top-1 after each epoch, of the first repeat

    @classmethod
    def of(cls, records: list[dict[str, Any]], epoch_j: list[list[float] | None]) -> ToAccuracy:
        target = records[0].get("target")
        hits, times, joules = [], [], []
        for r, record in enumerate(records):
            epochs = record["epochs"]
            first = next(
                (i for i, e in enumerate(epochs) if target is not None and e["top1"] >= target),
                None,
            )
            if first is None:
                continue
            hits.append(first + 1)
            times.append(sum(e["train_s"] + e["eval_s"] for e in epochs[: first + 1]))
            laps = epoch_j[r] if r < len(epoch_j) else None
            joules.append(sum(laps[: first + 1]) if laps and len(laps) > first else None)
        return cls(
            target=target,
            repeats=len(records),
            reached=len(hits),
            epochs_to_target=statistics.fmean(hits) if hits else None,
            time_to_target_s=statistics.fmean(times) if times else None,
            energy_to_target_j=statistics.fmean(j for j in joules if j is not None)
            if joules and None not in joules else None,
            best_top1=max(e["top1"] for record in records for e in record["epochs"]),
            curve=[e["top1"] for e in records[0]["epochs"]],
        )  # fmt: skip

    def cost_to_target(self, usd_per_hour: float | None) -> float | None:
        if usd_per_hour is None or self.time_to_target_s is None:
            return None
        return self.time_to_target_s / 3600 * usd_per_hour

    def to_json(self) -> dict[str, Any]:
        units = {"time_to_target_s": "s", "energy_to_target_j": "J", "best_top1": "fraction",
                 "curve": "fraction"}  # fmt: skip
        return {**dataclasses.asdict(self), "units": units}


# A clock reason a GPU gives under any full load, not a sign of something else running:
# a data-centre GPU training at full speed sits at its power limit (an H200 at 680 of 700
# W). It stays in the record; heat, a hardware slowdown and the power brake still count.
AT_FULL_LOAD = ("power_cap",)


def busy_why(record: dict[str, Any] | None) -> str | None:
    """Why a repeat's machine counts as busy (its busy record, bench/trackers/busy.py:
    other processes or the hypervisor took more than BUSY_CPUS, a GPU was throttled),
    or None."""
    if not record:
        return None
    reasons = []
    long_enough = (record.get("window_s") or 0) >= MIN_WINDOW_S
    if long_enough and (record.get("others_cpus") or 0) > BUSY_CPUS:
        reasons.append(f"other processes kept {record['others_cpus']:.2f} CPUs busy")
    if long_enough and (record.get("steal_cpus") or 0) > BUSY_CPUS:
        reasons.append(f"the hypervisor stole {record['steal_cpus']:.2f} CPUs")
    for device, why in sorted((record.get("throttle") or {}).items()):
        slowed = [reason for reason in why or () if reason not in AT_FULL_LOAD]
        if slowed:
            reasons.append(f"{device} clocks held back ({', '.join(slowed)})")
    return "; ".join(reasons) or None


@once
def busy_note(point: Measured) -> str | None:
    """Why the machine counted as busy while this point was measured, or None."""
    notes = [
        f"repeat {r + 1}: {why}" if len(point.busy) > 1 else why
        for r, record in enumerate(point.busy)
        if (why := busy_why(record))
    ]
    return "; ".join(notes) or None


def repeat_throughputs(point: Measured) -> list[float]:
    """Samples/s of each repeat. In epoch mode the M2 Max vs V100 study's method:
    samples per epoch over the mean duration of epochs 2..N (epoch 1 holds start-up
    costs)."""
    values = []
    for r, steps in enumerate(point.step_times_s):
        if not steps:
            continue
        epochs = (
            point.epoch_times_s[r] if point.epoch_times_s and r < len(point.epoch_times_s) else None
        )
        if epochs:
            steady = epochs[1:] or epochs
            samples_per_epoch = point.batch_size * len(steps) // len(epochs)
            if samples_per_epoch:  # (fewer steps than epochs: no such run)
                values.append(samples_per_epoch / statistics.fmean(steady))
        else:
            values.append(samples_per_s(point.batch_size, steps))
    return values


@once
def throughput(point: Measured) -> Estimate | None:
    values = repeat_throughputs(point)
    return Estimate.of(values, THROUGHPUT_UNIT, positive=True) if values else None


# Repeats disagree when the fastest is this much faster than the slowest AND no step of
# the slowest was as fast as the slowest step of the fastest: more than a machine's usual
# noise between repeats (each repeat's own steps say what that noise is), such as a
# repeat measured while another process held the cores. Verdicts on them cannot tell.
DISAGREE_RATIO = 1.2


@once
def repeats_disagree(point: Measured) -> str | None:
    """'repeats disagree: 143 to 12,000 samples/s (repeat 2 fastest, repeat 1 slowest)',
    or None: repeats whose step times do not overlap and lie DISAGREE_RATIO apart."""
    rows = [(r, steps) for r, steps in enumerate(point.step_times_s) if steps]
    values = repeat_throughputs(point)
    if len(values) < 2 or len(values) != len(rows):  # (epoch mode: its own rule)
        return None
    slow, fast = min(range(len(values)), key=values.__getitem__), max(
        range(len(values)), key=values.__getitem__)  # fmt: skip
    if values[fast] < DISAGREE_RATIO * values[slow] or min(rows[slow][1]) <= max(rows[fast][1]):
        return None
    return (f"repeats disagree: {values[slow]:,.4g} to {values[fast]:,.4g} {THROUGHPUT_UNIT} "
            f"(repeat {rows[fast][0] + 1} fastest, repeat {rows[slow][0] + 1} slowest; "
            "their steps do not overlap)")  # fmt: skip


def throughput_rsd(point: Measured) -> float | None:
    return relative_stdev(repeat_throughputs(point))


@once
def step_time(point: Measured) -> Summary | None:
    steps = [t for row in point.step_times_s for t in row]
    return Summary.of(steps, "s") if steps else None


def epoch_time(point: Measured) -> Summary | None:
    """Epochs 2..N of every repeat (all epochs if there is only one)."""
    if not point.epoch_times_s:
        return None
    steady = [t for row in point.epoch_times_s for t in (row[1:] or row)]
    return Summary.of(steady, "s") if steady else None


# A point whose steps waited for data at least this share of their time is input-bound:
# its rate is the loader's, not the device's. 10%: beyond the run-to-run spread of a
# step on a quiet machine (a few %), and where a faster loader would show in the rate.
INPUT_BOUND_SHARE = 0.10


def input_wait_shares(point: Measured) -> list[float]:
    """Each repeat's share of its step time spent waiting for the next batch: the sum of
    its waits over the sum of its steps (every step's time includes its wait)."""
    shares = []
    for waits, steps in zip(point.input_wait_s, point.step_times_s, strict=False):
        total = sum(steps)
        if waits and total > 0:
            shares.append(min(1.0, sum(waits) / total))
    return shares


def input_wait_share(point: Measured) -> Estimate | None:
    """The input-bound share: the mean over repeats of each repeat's share, with its 95%
    t-interval (bench.stats.estimate.Estimate), the interval held inside [0, 1] (a share is
    neither negative nor above the whole step). None without waits (synthetic data)."""
    shares = input_wait_shares(point)
    if not shares:
        return None
    estimate = Estimate.of(shares, "fraction")
    if estimate.ci95_low is None or estimate.ci95_high is None:
        return estimate
    return dataclasses.replace(
        estimate, ci95_low=max(0.0, estimate.ci95_low), ci95_high=min(1.0, estimate.ci95_high)
    )


def input_wait_fraction(point: Measured) -> float | None:
    """The input-bound share's figure (input_wait_share's mean over repeats)."""
    share = input_wait_share(point)
    return share.value if share else None


def input_bound_note(point: Measured) -> str | None:
    """'waited for data 41% [38-44%] of each step: the loader, not the device, sets this
    rate' where the share reaches INPUT_BOUND_SHARE; None below it or without waits."""
    share = input_wait_share(point)
    if share is None or share.value < INPUT_BOUND_SHARE:
        return None
    return (f"waited for data {percent_interval(share)} of each step: the loader, not the "
            "device, sets this rate")  # fmt: skip


def percent_interval(share: Estimate) -> str:
    """'41% [38-44%]', or '41%' for one repeat (no interval)."""
    if share.ci95_low is None or share.ci95_high is None:
        return f"{share.value:.0%}"
    return f"{share.value:.0%} [{share.ci95_low * 100:.0f}-{share.ci95_high:.0%}]"


def synthetic_ratio(point: Measured) -> float | None:
    """Throughput on the real data over the same point's on synthetic data: below 1,
    what the input pipeline (and the host) cost."""
    tp = throughput(point)
    if not point.synthetic_step_times_s or tp is None:
        return None
    return tp.value / samples_per_s(point.batch_size, point.synthetic_step_times_s)


def to_accuracy(point: Measured) -> ToAccuracy | None:
    records = [a for a in point.accuracy if a]
    if not records:
        return None
    epoch_j = [(e or {}).get("epoch_j") for e in point.energy] if point.energy else []
    return ToAccuracy.of(records, epoch_j)


def peak_memory(point: Measured) -> int | None:
    peaks = [p for p in point.peak_memory_bytes if p is not None]
    return max(peaks) if peaks else None


@once
def energy_summary(point: Measured) -> EnergySummary | None:
    # (window, samples measured in it) for each repeat that could read energy
    windows = [
        (e, point.batch_size * len(steps))
        for e, steps in zip(point.energy, point.step_times_s, strict=False)
        if e and steps  # a window without steps has no samples to share its energy
    ]
    if not windows:
        return None
    joules = [sum(e["per_device_j"].values()) for e, _ in windows]
    samples = [n for _, n in windows]
    epochs = [
        j for e, _ in windows for j in ((e.get("epoch_j") or [])[1:] or (e.get("epoch_j") or []))
    ]
    return EnergySummary(
        total_j=statistics.fmean(joules),
        per_sample_j=sum(joules) / sum(samples),
        mean_power_w=sum(joules) / sum(e["window_s"] for e, _ in windows),
        per_epoch_j=statistics.fmean(epochs) if epochs else None,
        sources=sorted({kind for e, _ in windows for kind in e["sources"].values()}),
        power_check=_power_check(point),
    )


def samples_per_joule_by_repeat(point: Measured) -> list[float]:
    """Each repeat's samples per joule over its measured window (those that read energy):
    the values an energy-efficiency ratio's interval is taken over."""
    return [
        point.batch_size * len(steps) / joules
        for e, steps in zip(point.energy, point.step_times_s, strict=False)
        if e and steps and (joules := sum(e["per_device_j"].values())) > 0
    ]


def _power_check(point: Measured) -> str | None:
    """Each device's mean power over each window must lie between its draw before
    the child's work and its enforced power limit (5% over it allowed for the
    counter's own averaging); anything else means a counter that cannot be trusted."""
    problems, checked = [], False
    for r, (energy, before) in enumerate(
        zip(point.energy, point.power_before or [None] * len(point.energy), strict=False)
    ):
        if not energy or not before:
            continue
        for device, joules in energy["per_device_j"].items():
            bounds = before.get(device)
            if not bounds:
                continue
            checked = True
            mean = joules / energy["window_s"]
            where = f"repeat {r + 1} {device} mean {mean:,.0f} W"
            if mean < bounds["draw_w"]:
                problems.append(f"{where} is below its {bounds['draw_w']:,.0f} W before work")
            elif mean > bounds["limit_w"] * 1.05:
                problems.append(f"{where} is above its {bounds['limit_w']:,.0f} W limit")
    if problems:
        return "; ".join(problems)
    return "ok" if checked else None


@once
def achieved_flops(point: Measured) -> float | None:
    """Model FLOP/s: FLOPs per sample times samples per second."""
    tp = throughput(point)
    if point.flops_per_sample is None or tp is None:
        return None
    return point.flops_per_sample * tp.value


def mfu(point: Measured) -> float | None:
    """Model FLOPs utilisation over every repeat: achieved FLOP/s over the peak of the
    devices that trained, where the child recorded one (details.mfu, bench/result/mfu.py;
    a peak outside what a device can hold reads as none)."""
    record = point.details.get("mfu")
    peak = record.get("peak_flops") if isinstance(record, dict) else None
    achieved = achieved_flops(point)
    if achieved is None or peak is None or not positive(peak):
        return None
    return achieved / peak


_UNIT = re.compile(r"[a-z]{1,24}")  # tokens, pixels: what bench's workloads count


@once
def unit_throughput(point: Measured) -> tuple[float, str] | None:
    """(2.1e6, 'tokens/s'): throughput in the workload's natural unit, where it has
    one besides samples (the worker records how many a sample holds)."""
    per_sample = point.details.get("per_sample")
    tp = throughput(point)
    if not isinstance(per_sample, dict) or tp is None:
        return None
    count, unit = per_sample.get("count"), per_sample.get("unit")
    # A file's own words reach tables and headers: a unit is a short lower-case word.
    if not isinstance(count, int) or not 0 < count <= 2**31 or not isinstance(unit, str):
        return None
    if not _UNIT.fullmatch(unit):
        return None
    return tp.value * count, f"{unit}/s"


def trained_on(point: Measured) -> int:
    """How many devices trained the point: the ranks, or (one process over several, as
    JAX and TensorFlow train) the count the child's MFU record holds."""
    record = point.details.get("mfu")
    devices = record.get("devices") if isinstance(record, dict) else None
    return devices if isinstance(devices, int) and 1 <= devices <= MAX_WHOLE else point.devices


def unit_throughput_per_device(point: Measured) -> tuple[float, str] | None:
    """(5762.0, 'tokens/s'): the workload's unit per device that trained: the column
    LLM training figures are quoted in (torchtitan's TPS/GPU)."""
    total = unit_throughput(point)
    return (total[0] / trained_on(point), total[1]) if total else None


def figures(point: Measured) -> dict[str, Any]:
    """The derived figures written beside a point's raw values, for readers of the
    file; recomputed (not read) on load."""
    data: dict[str, Any] = {}
    tp, step, epoch = throughput(point), step_time(point), epoch_time(point)
    data["throughput"] = dataclasses.asdict(tp) if tp else None
    data["throughput_rsd"] = throughput_rsd(point)
    data["step_time"] = dataclasses.asdict(step) if step else None
    data["epoch_time"] = dataclasses.asdict(epoch) if epoch else None
    data["peak_memory"] = {"value": peak_memory(point), "unit": "B", "kind": point.memory_kind}
    data["achieved_flops"] = {"value": achieved_flops(point), "unit": "FLOP/s"}
    per_unit = unit_throughput(point)
    data["unit_throughput"] = {"value": per_unit[0], "unit": per_unit[1]} if per_unit else None
    data["input_wait_fraction"] = input_wait_fraction(point)
    share = input_wait_share(point)
    data["input_wait_share"] = dataclasses.asdict(share) if share else None
    data["synthetic_ratio"] = synthetic_ratio(point)
    reached = to_accuracy(point)
    data["to_accuracy"] = reached.to_json() if reached else None
    energy = energy_summary(point)
    data["energy_summary"] = (
        {**dataclasses.asdict(energy), "samples_per_joule": energy.samples_per_joule,
         "units": {"total_j": "J", "per_sample_j": "J", "mean_power_w": "W",
                   "per_epoch_j": "J", "samples_per_joule": "samples/J"}}
        if energy else None
    )  # fmt: skip
    return data
