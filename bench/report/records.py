"""A comparison in long format (CSV and JSON): one record per row and machine, its
figures beside its facets; and every run's own figures, for a history."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from bench.report.machines import Machine, image_name
from bench.report.moe import Experts
from bench.report.rows import ROW_KEYS, RowKey, ok_throughput
from bench.report.to_target import of as to_target
from bench.report.words import ratio_sentence
from bench.result import Point, Result
from bench.util.text import visible

if TYPE_CHECKING:
    from bench.report.rows import Cell
    from bench.report.steps import HistoryStep

    Rows = list[tuple[RowKey, list[Cell]]]  # a comparison's rows: a cell per machine


def _command(res: Result) -> str | None:
    return visible(shlex.join(str(part) for part in res.command)) if res.command else None


def records(rows: Rows, machines: list[Machine], baseline: Machine) -> list[dict[str, Any]]:
    """Long format: one record per row and machine (for CSV and JSON). A cell's
    facets beside its figures: the frameworks and images of its runs, how many
    runs pooled and their repeats, the latest run's start and command."""
    found = []
    for key, cells in rows:
        for machine, cell in zip(machines, cells, strict=True):
            p = cell.point
            tp = cell.throughput
            energy = p.energy_summary if p else None
            source = cell.source
            found.append(
                {
                    **dict(zip(ROW_KEYS, key, strict=True)),
                    "machine": machine.label,
                    "baseline": machine is baseline,
                    "status": p.status if p else None,
                    "throughput": tp.value if tp else None,
                    "throughput_unit": tp.unit if tp else None,
                    "ci95_low": tp.ci95_low if tp else None,
                    "ci95_high": tp.ci95_high if tp else None,
                    "relative_throughput": cell.relative,
                    "relative_ci95_low": cell.relative_ci95[0] if cell.relative_ci95 else None,
                    "relative_ci95_high": cell.relative_ci95[1] if cell.relative_ci95 else None,
                    "significance": cell.mark or None,
                    "verdict": cell.verdict.word if cell.verdict else None,
                    "verdict_text": ratio_sentence(cell.relative, cell.relative_ci95, cell.verdict)
                    if cell.verdict and cell.relative is not None
                    else None,
                    "samples_per_joule": energy.samples_per_joule if energy else None,
                    "energy_per_epoch_j": energy.per_epoch_j if energy else None,
                    "energy_ratio": cell.energy_ratio,
                    "energy_ratio_ci95_low": _low(cell.energy_ratio_ci95),
                    "energy_ratio_ci95_high": _high(cell.energy_ratio_ci95),
                    "samples_per_dollar": cell.samples_per_dollar,
                    "cost_ratio": cell.cost_ratio,
                    "usd_per_hour": machine.price_per_hour,
                    "mfu": cell.mfu,
                    "hardware": machine.hardware or machine.label,
                    "run_label": machine.run_label,
                    "framework": ", ".join(cell.frameworks) or None,
                    "image": ", ".join(cell.images) or None,
                    "runs": len(cell.runs) or None,
                    "repeats": tp.n if tp else None,
                    "started": source[1].started or None if source else None,
                    "command": _command(source[1]) if source else None,
                    **_to_accuracy_record(p, machine),
                    **_to_loss_record(p, machine),
                    **_moe_record(p),
                }
            )
    return found


def history_records(
    rows: Rows, machines: list[Machine], steps: list[HistoryStep]
) -> list[dict[str, Any]]:
    """Every run's own figures of every cell, oldest first: what pooled into each
    cell, for a history of one configuration of one machine (asv's view)."""
    found = []
    stepped = {(s.machine, s.key, s.after[1], s.after[0]): s for s in steps}
    for key, cells in rows:
        axes = dict(zip(ROW_KEYS, key, strict=True))
        for machine, cell in zip(machines, cells, strict=True):
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


def _low(interval: tuple[float, float] | None) -> float | None:
    return interval[0] if interval else None


def _high(interval: tuple[float, float] | None) -> float | None:
    return interval[1] if interval else None
