"""The tidy table's rows: one per machine x configuration cell that holds a point,
with its figures, interval, verdict, scaling efficiency and the command that made it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.report.compare import Comparison
from bench.report.machines import Machine
from bench.report.moe import Experts
from bench.report.rows import Cell, RowKey, sequence_length
from bench.report.words import Commands, clean, command_text, config_label, verdict_words
from bench.result import Point, Result


def _latest_run(cell: Cell) -> tuple[Path, Result, Point] | None:
    """The run a cell's figures and command come from: the latest that trained (a cell
    pools the repeats of every run of its configuration on its machine)."""
    source = cell.source
    for path, res, p in reversed(cell.runs):
        if source is not None and (path, res) == source:
            return path, res, p
    return None


def _point_record(
    key: RowKey,
    cell: Cell,
    machine: Machine,
    base: Machine,
    run: tuple[Path, Result],
    base_repeats: int = 0,
) -> dict[str, Any]:
    p = cell.point
    path, res = run
    if p is None:
        return {}
    tp = cell.throughput
    energy = p.energy_summary if tp else None
    per_device = p.unit_throughput_per_device if tp else None
    total = p.unit_throughput if tp else None
    epoch = p.epoch_time if tp else None
    reached = p.to_accuracy if tp else None
    price = machine.price_per_hour
    workload, batch, precision, fmt, compiler, setup = key
    record = {
        "machine": machine.label,
        "framework": ", ".join(cell.frameworks) or res.config.framework,
        "runs": len(cell.runs),
        "baseline": machine is base,
        "workload": workload,
        "config": config_label(key),
        "batch": batch,
        "precision": precision,
        "format": fmt,
        "compile": compiler,
        "setup": setup or None,
        "devices": p.devices_trained,
        "checkpointing": p.activation_checkpointing,
        "status": p.status,
        "error": p.error_line if p.status != "ok" else None,
        "tp": tp.value if tp else None,
        "tp_lo": tp.ci95_low if tp else None,
        "tp_hi": tp.ci95_high if tp else None,
        "n": tp.n if tp else None,
        "rel": cell.relative if machine is not base else None,
        "rel_lo": cell.relative_ci95[0] if cell.relative_ci95 else None,
        "rel_hi": cell.relative_ci95[1] if cell.relative_ci95 else None,
        "mark": cell.mark or None,
        "verdict": cell.verdict.word if cell.verdict else None,
        "sentence": verdict_words(cell.relative, cell.verdict, (tp.n if tp else 0, base_repeats))
        if cell.relative is not None and machine is not base
        else None,
        "date": res.started[:19] or None,
        "file": path.name,
        "epoch_s": epoch.mean if epoch else None,
        "energy_epoch_j": energy.per_epoch_j if energy else None,
        "energy_sample_j": energy.per_sample_j if energy else None,
        "spj": energy.samples_per_joule if energy else None,
        "usd_h": price,
        "usd_per_m": price / (tp.value * 3600) * 1e6 if price and tp else None,
        "unit_tp": total[0] if total else None,
        "unit": total[1] if total else None,
        "unit_per_device": per_device[0] if per_device else None,
        "usd_per_m_units": price / (total[0] * 3600) * 1e6 if price and total else None,
        "mfu": p.mfu if p.mfu is not None else cell.mfu,
        "peak_mem": p.peak_memory,
        "seq_len": sequence_length(res),
        "top1": reached.best_top1 if reached else None,
        "tta_s": reached.time_to_target_s if reached else None,
        "cta_usd": reached.cost_to_target(price) if reached else None,
        "epochs_to_target": reached.epochs_to_target if reached else None,
        **_experts_fields(Experts.of(p) if tp else None),
    }
    return clean(record)


def _experts_fields(experts: Experts | None) -> dict[str, Any]:
    """A mixture of experts' figures (bench.report.moe): `experts` marks its rows (the
    MoE view's), `a2a` the all-to-all's share of the step (0 where there is none)."""
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


def points(
    comparison: Comparison, commands: Commands, ids: dict[tuple[str, RowKey], int]
) -> list[dict[str, Any]]:
    """One record per cell that holds a point; `ids` gets each (machine, row key)'s id."""
    efficiency = _efficiencies(comparison)
    rows: list[dict[str, Any]] = []
    at = comparison.machines.index(comparison.baseline)
    for key, cells in comparison.rows:
        base_tp = cells[at].throughput
        for machine, cell in zip(comparison.machines, cells, strict=True):
            run = _latest_run(cell)
            if cell.point is None or run is None:
                continue
            path, res, own = run
            record = _point_record(
                key, cell, machine, comparison.baseline, (path, res), base_tp.n if base_tp else 0
            )
            record["cmd"] = commands.index(command_text(res, path))
            if efficiency.get(id(own)) is not None:
                record["scaling"] = efficiency[id(own)]
            record["id"] = ids[(machine.label, key)] = len(rows)
            rows.append(record)
    return rows
