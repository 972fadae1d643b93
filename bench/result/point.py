"""A point of a sweep as a loaded file holds it: its axes, the raw values measured per
repeat, and its status; its statistics come from bench/result/derive.py.

Its fields are those of schema.POINT (tests/result/test_schema.py checks both agree).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from dataclasses import dataclass
from typing import Any

from bench.config.bounds import UNSET
from bench.config.options import RUN_OPTIONS
from bench.result import derive
from bench.result.derive import EnergySummary, ToAccuracy
from bench.result.measured import Measured
from bench.result.response import Response
from bench.result.schema import POINT_AXES
from bench.stats.estimate import Estimate, Summary


@dataclass(frozen=True)
class ToLoss:
    """Training a decoder to a target validation loss, derived from the per-repeat loss
    records (bench.child.measure.train_to_loss). Times are wall clock from the first
    step: training plus every evaluation so far, as MLPerf counts time to train; the
    evaluations' part is kept apart. Units: s, J, tokens, nats per token."""

    target: float
    repeats: int
    reached: int  # repeats that reached the target
    steps_to_target: float | None  # means over the repeats that reached it
    tokens_to_target: float | None
    time_to_target_s: float | None
    eval_s_to_target: float | None  # the evaluations' part of time_to_target_s
    energy_to_target_j: float | None  # None unless every such repeat measured energy
    best_loss: float  # the lowest validation loss of any repeat, and where
    best_at_tokens: int
    best_at_s: float
    tokens_trained: int  # the first repeat's: up to the target, or the whole budget
    stopped: str | None  # why the first repeat stopped early (a signal), else None
    # The first repeat's evaluations: tokens trained, wall seconds so far, loss.
    curve: list[dict[str, float]]

    @classmethod
    def of(cls, records: list[dict[str, Any]], laps: list[list[float] | None]) -> ToLoss:
        target = float(records[0]["target"])
        hits, times, evals, joules = [], [], [], []
        best: tuple[float, int, float] | None = None
        for r, record in enumerate(records):
            wall, evaluated = _walls(record["curve"])
            for entry, at in zip(record["curve"], wall, strict=True):
                if best is None or entry["loss"] < best[0]:
                    best = (entry["loss"], entry["tokens"], at)
            first = next((i for i, e in enumerate(record["curve"]) if e["loss"] <= target), None)
            if first is None:
                continue
            hits.append(record["curve"][first])
            times.append(wall[first])
            evals.append(evaluated[first])
            lap = laps[r] if r < len(laps) else None
            joules.append(sum(lap[: first + 1]) if lap and len(lap) > first else None)
        first_curve = records[0]["curve"]
        wall, _ = _walls(first_curve)
        lowest = best or (math.inf, 0, 0.0)
        return cls(
            target=target, repeats=len(records), reached=len(hits),
            steps_to_target=_mean([h["step"] for h in hits]),
            tokens_to_target=_mean([h["tokens"] for h in hits]),
            time_to_target_s=_mean(times), eval_s_to_target=_mean(evals),
            energy_to_target_j=_mean(joules) if joules and None not in joules else None,
            best_loss=lowest[0], best_at_tokens=lowest[1], best_at_s=lowest[2],
            tokens_trained=next((e["tokens"] for e in first_curve if e["loss"] <= target),
                                first_curve[-1]["tokens"] if first_curve else 0),
            stopped=records[0].get("stopped"),
            curve=[{"tokens": e["tokens"], "wall_s": w, "loss": e["loss"]}
                   for e, w in zip(first_curve, wall, strict=True)],
        )  # fmt: skip

    @property
    def eval_share(self) -> float | None:
        """The evaluations' share of the time to the target."""
        if not self.time_to_target_s or self.eval_s_to_target is None:
            return None
        return self.eval_s_to_target / self.time_to_target_s

    def cost_to_target(self, usd_per_hour: float | None) -> float | None:
        if usd_per_hour is None or self.time_to_target_s is None:
            return None
        return self.time_to_target_s / 3600 * usd_per_hour

    def to_json(self) -> dict[str, Any]:
        units = {"time_to_target_s": "s", "eval_s_to_target": "s", "energy_to_target_j": "J",
                 "tokens_to_target": "tokens", "best_loss": "nats/token", "best_at_s": "s",
                 "curve": {"tokens": "tokens", "wall_s": "s", "loss": "nats/token"}}  # fmt: skip
        return {**dataclasses.asdict(self), "eval_share": self.eval_share, "units": units}


def _walls(curve: list[dict[str, Any]]) -> tuple[list[float], list[float]]:
    """Each evaluation's wall seconds from the first step (training and evaluations so
    far), and the evaluations' part of it."""
    wall, evaluated, total, evals = [], [], 0.0, 0.0
    for entry in curve:
        total += entry["train_s"] + entry["eval_s"]
        evals += entry["eval_s"]
        wall.append(total)
        evaluated.append(evals)
    return wall, evaluated


def _mean(values: list[Any]) -> float | None:
    return statistics.fmean(values) if values else None


def to_loss(point: Point) -> ToLoss | None:
    records = [r for r in point.loss if r and r.get("curve")]
    if not records:
        return None
    laps = [(e or {}).get("epoch_j") for e in point.energy] if point.energy else []
    return ToLoss.of(records, laps)


# An axis whose absence means a value other than None (rungs of older ladders).
# What a file from before an axis existed holds for it (its declaration's `older`), or,
# where the config held it (num_workers before 19), the option's one value by default.
def _absent(option: Any) -> Any:
    older = option.stored.older
    if older is UNSET and isinstance(option.default, tuple) and len(option.default) == 1:
        return option.default[0]
    return None if older is UNSET else older


_AXIS_DEFAULTS = {
    option.one: _absent(option)
    for option in RUN_OPTIONS
    if option.sweeps and option.stored is not None and _absent(option) is not None
}


def point_axes(point: Any) -> tuple[Any, ...]:
    """The POINT_AXES of a Point, a PointConfig or a dict of one (missing keys: None)."""
    if isinstance(point, dict):
        return tuple(point.get(name, _AXIS_DEFAULTS.get(name)) for name in POINT_AXES)
    return tuple(getattr(point, name) for name in POINT_AXES)


def variant_label(
    precision: str, memory_format: str, compile: str | None, optimize: str | None = None,
    checkpointing: str = "none", images: bool = True,
) -> str:  # fmt: skip
    """'bf16 channels_last compile=inductor optimize=ipex': the axes other than batch size
    and the runtime's. `images`: whether the workload takes images; a memory format is an
    image tensor's layout, so a token workload's (JAX records NHWC, its only one) is left
    out."""
    parts = [precision]
    if images and memory_format != "contiguous":
        parts.append(memory_format)
    if compile:
        parts.append(f"compile={compile}")
    if optimize:
        parts.append(f"optimize={optimize}")
    if checkpointing != "none":
        parts.append(f"ac={checkpointing}")
    return " ".join(parts)


def lever_label(attention: str, cross_entropy: str, pad_vocab: int) -> str:
    """'attention=flash loss=chunked pad-vocab=64': a decoder's levers that were set."""
    parts = [f"attention={attention}"] if attention != "auto" else []
    if cross_entropy != "plain":
        parts.append(f"loss={cross_entropy}")
    if pad_vocab:
        parts.append(f"pad-vocab={pad_vocab}")
    return " ".join(parts)


def _tuples(rows: Any) -> tuple[tuple[float, ...], ...]:
    return tuple(tuple(row) for row in rows)


@dataclass(frozen=True)
class Point(Measured):
    """One measured point of a sweep: its axes, raw measurements per repeat and status
    (bench.result.measured), and what they give (bench.result.derive).
    Its fields are Measured's; its properties compute the statistics."""

    @property
    def runtime_label(self) -> str:
        """'tcmalloc intel-omp numa': the runtime axes that were set ('' for none)."""
        parts = [self.allocator or ""]
        parts.append(f"{self.openmp}-omp" if self.openmp else "")
        parts.append({"on": "numa", "off": "no-numa"}.get(self.numa or "", ""))
        return " ".join(part for part in parts if part)

    @property
    def label(self) -> str:
        return self.label_for(images=True)

    def label_for(self, images: bool) -> str:
        """'batch 8 bf16 channels_last on 2 devices'; without the memory format where the
        workload takes no images (bench.report.table.takes_images)."""
        variant = variant_label(self.precision, self.memory_format, self.compile, self.optimize,
                                self.activation_checkpointing, images)  # fmt: skip
        levers = lever_label(self.attention, self.cross_entropy, self.pad_vocab)
        variant = f"{variant} {levers}" if levers else variant
        spread = f" on {self.devices} devices" if self.devices > 1 else ""
        runtime = f" {self.runtime_label}" if self.runtime_label else ""
        return f"batch {self.batch_size} {variant}{runtime}{spread}"

    @property
    def error_line(self) -> str:
        """The first line of the error, or the status when there is no message."""
        lines = (self.error or "").strip().splitlines()
        return lines[0] if lines else self.status

    @property
    def measured(self) -> bool:
        return any(self.step_times_s)

    def repeat_throughputs(self) -> list[float]:
        return derive.repeat_throughputs(self)

    @property
    def repeats_disagree(self) -> str | None:
        return derive.repeats_disagree(self)

    @property
    def busy_note(self) -> str | None:
        return derive.busy_note(self)

    @property
    def throughput(self) -> Estimate | None:
        return derive.throughput(self)

    @property
    def throughput_rsd(self) -> float | None:
        return derive.throughput_rsd(self)

    @property
    def step_time(self) -> Summary | None:
        return derive.step_time(self)

    @property
    def epoch_time(self) -> Summary | None:
        return derive.epoch_time(self)

    @property
    def input_wait_fraction(self) -> float | None:
        return derive.input_wait_fraction(self)

    @property
    def input_wait_share(self) -> Estimate | None:
        return derive.input_wait_share(self)

    @property
    def input_bound_note(self) -> str | None:
        return derive.input_bound_note(self)

    @property
    def synthetic_ratio(self) -> float | None:
        return derive.synthetic_ratio(self)

    @property
    def to_accuracy(self) -> ToAccuracy | None:
        return derive.to_accuracy(self)

    @property
    def to_loss(self) -> ToLoss | None:
        return to_loss(self)

    @property
    def peak_memory(self) -> int | None:
        return derive.peak_memory(self)

    @property
    def energy_summary(self) -> EnergySummary | None:
        return derive.energy_summary(self)

    @property
    def achieved_flops(self) -> float | None:
        return derive.achieved_flops(self)

    @property
    def mfu(self) -> float | None:
        return derive.mfu(self)

    @property
    def unit_throughput(self) -> tuple[float, str] | None:
        return derive.unit_throughput(self)

    @property
    def devices_trained(self) -> int:
        return derive.trained_on(self)

    @property
    def unit_throughput_per_device(self) -> tuple[float, str] | None:
        return derive.unit_throughput_per_device(self)

    def to_json(self) -> dict[str, Any]:
        reached = self.to_loss
        return {
            **dataclasses.asdict(self),
            **derive.figures(self),
            "to_loss": reached.to_json() if reached else None,
        }

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
            "busy", "accuracy", "loss",
        ):  # fmt: skip
            kwargs[key] = tuple(kwargs.get(key, ()))
        return cls(**kwargs)

    @classmethod
    def from_responses(
        cls, axes: dict[str, Any], responses: list[Response], flops_per_sample: float | None
    ) -> Point:
        """A point from the child's answers of its repeats (failures included): the
        per-repeat fields of every answer that measured, the others from the first."""
        done = [r for r in responses if r.ok]
        failed = next((r for r in responses if not r.ok), None)
        first = (done or responses)[0]
        return cls(
            **axes,
            status=failed.status if failed else "ok",
            error=failed.error if failed else None,
            # A rank of another machine's point answers without figures (rank 0 has them).
            warmup_times_s=tuple(r.warmup_times_s for r in done),
            step_times_s=tuple(r.step_times_s for r in done),
            epoch_times_s=tuple(r.epoch_times_s or () for r in done)
            if done and done[0].epoch_times_s is not None
            else None,
            peak_memory_bytes=tuple(r.peak_memory_bytes for r in done),
            memory_kind=first.memory_kind,
            memory_unavailable=first.memory_unavailable,
            loss_first=tuple(r.loss_first for r in done),
            loss_last=tuple(r.loss_last for r in done),
            parameters=first.parameters,
            devices=first.devices,
            flops_per_sample=flops_per_sample,
            energy=tuple(r.energy for r in done),
            energy_unavailable=first.energy_unavailable,
            power_before=tuple(r.power_before for r in done),
            ranks=tuple(r.ranks for r in done) if any(r.ranks for r in done) else (),
            busy=tuple(r.busy for r in done),
            details=first.details,
            runtime=first.runtime,
            input_wait_s=tuple(r.input_wait_s for r in done if r.input_wait_s),
            synthetic_step_times_s=done[0].synthetic_step_times_s if done else (),
            accuracy=tuple(r.accuracy for r in done) if any(r.accuracy for r in done) else (),
            loss=tuple(r.loss for r in done) if any(r.loss for r in done) else (),
        )
