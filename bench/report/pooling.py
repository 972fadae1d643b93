"""The repeats of a machine's runs of one configuration, pooled into one point: each
repeat's values kept beside its own, so that a cell's estimate is over all of them."""

from __future__ import annotations

import dataclasses
from typing import Any

from bench.result import Point
from bench.stats.estimate import Estimate

# A point's fields that hold one entry per repeat, with what a run that did not record
# the field holds for each of its repeats when runs pool (bench.result.point.Point).
_PER_REPEAT: dict[str, Any] = {
    "warmup_times_s": (), "step_times_s": (), "epoch_times_s": (), "peak_memory_bytes": None,
    "loss_first": None, "loss_last": None, "energy": None, "power_before": None, "ranks": None,
    "busy": None, "input_wait_s": (), "accuracy": None, "loss": None,
}  # fmt: skip


def ok_throughput(point: Point | None) -> Estimate | None:
    """A point's throughput where it trained; a failed point has none to compare."""
    return point.throughput if point is not None and point.status == "ok" else None


def pool(points: list[Point]) -> Point:
    """One point of the repeats of several runs of one configuration (oldest first):
    the runs that trained, each repeat's values kept beside its own; the latest run's
    other fields. No run trained: the latest point (its out-of-memory or error)."""
    trained = [p for p in points if p.status == "ok" and p.measured]
    if len(trained) < 2:
        return trained[0] if trained else points[-1]
    changes: dict[str, Any] = {}
    for name, filler in _PER_REPEAT.items():
        if not any(getattr(p, name) for p in trained):
            continue
        merged: list[Any] = []
        for p in trained:
            own, repeats = tuple(getattr(p, name) or ())[: len(p.step_times_s)], len(p.step_times_s)
            merged += [*own, *(filler,) * (repeats - len(own))]
        changes[name] = tuple(merged)
    notes = dict.fromkeys(p.noise for p in trained if p.noise)
    changes["noise"] = "; ".join(notes) or None
    return dataclasses.replace(trained[-1], **changes)
