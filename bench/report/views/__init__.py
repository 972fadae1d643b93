"""The report's charts as Vega-Lite specs (made with Altair), a function each: data-free,
each reading a named table of the page's tidy data (bench.report.tidy), which the
page's script inserts, filtered, into the chart, and bench.report.vega inserts whole
for the static figures. A view is made only where the results hold its data, each in
the terms of the study it comes from (its function's docstring names it).

To add a view: one function `name(t: Tidy) -> View | None` (None where the results hold
none of its data) declared `@view(place)` (its place on the page: the views are drawn by
it, lowest first), in the module of this package whose subject it shares (speed,
training, llm) or a module of its own. The page, report.md's figures and the PNG and SVG
files beside the page find it; `marks` holds the parts views share (bars with whiskers,
lines with bands, axes, legends, tooltips).

Charts never draw by hand: Vega-Lite lays out axes, legends and tooltips; tooltips
go through vega-tooltip, which escapes HTML.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from bench.report.machines import PALETTE, machine_colours
from bench.report.tidy import Tidy
from bench.report.vega import bundle
from bench.report.views.marks import WIDTH

__all__ = [
    "MACHINE_COLOURS", "WIDTH", "Maker", "View", "bundle", "coloured", "makers", "view", "views",
]  # fmt: skip

# Given by machine for the whole page (bench.report.machines): a machine has the same
# colour on every chart, whichever machines a chart holds (Vega-Lite deals them per chart).
MACHINE_COLOURS = PALETTE


@dataclass(frozen=True)
class View:
    """A chart of the page and its static figure: a Vega-Lite spec, data-free, reading a
    named table of the tidy data, with what the page and the figures need to draw it."""

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


@dataclass(frozen=True)
class Maker:
    """A function making a view (declared with `@view(place)`), and its place on the page."""

    place: int
    make: Callable[[Tidy], View | None]

    @property
    def name(self) -> str:
        return f"{self.make.__module__}.{self.make.__name__}"


def view(place: int) -> Callable[[Callable[[Tidy], View | None]], Maker]:
    """Declares a function `name(t: Tidy) -> View | None` a view, drawn at `place` on the
    page (lowest first)."""
    return lambda make: Maker(place, make)


def makers() -> list[Maker]:
    """Every view the modules of this package declare, by place: found, never listed by
    hand, so that a view is one function where its subject is."""
    found = []
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        found += [maker for maker in vars(module).values() if isinstance(maker, Maker)]
    return sorted(found, key=lambda maker: (maker.place, maker.name))


def views(t: Tidy) -> list[View]:
    """The views the data holds, in the page's order. A view's rows must hold the field
    it draws (`needs`): a chart is never handed rows it would draw nothing of."""
    made = [made for maker in makers() if (made := maker.make(t)) is not None]
    out = []
    for one in made:
        needs = one.needs or one.spec.get("usermeta", {}).get("needs")
        rows = getattr(t, one.data)
        if needs and any(needs in r for r in rows):  # else the page's script derives it
            rows = [r for r in rows if r.get(needs) is not None]
        drawn = {r.get("machine") for r in rows}
        shown = [m for m in t.machines if m in drawn]  # the legend names only these
        out.append(replace(one, needs=needs, spec=coloured(one.spec, shown, t)))
    return out


def coloured(spec: Any, machines: list[str], t: Tidy) -> Any:
    """The spec (a copy) with every colour by machine on the page's colours, its legend
    naming `machines` (none: the spec as it is)."""
    colour = t.colours or machine_colours(t.machines)
    scale = {"domain": machines, "range": [colour[m] for m in machines]} if machines else None
    return _recoloured(spec, scale)


def _recoloured(spec: Any, scale: dict[str, Any] | None) -> Any:
    if isinstance(spec, list):
        return [_recoloured(item, scale) for item in spec]
    if not isinstance(spec, dict):
        return spec
    out = {key: _recoloured(value, scale) for key, value in spec.items()}
    for channel in ("color", "stroke"):  # a bar's outline too (the max-batch view's)
        colour = out.get(channel)
        if scale and isinstance(colour, dict) and colour.get("field") == "machine":
            out[channel] = {**colour, "scale": scale}
    return out
