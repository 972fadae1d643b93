"""The result document: schema, derived statistics, atomic save, validating load.

Raw values are stored (per-step times per repeat, per-epoch times, peaks); every
statistic is derived from them here, on save for readers of the JSON and again on
load, so a stored statistic can never disagree with the raw data it came from.
"""

from __future__ import annotations

import dataclasses
import json
import stat
import statistics
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import files, integrity
from bench.config import RunConfig
from bench.errors import BenchError, UsageError
from bench.report.text import visible
from bench.result.checks import MAX_DEPTH, MAX_INT, positive
from bench.result.migrations import MIGRATIONS as MIGRATIONS
from bench.result.migrations import migrate
from bench.result.schema import POINT_AXES, SCHEMA_VERSION
from bench.result.validate import InvalidField, validate
from bench.stats import Estimate, Summary, relative_stdev
from bench.stats import throughput as samples_per_s
from bench.trackers.busy import verdict as busy_verdict

THROUGHPUT_UNIT = "samples/s"


class ResultError(UsageError):
    """A result file that cannot be read: names the file and what is wrong."""


# An axis whose absence means a value other than None (rungs of older ladders).
_AXIS_DEFAULTS = {"activation_checkpointing": "none"}


def point_axes(point: Any) -> tuple[Any, ...]:
    """The POINT_AXES of a Point, a PointConfig or a dict of one (missing keys: None)."""
    if isinstance(point, dict):
        return tuple(point.get(name, _AXIS_DEFAULTS.get(name)) for name in POINT_AXES)
    return tuple(getattr(point, name) for name in POINT_AXES)


def variant_label(
    precision: str, memory_format: str, compile: str | None, optimize: str | None = None,
    checkpointing: str = "none",
) -> str:  # fmt: skip
    """'bf16 channels_last compile=inductor optimize=ipex': the axes other than batch size
    and the runtime's."""
    parts = [precision]
    if memory_format != "contiguous":
        parts.append(memory_format)
    if compile:
        parts.append(f"compile={compile}")
    if optimize:
        parts.append(f"optimize={optimize}")
    if checkpointing != "none":
        parts.append(f"ac={checkpointing}")
    return " ".join(parts)


def _tuples(rows: Any) -> tuple[tuple[float, ...], ...]:
    return tuple(tuple(row) for row in rows)


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


@dataclass(frozen=True)
class Point:
    """One measured point of a sweep: its axes, raw measurements per repeat, and status."""

    batch_size: int  # GLOBAL batch: samples per step over all devices
    precision: str
    memory_format: str = "contiguous"
    compile: str | None = None
    status: str = "ok"
    error: str | None = None
    devices: int = 1
    warmup_times_s: tuple[tuple[float, ...], ...] = ()  # one row per repeat
    step_times_s: tuple[tuple[float, ...], ...] = ()
    epoch_times_s: tuple[tuple[float, ...], ...] | None = None
    peak_memory_bytes: tuple[int | None, ...] = ()
    memory_kind: str | None = None
    memory_unavailable: str | None = None
    loss_first: tuple[float | None, ...] = ()
    loss_last: tuple[float | None, ...] = ()
    parameters: int | None = None
    flops_per_sample: float | None = None
    # Per repeat: {"window_s", "per_device_j", "sources", "epoch_j"}, or None.
    energy: tuple[dict[str, Any] | None, ...] = ()
    energy_unavailable: str | None = None
    # Per repeat: {device: {"draw_w", "limit_w"}} read before the child's work, or None.
    power_before: tuple[dict[str, Any] | None, ...] = ()
    # Per repeat, with ranks: {"world_size", "nodes", "hosts", "mean_step_s" (per rank),
    # "slowest_rank", "slowest_step_times_s", "bindings"}, or None.
    ranks: tuple[dict[str, Any] | None, ...] = ()
    # Per repeat: was the machine busy over the measured window (trackers/busy.py).
    busy: tuple[dict[str, Any] | None, ...] = ()
    # Why the figure is noisier than asked (--repeats auto that missed its target).
    noise: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    # The child's memory allocator, OpenMP runtime and NUMA binding (bench.runtime);
    # None: as bench was launched. `runtime`: what was applied.
    allocator: str | None = None
    openmp: str | None = None
    numa: str | None = None
    runtime: dict[str, Any] | None = None
    # The framework's whole-model optimisation (torch: 'ipex', ipex.optimize), or None.
    optimize: str | None = None
    # Activation checkpointing of the model's blocks (bench.parallel.checkpoint).
    activation_checkpointing: str = "none"
    # On a real dataset, per repeat: each step's wait for its batch (s), and the
    # accuracy record {"metric", "target", "epochs": [{"epoch", "top1", "train_s",
    # "eval_s", ...}]}.
    input_wait_s: tuple[tuple[float, ...], ...] = ()
    accuracy: tuple[dict[str, Any] | None, ...] = ()
    # After training on a dataset, the same session on one synthetic batch (repeat 1).
    synthetic_step_times_s: tuple[float, ...] = ()

    @property
    def runtime_label(self) -> str:
        """'tcmalloc intel-omp numa': the runtime axes that were set ('' for none)."""
        parts = [self.allocator or ""]
        parts.append(f"{self.openmp}-omp" if self.openmp else "")
        parts.append({"on": "numa", "off": "no-numa"}.get(self.numa or "", ""))
        return " ".join(part for part in parts if part)

    @property
    def label(self) -> str:
        variant = variant_label(self.precision, self.memory_format, self.compile, self.optimize,
                                self.activation_checkpointing)  # fmt: skip
        spread = f" on {self.devices} devices" if self.devices > 1 else ""
        runtime = f" {self.runtime_label}" if self.runtime_label else ""
        return f"batch {self.batch_size} {variant}{runtime}{spread}"

    @property
    def error_line(self) -> str:
        """The first line of the error, or the status when there is no message."""
        lines = (self.error or "").strip().splitlines()
        return lines[0] if lines else self.status

    @property
    def busy_note(self) -> str | None:
        """Why the machine counted as busy while this point was measured, or None."""
        notes = [
            f"repeat {r + 1}: {why}" if len(self.busy) > 1 else why
            for r, record in enumerate(self.busy)
            if (why := busy_verdict(record))
        ]
        return "; ".join(notes) or None

    @property
    def measured(self) -> bool:
        return any(self.step_times_s)

    def repeat_throughputs(self) -> list[float]:
        """Samples/s of each repeat. In epoch mode the M2 Max vs V100 study's method:
        samples per epoch over the mean duration of epochs 2..N (epoch 1 holds start-up
        costs)."""
        values = []
        for r, steps in enumerate(self.step_times_s):
            if not steps:
                continue
            epochs = (
                self.epoch_times_s[r]
                if self.epoch_times_s and r < len(self.epoch_times_s)
                else None
            )
            if epochs:
                steady = epochs[1:] or epochs
                samples_per_epoch = self.batch_size * len(steps) // len(epochs)
                if samples_per_epoch:  # (fewer steps than epochs: no such run)
                    values.append(samples_per_epoch / statistics.fmean(steady))
            else:
                values.append(samples_per_s(self.batch_size, steps))
        return values

    @property
    def throughput(self) -> Estimate | None:
        values = self.repeat_throughputs()
        return Estimate.of(values, THROUGHPUT_UNIT, positive=True) if values else None

    @property
    def throughput_rsd(self) -> float | None:
        return relative_stdev(self.repeat_throughputs())

    @property
    def step_time(self) -> Summary | None:
        steps = [t for row in self.step_times_s for t in row]
        return Summary.of(steps, "s") if steps else None

    @property
    def epoch_time(self) -> Summary | None:
        """Epochs 2..N of every repeat (all epochs if there is only one)."""
        if not self.epoch_times_s:
            return None
        steady = [t for row in self.epoch_times_s for t in (row[1:] or row)]
        return Summary.of(steady, "s") if steady else None

    @property
    def input_wait_fraction(self) -> float | None:
        """The share of step time spent waiting for input, over every repeat."""
        waits = sum(t for row in self.input_wait_s for t in row)
        steps = sum(t for row in self.step_times_s[: len(self.input_wait_s)] for t in row)
        return waits / steps if self.input_wait_s and steps else None

    @property
    def synthetic_ratio(self) -> float | None:
        """Throughput on the real data over the same point's on synthetic data: below 1,
        what the input pipeline (and the host) cost."""
        if not self.synthetic_step_times_s or self.throughput is None:
            return None
        return self.throughput.value / samples_per_s(self.batch_size, self.synthetic_step_times_s)

    @property
    def to_accuracy(self) -> ToAccuracy | None:
        records = [a for a in self.accuracy if a]
        if not records:
            return None
        epoch_j = [(e or {}).get("epoch_j") for e in self.energy] if self.energy else []
        return ToAccuracy.of(records, epoch_j)

    @property
    def peak_memory(self) -> int | None:
        peaks = [p for p in self.peak_memory_bytes if p is not None]
        return max(peaks) if peaks else None

    @property
    def energy_summary(self) -> EnergySummary | None:
        # (window, samples measured in it) for each repeat that could read energy
        windows = [
            (e, self.batch_size * len(steps))
            for e, steps in zip(self.energy, self.step_times_s, strict=False)
            if e and steps  # a window without steps has no samples to share its energy
        ]
        if not windows:
            return None
        joules = [sum(e["per_device_j"].values()) for e, _ in windows]
        samples = [n for _, n in windows]
        epochs = [
            j
            for e, _ in windows
            for j in ((e.get("epoch_j") or [])[1:] or (e.get("epoch_j") or []))
        ]
        return EnergySummary(
            total_j=statistics.fmean(joules),
            per_sample_j=sum(joules) / sum(samples),
            mean_power_w=sum(joules) / sum(e["window_s"] for e, _ in windows),
            per_epoch_j=statistics.fmean(epochs) if epochs else None,
            sources=sorted({kind for e, _ in windows for kind in e["sources"].values()}),
            power_check=self._power_check(),
        )

    def _power_check(self) -> str | None:
        """Each device's mean power over each window must lie between its draw before
        the child's work and its enforced power limit (5% over it allowed for the
        counter's own averaging); anything else means a counter that cannot be trusted."""
        problems, checked = [], False
        for r, (energy, before) in enumerate(
            zip(self.energy, self.power_before or [None] * len(self.energy), strict=False)
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

    @property
    def achieved_flops(self) -> float | None:
        """Model FLOP/s: FLOPs per sample times samples per second."""
        if self.flops_per_sample is None or self.throughput is None:
            return None
        return self.flops_per_sample * self.throughput.value

    @property
    def mfu(self) -> float | None:
        """Model FLOPs utilisation over every repeat: achieved FLOP/s over the peak of the
        devices that trained, where the child recorded one (details.mfu, bench/mfu.py;
        a peak outside what a device can hold reads as none)."""
        record = self.details.get("mfu")
        peak = record.get("peak_flops") if isinstance(record, dict) else None
        achieved = self.achieved_flops
        if achieved is None or peak is None or not positive(peak):
            return None
        return achieved / peak

    @property
    def unit_throughput(self) -> tuple[float, str] | None:
        """(2.1e6, 'tokens/s'): throughput in the workload's natural unit, where it has
        one besides samples (the worker records how many a sample holds)."""
        per_sample = self.details.get("per_sample")
        if not isinstance(per_sample, dict) or self.throughput is None:
            return None
        count, unit = per_sample.get("count"), per_sample.get("unit")
        if not isinstance(count, int) or not isinstance(unit, str):
            return None
        return self.throughput.value * count, f"{unit}/s"

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        # Derived figures, for readers of the file; recomputed (not read) on load.
        tp, step, epoch = self.throughput, self.step_time, self.epoch_time
        data["throughput"] = dataclasses.asdict(tp) if tp else None
        data["throughput_rsd"] = self.throughput_rsd
        data["step_time"] = dataclasses.asdict(step) if step else None
        data["epoch_time"] = dataclasses.asdict(epoch) if epoch else None
        data["peak_memory"] = {"value": self.peak_memory, "unit": "B", "kind": self.memory_kind}
        data["achieved_flops"] = {"value": self.achieved_flops, "unit": "FLOP/s"}
        per_unit = self.unit_throughput
        data["unit_throughput"] = {"value": per_unit[0], "unit": per_unit[1]} if per_unit else None
        data["input_wait_fraction"] = self.input_wait_fraction
        data["synthetic_ratio"] = self.synthetic_ratio
        reached = self.to_accuracy
        data["to_accuracy"] = reached.to_json() if reached else None
        energy = self.energy_summary
        data["energy_summary"] = (
            {**dataclasses.asdict(energy), "samples_per_joule": energy.samples_per_joule,
             "units": {"total_j": "J", "per_sample_j": "J", "mean_power_w": "W",
                       "per_epoch_j": "J", "samples_per_joule": "samples/J"}}
            if energy else None
        )  # fmt: skip
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Point:
        names = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in names}
        for key in ("warmup_times_s", "step_times_s", "input_wait_s"):
            kwargs[key] = _tuples(kwargs.get(key, ()))
        kwargs["synthetic_step_times_s"] = tuple(kwargs.get("synthetic_step_times_s", ()))
        if kwargs.get("epoch_times_s") is not None:
            kwargs["epoch_times_s"] = _tuples(kwargs["epoch_times_s"])
        for key in (
            "peak_memory_bytes", "loss_first", "loss_last", "energy", "power_before", "ranks",
            "busy", "accuracy",
        ):  # fmt: skip
            kwargs[key] = tuple(kwargs.get(key, ()))
        return cls(**kwargs)

    @classmethod
    def from_responses(
        cls, axes: dict[str, Any], responses: list[dict[str, Any]], flops_per_sample: float | None
    ) -> Point:
        """A point from the worker responses of its repeats (failures included)."""
        done = [r for r in responses if r.get("status") == "ok"]
        failed = next((r for r in responses if r.get("status") != "ok"), None)
        first = (done or responses)[0]
        return cls(
            **axes,
            status=failed["status"] if failed else "ok",
            error=failed.get("error") if failed else None,
            # A rank of another machine's point answers without figures (rank 0 has them).
            warmup_times_s=_tuples(r.get("warmup_times_s", ()) for r in done),
            step_times_s=_tuples(r.get("step_times_s", ()) for r in done),
            epoch_times_s=_tuples(r["epoch_times_s"] for r in done)
            if done and done[0].get("epoch_times_s") is not None
            else None,
            peak_memory_bytes=tuple(r.get("peak_memory_bytes") for r in done),
            memory_kind=first.get("memory_kind"),
            memory_unavailable=first.get("memory_unavailable"),
            loss_first=tuple(r.get("loss_first") for r in done),
            loss_last=tuple(r.get("loss_last") for r in done),
            parameters=first.get("parameters"),
            devices=first.get("devices", 1),
            flops_per_sample=flops_per_sample,
            energy=tuple(r.get("energy") for r in done),
            energy_unavailable=first.get("energy_unavailable"),
            power_before=tuple(r.get("power_before") for r in done),
            ranks=tuple(r.get("ranks") for r in done) if any(r.get("ranks") for r in done) else (),
            busy=tuple(r.get("busy") for r in done),
            details=first.get("details") or {},
            runtime=first.get("runtime"),
            input_wait_s=_tuples(r["input_wait_s"] for r in done if r.get("input_wait_s")),
            synthetic_step_times_s=tuple(done[0].get("synthetic_step_times_s") or ())
            if done
            else (),
            accuracy=tuple(r.get("accuracy") for r in done)
            if any(r.get("accuracy") for r in done)
            else (),
        )


@dataclass(frozen=True)
class Probe:
    batch_size: int
    status: str
    error: str | None = None
    peak_memory_bytes: int | None = None


@dataclass
class MaxBatch:
    """The max-batch search for one precision / format / compiler (the table of the 2020
    GPU comparison)."""

    precision: str
    memory_format: str = "contiguous"
    compile: str | None = None
    largest_ok: int | None = None  # None: even batch 1 does not fit ('*')
    first_failing: int | None = None  # None: the search reached its limit without failing
    status: str = "running"  # running, done, error (a probe failed for a reason other than memory)
    error: str | None = None
    probes: list[Probe] = field(default_factory=list)
    # Above this batch only its multiples were probed: the largest batch that trains lies
    # in [largest_ok, first_failing). 1: exact (every result before schema 3).
    resolution: int = 1

    @property
    def label(self) -> str:
        return variant_label(self.precision, self.memory_format, self.compile)

    @property
    def display(self) -> str:
        if self.status != "done":
            return self.status
        if self.largest_ok is None:
            return "*"
        return str(self.largest_ok) if self.first_failing else f">={self.largest_ok}"

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MaxBatch:
        return cls(**{**data, "probes": [Probe(**p) for p in data.get("probes", [])]})


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class Result:
    """One run of bench: the config, where it ran, and every point measured so far."""

    config: RunConfig
    environment: dict[str, Any] | None = None
    points: list[Point] = field(default_factory=list)
    max_batch: list[MaxBatch] = field(default_factory=list)
    command: list[str] = field(default_factory=list)
    # The hourly price of the machine, when given (--instance, --price-per-hour).
    pricing: dict[str, Any] | None = None
    # Peak TFLOP/s given with --peak-tflops, for MFU where the catalogue has no figure.
    peak_tflops: float | None = None
    started: str = field(default_factory=now_iso)
    finished: str | None = None
    status: str = "running"  # running, complete, interrupted
    label: str | None = None  # --label: names this run in comparisons ("before", "new driver")
    # `bench ladder`: its rungs in order, {"rung", "point" (a PointConfig), "kept", "why"}.
    ladder: list[dict[str, Any]] = field(default_factory=list)
    # `bench tune`: {"budget_s", "eta", "seed", "stopped", "rounds": [{"round", "steps",
    # "warmup_steps", "repeats", "of", "points": [Point JSON]}]} (bench.tune).
    tune: dict[str, Any] | None = None
    schema_version: int = SCHEMA_VERSION
    # Set on load, never written: integrity.OK, EDITED or ABSENT (an older file).
    integrity: str = field(default=integrity.ABSENT, compare=False)

    @property
    def failed(self) -> bool:
        return any(p.status != "ok" for p in self.points) or any(
            m.status == "error" for m in self.max_batch
        )

    def _one_device_points(self) -> dict[tuple[Any, ...], Point]:
        """The first measured one-device point of each config, by its axes: one pass, so
        that a result of many points is not searched once per point."""
        found: dict[tuple[Any, ...], Point] = {}
        for p in self.points:
            if p.devices == 1 and p.throughput:
                found.setdefault(point_axes(p), p)
        return found

    def single_device(
        self, point: Point, one_device: dict[tuple[Any, ...], Point] | None = None
    ) -> Point | None:
        """The one-device point of `point`'s config: the same global batch and every
        other axis (variant, runtime, IPEX), so two ranks with IPEX are set against one
        process with IPEX, not against one without. `one_device`: what
        _one_device_points gave, when asking for many points."""
        index = self._one_device_points() if one_device is None else one_device
        return index.get(point_axes(point))

    def scaling_efficiency(
        self, point: Point, one_device: dict[tuple[Any, ...], Point] | None = None
    ) -> float | None:
        """Global throughput over N times the one-device throughput of the same config
        (1.0: perfect scaling); None without a measured one-device point."""
        if point.devices < 2:
            return None
        one, tp = self.single_device(point, one_device), point.throughput
        if one is None or tp is None:
            return None
        return tp.value / (point.devices * one.throughput.value)  # type: ignore[union-attr]

    def scaling_efficiencies(self) -> list[float | None]:
        """scaling_efficiency of every point, in order, in time linear in the points."""
        index = self._one_device_points()
        return [self.scaling_efficiency(p, index) for p in self.points]

    def to_json(self) -> dict[str, Any]:
        points = []
        for p, efficiency in zip(self.points, self.scaling_efficiencies(), strict=True):
            data = p.to_json()
            data["scaling_efficiency"] = efficiency  # derived, not read back
            points.append(data)
        return {
            "schema_version": self.schema_version,
            "status": self.status,
            "started": self.started,
            "finished": self.finished,
            "command": self.command,
            "pricing": self.pricing,
            "peak_tflops": self.peak_tflops,
            "label": self.label,
            "ladder": self.ladder,
            "tune": self.tune,
            "config": self.config.to_dict(),
            "environment": self.environment,
            "points": points,
            "max_batch": [dataclasses.asdict(m) for m in self.max_batch],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Result:
        return cls(
            config=RunConfig.from_dict(data["config"]),
            environment=data.get("environment"),
            points=[Point.from_json(p) for p in data.get("points", [])],
            max_batch=[MaxBatch.from_json(m) for m in data.get("max_batch", [])],
            command=data.get("command", []),
            pricing=data.get("pricing"),
            peak_tflops=data.get("peak_tflops"),
            started=data.get("started", ""),
            finished=data.get("finished"),
            status=data.get("status", "complete"),
            label=data.get("label"),
            ladder=data.get("ladder", []),
            tune=data.get("tune"),
            schema_version=SCHEMA_VERSION,
        )


def default_name(config: RunConfig, when: datetime | None = None) -> str:
    stamp = (when or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    return f"{config.workload}-{config.framework}-{config.device}-{stamp}.json"


def create(result: Result, directory: Path) -> Path:
    """Write a new result file atomically and never over an existing one."""
    directory.mkdir(parents=True, exist_ok=True)
    base = default_name(result.config)
    text = dumps(result)
    for n in range(1, 1000):
        path = directory / (base if n == 1 else base.replace(".json", f"-{n}.json"))
        if files.create(path, text):
            return path
    raise BenchError(f"could not find a free result file name in {directory}")


def update(result: Result, path: Path) -> None:
    """Atomically replace a result file this run created (readers never see half a file;
    on a full disk the previous complete file stays)."""
    files.replace(path, dumps(result))


def dumps(result: Result) -> str:
    """The file's text: the result and, last, the checksum of everything above it."""
    return json.dumps(integrity.seal(result.to_json()), indent=1)


MAX_RESULT_BYTES = 128 * 2**20


def _scan(data: Any) -> str | None:
    """What makes a document no result at all, found in one pass without recursion (a
    hostile file may nest far deeper than Python's stack) and in memory that grows with
    the depth only: nesting deeper than MAX_DEPTH, or a whole number no field of a result
    holds (past 64 bits, arithmetic and printing take time that grows with its digits)."""
    stack: list[tuple[Iterator[tuple[Any, Any]], tuple[Any, ...]]] = [(iter([(None, data)]), ())]
    while stack:
        items, trail = stack[-1]
        for key, value in items:
            if isinstance(value, dict | list):
                if len(stack) > MAX_DEPTH:
                    return f"nested deeper than {MAX_DEPTH} levels"
                inner = value.items() if isinstance(value, dict) else enumerate(value)
                stack.append((iter(inner), (key, trail)))
                break
            if isinstance(value, int) and not -MAX_INT <= value <= MAX_INT:
                return f"{_trail((key, trail))}: a whole number beyond 64 bits"
        else:
            stack.pop()
    return None


def _trail(trail: tuple[Any, ...]) -> str:
    """'points[0].batch_size' from the scan's (key, (parent's key, (...))) chain."""
    keys = []
    while trail:
        key, trail = trail
        if key is not None:  # the document itself
            keys.append(f"[{key}]" if isinstance(key, int) else f".{key}")
    return "".join(reversed(keys)).removeprefix(".") or "the document"


def _failure(path: Path, what: str) -> ResultError:
    """The one line naming the file and what is wrong, control characters (of a file's
    name or of its content) made visible: it may reach a terminal."""
    return ResultError(visible(f"{path}: {what}"))


def read_document(path: str | Path) -> Any:
    """A file's JSON, read with bounds: a regular file of at most MAX_RESULT_BYTES, whole
    numbers of at most 64 bits, nesting at most MAX_DEPTH levels; ResultError otherwise."""
    path = Path(path)
    try:
        if not stat.S_ISREG(path.stat().st_mode):  # a FIFO would block, /dev/zero never end
            raise _failure(path, "not a regular file")
        with path.open("rb") as file:
            raw = file.read(MAX_RESULT_BYTES + 1)
        if len(raw) > MAX_RESULT_BYTES:
            raise _failure(path, f"larger than {MAX_RESULT_BYTES // 2**20} MiB: not a bench result")
        data = json.loads(raw.decode())
    except ResultError:
        raise
    except FileNotFoundError:
        raise _failure(path, "no such result file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise _failure(path, f"cannot read ({error})") from None
    except json.JSONDecodeError as error:
        raise _failure(path, f"not a bench result (invalid JSON: {error})") from None
    except RecursionError:
        raise _failure(path, "not a bench result (nested too deeply)") from None
    except ValueError:  # Python's own limit on the digits of a whole number
        digits = sys.get_int_max_str_digits()
        raise _failure(
            path, f"not a bench result (a whole number of more than {digits} digits)"
        ) from None
    problem = _scan(data)
    if problem is not None:
        raise _failure(path, f"not a bench result ({problem})")
    return data


def load(path: str | Path) -> Result:
    """Read a result of this or any older schema version; errors name file and field."""
    path = Path(path)
    data = read_document(path)
    version = data.get("schema_version") if isinstance(data, dict) else None
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise _failure(path, "not a bench result (no schema_version)")
    if version > SCHEMA_VERSION:
        raise _failure(
            path,
            f"schema version {version} is newer than this bench reads (up to {SCHEMA_VERSION}); "
            "upgrade bench",
        )
    points = data.get("points", [])
    if not isinstance(points, list) or not all(isinstance(p, dict) for p in points):
        raise _failure(path, "invalid result (points: expected a list of objects)")
    sealed = integrity.check(data)  # before migrations: the checksum covers the file
    if sealed == integrity.EDITED:
        print(
            visible(
                f"bench: warning: {path} was changed after bench wrote it (its sha256 does "
                "not match): its figures may not be the ones measured"
            ),
            file=sys.stderr,
        )
    try:
        loaded = Result.from_json(validate(migrate(data, version)))
        loaded.integrity = sealed
        return loaded
    except (UsageError, InvalidField) as error:
        raise _failure(path, f"invalid result ({error})") from None
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        # Migrations run before validation, so they may meet any malformed shape.
        raise _failure(path, f"invalid result ({type(error).__name__}: {error})") from None
