"""The static figures beside the page (PNG and SVG, for papers and report.md): each of
the page's views, its own Vega-Lite spec with its rows inside, drawn as the page first
draws it (no filter chosen) and rendered by vl-convert without a browser.

The rows are those the page's script (bench/report/page.js, drawChart) gives a chart:
the fields its encodings read that the script derives (a panel's name, peak memory in
GiB, a rung's 'kept'), the rows that hold the view's figure, only the panels a line
crosses, at most CHART_MACHINES machines, its panels and its rows capped, each cut said
under the title.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.report.tidy import Tidy
from bench.report.views import View, coloured
from bench.util import files

CHART_MACHINES = 10  # machines a chart draws at most, as the page's script
ALL = "report.html and report.md hold all."


@dataclass(frozen=True)
class Figure:
    name: str  # its files' name, without .png and .svg
    spec: dict[str, Any]  # the view's spec with its rows, its title and what it left out


def figures(t: Tidy, views: list[View]) -> list[Figure]:
    """A figure per view that has rows to draw."""
    made = []
    for view in views:
        rows, notes = drawn_rows(t, view)
        if not rows:
            continue
        shown = {r.get("machine") for r in rows}
        spec = coloured(view.spec, [m for m in t.machines if m in shown], t)
        title = {"text": view.title, "anchor": "start", "fontSize": 14}
        if notes:
            title["subtitle"] = [*notes, ALL]
        made.append(
            Figure(
                view.figure or view.id,
                {**spec, "title": title, "background": "white", "datasets": {view.data: rows}},
            )
        )
    return made


def write(folder: Path, drawn: dict[str, tuple[str, bytes]], names: list[str]) -> list[Path]:
    """Each figure drawn (bench.report.vega.Renderers) as NAME.png and NAME.svg in
    `folder`, in the page's order: the files."""
    written = []
    for name in names:
        svg, png = drawn[name]
        for path, data in ((folder / f"{name}.png", png), (folder / f"{name}.svg", svg.encode())):
            files.replace(path, data)
            written.append(path)
    return written


def drawn_rows(t: Tidy, view: View) -> tuple[list[dict[str, Any]], list[str]]:
    """The rows a view's chart draws with no filter chosen, and what it left out."""
    rows = [_derived(view.data, r) for r in getattr(t, view.data)]
    if view.data in ("headline", "geomean"):  # made per precision too: 'all' unfiltered
        rows = [r for r in rows if r.get("scope") == "all"]
    if view.needs:
        rows = [r for r in rows if r.get(view.needs) is not None]
    if view.along:
        rows = _along(rows, view.along)
    notes = []
    machines = list(dict.fromkeys(r.get("machine") for r in rows))
    if len(machines) > CHART_MACHINES:
        kept, why = _machines(t, rows, machines, view.rank_by)
        rows = [r for r in rows if r.get("machine") in kept]
        notes.append(f"Drawing {CHART_MACHINES} of {len(machines)} machines ({why}).")
    if view.panels:
        facet, most = view.panels
        panels = list(dict.fromkeys(r.get(facet) for r in rows))
        if len(panels) > most:
            rows = [r for r in rows if r.get(facet) in set(panels[:most])]
            notes.append(f"Drawing {most} of {len(panels)} panels.")
    if len(rows) > view.cap:
        notes.append(f"Drawing the first {view.cap} of {len(rows):,} rows.")
    return rows[: view.cap], notes


def _derived(data: str, row: dict[str, Any]) -> dict[str, Any]:
    """A copy of a row with the fields the page's script adds that encodings read."""
    r = dict(row)
    if data == "points":
        variant = re.sub(r"^bs \d+ ", "", r.get("config", ""))  # a line over batch sizes
        r["panel"] = f"{r.get('workload', '')} · {variant}"
        r["scaling_panel"] = re.sub(r" · \d+ devices?(?= · |$)", "", r["panel"])
        peak = r.get("peak_mem")
        if isinstance(peak, int | float) and math.isfinite(peak):
            r["peak_gib"] = peak / 2**30
    elif data in ("curves", "loss_curves"):
        r["panel"] = f"{r.get('workload', '')} · {r.get('config', '')}"
    elif data == "history":
        r["series"] = f"{r.get('machine', '')}: {r.get('workload', '')} {r.get('config', '')}"
    elif data == "ladder":
        r["kept_text"] = "kept" if r.get("kept") else "left out"
        r["panel"] = f"{r.get('machine', '')} · {r.get('workload', '')}"
    return r


def _along(rows: list[dict[str, Any]], x: str) -> list[dict[str, Any]]:
    """Only the panels where a machine has two values of `x` or more: a line."""
    seen: dict[tuple[Any, Any], set[Any]] = {}
    for r in rows:
        seen.setdefault((r.get("machine"), r.get("panel")), set()).add(r.get(x))
    panels = {panel for (_, panel), xs in seen.items() if len(xs) > 1}
    return [r for r in rows if r.get("panel") in panels]


def _machines(
    t: Tidy, rows: list[dict[str, Any]], machines: list[Any], rank_by: str | None
) -> tuple[set[Any], str]:
    """The CHART_MACHINES machines a chart draws: the cheapest by their lowest `rank_by`,
    else the baseline, then the fastest by geometric mean."""
    if rank_by:
        least: dict[Any, float] = {}
        for r in rows:
            value = r.get(rank_by)
            if isinstance(value, int | float) and math.isfinite(value):
                least[r.get("machine")] = min(value, least.get(r.get("machine"), math.inf))
        cheapest = sorted(least, key=lambda m: least[m])[:CHART_MACHINES]
        return set(cheapest), "the cheapest, by their lowest figure here"
    means = sorted(
        (r for r in t.geomean if r.get("scope") == "all"), key=lambda r: -r.get("rel", 0)
    )
    rank = {r["machine"]: n + 1 for n, r in enumerate(means)}
    rank.update({r["machine"]: 0 for r in t.headline if r.get("baseline")})
    first = sorted(machines, key=lambda m: rank.get(m, math.inf))[:CHART_MACHINES]
    return set(first), "the baseline, then the fastest by geometric mean"
