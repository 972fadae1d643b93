"""Throughput against batch size (the TPUv2 vs V100 comparison, the Xeon study)."""

from __future__ import annotations

from bench.report.tidy import Tidy
from bench.report.views.marks import TP, has_lines, line_chart
from bench.report.views.view import View

PLACE = 70  # on the page, after the views of lower places


def make(t: Tidy) -> View | None:
    if not has_lines(t.points, "tp", "batch"):
        return None
    spec = line_chart(
        "points",
        "batch",
        "tp",
        "batch size (samples)",
        "throughput (samples/s)",
        panel="panel",
        low="tp_lo",
        high="tp_hi",
        log_x=True,
        tooltip=(TP,),
    )
    return View(
        "vs_batch",
        "Throughput against batch size",
        "Images (samples) per second against the batch size, per workload and precision "
        "(the TPUv2 vs V100 comparison; the Xeon study); shaded: 95% interval.",
        "points",
        spec,
        needs="tp",
        along="batch",
        figure="throughput_vs_batch",
    )
