"""`bench tune`: the fastest configuration of a grid within a time budget, by successive
halving (Jamieson and Talwalkar, 2016) with probes sized in seconds, not by measuring the
whole grid.

Bench's own halving, not a library's (Optuna's pruners): each probe is a fresh child
whose cost varies a hundredfold across the grid, the budget is wall time, Ctrl-C and
--resume must keep every probe, and each decision must be written into the result in
words; a sampler built for cheap trials in one process brings none of that.

Round 1 probes the grid cheapest first (bench.run.cost: a configuration's predicted seconds,
from the model's FLOPs per sample times its batch at the rate the probes so far reached;
before the first probe, the smallest batch without a compiler): a fresh child, FIRST_STEPS
measured steps, one run. It takes no new probe that is predicted to end past its half of
the budget (the whole budget while fewer than two configurations were measured), or to
leave too little for the final round. A compiled configuration is priced with its cold
compile until one compiled child ran (bench.run.cost), so each change's cheap variant, no
compiler, is probed before its compiled one. The best third go on to round 2
with three times the steps, each with its next larger batch beside it where no round
probed that yet (round 1, cheapest first, reaches the small batches first), and so on;
once at most three are left, or the probes reach the run's --steps, the survivors are
measured as the run asks (its --steps, fewer when they do not fit in what is left, and
--repeats, default 3) and ranked: those final points are the result's points, every
probe of every round is in its `tune` record. A later round that does not fit is
skipped: the best three go to the final round.

Every child has a time cap (CAP_FACTOR times its predicted time, a share of the budget
while nothing like it has run): a probe past it drops out with that reason and larger
batches of its kind are left out. So is a configuration predicted not to fit in memory
(bench.run.cost), with its reason; a probe that fails (out of memory, an error) drops out
with its own. The record says, in the end, whether the final round ranked at least two
configurations (`ranked`), how much of the grid was measured, left out or not reached
(`coverage`), the time spent and why the search stopped where it did.

The grid's order among equals is shuffled (seeded and recorded: a rerun probes the same
ones). Resumable (`bench tune ... --resume FILE`): a probe the interrupted file holds (same
round, steps and configuration) is taken from it with its wall time, not measured again;
the time it had spent (`spent_s`) counts toward the budget.
"""

from __future__ import annotations

import dataclasses
import math
import random
import time
from pathlib import Path
from typing import Any

from bench import registry
from bench.config.run_config import PointConfig
from bench.result import POINT_AXES, Point, point_axes
from bench.run import cost, launchers
from bench.run.runner import Response, Runner
from bench.search.tune_outcome import command_line, coverage, why_not_ranked
from bench.search.tune_record import (
    MAX_ROUNDS,
    MAX_SECONDS,
    check_file_record,
    check_record,
    record_fields,
    round_fields,
)

__all__ = [
    "MAX_ROUNDS",
    "MAX_SECONDS",
    "TuneRunner",
    "check_file_record",
    "check_record",
    "command_line",
    "record_fields",
    "round_fields",
    "study_prior",
]

ETA = 3  # one in ETA goes on; the next round has ETA times the steps
FIRST_STEPS = 3
FIRST_WARMUP = 2
MIN_WARMUP = 1  # a final round short of time keeps at least this warm-up
SEED = 0
DEFAULT_BUDGET_S = 20 * 60.0
DEFAULT_BATCHES = (32, 64, 128, 256)
ROUND_ONE_SHARE = 0.5  # of the budget
CAP_FACTOR = 3.0  # a child may take this many times its predicted time
FIRST_CAP_SHARE = 0.25  # of the budget, for a child whose kind has not run yet
CAP_FLOOR_S = 30.0  # no cap is shorter (a busy machine's start-up varies)
COST_STEP = 1.5  # predicted costs within this factor of each other count as alike
SOFT_OVERRUN = 0.1  # of the budget: the final round of two may end this far past it


def study_prior(point: PointConfig) -> int:
    """How many of the Xeon CPU study's changes (bench.search.ladder's rungs) `point` has: bf16,
    channels_last, TCMalloc, Intel OpenMP, IPEX. Of probes of about the same cost, round 1
    takes those with more first, then the seeded shuffle: with a budget that reaches six
    of 192 (ResNet-50 on 2 cores in 12 min), a shuffle alone left the study's answer
    untried (14.0 samples/s against the 9.9 tune found). The compiler is left out: its
    cost is the cost model's to weigh."""
    return sum((point.precision == "bf16", point.memory_format == "channels_last",
                point.allocator == "tcmalloc", point.openmp == "intel",
                point.optimize == "ipex"))  # fmt: skip


def _steps(count: int) -> str:
    return "1 step" if count == 1 else f"{count} steps"


def _stopped(tune: dict[str, Any], why: str) -> None:
    tune["stopped"] = f"{tune['stopped']}; {why}" if tune["stopped"] else why


def _timed_out(point: Point) -> bool:
    return point.status == "error" and (point.error or "").startswith("timed out after")


class TuneRunner(Runner):
    """A Runner whose points are the final round's, ranked; `budget_s`: the soft budget."""

    bench_command = "tune"

    def __init__(self, *args: Any, budget_s: float = DEFAULT_BUDGET_S, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if kwargs.get("spawn") is None:
            self.spawn = self._capped
        self.budget_s = budget_s
        self.cap_s: float | None = None  # the running child's time cap
        self.cost = cost.CostModel(cost.memory_limit(self.config))
        self._before: dict[tuple[Any, ...], tuple[Point, float | None]] = {}  # interrupted
        self._spent_before = 0.0
        self._started = 0.0
        self._tune: dict[str, Any] = {}  # the result's tune record, once the search starts
        self._unreached: list[PointConfig] = []  # what round 1 had no time for
        self._climbed: list[str] = []  # the next round's batch-ups, by label
        self._measured_best: list[PointConfig] = []  # the last round's best two

    def _capped(self, point: PointConfig, job: str, on_progress: Any) -> Response:
        """launchers.spawn with the child's time cap (and the run's --timeout, if shorter)."""
        caps = [c for c in (self.cap_s, self.config.timeout_s) if c]
        return launchers.spawn(point, job, on_progress, min(caps) if caps else None)

    def _resume(self, path: Path) -> None:
        super()._resume(path)
        # its points were checked on load; the search's own figures here
        check_file_record(self.result.tune or {"rounds": []}, self.config, path)

    def resume(self, path: Path) -> None:
        super().resume(path)
        old = self.result.tune or {"rounds": []}  # None: stopped before its first probe
        for record in old["rounds"]:
            walls = record.get("walls_s") or [None] * len(record["points"])
            for data, wall in zip(record["points"], walls, strict=False):
                taken = Point.from_json(data)
                key = self._key(record["round"], record["steps"], taken)
                self._before[key] = (taken, wall)
        self._spent_before = float(old.get("spent_s") or 0.0)
        self.result.points = []

    @staticmethod
    def _key(round_no: int, steps: int, point: Any) -> tuple[Any, ...]:
        return (round_no, steps, *point_axes(point))

    def _taken(self, round_no: int, point: PointConfig, repeats: int) -> tuple[Point, float] | None:
        """This round's probe of `point` from the interrupted file and its child's wall
        time, or None."""
        found = self._before.get(self._key(round_no, point.steps, point))
        if found is None or (len(found[0].step_times_s) != repeats and found[0].status == "ok"):
            return None
        taken, wall = found
        return taken, wall if wall is not None else self._estimate(taken)

    def _elapsed(self) -> float:
        return time.monotonic() - self._started

    def _sweep(self) -> None:
        config = self.config
        self._started = time.monotonic() - self._spent_before
        tune: dict[str, Any] = {"budget_s": self.budget_s, "eta": ETA, "seed": SEED, "rounds": [],
                                "stopped": None, "spent_s": self._spent_before, "skipped": [],
                                "ranked": False, "not_ranked": None, "coverage": None}  # fmt: skip
        self.result.tune = self._tune = tune
        grid = list(config.points())
        random.Random(SEED).shuffle(grid)
        survivors: list[PointConfig] = grid
        schedule = min(FIRST_STEPS, config.steps)
        final_ran = False
        while True:
            final = len(survivors) <= ETA or schedule >= config.steps
            if tune["rounds"] or final:
                size, survivors, final = self._size(survivors, schedule, final)
                if size is None:
                    break
            else:
                size = (schedule, min(FIRST_WARMUP, config.warmup_steps or 0), 1)
            measured = self._round(survivors, size, first=not tune["rounds"] and not final)
            ranked = sorted(
                (m for m in measured if m[1].throughput),
                key=lambda m: m[1].throughput.value,  # type: ignore[union-attr]
                reverse=True,
            )
            self.result.points = [m for _, m in ranked]
            final_ran = final
            if final or not ranked:
                break
            if len(ranked) < 2 and self._unreached:  # the budget, not the grid, left one
                self._too_short(ranked[0][0], self._unreached)
                break
            survivors = [p for p, _ in ranked[: max(1, math.ceil(len(ranked) / ETA))]]
            self._measured_best = [p for p, _ in ranked[:2]]
            survivors += self._climbers(survivors, grid)
            schedule = min(schedule * ETA, config.steps)
        self._conclude(grid, final_ran)

    def _climbers(self, survivors: list[PointConfig], grid: list[PointConfig]) -> list[PointConfig]:
        """Each survivor at the grid's next larger batch, where no round has probed it and
        memory does not rule it out: round 1 probes cheapest first, so on a slow machine it
        reaches the small batches only, and the batch a machine runs fastest at is rarely
        its smallest (ResNet-50 on 2 cores: 9.6 samples/s at batch 32, 11 at 64). The next
        round measures them beside the survivors; the round's record names them."""
        probed = {point_axes(Point.from_json(data))
                  for record in self._tune["rounds"] for data in record["points"]}  # fmt: skip
        batches = sorted(self.config.batch_sizes)
        found: list[PointConfig] = []
        for point in survivors:
            larger = [b for b in batches if b > point.batch_size]
            up = dataclasses.replace(point, batch_size=larger[0]) if larger else None
            if (
                up is not None
                and up in grid
                and point_axes(up) not in probed
                and up not in survivors + found
                and self.cost.left_out(up) is None
            ):
                found.append(up)
        self._climbed = [self._label(p) for p in found]
        return found

    def _rounds_left(self, survivors: int, schedule: int) -> int:
        """This round and those after it, the final one included."""
        rounds = 1
        while not (survivors <= ETA or schedule >= self.config.steps):
            survivors, schedule = math.ceil(survivors / ETA), schedule * ETA
            rounds += 1
        return rounds

    def _final_cost(self, points: list[PointConfig], steps: int, warmup: int) -> float | None:
        repeats = self.config.repeats or self.config.min_repeats
        costs = [self.cost.child_s(dataclasses.replace(p, steps=steps, warmup_steps=warmup))
                 for p in points]  # fmt: skip
        return None if None in costs else repeats * sum(costs)  # type: ignore[arg-type]

    def _size(
        self, survivors: list[PointConfig], schedule: int, final: bool
    ) -> tuple[tuple[int, int, int] | None, list[PointConfig], bool]:
        """The next round's (steps, warm-up, repeats) in the time left, and who goes in it;
        (None, ...) when not even the final round of two fits."""
        config, tune = self.config, self._tune
        left = self.budget_s - self._elapsed()
        number = len(tune["rounds"]) + 1
        if not final:
            warmup = min(FIRST_WARMUP, config.warmup_steps or 0)
            reserve = self._final_cost(survivors[:ETA], 1, MIN_WARMUP) or 0.0
            share = (left - reserve) / (self._rounds_left(len(survivors), schedule) - 1)
            steps = self.cost.steps_that_fit(survivors, share, warmup, 1, schedule)
            if steps is not None:
                return (steps, warmup, 1), survivors, False
            _stopped(
                tune,
                f"budget: round {number} would not fit in the {left:.0f} s left; "
                f"the best {ETA} of round {number - 1} go to the final round",
            )
            survivors = survivors[:ETA]
        repeats = config.repeats or config.min_repeats
        warmups = sorted({config.warmup_steps or 0, min(MIN_WARMUP, config.warmup_steps or 0)})
        for few in (survivors, survivors[:2]) if len(survivors) > 2 else (survivors,):
            for warmup in reversed(warmups):
                steps = self.cost.steps_that_fit(few, left, warmup, repeats, config.steps)
                if steps is not None:
                    if len(few) < len(survivors) or steps < config.steps:
                        _stopped(
                            tune,
                            f"budget: the final round measures {len(few)} "
                            f"configurations with {_steps(steps)}, to fit in the "
                            f"{max(left, 0):.0f} s left",
                        )
                    return (steps, warmup, repeats), few, True
        few = survivors[:2]
        soft = left + SOFT_OVERRUN * self.budget_s
        steps = self.cost.steps_that_fit(few, soft, warmups[0], repeats, config.steps)
        if steps is not None:
            _stopped(
                tune,
                f"budget: the final round of {len(few)} with {_steps(steps)} is "
                f"predicted to end up to {SOFT_OVERRUN:.0%} of the budget past it",
            )
            return (steps, warmups[0], repeats), few, True
        best = self._measured_best
        if len(best) == 2 and set(best) != set(few):  # a batch-up that did not fit: without it
            steps = self.cost.steps_that_fit(best, soft, warmups[0], repeats, config.steps)
            if steps is not None:
                _stopped(
                    tune,
                    f"budget: the final round of {len(few)} did not fit; it measures the "
                    f"best two of round {number - 1} with {_steps(steps)} instead",
                )
                return (steps, warmups[0], repeats), best, True
        need = self._final_cost(few, 1, warmups[0]) or 0.0
        _stopped(
            tune,
            f"budget: the final round would take about {need:.0f} s, "
            f"{max(left, 0):.0f} s were left",
        )
        tune["needed_s"] = round(self._elapsed() + need, 1)
        return None, survivors, True

    def _too_short(self, best: PointConfig, unreached: list[PointConfig]) -> None:
        """Round 1 measured one configuration in its share of the budget: no final round
        (it would rank nothing); the budget that would have probed another and a final
        round of the two."""
        first = self._tune["rounds"][0]
        sized = dataclasses.replace(
            unreached[0], steps=first["steps"], warmup_steps=first["warmup_steps"]
        )
        probe_s = self.cost.child_s(sized) or 0.0
        final = self._final_cost([best, unreached[0]], 1, MIN_WARMUP) or 0.0
        need = self._elapsed() + probe_s + final
        self._tune["needed_s"] = round(need, 1)
        self._tune["not_ranked"] = (
            f"could not rank: round 1 measured one configuration in the "
            f"{cost.format_seconds(self.budget_s)} budget, and a final round of one ranks "
            f"nothing; a budget of about {cost.format_seconds(need)} would probe another "
            "and measure both again"
        )
        _stopped(self._tune, "budget: one configuration measured, no final round")

    def _cap(self, point: PointConfig) -> float:
        """This child's time cap: CAP_FACTOR times its prediction once its kind has run,
        else a share of the budget; within what is left (and a little more)."""
        predicted, start = self.cost.child_s(point), self.cost.start_s(point)
        cap = CAP_FACTOR * predicted if predicted is not None else 0.0
        if predicted is None or start is None or not start[1]:
            cap = max(cap, FIRST_CAP_SHARE * self.budget_s)
        left = self.budget_s * (1 + SOFT_OVERRUN) - self._elapsed()
        floor = min(CAP_FLOOR_S, FIRST_CAP_SHARE * self.budget_s)
        return max(min(cap, left), floor)

    def _next(self, remaining: list[PointConfig], order: dict[PointConfig, int]) -> PointConfig:
        """The next of `remaining` to probe: cheapest first by the cost model, in steps of
        COST_STEP (so that configurations of about the same cost, where a child's start-up
        outweighs its steps, are probed without a compiler first, then with the study's
        changes first, then in the seeded order, all over the grid); before it knows
        anything, the smallest batch without a compiler or optimisation. A compiled
        configuration's price holds its cold compile (bench.run.cost), so the cheap variants
        of each change come before the compiled ones."""
        predicted = {p: self.cost.child_s(p) for p in remaining}
        known = [c for c in predicted.values() if c is not None and c > 0]
        cheapest = min(known, default=1.0)

        def key(point: PointConfig) -> tuple[Any, ...]:
            cost = predicted[point]
            if cost is None:
                plain = point.compile is None and point.optimize is None
                return (1, point.batch_size, not plain, order[point])
            step = math.floor(math.log(max(cost, cheapest) / cheapest, COST_STEP))
            return (0, step, point.compile is not None, -study_prior(point), order[point])

        return min(remaining, key=key)

    def _round(
        self, survivors: list[PointConfig], size: tuple[int, int, int], first: bool
    ) -> list[tuple[PointConfig, Point]]:
        tune = self._tune
        steps, warmup, repeats = size
        record: dict[str, Any] = {"round": len(tune["rounds"]) + 1, "steps": steps,
                                  "warmup_steps": warmup, "repeats": repeats,
                                  "of": len(survivors), "points": [], "walls_s": [],
                                  "caps_s": []}  # fmt: skip
        climbed = {self._label(p) for p in survivors} & set(self._climbed)
        if climbed:  # survivors' larger batches, new in this round
            record["batch_ups"] = [label for label in self._climbed if label in climbed]
        self._climbed = []
        tune["rounds"].append(record)
        order = {p: i for i, p in enumerate(survivors)}
        remaining = list(survivors)
        measured: list[tuple[PointConfig, Point]] = []
        while remaining:
            point = self._next(remaining, order) if first else remaining[0]
            remaining.remove(point)
            sized = dataclasses.replace(point, steps=steps, warmup_steps=warmup)
            taken = self._taken(record["round"], sized, repeats)
            why = self.cost.left_out(point) if taken is None else None
            if why is not None:
                tune["skipped"].append({"label": self._label(point), "why": why})
                continue
            if first and taken is None and measured and not self._fits_round_one(sized):
                self._unreached = [point, *remaining]
                _stopped(
                    tune,
                    f"budget: round 1 probed {len(measured)} of the "
                    f"{len(survivors)} configurations, the cheapest first, in its "
                    f"half of the budget; {len(remaining) + 1} were not reached",
                )
                break
            if taken is None:  # its own child, once per workload: not this probe's start-up
                self._flops_per_sample(sized)
            cap = self._cap(sized)
            self.cap_s = cap
            clock = time.monotonic()
            try:
                done = taken[0] if taken else self._measure(sized, repeats=repeats)
            finally:
                self.cap_s = None
            wall = taken[1] if taken else time.monotonic() - clock
            if _timed_out(done):
                self.cost.ran_past(point, cap)
            else:
                self.cost.learn(sized, done, wall / max(len(done.step_times_s), 1))
            measured.append((point, done))
            record["points"].append(done.to_json())
            record["walls_s"].append(round(wall, 3))
            record["caps_s"].append(round(cap, 1))
            tune["spent_s"] = round(self._elapsed(), 3)
            self._save()
        return measured

    def _fits_round_one(self, point: PointConfig) -> bool:
        """Whether a round-1 probe of `point` is predicted to end within round 1's share
        of the budget, leaving time for a final round of two (the best so far and it).
        While fewer than two configurations were measured, its share is the whole budget
        less that final round: a search that stops at one ranks nothing (on 2 cores, 12
        minutes of ResNet-50 stopped at 4.9 with one configuration measured)."""
        predicted = self.cost.child_s(point)
        spend = predicted if predicted is not None else self._cap(point)
        ranked = sorted(
            (s for s in self.cost.seen if s.point.steps == point.steps),
            key=lambda s: s.point.batch_size / s.step_s,
            reverse=True,
        )
        best = [s.point for s in ranked[:1]]
        final = self._final_cost([*best, point], 1, MIN_WARMUP) or 0.0
        elapsed = self._elapsed()
        share = ROUND_ONE_SHARE if len(ranked) >= 2 else 1.0
        return elapsed + spend <= share * self.budget_s and elapsed + spend + final <= self.budget_s

    @staticmethod
    def _label(point: PointConfig) -> str:
        """The point as its result's tables name it: no memory format for a decoder."""
        axes = dict(zip(POINT_AXES, point_axes(point), strict=True))
        return Point(**axes, devices=point.ranks).label_for(not point.spec.takes_seq_len)

    def _conclude(self, grid: list[PointConfig], final_ran: bool) -> None:
        """Whether the search ranked, what it covered, and, when it could not rank, why
        and what budget would let it."""
        tune = self._tune
        images = not registry.workload(self.config.workload).takes_seq_len
        tune["coverage"] = coverage(tune, len(grid), images)
        ranked = len(self.result.points)
        tune["ranked"] = final_ran and ranked >= 2
        tune["spent_s"] = round(self._elapsed(), 3)
        if not tune["ranked"] and not tune["not_ranked"]:
            tune["not_ranked"] = why_not_ranked(
                tune, final_ran, ranked,
                repeats=self.config.repeats or self.config.min_repeats,
                probes_s=[s.child_s for s in self.cost.seen],
                budget_s=self.budget_s, elapsed_s=self._elapsed(),
                round_one_share=ROUND_ONE_SHARE,
            )  # fmt: skip

    @staticmethod
    def _estimate(point: Point) -> float:
        """The wall time of a probe taken from an interrupted file of an older bench that
        did not keep it: the sum of its steps, warm-up included (its children's start-up
        is not in the file: counted as none)."""
        return sum(map(sum, point.step_times_s)) + sum(map(sum, point.warmup_times_s))
