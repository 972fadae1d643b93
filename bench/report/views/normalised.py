"""Throughput over the baseline's, configuration by configuration (the 2020 GPU-buying
guide)."""

from __future__ import annotations

from bench.report.tidy import Tidy
from bench.report.views.marks import REL, TP, VERDICT, bar_chart, has
from bench.report.views.view import View

PLACE = 30  # on the page, after the views of lower places


def make(t: Tidy) -> View | None:
    if not has(t.points, "rel"):
        return None
    spec = bar_chart(
        "points",
        "rel",
        "throughput / the baseline's",
        low="rel_lo",
        high="rel_hi",
        reference=1.0,
        shared_x=True,
        tooltip=(TP, REL, VERDICT),
    )
    return View(
        "normalised",
        "Throughput normalised to the baseline, per configuration",
        "As the GPU-buying guide normalises to one reference GPU per model: each "
        "configuration over the baseline's same configuration (dashed: 1). Whiskers: the "
        "ratio's 95% interval.",
        "points",
        spec,
        figure="relative_throughput",
    )
