"""Peak memory per device (LLM training)."""

from __future__ import annotations

from bench.report.tidy import Tidy
from bench.report.views.marks import bar_chart, has
from bench.report.views.view import View

PLACE = 150  # on the page, after the views of lower places


def make(t: Tidy) -> View | None:
    if not has(t.points, "peak_mem"):
        return None
    spec = bar_chart(
        "points", "peak_gib", "peak memory per device (GiB)", tooltip=(("mem_text", "peak memory"),)
    )
    return View(
        "memory",
        "Peak memory per device",
        "The most memory a device held while training (LLM training's memory column).",
        "points",
        spec,
    )
