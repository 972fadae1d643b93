"""A comparison's rows and cells: the configuration a result's point measured (its row key),
each row's runs, a list per machine, and each cell: one machine's runs of the row pooled
into one point (each repeat's values kept beside its own, so that the cell's estimate is
over all of them), its figures and their ratios to the baseline's cell. What would make
two measurements of a row's runs is a row of its own: two software stacks (framework,
image), or two device counts."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from bench import registry
from bench.config import sweep
from bench.report.machines import Machine, image_name
from bench.result import Point, Result, catalog
from bench.result.derive import samples_per_joule_by_repeat
from bench.stats.estimate import Estimate, ratio_interval
from bench.stats.verdict import Verdict, judge
from bench.util import units
from bench.util.errors import UsageError


class RowKey(NamedTuple):
    """A comparison's row: the configuration a point measured. Its own places (the
    workload, batch, precision, layout, compiler) are the columns every view shows;
    `setup` names the rest, built from the option table (bench.config.sweep.settings: every
    option declared compared=ROW, away from its neutral value) with the sequence length,
    a swept device count and, where one machine ran several, the software stack."""

    workload: str
    batch_size: int
    precision: str
    memory_format: str
    compile: str | None
    setup: str


ROW_KEYS = RowKey._fields

# One run's point in a cell: the file, its result and the point it measured.
Run = tuple[Path, Result, Point]


def sequence_length(res: Result) -> int | None:
    """The tokens a sample held, for a workload that takes a sequence length (its
    default where the run gave none); None for others, or a workload this bench lacks."""
    try:
        spec = registry.workload(res.config.workload)
    except UsageError:
        return res.config.seq_len
    return spec.input_shape(res.config.seq_len)[0] if spec.takes_seq_len else None


def row_key(res: Result, p: Point, feeds: bool = True) -> RowKey:
    """A point's row. `setup` holds what tells it apart beyond the key's columns: the
    sequence length of a workload that takes one, the device count where the result
    swept it (a machine's 8 GPUs and another's 4 stay one row when each just used all of
    its own), then every option of the table declared compared=ROW that the point did not
    leave at its neutral value, named by its flag (bench.config.sweep.settings: 'loss=chunked',
    'expert-parallel=2', 'train-to-loss=3.5'): a new option is kept apart with no edit
    here, and an older result, which reads the neutral value, joins today's rows.
    feeds=False: the row of its twin on synthetic data, the input pipeline's options
    (RunOption.feeds) left out (bench.report.real_data)."""
    swept = len(set(res.config.devices)) > 1
    length = sequence_length(res)
    tokens = f"{length} tokens" if length else ""
    devices = f"{p.devices} device{'s' if p.devices > 1 else ''}" if swept else ""
    setup = " · ".join(
        part for part in (tokens, devices, *sweep.settings(res.config, p, feeds)) if part
    )
    # A memory format is an image tensor's layout; token inputs have none, so a decoder
    # trained in PyTorch (recorded contiguous) and in JAX (NHWC) shares its rows.
    layout = p.memory_format if length is None else "n/a"
    return RowKey(res.config.workload, p.batch_size, p.precision, layout, p.compile, setup)


def _stack(res: Result) -> tuple[str, str]:
    """The software a run measured: its framework and its image ('native' outside one)."""
    return res.config.framework, image_name(res) or "native"


def device_count(p: Point) -> str:
    """'1 device', '8 devices': how many trained the point (its ranks over every node,
    or the devices one process used), as a row's setup names them."""
    n = p.devices_trained
    return f"{n} device{'s' if n > 1 else ''}"


def _facets(run: Run) -> tuple[str, str, str]:
    """What makes a run's figures another measurement of its configuration: its
    framework, its image and its device count (throughput is global)."""
    _, res, p = run
    return (*_stack(res), device_count(p))


# The facets that split a row together: the software stack; the device count.
_SPLITS = ((0, 1), (2,))


def row_runs(ordered: list[Machine]) -> dict[RowKey, list[list[Run]]]:
    """Each row's runs, a list per column (oldest first). A configuration one machine
    ran in several frameworks or images is a row per framework or image (its setup
    names which differ: 'jax', 'bench:xeon', 'native'), for every machine: two software
    stacks are two measurements, never pooled. Likewise one machine's runs on several
    device counts (one process and 2 ranks of torchrun, not swept in one result): a row
    per count ('1 device', '2 devices'), since throughput is global. Otherwise one row,
    whatever framework or device count each machine used (a GPU in torch beside a TPU
    in JAX; a machine's 8 GPUs beside another's 4)."""
    found: dict[RowKey, list[list[Run]]] = {}
    for i, machine in enumerate(ordered):
        for path, res in machine.results:
            for p in res.points:
                key = row_key(res, p)
                if key not in found:
                    found[key] = [[] for _ in ordered]
                found[key][i].append((path, res, p))
    rows: dict[RowKey, list[list[Run]]] = {}
    for key, columns in found.items():
        facets = [[_facets(run) for run in runs] for runs in columns]
        every = {f for cell in facets for f in cell}
        named = [
            n
            for split in _SPLITS
            if any(len({tuple(f[n] for n in split) for f in cell}) > 1 for cell in facets)
            for n in split
            if len({f[n] for f in every}) > 1
        ]
        if not named:
            rows[key] = columns
            continue
        for i, runs in enumerate(columns):
            for run, own in zip(runs, facets[i], strict=True):
                parts = (key.setup, *(own[n] for n in named))
                split = key._replace(setup=" · ".join(part for part in parts if part))
                if split not in rows:
                    rows[split] = [[] for _ in ordered]
                rows[split][i].append(run)
    return rows


# The repeats of a machine's runs of one configuration, pooled into one point: each
# repeat's values kept beside its own, so that a cell's estimate is over all of them.

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


# A comparison's cell: one machine's figures for one row (its runs of that
# configuration, pooled), and their ratios to the baseline's cell of the row.


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
    # The peak the child recorded for its devices (details.mfu), else the catalogue's.
    made.mfu = point.mfu
    if made.mfu is None:
        achieved = point.achieved_flops
        peak, _ = catalog.peak_flops(machine.environment, point.precision, machine.peak_tflops)
        made.mfu = achieved / peak if achieved is not None and peak else None
    return made
