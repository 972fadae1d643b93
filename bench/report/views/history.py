"""A configuration's throughput over the dates it was measured (asv)."""

from __future__ import annotations

from bench.report.tidy import Tidy
from bench.report.views.marks import TP, line_chart
from bench.report.views.view import View

PLACE = 190  # on the page, after the views of lower places


def make(t: Tidy) -> View | None:
    if not t.history:
        return None
    spec = line_chart(
        "history",
        "date",
        "tp",
        "measured",
        "throughput (samples/s)",
        colour="machine",
        panel="series",
        low="tp_lo",
        high="tp_hi",
        x_type="T",
        tooltip=(TP, ("date", "date")),
        rule=("step_ratio", "step") if any("step" in r for r in t.history) else None,
    )
    steps = (
        " A dashed rule: a step, where the figure changed level (binary segmentation over "
        "the runs, a permutation test at 1%; none is drawn where it is noise)."
        if any("step" in r for r in t.history)
        else ""
    )
    return View(
        "history",
        "History: one configuration over the dates it was measured",
        "Each configuration of a machine measured on several dates, as asv shows a "
        "benchmark's history; shaded: 95% interval (of a day's runs, where a history of "
        f"many runs is shown a day at a time).{steps} {t.history_note}".strip(),
        "history",
        spec,
        cap=2000,
        panels=("series", 12),  # a fleet's 72 flat lines made a chart 12,665 px tall
    )
