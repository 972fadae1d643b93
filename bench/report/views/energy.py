"""Energy per epoch or per sample (the M2 Max vs V100 CIFAR study)."""

from __future__ import annotations

from bench.report.tidy import Tidy
from bench.report.views.marks import bar_chart, has
from bench.report.views.view import View

PLACE = 60  # on the page, after the views of lower places


def make(t: Tidy) -> View | None:
    if has(t.points, "energy_epoch_j"):
        value, title = "energy_epoch_j", "energy per epoch (J)"
    elif has(t.points, "energy_sample_j"):
        value, title = "energy_sample_j", "energy per sample (J)"
    else:
        return None
    spec = bar_chart(
        "points",
        value,
        title,
        tooltip=(("energy_text", "energy"), ("spj_text", "samples per joule")),
    )
    return View(
        "energy",
        "Energy per epoch" if value == "energy_epoch_j" else "Energy per sample",
        "Joules the devices drew (the M2 Max vs V100 study); the tooltip gives samples per "
        "joule, the energy-efficiency figure to set two machines side by side.",
        "points",
        spec,
    )
