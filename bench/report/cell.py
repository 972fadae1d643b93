"""A comparison's cell: one machine's figures for one row (its runs of that
configuration, pooled), and their ratios to the baseline's cell of the row."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.report.machines import Machine, image_name
from bench.report.pooling import ok_throughput, pool
from bench.report.rows import Run
from bench.result import Point, Result, catalog
from bench.result.derive import samples_per_joule_by_repeat
from bench.stats.estimate import Estimate, ratio_interval
from bench.stats.verdict import Verdict, judge
from bench.util import units


@dataclass
class Cell:
    """One machine's figures for one row: its runs of that configuration, pooled."""

    point: Point | None
    relative: float | None = None  # throughput / the baseline's
    relative_ci95: tuple[float, float] | None = None  # of `relative` (stats.ratio_interval)
    mark: str = ""  # "~": the ratio's 95% interval holds 1; "?": a single run, untestable
    verdict: Verdict | None = None  # bench.stats.verdict's words on `relative` and its interval
    energy_ratio: float | None = None  # samples per joule / the baseline's
    energy_ratio_ci95: tuple[float, float] | None = None  # over the repeats' samples per joule
    cost_ratio: float | None = None  # samples per dollar / the baseline's
    samples_per_dollar: float | None = None
    mfu: float | None = None
    # Every run of this configuration on this machine, oldest first; `point` pools
    # the repeats of those that trained.
    runs: list[Run] = field(default_factory=list)
    _throughput: Estimate | str | None = field(default="unset", repr=False, compare=False)

    @property
    def throughput(self) -> Estimate | None:
        """ok_throughput of the point, computed once (a pooled point's over many repeats)."""
        if isinstance(self._throughput, str):
            self._throughput = ok_throughput(self.point)
        return self._throughput

    @property
    def source(self) -> tuple[Path, Result] | None:
        """The file and result of the latest run that trained (else the latest run)."""
        trained = [(path, res) for path, res, p in self.runs if p.status == "ok" and p.measured]
        latest = trained[-1] if trained else (self.runs[-1][:2] if self.runs else None)
        return latest

    @property
    def frameworks(self) -> list[str]:
        return sorted({res.config.framework for _, res, _ in self.runs})

    @property
    def images(self) -> list[str]:
        return sorted({name for _, res, _ in self.runs if (name := image_name(res))})

    @property
    def text(self) -> str:
        """What a table shows: the normalised value, '*' for out of memory."""
        if self.point is None:
            return ""
        if self.point.status == "oom":
            return "*"
        if self.point.status != "ok":
            return "error"
        if self.relative is None:
            return "n/a"
        return f"{units.ratio(self.relative)}{self.mark}"


@dataclass
class Figures:
    """A cell's pooled point and what its ratios need, computed once."""

    point: Point | None
    tp: Estimate | None = None
    values: list[float] = field(default_factory=list)  # each repeat's throughput
    _energy: Any = None
    _energy_done: bool = False

    @classmethod
    def of(cls, runs: list[Run]) -> Figures:
        point = pool([p for _, _, p in runs]) if runs else None
        tp = ok_throughput(point)
        return cls(point, tp, point.repeat_throughputs() if tp and point else [])

    @property
    def energy(self) -> Any:  # EnergySummary | None, read only where a ratio needs it
        if not self._energy_done and self.point is not None:
            self._energy, self._energy_done = self.point.energy_summary, True
        return self._energy


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _per_dollar(tp: Estimate | None, machine: Machine) -> float | None:
    return tp.value * 3600 / machine.price_per_hour if tp and machine.price_per_hour else None


def _disagree(point: Point, base: Point | None) -> str | None:
    """Why a ratio of these two cells cannot tell: a side whose repeats disagree."""
    for side, p in (("this machine", point), ("the baseline", base)):
        if p is not None and (why := p.repeats_disagree):
            return f"{side}'s {why}"
    return None


def cell_of(
    own: Figures, base_figures: Figures, machine: Machine, base: Machine, runs: list[Run]
) -> Cell:
    """A machine's cell of a row: its figures, and their ratios to the baseline's."""
    point = own.point
    made = Cell(point, runs=runs)
    made._throughput = own.tp  # the property's value, computed once
    if point is None or point.status != "ok":
        return made
    tp, base_tp = own.tp, base_figures.tp
    if tp and base_tp:
        made.relative = tp.value / base_tp.value
        if machine is not base:
            ci = made.relative_ci95 = ratio_interval(own.values, base_figures.values)
            made.mark = "?" if ci is None else ("~" if ci[0] <= 1 <= ci[1] else "")
            if ci is not None:
                n = min(len(own.values), len(base_figures.values))
                made.verdict = judge(math.sqrt(ci[0] * ci[1]), ci, n,
                                     disagree=_disagree(point, base_figures.point))  # fmt: skip
    energy = own.energy
    base_energy = base_figures.energy if energy else None
    if energy and base_energy:
        made.energy_ratio = energy.samples_per_joule / base_energy.samples_per_joule
        if machine is not base and base_figures.point is not None:
            made.energy_ratio_ci95 = ratio_interval(
                samples_per_joule_by_repeat(point), samples_per_joule_by_repeat(base_figures.point)
            )
    made.samples_per_dollar = _per_dollar(tp, machine)
    made.cost_ratio = _ratio(made.samples_per_dollar, _per_dollar(base_tp, base))
    achieved = point.achieved_flops
    peak, _ = catalog.peak_flops(machine.environment, point.precision, machine.peak_tflops)
    made.mfu = achieved / peak if achieved is not None and peak else None
    return made
