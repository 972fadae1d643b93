"""A view of the report: a Vega-Lite spec, data-free, reading a named table of the tidy
data (bench.report.tidy), with what the page and the static figures need to draw it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class View:
    id: str
    title: str
    caption: str  # what it shows, in the study's terms, and what a bar's whisker is
    data: str  # the table of Tidy it reads
    spec: dict[str, Any]
    cap: int = 400  # rows a chart draws at most; the page says when it shows fewer
    needs: str | None = None  # the field a row must hold to be drawn
    # A line's x: only panels where a machine has two values of it or more are drawn.
    along: str | None = None
    panels: tuple[str, int] | None = None  # (the panels' field, how many a chart draws)
    # Past ten machines, the ten a chart draws: the lowest of this field first (a cost
    # chart's cheapest), else the baseline and the fastest by geometric mean.
    rank_by: str | None = None
    # The static figure's file name (PNG and SVG beside the page), where not its id: the
    # names the matplotlib figures had, which users link.
    figure: str | None = None
