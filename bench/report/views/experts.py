"""A mixture of experts' tokens/s per device with the all-to-all's share of its step
(torchtitan's and Megatron's MoE figures)."""

from __future__ import annotations

from bench.report.moe import FORMULA
from bench.report.tidy import Tidy
from bench.report.views.marks import bar_chart, has
from bench.report.views.view import View

PLACE = 170  # on the page, after the views of lower places


def make(t: Tidy) -> View | None:
    if not has(t.points, "experts", "unit_per_device"):
        return None
    spec = bar_chart(
        "points",
        "unit_per_device",
        "tokens/s per device",
        part="a2a",
        tooltip=(
            ("unit_text", "per device"),
            ("mfu_text", "MFU (active parameters)"),
            ("experts_text", "experts"),
        ),
    )
    return View(
        "experts",
        "Mixtures of experts: tokens per second per device, and the all-to-all",
        "Tokens/s per device of each mixture of experts; the dark part of a bar is the share "
        "of its step spent in the all-to-all (forward and backward; none where every expert "
        f"is on every rank). The tooltip gives MFU of the active parameters ({FORMULA}, "
        "torchtitan's convention), the load balance (tokens per expert, max over mean; 1: "
        "even) and the token assignments dropped past an expert's capacity.",
        "points",
        spec,
        needs="experts",
    )
