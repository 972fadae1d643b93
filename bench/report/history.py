"""The history view's rows: each run pooled into a cell measured at two times or
more, one configuration of one machine over time, a long series one row a day, and
where it stepped (bench.report.steps)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from bench.report.compare import Comparison
from bench.report.words import Commands, clean, command_text, config_label
from bench.result import moment
from bench.stats.changepoint import Step

HISTORY_ROWS = 3000  # the most history rows the page embeds
DAILY_AFTER = 60  # a series with more runs than this is embedded as one row a day


def history(comparison: Comparison, commands: Commands) -> tuple[list[dict[str, Any]], str]:
    """Every run pooled into a cell, where the cell's runs were measured at two times or
    more: one configuration of one machine over time (a run's start is its date), and a
    line saying what was left out. A series of many runs is one row a day (the mean of
    that day's runs, the band from the lowest to the highest bound); at most
    HISTORY_ROWS rows, the baseline's series first, then those measured on most days."""
    found: list[tuple[tuple[bool, int], list[dict[str, Any]]]] = []
    stepped = {(s.machine, s.key, s.after[1], s.after[0]): s.step for s in comparison.steps[0]}
    for key, cells in comparison.rows:
        for machine, cell in zip(comparison.machines, cells, strict=True):
            runs = [
                (path, res, tp)
                for path, res, p in cell.runs
                if res.started and (tp := p.throughput if p.status == "ok" else None)
            ]
            if len({_utc(res.started) for _, res, _ in runs}) < 2:
                continue
            base = {
                "machine": machine.label,
                "workload": key.workload,
                "config": config_label(key),
                "precision": key.precision,
            }
            series = [
                {
                    **base,
                    "framework": res.config.framework,
                    "date": _utc(res.started),
                    "tp": tp.value,
                    "tp_lo": tp.ci95_low,
                    "tp_hi": tp.ci95_high,
                    "runs": 1,
                    "cmd": commands.index(command_text(res, path)),
                    "file": path.name,
                    **_step_fields(stepped.get((machine.label, key, str(path), res.started))),
                }
                for path, res, tp in runs
            ]
            if len(series) > DAILY_AFTER:
                series = daily(series)
            days = len({r["date"][:10] for r in series})
            found.append(((machine is not comparison.baseline, -days), series))
    rows: list[dict[str, Any]] = []
    found.sort(key=lambda f: f[0])
    kept = 0
    for _, series in found:
        if rows and len(rows) + len(series) > HISTORY_ROWS:
            break
        rows += [clean(r) for r in series]
        kept += 1
    note = ""
    if kept < len(found):
        note = (
            f"The {kept} of {len(found)} histories measured on the most days (the "
            "baseline's first); bench compare --format json holds every run's figures."
        )
    return rows, note


def _utc(started: str) -> str:
    """A run's start as the history plots it: its time in UTC, without the offset (the
    text's own clock put a run of another offset hours away, out of order)."""
    when = moment(started)
    return when.strftime("%Y-%m-%dT%H:%M:%S") if when.year > 1 else started[:19]


def _step_fields(step: Step | None) -> dict[str, Any]:
    """The first run after a step (bench.report.steps) carries it: the history view
    draws a rule there, its words in the tooltip."""
    if step is None:
        return {}
    return {"step": step.sentence(), "step_ratio": step.ratio}


_STEP = ("step", "step_ratio")  # a history row's step (_step_fields)


def daily(series: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row a day: the mean of the day's runs, the band from the lowest to the
    highest bound among them, the latest run's command and file, and a step that began
    that day."""
    days: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in series:
        days[r["date"][:10]].append(r)
    out = []
    for day, runs in sorted(days.items()):
        lows = [r["tp_lo"] for r in runs if r["tp_lo"] is not None]
        highs = [r["tp_hi"] for r in runs if r["tp_hi"] is not None]
        row: dict[str, Any] = {k: v for k, v in runs[-1].items() if k not in _STEP}
        stepped = next((r for r in runs if "step" in r), None)
        if stepped is not None:
            row.update((k, stepped[k]) for k in _STEP)
        row.update(
            date=f"{day}T12:00:00",
            tp=sum(r["tp"] for r in runs) / len(runs),
            tp_lo=min(lows, default=None),
            tp_hi=max(highs, default=None),
            runs=len(runs),
        )
        out.append(row)
    return out
