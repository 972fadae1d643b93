"""A run as a loaded file holds it: the config, where it ran, its points and its
max-batch searches. Their fields are those of schema.RESULT, MAX_BATCH and PROBE
(tests/result/test_schema.py checks both agree).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from bench.config.run_config import RunConfig
from bench.result import integrity
from bench.result.point import Point, point_axes, variant_label
from bench.result.schema import SCHEMA_VERSION


@dataclass(frozen=True)
class Probe:
    batch_size: int
    status: str
    error: str | None = None
    peak_memory_bytes: int | None = None
    seq_len: int | None = None  # the length probed; None: the workload takes none (or schema < 11)
    # Which of the search's children ran it (1, 2, ...) and how (schema.PROBE_KINDS:
    # fresh, in-process, forked, confirm); None before schema 15, each a fresh child's.
    child: int | None = None
    kind: str | None = None
    # Where a probe's time went (schema 16; None before): its whole time as the parent
    # saw it, request to answer (a fresh child's start included), and its steps as the
    # child timed them (the first holds cuDNN's autotuning at a new batch).
    seconds: float | None = None
    step_times_s: list[float] | None = None


@dataclass
class MaxBatch:
    """The max-batch search for one precision / format / compiler (the table of the 2020
    GPU comparison), or with `axis` 'seq_len' the longest sequence that trains at the
    config's one batch size: largest_ok and first_failing are then sequence lengths."""

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
    axis: str = "batch_size"  # what was searched: batch_size or seq_len

    @property
    def label(self) -> str:
        return variant_label(self.precision, self.memory_format, self.compile)

    @property
    def trained_so_far(self) -> int | None:
        """The largest batch (or length) a probe trained: a lower bound while the search
        runs, or where it was stopped (Ctrl-C, SIGTERM, a time limit) before its answer."""
        values = [p.seq_len if self.axis == "seq_len" else p.batch_size
                  for p in self.probes if p.status == "ok"]  # fmt: skip
        return max((v for v in values if v is not None), default=None)

    @property
    def display(self) -> str:
        if self.status == "running" and self.trained_so_far is not None:
            return f">={self.trained_so_far} so far"
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


_NEVER = datetime.min.replace(tzinfo=UTC)


def moment(started: str) -> datetime:
    """A `started` text as the time it names, in UTC: what runs are ordered by (their
    text is not: '2026-01-01T09:00:00+05:00' comes before '2026-01-01T05:00:00+00:00').
    A time without an offset is UTC, as bench writes it; text that names no time sorts
    first."""
    try:
        when = datetime.fromisoformat(started)
        return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    except (TypeError, ValueError, OverflowError):
        return _NEVER


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
    # "warmup_steps", "repeats", "of", "points": [Point JSON]}]} (bench.search.tune).
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
            config=config_of(data["config"]),
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


# Configs already checked, by their JSON: a fleet's thousands of results hold a few dozen
# distinct configs, and a config's checks cost more than reading its file.
_CONFIGS: dict[str, RunConfig] = {}
_CONFIGS_KEPT = 1024


def config_of(data: Any) -> RunConfig:
    """RunConfig.from_dict, its checks run once per distinct config (a RunConfig is
    frozen: results that ran one config share it)."""
    try:
        key = json.dumps(data, sort_keys=True)
    except (TypeError, ValueError):  # not JSON: checked (and refused) as given
        return RunConfig.from_dict(data)
    found = _CONFIGS.get(key)
    if found is None:
        found = RunConfig.from_dict(data)
        if len(_CONFIGS) < _CONFIGS_KEPT:
            _CONFIGS[key] = found
    return found
