"""Dollars per million tokens (LLM training)."""

from __future__ import annotations

from bench.report.tidy import Tidy
from bench.report.views.marks import bar_chart, has
from bench.report.views.view import View

PLACE = 160  # on the page, after the views of lower places


def make(t: Tidy) -> View | None:
    if not has(t.points, "usd_per_m_units", "unit_per_device"):
        return None
    spec = bar_chart(
        "points",
        "usd_per_m_units",
        "USD per million tokens",
        tooltip=(("usd_units_text", "USD per million tokens"),),
    )
    return View(
        "usd_per_m_tokens",
        "Dollars per million tokens",
        "The hourly price over tokens per second (LLM training's cost figure).",
        "points",
        spec,
        rank_by="usd_per_m_units",
    )
