"""Throughput per configuration with its 95% interval."""

from __future__ import annotations

from bench.report.tidy import Tidy
from bench.report.views.marks import REL, TP, VERDICT, bar_chart, has
from bench.report.views.view import View

PLACE = 20  # on the page, after the views of lower places


def make(t: Tidy) -> View | None:
    if not has(t.points, "tp"):
        return None
    spec = bar_chart(
        "points",
        "tp",
        "throughput (samples/s)",
        low="tp_lo",
        high="tp_hi",
        tooltip=(TP, REL, VERDICT),
    )
    return View(
        "throughput",
        "Throughput per configuration",
        "Samples per second over all devices, each bar a configuration of a machine; "
        "whiskers: 95% interval over repeats (none for one run).",
        "points",
        spec,
    )
