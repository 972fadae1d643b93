"""Tokens per second per device (LLM training: torchtitan's TPS/GPU)."""

from __future__ import annotations

from bench.report.tidy import Tidy
from bench.report.views.marks import bar_chart, has
from bench.report.views.view import View

PLACE = 130  # on the page, after the views of lower places


def make(t: Tidy) -> View | None:
    if not has(t.points, "unit_per_device"):
        return None
    spec = bar_chart(
        "points",
        "unit_per_device",
        "tokens/s per device",
        tooltip=(
            ("unit_text", "per device"),
            ("mfu_text", "MFU"),
            ("mem_text", "peak memory per device"),
        ),
    )
    return View(
        "tokens",
        "Tokens per second per device",
        "The LLM training figure (torchtitan's TPS/GPU); the tooltip gives MFU and the "
        "peak memory per device.",
        "points",
        spec,
    )
