"""The report's one tidy table: every measured point a row (machine, configuration,
figures, interval, verdict, the bench command that made it), and the few small tables
derived from it that the page leads with (each machine's best configuration per
workload, the geometric mean over workloads) or draws beside it (history, ladders,
accuracy curves, largest batches).

Aggregated: a row per cell of the comparison (a point's repeats and steps folded into
its estimate), never per step, so that 10,000 result files make a page of kilobytes
per machine. Text from result files is made visible here (control characters as
\\xNN); the page escapes it again for HTML and for the JSON it embeds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.report import inventory
from bench.report.compare import Comparison
from bench.report.curves import (
    LOSS_POINTS,
    LOSS_ROWS,
    curves,
    loss_curves,
    loss_curves_noted,
    thinned,
)
from bench.report.headline import geometric_mean, headline, like_with_like
from bench.report.history import DAILY_AFTER, HISTORY_ROWS, history
from bench.report.machines import machine_colours
from bench.report.point_rows import points
from bench.report.rows import RowKey
from bench.report.run_tables import ladder_rows
from bench.report.words import NO_COMMAND, Commands, clean, command_text

# Its parts live apart (the rows, the headline, the history, the curves); each name
# the page and its views read stays importable here.
__all__ = [
    "DAILY_AFTER", "HISTORY_ROWS", "LOSS_POINTS", "LOSS_ROWS", "NO_COMMAND", "Tidy",
    "command_text", "curves", "geometric_mean", "headline", "history", "ladders",
    "loss_curves", "max_batches", "points", "thinned", "tidy",
]  # fmt: skip


@dataclass
class Tidy:
    """What the page embeds: lists of flat records (None fields left out)."""

    points: list[dict[str, Any]] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)  # a point's "cmd" indexes this
    headline: list[dict[str, Any]] = field(default_factory=list)
    like: list[dict[str, Any]] = field(default_factory=list)  # bench.report.headline
    coverage: list[dict[str, Any]] = field(default_factory=list)  # bench.report.inventory
    inventory: list[dict[str, Any]] = field(default_factory=list)  # a row per machine
    geomean: list[dict[str, Any]] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)
    history_note: str = ""  # what the history leaves out, if anything
    ladder: list[dict[str, Any]] = field(default_factory=list)
    curves: list[dict[str, Any]] = field(default_factory=list)
    loss_curves: list[dict[str, Any]] = field(default_factory=list)
    loss_note: str = ""  # what the loss curves leave out, if anything
    max_batch: list[dict[str, Any]] = field(default_factory=list)
    # Every machine of the page, in its order, and its colour on every chart.
    machines: list[str] = field(default_factory=list)
    colours: dict[str, str] = field(default_factory=dict)  # bench.report.machines

    def as_data(self) -> dict[str, Any]:
        return {
            name: getattr(self, name)
            for name in self.__dataclass_fields__
            if name not in ("machines", "colours")
        }


def ladders(comparison: Comparison) -> list[dict[str, Any]]:
    """bench ladder's rungs: each one's throughput over the baseline rung."""
    rows = []
    for m in comparison.machines:
        for _, res in m.results:
            for step, (rung, tp, speedup) in enumerate(ladder_rows(res)):
                rows.append(
                    clean(
                        {
                            "machine": m.label,
                            "workload": res.config.workload,
                            "step": step,
                            "rung": f"{step}. {rung.get('rung')}",
                            "speedup": speedup,
                            "tp": tp.value if tp else None,
                            "kept": bool(rung.get("kept")),
                            "why": rung.get("why") if isinstance(rung.get("why"), str) else None,
                        }
                    )
                )
    return rows


def max_batches(comparison: Comparison) -> list[dict[str, Any]]:
    """Each machine's largest batch per search; `limit` where the search stopped before
    its answer (at its limit, or interrupted), with `at_least` saying so in words."""
    rows = []
    for key, searches in comparison.max_batch:
        for machine, search in zip(comparison.machines, searches, strict=True):
            if search is None:
                continue
            largest = search.largest_ok or search.trained_so_far or 0
            interrupted = search.status == "running" and bool(search.trained_so_far)
            # '>=N': the search reached its limit, or stopped before its answer
            limit = (search.largest_ok is not None and not search.first_failing) or interrupted
            rows.append(
                clean(
                    {
                        "machine": machine.label,
                        "workload": key[0],
                        "precision": key[1],
                        "search": key[4] or "largest batch",
                        "largest": largest,
                        "first_failing": search.first_failing,
                        "display": search.display,
                        "limit": limit,
                        # '' where it found its answer: the chart writes each row's
                        "at_least": f"at least {largest}" + (" so far" if interrupted else "")
                        if limit
                        else "",
                    }
                )
            )
    return rows


def tidy(comparison: Comparison) -> Tidy:
    commands = Commands()
    ids: dict[tuple[str, RowKey], int] = {}
    rows = points(comparison, commands, ids)
    machines = [m.label for m in comparison.machines]
    precisions = sorted({key.precision for key, _ in comparison.rows})
    scopes = [None, *precisions] if len(precisions) > 1 else [None]
    lead = [row for scope in scopes for row in headline(comparison, ids, scope)]
    point_command = {at: rows[i]["cmd"] for at, i in ids.items()}
    like = like_with_like(comparison, commands.texts, point_command)
    means = [
        row
        for scope in scopes
        for row in geometric_mean([r for r in lead if r["scope"] == (scope or "all")], machines)
    ]
    past, past_note = history(comparison, commands)
    loss_rows, loss_note = loss_curves_noted(comparison)
    made = Tidy(
        points=rows,
        commands=commands.texts,
        headline=lead,
        like=like,
        coverage=inventory.coverage(comparison),
        inventory=inventory.machines_table(comparison),
        geomean=means,
        history=past,
        history_note=past_note,
        ladder=ladders(comparison),
        curves=curves(comparison),
        loss_curves=loss_rows,
        loss_note=loss_note,
        max_batch=max_batches(comparison),
        machines=machines,
        colours=comparison.colours or machine_colours(machines),
    )
    _number_machines(made)
    return made


def _number_machines(t: Tidy) -> None:
    """Each row's machine as a number too (`machine_index`, its place in the page's
    order): charts order bars by it, never by the name, which Vega reads as an object's
    key (a machine named 'toString' stopped every bar chart). The page's script numbers
    them again in the order its legends take."""
    index = {label: i for i, label in enumerate(t.machines)}
    for rows in t.as_data().values():
        for row in rows if isinstance(rows, list) else ():
            if isinstance(row, dict) and "machine" in row:
                row["machine_index"] = index.get(row["machine"], len(index))
