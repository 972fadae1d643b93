"""`bench report`: a self-contained HTML page and a Markdown twin, with figures.

The page's views (bench.report.views) are also its static figures (PNG and SVG beside
it, linked from report.md), one Vega-Lite spec each: throughput relative to a baseline
(the 2020 GPU comparison), throughput against batch size (the Xeon CPU training study),
energy per epoch (the M2 Max vs V100 CIFAR study), dollars per million samples (the
TPUv2 vs V100 comparison), the largest batch per machine (the 2020 GPU comparison), and
the others the results hold data for. This module writes the tables of report.md, gives
each figure its rows as the page first draws them, and puts the files together.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import registry
from bench.report import htmlpage, tidy, vega, views
from bench.report.compare import Cell, Comparison, training_cost
from bench.report.grids import (
    ACCURACY_CAPTION,
    LLM_CAPTION,
    LOSS_CAPTION,
    MOE_CAPTION,
    REAL_DATA_CAPTION,
    STEPS_CAPTION,
    THROUGHPUT_CAPTION,
    accuracy_grid,
    grid,
    legend,
    llm_grid,
    loss_grid,
    markdown_table,
    max_batch_grid,
    moe_grid,
    real_data_grid,
    steps_grid,
    throughput_grid,
)
from bench.report.headline import BEST_NOTE, LIKE_HEADERS, LIKE_NOTE, best_table, like_table
from bench.report.rows import RowKey
from bench.report.tidy import Tidy
from bench.report.views import View, coloured
from bench.util import files
from bench.util.text import markdown, visible
from bench.util.units import human


def _html(text: str) -> str:
    """Text for the page: HTML's specials as entities, control characters visible."""
    return html.escape(visible(text))


# Tokens the time-and-cost table trains a token workload on, by default (bench report
# --train-tokens): an LLM's epoch is a count of sequences whatever their length.
TRAIN_TOKENS = 1e9


def _training_rows(comparison: Comparison, epochs: float) -> tuple[list[str], list[list[str]]]:
    """Hours and dollars for `epochs` passes over each sample workload's dataset: every
    axis of a row shown (without the memory format and compiler two rows read as one
    configuration with two answers). Token workloads are _token_rows': an LLM's epoch
    is a count of sequences whatever their length."""
    setup = ["setup"] if any(key.setup for key, _ in comparison.rows) else []
    headers = ["workload", "batch", "precision", "format", "compile", *setup, "machine",
               f"hours for {epochs:g} epochs", "USD"]  # fmt: skip
    body = []
    for key, cells in comparison.rows:
        for machine, cell in zip(comparison.machines, cells, strict=True):
            if cell.point and cell.throughput and not _in_tokens(cell):
                cost = training_cost(cell.point, key.workload, epochs, machine.price_per_hour)
                usd = human(cost["usd"]) if cost["usd"] is not None else "n/a (no price)"
                body.append([*_axes(key, setup), machine.label, human(cost["hours"]), usd])
    return headers, body


def _in_tokens(cell: Cell) -> bool:
    unit = cell.point.unit_throughput if cell.point else None
    return unit is not None and unit[1].startswith("tokens")


def _axes(key: RowKey, setup: list[str]) -> list[str]:
    workload, batch, precision, fmt, compiler, extra = key
    return [workload, str(batch), precision, fmt, compiler or "none",
            *([extra or "default"] if setup else [])]  # fmt: skip


def _token_rows(comparison: Comparison, tokens: float) -> tuple[list[str], list[list[str]]]:
    """Hours and dollars to train on `tokens` tokens at each token workload's tokens/s,
    or to its target loss where the point was trained to one (its measured time)."""
    setup = ["setup"] if any(key.setup for key, _ in comparison.rows) else []
    headers = ["workload", "batch", "precision", "format", "compile", *setup, "machine",
               "tokens/s", "to", "hours", "USD"]  # fmt: skip
    body = []
    for key, cells in comparison.rows:
        for machine, cell in zip(comparison.machines, cells, strict=True):
            if not (cell.point and cell.throughput and _in_tokens(cell)):
                continue
            rate = cell.point.unit_throughput
            assert rate is not None
            reached = cell.point.to_loss
            if reached is not None and reached.time_to_target_s is not None:
                to, hours = f"loss {reached.target:g}", reached.time_to_target_s / 3600
            else:
                to, hours = f"{tokens:,.0f} tokens", tokens / rate[0] / 3600
            price = machine.price_per_hour
            usd = human(hours * price) if price else "n/a (no price)"
            body.append([*_axes(key, setup), machine.label, human(rate[0]), to,
                         human(hours), usd])  # fmt: skip
    return headers, body


def _html_table(headers: list[str], body: list[list[str]]) -> str:
    head = "".join(f"<th>{_html(h)}</th>" for h in headers)
    rows = "".join("<tr>" + "".join(f"<td>{_html(c)}</td>" for c in r) + "</tr>" for r in body)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def price_lines(comparison: Comparison) -> list[str]:
    """Each priced machine's hourly price and its source: the run's, --price, or bench's
    catalogue (labelled as such, with the date it was read)."""
    return [
        visible(f"{m.label}: ${m.price_per_hour:.4g}/h, {m.price_source or 'source not recorded'}")
        for m in comparison.machines
        if m.price_per_hour
    ]


def _headline_markdown(t: tidy.Tidy, several: bool) -> str:
    """The page's first tables in Markdown: like with like (a configuration both ran),
    then each machine's best configuration per workload."""
    headers, body = best_table(t.headline, several, markdown=True)
    if not body:
        return "No result holds a measured point: there is nothing to compare."
    best = "## Each machine's best (tuned) configuration per workload\n\n" + markdown(BEST_NOTE)
    best += f"\n\n{markdown_table(headers, body)}"
    if not several:
        return best
    first = "## Like with like: on a configuration both ran\n\n" + markdown(LIKE_NOTE)
    return f"{first}\n\n{markdown_table(LIKE_HEADERS, like_table(t.like))}\n\n{best}"


def write_report(
    comparison: Comparison,
    folder: Path,
    train_epochs: float = 90,
    train_tokens: float = TRAIN_TOKENS,
    renderers: vega.Renderers | None = None,
) -> list[Path]:
    """The figures (PNG, SVG), report.html (self-contained) and report.md in `folder`.
    The figures are drawn by `renderers` while the page is written (bench report's), else
    here, one after another (where V8, once loaded, serves every report of the process)."""
    registry.require("bench report", "altair", "vl_convert")  # one line, not a traceback
    folder.mkdir(parents=True, exist_ok=True)
    t = tidy.tidy(comparison)
    shown = views.views(t)
    made = figures(t, shown)
    names = [figure.name for figure in made]
    if renderers is None:
        drawn = {figure.name: vega.render(figure.spec) for figure in made}
        md, page = texts(comparison, names, train_epochs, t, train_tokens, shown)
    else:
        drawing = renderers.start((figure.name, figure.spec) for figure in made)
        md, page = texts(
            comparison, names, train_epochs, t, train_tokens, shown, renderers.bundle()
        )
        drawn = drawing.result()
    written = write_figures(folder, drawn, names)
    written.append(folder / "report.md")
    files.replace(written[-1], md)
    written.append(folder / "report.html")
    files.replace(written[-1], page)
    return written


# Machines past which the page leaves report.md's tables (a column per machine) to it.
TABLE_MACHINES = 12


def texts(
    comparison: Comparison,
    made: list[str] = [],  # noqa: B006 - read only
    train_epochs: float = 90,
    made_tidy: tidy.Tidy | None = None,
    train_tokens: float | None = None,
    made_views: list[views.View] | None = None,
    bundle: str | None = None,
) -> tuple[str, str]:
    """report.md and report.html, beside the figures `made`; `bundle`: Vega's script where
    it was made already (bench.report.vega.Renderers)."""
    several = len(comparison.machines) > 1
    tables = [(THROUGHPUT_CAPTION, throughput_grid(comparison))]
    if several:
        tables.insert(0, ("Throughput relative to the baseline", grid(comparison)))
    llm = llm_grid(comparison)
    if llm[1]:
        tables.append((LLM_CAPTION, llm))
    experts = moe_grid(comparison)
    if experts[1]:
        tables.append((MOE_CAPTION, experts))
    if comparison.max_batch:
        tables.append(("Largest batch that trains", max_batch_grid(comparison)))
    accuracy = accuracy_grid(comparison)
    if accuracy[1]:
        tables.append((ACCURACY_CAPTION[0].upper() + ACCURACY_CAPTION[1:], accuracy))
    to_loss = loss_grid(comparison)
    if to_loss[1]:
        tables.append((LOSS_CAPTION[0].upper() + LOSS_CAPTION[1:], to_loss))
    steps = steps_grid(comparison)
    if steps[1]:
        tables.append((STEPS_CAPTION[0].upper() + STEPS_CAPTION[1:], steps))
    epochs = _training_rows(comparison, train_epochs)
    if epochs[1]:
        tables.append((f"Time and cost to train {train_epochs:g} epochs", epochs))
    train_tokens = TRAIN_TOKENS if train_tokens is None else train_tokens
    in_tokens = _token_rows(comparison, train_tokens)
    if in_tokens[1]:
        tables.append(
            (
                f"Time and cost to train on {train_tokens:,.0f} tokens (or to the target loss "
                "where a run trained to one), token workloads",
                in_tokens,
            )
        )
    notes = [line[0].upper() + line[1:] + "." for line in comparison.set_apart]
    title = f"bench report: {comparison.title}" + (
        f", baseline {comparison.baseline.label}" if several else f": {comparison.baseline.label}"
    )
    lead = legend() if several else "Absolute figures of one machine."
    noise = comparison.noise_notes()
    t = made_tidy or tidy.tidy(comparison)

    note = " ".join(notes)
    noise_md = "\n".join(f"- {markdown(line)}" for line in noise)
    md = [f"# {markdown(title)}", markdown(lead), markdown(note)]
    md.append(_headline_markdown(t, several))
    fed = real_data_grid(comparison)
    if fed[1]:  # the page's section of its own (htmlpage.REAL_DATA_HEADING)
        md.append(f"## {htmlpage.REAL_DATA_HEADING}\n\n{markdown(REAL_DATA_CAPTION)}.\n\n"
                  + markdown_table(*fed))  # fmt: skip
    if noise:
        md.append(f"Less sure than they look:\n\n{noise_md}")
    if price_lines(comparison):
        md.append("Prices (USD per hour):\n\n" + "\n".join(
            f"- {markdown(line)}" for line in price_lines(comparison)))  # fmt: skip
    md += [f"## {heading}\n\n{markdown_table(*table)}" for heading, table in tables]
    if t.inventory:
        cover, machines = htmlpage.who_ran_what(t)
        md.append(f"## Who ran what\n\n{markdown_table(*cover)}")
        md.append(f"## The machines\n\n{markdown_table(*machines)}")
    md += [f"![{name}]({name}.png)" for name in made]

    page_notes: list[tuple[str, list[str]]] = []
    if comparison.set_apart:
        count = comparison.set_apart_count  # files, not the lines that group them
        page_notes.append((f"{count} result{'s' if count > 1 else ''} set apart (measured "
                           "differently from the run each line names):",
                           comparison.set_apart))  # fmt: skip
    priced = price_lines(comparison)
    if priced:
        page_notes.append((f"Prices of {len(priced)} machine{'s' if len(priced) > 1 else ''} "
                           "(USD per hour, and where each comes from):", priced))  # fmt: skip
    if noise:
        page_notes.append((f"{len(noise)} figure{'s' if len(noise) > 1 else ''} less sure "
                           "than they look:", noise))  # fmt: skip
    if len(comparison.machines) <= TABLE_MACHINES:
        wide = "".join(f"<h3>{_html(h)}</h3>{_html_table(*table)}" for h, table in tables)
    else:  # a column per machine: report.md holds them
        wide = "<p>report.md holds these tables: a column per machine.</p>"
    shown = views.views(t) if made_views is None else made_views
    page = htmlpage.page(comparison, t, shown, title=title, lead=lead, notes=page_notes,
                         figures=made, tables=wide, bundle=bundle)  # fmt: skip
    return "\n\n".join(part for part in md if part) + "\n", page


# The static figures beside the page (PNG and SVG, for papers and report.md): each of
# the page's views, its own Vega-Lite spec with its rows inside, drawn as the page first
# draws it (no filter chosen) and rendered by vl-convert without a browser.
#
# The rows are those the page's script (bench/report/page.js, drawChart) gives a chart:
# the fields its encodings read that the script derives (a panel's name, peak memory in
# GiB, a rung's 'kept'), the rows that hold the view's figure, only the panels a line
# crosses, at most CHART_MACHINES machines, its panels and its rows capped, each cut said
# under the title.

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


def write_figures(
    folder: Path, drawn: dict[str, tuple[str, bytes]], names: list[str]
) -> list[Path]:
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
