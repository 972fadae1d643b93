"""A comparison as records, one per row and machine, each figure declared once (FIELDS)
with its name in both places that write it: compare's long format (CSV and JSON, names a
user's scripts read) and the page's rows (bench.report.tidy: short names, since the page
embeds a row per cell of thousands). And every run's own figures, for a history.

A cell's figures are those of its point where it trained (its throughput, energy, cost,
MFU); a point that failed keeps its status and its runs' facts."""

from __future__ import annotations

import functools
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.report.compare import Comparison
from bench.report.machines import Machine, image_name
from bench.report.moe import Experts
from bench.report.rows import Cell, RowKey, Run, ok_throughput, sequence_length
from bench.report.to_target import of as to_target
from bench.report.words import (
    Commands,
    clean,
    command_text,
    config_label,
    ratio_sentence,
    verdict_words,
)
from bench.result import EnergySummary, Point, Result
from bench.stats.estimate import Estimate
from bench.util.text import visible


@dataclass(frozen=True)
class Entry:
    """One cell of a comparison as its records read it: the row, the machine's column,
    the baseline's, and (the page's) the run its figures and command come from."""

    key: RowKey
    cell: Cell
    machine: Machine
    baseline: Machine
    run: Run | None = None
    base_repeats: int = 0  # the baseline cell's repeats: the page's verdict words name them

    @property
    def point(self) -> Point | None:
        return self.cell.point

    @property
    def tp(self) -> Estimate | None:
        return self.cell.throughput

    @property
    def is_baseline(self) -> bool:
        return self.machine is self.baseline

    @property
    def price(self) -> float | None:
        return self.machine.price_per_hour

    @functools.cached_property
    def source(self) -> Result | None:
        """The result of the latest run that trained (else the latest run): read by three
        fields, found once (Cell.source walks the cell's runs)."""
        source = self.cell.source
        return source[1] if source else None

    @functools.cached_property
    def energy(self) -> EnergySummary | None:
        p = self.point
        return p.energy_summary if p is not None and self.tp else None

    @functools.cached_property
    def unit_tp(self) -> tuple[float, str] | None:
        """Throughput in the workload's own unit (tokens/s), all devices."""
        p = self.point
        return p.unit_throughput if p is not None and self.tp else None

    @functools.cached_property
    def unit_per_device(self) -> tuple[float, str] | None:
        p = self.point
        return p.unit_throughput_per_device if p is not None and self.tp else None

    @functools.cached_property
    def experts(self) -> Experts | None:
        return Experts.of(self.point) if self.tp else None


def _per_million(price: float | None, rate: float | None) -> float | None:
    """Dollars per million samples (or tokens) at `rate` a second and `price` an hour."""
    return price / (rate * 3600) * 1e6 if price and rate else None


def _command(res: Result | None) -> str | None:
    return visible(shlex.join(str(part) for part in res.command)) if res and res.command else None


def _verdict_words(e: Entry) -> str | None:
    """The page's verdict: the ratio in words with the repeats it rests on."""
    if e.cell.relative is None or e.is_baseline:
        return None
    return verdict_words(e.cell.relative, e.cell.verdict, (e.tp.n if e.tp else 0, e.base_repeats))


def _ratio_sentence(e: Entry) -> str | None:
    """compare's verdict: the ratio and its interval in a sentence."""
    cell = e.cell
    if cell.verdict is None or cell.relative is None:
        return None
    return ratio_sentence(cell.relative, cell.relative_ci95, cell.verdict)


def _low(interval: tuple[float, float] | None) -> float | None:
    return interval[0] if interval else None


def _high(interval: tuple[float, float] | None) -> float | None:
    return interval[1] if interval else None


@dataclass(frozen=True)
class Field:
    """A figure of a cell: its name in compare's long format and on the page (None: not
    written there), and how it is read."""

    long: str | None
    page: str | None
    of: Callable[[Entry], Any]


# In the long format's order (its CSV's columns); the page's rows name fewer, shorter.
# fmt: off
FIELDS = (
    Field("workload", "workload", lambda e: e.key.workload),
    Field(None, "config", lambda e: config_label(e.key)),
    Field("batch_size", "batch", lambda e: e.key.batch_size),
    Field("precision", "precision", lambda e: e.key.precision),
    Field("memory_format", "format", lambda e: e.key.memory_format),
    Field("compile", "compile", lambda e: e.key.compile),
    Field("setup", None, lambda e: e.key.setup),
    Field(None, "setup", lambda e: e.key.setup or None),
    Field("machine", "machine", lambda e: e.machine.label),
    Field("baseline", "baseline", lambda e: e.is_baseline),
    Field("status", "status", lambda e: e.point.status if e.point else None),
    Field(
        None, "error", lambda e: e.point.error_line if e.point and e.point.status != "ok" else None
    ),
    Field(None, "devices", lambda e: e.point.devices_trained if e.point else None),
    Field(None, "checkpointing", lambda e: e.point.activation_checkpointing if e.point else None),
    Field("throughput", "tp", lambda e: e.tp.value if e.tp else None),
    Field("throughput_unit", None, lambda e: e.tp.unit if e.tp else None),
    Field("ci95_low", "tp_lo", lambda e: e.tp.ci95_low if e.tp else None),
    Field("ci95_high", "tp_hi", lambda e: e.tp.ci95_high if e.tp else None),
    Field("relative_throughput", None, lambda e: e.cell.relative),
    # The page's baseline row says 'the baseline', not its ratio to itself.
    Field(None, "rel", lambda e: None if e.is_baseline else e.cell.relative),
    Field("relative_ci95_low", "rel_lo", lambda e: _low(e.cell.relative_ci95)),
    Field("relative_ci95_high", "rel_hi", lambda e: _high(e.cell.relative_ci95)),
    Field("significance", "mark", lambda e: e.cell.mark or None),
    Field("verdict", "verdict", lambda e: e.cell.verdict.word if e.cell.verdict else None),
    Field("verdict_text", None, _ratio_sentence),
    Field(None, "sentence", _verdict_words),
    Field("samples_per_joule", "spj", lambda e: e.energy.samples_per_joule if e.energy else None),
    Field(
        "energy_per_epoch_j", "energy_epoch_j", lambda e: e.energy.per_epoch_j if e.energy else None
    ),
    Field(None, "energy_sample_j", lambda e: e.energy.per_sample_j if e.energy else None),
    Field(
        None,
        "epoch_s",
        lambda e: e.point.epoch_time.mean if e.tp and e.point and e.point.epoch_time else None,
    ),
    Field("energy_ratio", None, lambda e: e.cell.energy_ratio),
    Field("energy_ratio_ci95_low", None, lambda e: _low(e.cell.energy_ratio_ci95)),
    Field("energy_ratio_ci95_high", None, lambda e: _high(e.cell.energy_ratio_ci95)),
    Field("samples_per_dollar", None, lambda e: e.cell.samples_per_dollar),
    Field("cost_ratio", None, lambda e: e.cell.cost_ratio),
    Field("usd_per_hour", "usd_h", lambda e: e.price),
    Field(None, "usd_per_m", lambda e: _per_million(e.price, e.tp.value if e.tp else None)),
    Field(None, "unit_tp", lambda e: e.unit_tp[0] if e.unit_tp else None),
    Field(None, "unit", lambda e: e.unit_tp[1] if e.unit_tp else None),
    Field(None, "unit_per_device", lambda e: e.unit_per_device[0] if e.unit_per_device else None),
    Field(
        None,
        "usd_per_m_units",
        lambda e: _per_million(e.price, e.unit_tp[0] if e.unit_tp else None),
    ),
    Field("mfu", "mfu", lambda e: e.cell.mfu),
    Field(None, "peak_mem", lambda e: e.point.peak_memory if e.point else None),
    Field("hardware", None, lambda e: e.machine.hardware or e.machine.label),
    Field("run_label", None, lambda e: e.machine.run_label),
    Field("framework", "framework", lambda e: ", ".join(e.cell.frameworks) or None),
    Field("image", None, lambda e: ", ".join(e.cell.images) or None),
    Field("runs", "runs", lambda e: len(e.cell.runs) or None),
    Field("repeats", "n", lambda e: e.tp.n if e.tp else None),
    Field("started", None, lambda e: e.source.started or None if e.source else None),
    Field(None, "date", lambda e: e.source.started[:19] or None if e.source else None),
    Field(None, "file", lambda e: e.run[0].name if e.run else None),
    Field("command", None, lambda e: _command(e.source)),
)
# fmt: on
LONG = tuple(f for f in FIELDS if f.long)
PAGE = tuple(f for f in FIELDS if f.page)


def records(comparison: Comparison) -> list[dict[str, Any]]:
    """Long format: one record per row and machine (for CSV and JSON). A cell's
    facets beside its figures: the frameworks and images of its runs, how many
    runs pooled and their repeats, the latest run's start and command; then a run to a
    target's and a mixture of experts' figures, where the point has them."""
    found = []
    for key, cells in comparison.rows:
        for machine, cell in zip(comparison.machines, cells, strict=True):
            e = Entry(key, cell, machine, comparison.baseline)
            found.append(
                {
                    **{f.long: f.of(e) for f in LONG if f.long},
                    **_to_accuracy_record(cell.point, machine),
                    **_to_loss_record(cell.point, machine),
                    **_moe_record(cell.point),
                }
            )
    return found


def history_records(comparison: Comparison) -> list[dict[str, Any]]:
    """Every run's own figures of every cell, oldest first: what pooled into each
    cell, for a history of one configuration of one machine (asv's view)."""
    found = []
    stepped = {(s.machine, s.key, s.after[1], s.after[0]): s for s in comparison.steps[0]}
    for key, cells in comparison.rows:
        axes = key._asdict()
        for machine, cell in zip(comparison.machines, cells, strict=True):
            for path, res, p in cell.runs:
                tp = ok_throughput(p)
                step = stepped.get((machine.label, key, str(path), res.started))
                found.append(
                    {
                        **axes,
                        "machine": machine.label,
                        "file": str(path),
                        "started": res.started or None,
                        "framework": res.config.framework,
                        "image": image_name(res),
                        "status": p.status,
                        "throughput": tp.value if tp else None,
                        "ci95_low": tp.ci95_low if tp else None,
                        "ci95_high": tp.ci95_high if tp else None,
                        "repeats": tp.n if tp else 0,
                        # the first run after a step: the step, in words
                        "step": visible(step.step.sentence()) if step else None,
                    }
                )
    return found


def points(
    comparison: Comparison, commands: Commands, ids: dict[tuple[str, RowKey], int]
) -> list[dict[str, Any]]:
    """The page's rows: one per cell that holds a point, with its scaling efficiency and
    its command's index in `commands`; `ids` gets each (machine, row key)'s row."""
    efficiency = _efficiencies(comparison)
    rows: list[dict[str, Any]] = []
    at = comparison.machines.index(comparison.baseline)
    for key, cells in comparison.rows:
        base_tp = cells[at].throughput
        for machine, cell in zip(comparison.machines, cells, strict=True):
            run = _latest_run(cell)
            if cell.point is None or run is None:
                continue
            e = Entry(key, cell, machine, comparison.baseline, run, base_tp.n if base_tp else 0)
            path, res, own = run
            record = clean(
                {
                    **{f.page: f.of(e) for f in PAGE if f.page},
                    "seq_len": sequence_length(res),
                    **_accuracy_fields(e),
                    **_experts_fields(e.experts),
                }
            )
            record["cmd"] = commands.index(command_text(res, path))
            if efficiency.get(id(own)) is not None:
                record["scaling"] = efficiency[id(own)]
            record["id"] = ids[(machine.label, key)] = len(rows)
            rows.append(record)
    return rows


def _latest_run(cell: Cell) -> Run | None:
    """The run a cell's figures and command come from: the latest that trained (a cell
    pools the repeats of every run of its configuration on its machine)."""
    source = cell.source
    for path, res, p in reversed(cell.runs):
        if source is not None and (path, res) == source:
            return path, res, p
    return None


def _efficiencies(comparison: Comparison) -> dict[int, float | None]:
    """Scaling efficiency (throughput over N times one device's, of the run's own
    one-device point) by the identity of a run's point."""
    found: dict[int, float | None] = {}
    results = {id(res): res for _, cells in comparison.rows for c in cells for _, res, _ in c.runs}
    for res in results.values():
        if any(p.devices > 1 for p in res.points):  # one device: 1 by definition
            efficiency = [
                1.0 if p.devices == 1 else e
                for p, e in zip(res.points, res.scaling_efficiencies(), strict=True)
            ]
            found.update(zip(map(id, res.points), efficiency, strict=True))
    return found


def _accuracy_fields(e: Entry) -> dict[str, Any]:
    """The page's figures of a point trained to a target top-1 (where it trained)."""
    reached = e.point.to_accuracy if e.point is not None and e.tp else None
    if reached is None:
        return {}
    return {
        "top1": reached.best_top1,
        "tta_s": reached.time_to_target_s,
        "cta_usd": reached.cost_to_target(e.price),
        "epochs_to_target": reached.epochs_to_target,
    }


def _experts_fields(experts: Experts | None) -> dict[str, Any]:
    """A mixture of experts' figures on the page (bench.report.moe): `experts` marks its
    rows (the MoE view's), `a2a` the all-to-all's share of the step (0 where there is none)."""
    if experts is None:
        return {}
    words = (experts.all_to_all_text(), experts.balance_text(), experts.dropped_text())
    return {
        "experts": experts.experts,
        "expert_parallel": experts.expert_parallel,
        "a2a": experts.all_to_all_share if experts.exchanged else 0.0,
        "balance": experts.balance,
        "dropped_share": experts.dropped_share,
        "matmuls": experts.matmuls,
        "experts_text": " · ".join(words),
    }


def _to_accuracy_record(point: Point | None, machine: Machine) -> dict[str, Any]:
    reached = point.to_accuracy if point else None
    if reached is None:
        return {}
    runs = to_target(point)
    return {
        **(runs.record(machine.price_per_hour) if runs else {}),
        "best_top1": reached.best_top1,
        "epochs_to_target": reached.epochs_to_target,
        "time_to_target_s": reached.time_to_target_s,
        "energy_to_target_j": reached.energy_to_target_j,
        "cost_to_target_usd": reached.cost_to_target(machine.price_per_hour),
        "input_wait_fraction": point.input_wait_fraction if point else None,
    }


def _moe_record(point: Point | None) -> dict[str, Any]:
    """A mixture of experts' figures (bench.report.moe); nothing for a dense model."""
    experts = Experts.of(point) if point is not None and point.status == "ok" else None
    if point is None or experts is None:
        return {}
    per_device = point.unit_throughput_per_device
    return {"tokens_per_s_per_device": per_device[0] if per_device else None, **experts.record()}


def _to_loss_record(point: Point | None, machine: Machine) -> dict[str, Any]:
    reached = point.to_loss if point else None
    if reached is None:
        return {}
    runs = to_target(point)
    return {
        **(runs.record(machine.price_per_hour) if runs else {}),
        "target_loss": reached.target,
        "reached_repeats": reached.reached,
        "best_loss": reached.best_loss,
        "tokens_to_target": reached.tokens_to_target,
        "time_to_target_s": reached.time_to_target_s,
        "eval_share_to_target": reached.eval_share,
        "energy_to_target_j": reached.energy_to_target_j,
        "cost_to_target_usd": reached.cost_to_target(machine.price_per_hour),
    }
