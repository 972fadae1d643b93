"""Epoch time, against the batch size where it varies (the M2 Max vs V100 CIFAR study)."""

from __future__ import annotations

from bench.report.tidy import Tidy
from bench.report.views.marks import TP, bar_chart, has, has_lines, line_chart
from bench.report.views.view import View

PLACE = 50  # on the page, after the views of lower places


def make(t: Tidy) -> View | None:
    if not has(t.points, "epoch_s"):
        return None
    tip = (("epoch_text", "epoch time"), TP)
    title = "Epoch time"
    caption = "Seconds per epoch (epochs 2 onwards; the M2 Max vs V100 study)"
    if not has_lines(t.points, "epoch_s", "batch"):
        spec = bar_chart("points", "epoch_s", "epoch time (s)", tooltip=tip)
        return View("epoch_time", title, caption + ": shorter is faster.", "points", spec)
    spec = line_chart(
        "points",
        "batch",
        "epoch_s",
        "batch size (samples)",
        "epoch time (s)",
        log_x=True,
        tooltip=tip,
    )
    return View(
        "epoch_time",
        f"{title} against batch size",
        f"{caption}, against the batch size.",
        "points",
        spec,
        needs="epoch_s",
        along="batch",
    )
