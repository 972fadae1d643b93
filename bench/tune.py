"""`bench tune`: the fastest configuration of a grid within a time budget, by successive
halving (Jamieson and Talwalkar, 2016), not by measuring the whole grid.

Round 1 gives every configuration of the run's grid (its sweep axes) a short probe: a
fresh child like every point, FIRST_STEPS measured steps, one run. The best third go on
to round 2 with three times the steps, and so on; once at most three are left, or the
probes reach the run's --steps, the survivors are measured as the run asks (its --steps
and --repeats, default 3) and ranked: those final points are the result's points, every
probe of every round is in its `tune` record. A probe that fails (out of memory, an
error) drops out with its reason.

The budget is soft and spent in order: round 1 probes the grid in a shuffled order
(seeded and recorded, so a rerun probes the same ones) and takes no new probe once half
the budget is gone, saying how many of the grid it probed; a later round starts only
when its predicted time fits in what is left (each survivor's child overhead and step
time from its last probe), else the ranking is the last finished round's.

Resumable (`bench tune ... --resume FILE`): the same grid is probed in the same order,
and a probe the interrupted file holds (same round, steps and configuration) is taken
from it, not measured again; the time it had spent (`spent_s`) counts toward the budget.
"""

from __future__ import annotations

import dataclasses
import math
import random
import time
from pathlib import Path
from typing import Any

from bench.config import PointConfig
from bench.result import Point, point_axes
from bench.runner import Runner

ETA = 3  # one in ETA goes on; the next round has ETA times the steps
FIRST_STEPS = 3
FIRST_WARMUP = 2
SEED = 0
DEFAULT_BUDGET_S = 20 * 60.0
DEFAULT_BATCHES = (32, 64, 128, 256)


def _stopped(tune: dict[str, Any], why: str) -> None:
    tune["stopped"] = f"{tune['stopped']}; {why}" if tune["stopped"] else why


class TuneRunner(Runner):
    """A Runner whose points are the final round's, ranked; `budget_s`: the soft budget."""

    bench_command = "tune"

    def __init__(self, *args: Any, budget_s: float = DEFAULT_BUDGET_S, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.budget_s = budget_s
        self._before: dict[tuple[Any, ...], Point] = {}  # an interrupted tune's probes
        self._spent_before = 0.0

    def resume(self, path: Path) -> None:
        super().resume(path)
        old = self.result.tune or {"rounds": []}  # None: stopped before its first probe
        for record in old["rounds"]:
            for data in record["points"]:
                probe = Point.from_json(data)
                self._before[self._key(record["round"], record["steps"], probe)] = probe
        self._spent_before = float(old.get("spent_s") or 0.0)
        self.result.points = []

    @staticmethod
    def _key(round_no: int, steps: int, point: Any) -> tuple[Any, ...]:
        return (round_no, steps, *point_axes(point))

    def _taken(self, round_no: int, point: PointConfig, repeats: int) -> Point | None:
        """This round's probe of `point` from the interrupted file, or None."""
        taken = self._before.get(self._key(round_no, point.steps, point))
        return taken if taken is not None and len(taken.step_times_s) == repeats else None

    def _sweep(self) -> None:
        config = self.config
        started = time.monotonic() - self._spent_before
        tune: dict[str, Any] = {"budget_s": self.budget_s, "eta": ETA, "seed": SEED, "rounds": [],
                                "stopped": None, "spent_s": self._spent_before}  # fmt: skip
        self.result.tune = tune
        grid = list(config.points())
        random.Random(SEED).shuffle(grid)
        survivors: list[PointConfig] = grid
        steps, warmup = min(FIRST_STEPS, config.steps), min(FIRST_WARMUP, config.warmup_steps or 0)
        last_wall: dict[PointConfig, tuple[float, int, int, Point]] = {}
        while True:
            final = len(survivors) <= ETA or steps >= config.steps
            if final:
                steps, warmup = config.steps, config.warmup_steps or 0
            repeats = (config.repeats or config.min_repeats) if final else 1
            if tune["rounds"]:  # does this round fit in what is left?
                left = self.budget_s - (time.monotonic() - started)
                need = sum(self._predict(last_wall[p], steps + warmup, repeats) for p in survivors)
                if need > left:
                    _stopped(
                        tune,
                        f"budget: round {len(tune['rounds']) + 1} would take about {need:.0f} s,"
                        f" {max(left, 0):.0f} s were left; the ranking is round"
                        f" {len(tune['rounds'])}'s",
                    )
                    break
            record: dict[str, Any] = {"round": len(tune["rounds"]) + 1, "steps": steps,
                                      "warmup_steps": warmup, "repeats": repeats,
                                      "of": len(survivors), "points": []}  # fmt: skip
            tune["rounds"].append(record)
            measured: list[tuple[PointConfig, Point]] = []
            for point in survivors:
                probe = dataclasses.replace(point, steps=steps, warmup_steps=warmup)
                taken = self._taken(record["round"], probe, repeats)
                if (
                    record["round"] == 1
                    and measured
                    and taken is None  # what was measured before is kept, whatever the time
                    and (time.monotonic() - started > self.budget_s / 2)
                ):
                    _stopped(
                        tune,
                        f"budget: round 1 probed {len(measured)} of the {len(grid)}"
                        " configurations in half the budget; the others were not tried",
                    )
                    break
                clock = time.monotonic()
                done = taken or self._measure(probe, repeats=repeats)
                wall = time.monotonic() - clock if taken is None else self._estimate(taken)
                last_wall[point] = (wall, steps + warmup, repeats, done)
                measured.append((point, done))
                record["points"].append(done.to_json())
                tune["spent_s"] = round(time.monotonic() - started, 3)
                self._save()
            ranked = sorted(
                (m for m in measured if m[1].throughput),
                key=lambda m: m[1].throughput.value,  # type: ignore[union-attr]
                reverse=True,
            )
            self.result.points = [m for _, m in ranked]
            if final or not ranked:  # a lone survivor is still measured in full
                break
            survivors = [p for p, _ in ranked[: max(1, math.ceil(len(ranked) / ETA))]]
            steps = min(steps * ETA, config.steps)

    @staticmethod
    def _estimate(point: Point) -> float:
        """The wall time of a probe taken from the interrupted file: the sum of its steps,
        warm-up included (its children's start-up is not in the file: counted as none)."""
        return sum(map(sum, point.step_times_s)) + sum(map(sum, point.warmup_times_s))

    @staticmethod
    def _predict(last: tuple[float, int, int, Point], steps: int, repeats: int) -> float:
        """Seconds for a probe of `steps` (warm-up included) x `repeats`, from the last:
        its child overhead (wall time less its steps) plus the new steps at its pace."""
        wall, last_steps, last_repeats, point = last
        per_run = wall / last_repeats
        step_s = point.step_time.mean if point.step_time else 0.0
        overhead = max(per_run - last_steps * step_s, 0.0)
        return repeats * (overhead + steps * step_s)


def command_line(point: Point, config: Any) -> str:
    """`bench run ...` for one configuration: what to paste to measure the winner again."""
    words = ["bench", "run", config.workload, "--framework", config.framework,
             "--device", config.device, "--batch-size", str(point.batch_size),
             "--precision", point.precision, "--memory-format", point.memory_format]  # fmt: skip
    if point.compile:
        words += ["--compile", point.compile]
    if point.optimize:
        words += ["--optimize", point.optimize]
    if point.activation_checkpointing != "none":
        words += ["--activation-checkpointing", point.activation_checkpointing]
    for axis in ("allocator", "openmp", "numa"):
        value = getattr(point, axis)
        if value:
            words += [f"--{axis}", value]
    if config.threads:
        words += ["--threads", str(config.threads)]
    return " ".join(words)
