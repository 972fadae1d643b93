"""`--settle`'s search, for `bench diff` and `bench rerun`: repeats added to each point,
one child each, until bench.stats.sequential decides it, its cap, a failure or the budget
stops it (bench.commands.settle holds the options and runs it for a command)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.config.run_config import PointConfig, RunConfig
from bench.config.sweep import AXES
from bench.report.compare import pool
from bench.result import POINT_AXES, Point, drift, point_axes
from bench.result.response import Response
from bench.run import cost, launchers
from bench.run.runner import Runner
from bench.stats import sequential

MAX_CAP = 1000  # past this no number of repeats is a practical answer (verdict.PRACTICAL_N)


@dataclasses.dataclass
class Budget:
    """Wall time a settle may spend (None: only the cap bounds it). A repeat starts only
    while the longest so far fits in what is left; the first always starts."""

    seconds: float | None
    started: float = dataclasses.field(default_factory=lambda: time.monotonic())
    longest: float = 0.0

    def left(self) -> float | None:
        """Seconds left of it (None: no budget)."""
        return None if self.seconds is None else self.seconds - (time.monotonic() - self.started)

    def why_not(self) -> str | None:
        left = self.left()
        if self.seconds is None or left is None or left > self.longest:
            return None
        return (
            f"the budget of {cost.format_seconds(self.seconds)}: "
            f"{cost.format_seconds(max(left, 0.0))} left, a repeat takes up to "
            f"{cost.format_seconds(self.longest)}"
        )


@dataclasses.dataclass
class Settle:
    """What --settle did: its bounds, why each point's repeats stopped (by its label),
    how many it ran, and the files that hold them."""

    cap: int
    budget: Budget
    stops: dict[str, str] = dataclasses.field(default_factory=dict)
    added: dict[str, int] = dataclasses.field(default_factory=dict)
    files: list[Path] = dataclasses.field(default_factory=list)

    def lines(self, drifts: list[drift.PointDrift]) -> list[str]:
        """Per point, how the settle ended; then what the sequential verdict promises."""
        said = []
        for d in drifts:
            if d.label in self.stops or d.label in self.added:
                ran = self.added.get(d.label, 0)
                stop = self.stops.get(d.label, "decided")
                runs = f"{ran} repeat{'' if ran == 1 else 's'} run here"
                said.append(f"settle: {d.label}: {stop}; {runs}, {d.basis}")
        said += [f"settle: the repeats run here are in {path}" for path in self.files]
        said.append(
            f"sequential: each verdict above is a {1 - sequential.ALPHA:.0%} confidence "
            f"sequence (bench.stats.sequential): each has at most a {sequential.ALPHA:.0%} chance "
            "of being wrong, however often --settle looked (of several points, one may be); "
            "wider than a fixed-sample interval"
        )
        return said

    def to_json(self, drifts: list[drift.PointDrift]) -> dict[str, Any]:
        return {
            "rule": "normal-mixture confidence sequence (bench.stats.sequential)",
            "alpha": sequential.ALPHA,
            "max_repeats": self.cap,
            "budget_s": self.budget.seconds,
            "points": {
                d.label: {"stopped": self.stops.get(d.label, "decided"),
                          "repeats_run": self.added.get(d.label, 0)}
                for d in drifts
                if d.label in self.stops or d.label in self.added
            },
            "files": [str(path) for path in self.files],
        }  # fmt: skip


# judge(point, its repeats in the file so far) -> (why to stop, or None; the look in words)
Judge = Callable[[PointConfig, Point | None], tuple[str | None, str]]


class SettleRunner(Runner):
    """Adds repeats, one child each, to the points of its config that `judge` does not
    stop, round after round, until each is decided, at its cap, failed, or the budget
    ends. Each repeat joins its point as bench pools runs of one configuration
    (bench.report.compare.pool) and the file is saved after it: Ctrl-C and SIGTERM
    (bench.run.stopping, through run_and_print) lose only the repeat running. `pools`: asked
    once of the first child's environment; a reason not to pool (another machine or
    other software) ends the settle, its repeat kept in the file but not counted."""

    def __init__(
        self,
        *args: Any,
        judge: Judge,
        budget: Budget,
        pools: Callable[[dict[str, Any]], str | None] | None = None,
        cap: int = MAX_CAP,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        if kwargs.get("spawn") is None:
            self.spawn = self._capped
        self.judge, self.budget, self.pools, self.cap = judge, budget, pools, cap
        self.stops: list[tuple[PointConfig, str]] = []
        self.added: dict[PointConfig, int] = {}
        self.refused: str | None = None
        self._failed: dict[PointConfig, str] = {}
        self._asked = False  # whether pools() was asked
        self._budget_cap: float | None = None  # the last child's cap, where the budget's

    def _capped(self, point: PointConfig, job: str, on_progress: Any) -> Response:
        """launchers.spawn with no child running past what is left of the budget (a
        file's own timeout may say a day), nor past the config's --timeout."""
        left = self.budget.left()
        caps = [c for c in (self.config.timeout_s, None if left is None else max(left, 1.0)) if c]
        cap = min(caps) if caps else None
        self._budget_cap = cap if cap is not None and cap != self.config.timeout_s else None
        return launchers.spawn(point, job, on_progress, cap)

    def _index(self, point: PointConfig) -> int | None:
        return next((i for i, p in enumerate(self.result.points) if self._same(p, point)), None)

    def _sweep(self) -> None:
        going = list(self.config.points())
        while going:
            for point in list(going):
                index = self._index(point)
                stop = self._why_stop(point, None if index is None else self.result.points[index])
                if stop is not None:
                    self.stops.append((point, stop))
                    going.remove(point)
                else:
                    self._one_more(point, index)

    def _why_stop(self, point: PointConfig, current: Point | None) -> str | None:
        if self.refused is not None:
            return self.refused
        if point in self._failed:
            return f"a repeat failed: {self._failed[point]}"
        if self.added.get(point, 0) >= self.cap:  # whatever the repeats held (the judge
            return f"the cap of {self.cap} repeats run here"  # counts throughputs)
        stop, look = self.judge(point, current)
        if look:
            axes = dict(zip(POINT_AXES, point_axes(point), strict=True))
            self.reporter.finish(Point(**axes, devices=point.ranks).label, "settle", look)
        return stop or self.budget.why_not()

    def _one_more(self, point: PointConfig, index: int | None) -> None:
        started = time.monotonic()
        one = self._measure(point, repeats=1)
        self.budget.longest = max(self.budget.longest, time.monotonic() - started)
        self.added[point] = self.added.get(point, 0) + 1
        if index is None:
            self.result.points.append(one)
        elif one.status == "ok":
            self.result.points[index] = pool([self.result.points[index], one])
        if one.status != "ok":
            self._failed[point] = self._cut_short(one)
        self._save()
        # Whether the repeats here pool with NEW's: asked of the first child that recorded
        # its machine (a repeat cut short records none, and is no other machine).
        if self.pools is not None and not self._asked and self.result.environment is not None:
            self._asked = True
            self.refused = self.pools(self.result.environment)

    def _cut_short(self, one: Point) -> str:
        """Why a repeat failed: a child the budget stopped before it recorded its machine
        is said to be cut short (it was taken for another machine)."""
        if (
            self._budget_cap is not None
            and (one.error or "").startswith("timed out after")
            and self.result.environment is None
        ):
            return (
                f"cut short by the budget after {cost.format_seconds(self._budget_cap)}, "
                "before it recorded its machine"
            )
        return one.error_line

    def label_of(self, point: PointConfig) -> str | None:
        index = self._index(point)
        return None if index is None else self.result.points[index].label


def only_point(config: RunConfig, point: PointConfig) -> RunConfig:
    """The config of one point of a sweep: its own file, which diffs as that point."""
    one: dict[str, Any] = {axis.many: (getattr(point, axis.one),) for axis in AXES}
    return dataclasses.replace(config, **one)


def _repeats(point: Point | None) -> int:
    return len(point.repeat_throughputs()) if point is not None and point.measured else 0


def judge_point(
    old: Point, new: Point | None, threshold: float, cap: int
) -> tuple[str | None, str]:
    """Stop when bench.stats.sequential decides, the new side fails or holds `cap` repeats, or
    more repeats are futile (bench.stats.sequential.futile)."""
    if new is None:
        return None, "no repeat yet"
    said = drift.settle_point(old, new, threshold, cap)
    look = f"{_repeats(new)} repeats new, {_repeats(old)} old: {said.reason or said.verdict}"
    if said.verdict == drift.FAILED:
        return f"a repeat failed: {said.reason}", look
    if said.verdict != drift.CANNOT_TELL:
        return "decided", look
    if _repeats(new) >= cap:
        return f"the cap of {cap} repeats", look
    width = sequential.futile(new.repeat_throughputs(), old.repeat_throughputs(), cap, threshold)
    if width is not None:
        wide = f"±{width:.1%}" if width < 1 else f"a factor of {1 + width:.1f} either way"
        return (
            f"futile: at the cap of {cap} repeats the interval would still be about "
            f"{wide}, wider than the ±{threshold:.0%} margin, and no change it still "
            "allows is as large: more repeats of the old side, or a quieter machine, would "
            "settle it"
        ), look
    return None, look
