"""Each machine's best configuration per workload over the baseline's best, with the
verdict (pyperf compare_to, OpenBenchmarking.org)."""

from __future__ import annotations

from bench.report.tidy import Tidy
from bench.report.views.marks import (
    REL,
    TP,
    VERDICT,
    WIDTH,
    altair,
    as_spec,
    has,
    header,
    interval_fields,
    tooltips,
    whisker_layers,
)
from bench.report.views.view import View

PLACE = 10  # on the page, after the views of lower places
RELATIVE_TITLE = "throughput / the baseline's (best configuration each)"
VERDICTS = ["faster", "slower", "the same", "cannot tell", "one run", "baseline"]
VERDICT_COLOURS = ["#2b8a3e", "#c92a2a", "#1c7ed6", "#adb5bd", "#ced4da", "#495057"]


def make(t: Tidy) -> View | None:
    if not has(t.headline, "rel"):
        return None
    alt = altair()
    y = alt.Y("machine:N", title=None, sort=None)
    colour = alt.Color(
        "verdict:N",
        scale=alt.Scale(domain=VERDICTS, range=VERDICT_COLOURS),
        legend=alt.Legend(orient="top", title=None),
    )
    tips = tooltips(TP, REL, VERDICT)
    bars = (
        alt.Chart()
        .mark_bar()
        .encode(
            x=alt.X("rel_shown:Q", title=RELATIVE_TITLE, stack=None),  # Vega keys a stack
            y=y,  # by its y: a machine named 'toString' stopped the chart
            color=colour,
            tooltip=tips,
        )
    )
    whiskers = whisker_layers("rel_lo", "rel_hi", RELATIVE_TITLE, y, alt.Undefined, tips)
    rule = alt.Chart().mark_rule(strokeDash=[4, 3]).encode(x=alt.datum(1))
    chart = (
        interval_fields(
            alt.layer(bars, *whiskers, rule)
            .transform_calculate(rel_shown="datum.baseline ? 1 : datum.rel")
            .transform_filter("isValid(datum.rel_shown)"),
            "rel_shown",
            "rel_lo",
            "rel_hi",
        )
        .properties(width=WIDTH, height=alt.Step(18))
        .facet(
            row=alt.Row("workload:N", header=header(), sort=None), data=alt.NamedData("headline")
        )
        .resolve_scale(y="independent")
    )
    return View(
        "relative",
        "Faster or slower than the baseline, per workload",
        "Each machine's best configuration of each workload over the baseline's best "
        "(dashed: 1, the baseline). Whiskers: the ratio's 95% interval; the colour is the "
        "verdict (faster or slower only where the interval excludes 1).",
        "headline",
        as_spec(chart),
        needs="verdict",
    )
