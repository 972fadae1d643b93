"""Dollars per million samples (the TPUv2 vs V100 comparison)."""

from __future__ import annotations

from bench.report.tidy import Tidy
from bench.report.views.marks import bar_chart, has
from bench.report.views.view import View

PLACE = 80  # on the page, after the views of lower places


def make(t: Tidy) -> View | None:
    if not has(t.points, "usd_per_m"):
        return None
    spec = bar_chart(
        "points",
        "usd_per_m",
        "USD per million samples",
        tooltip=(("usd_text", "USD per million samples"), ("usd_h", "USD per hour")),
    )
    return View(
        "usd_per_m",
        "Dollars per million samples",
        "The hourly price over the throughput (the TPUv2 vs V100 comparison's cost per "
        "image): shorter is cheaper.",
        "points",
        spec,
        rank_by="usd_per_m",
    )
