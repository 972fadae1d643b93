"""Scaling efficiency over devices."""

from __future__ import annotations

from bench.report.tidy import Tidy
from bench.report.views.marks import TP, has, line_chart
from bench.report.views.view import View

PLACE = 180  # on the page, after the views of lower places


def make(t: Tidy) -> View | None:
    if not has(t.points, "scaling"):
        return None
    spec = line_chart(
        "points",
        "devices",
        "scaling",
        "devices",
        "scaling efficiency",
        panel="scaling_panel",
        tooltip=(("scaling_text", "scaling efficiency"), TP),
    )
    return View(
        "scaling",
        "Scaling efficiency over devices",
        "Throughput on N devices over N times one device's, same configuration (1: "
        "perfect scaling).",
        "points",
        spec,
        needs="scaling",
    )
