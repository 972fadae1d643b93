"""The report's charts as Vega-Lite specs (made with Altair), a module each: data-free,
each reading a named table of the page's tidy data (bench.report.tidy), which the
page's script inserts, filtered, into the chart, and bench.report.figures inserts whole
for the static figures. A view is made only where the results hold its data, each in
the terms of the study it comes from (its module's first line names it).

To add a view: one module in this package with `PLACE` (its place on the page: the
views are drawn by it, lowest first) and `make(t: Tidy) -> View | None` (None where
the results hold none of its data). The page, report.md's figures and the PNG and SVG
files beside the page find it; `marks` holds the parts views share (bars with
whiskers, lines with bands, axes, legends, tooltips).

Charts never draw by hand: Vega-Lite lays out axes, legends and tooltips; tooltips
go through vega-tooltip, which escapes HTML.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import replace
from types import ModuleType
from typing import Any

from bench.report.colours import PALETTE, machine_colours
from bench.report.tidy import Tidy
from bench.report.vega import bundle
from bench.report.views.marks import WIDTH
from bench.report.views.view import View

__all__ = ["MACHINE_COLOURS", "WIDTH", "View", "bundle", "coloured", "makers", "views"]

# Given by machine for the whole page (bench.report.colours): a machine has the same
# colour on every chart, whichever machines a chart holds (Vega-Lite deals them per chart).
MACHINE_COLOURS = PALETTE


def makers() -> list[ModuleType]:
    """The modules of this package that make a view (those with `make`), by `PLACE`:
    found, never listed by hand, so that a view is one module."""
    found = []
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        if callable(getattr(module, "make", None)):
            found.append(module)
    return sorted(found, key=lambda module: (module.PLACE, module.__name__))


def views(t: Tidy) -> list[View]:
    """The views the data holds, in the page's order. A view's rows must hold the field
    it draws (`needs`): a chart is never handed rows it would draw nothing of."""
    made = [view for module in makers() if (view := module.make(t)) is not None]
    out = []
    for view in made:
        needs = view.needs or view.spec.get("usermeta", {}).get("needs")
        rows = getattr(t, view.data)
        if needs and any(needs in r for r in rows):  # else the page's script derives it
            rows = [r for r in rows if r.get(needs) is not None]
        drawn = {r.get("machine") for r in rows}
        shown = [m for m in t.machines if m in drawn]  # the legend names only these
        out.append(replace(view, needs=needs, spec=coloured(view.spec, shown, t)))
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
