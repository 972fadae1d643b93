"""The largest batch each machine trains, per model (the GPU-buying guide)."""

from __future__ import annotations

from bench.report.tidy import Tidy
from bench.report.views.marks import (
    BAR,
    TICK,
    WIDTH,
    altair,
    as_spec,
    bar_offset,
    header,
    legend,
    tooltips,
)
from bench.report.views.view import View

PLACE = 40  # on the page, after the views of lower places


def make(t: Tidy) -> View | None:
    """Bars of the largest batch that trains; a search that stopped before its answer
    (at its limit, or interrupted) is not an answer: its bar is pale and dashed and ends
    in an open arrow and '>= N', so that a card stopped at batch 2 does not read as one
    that fits 2 and no more. Integer ticks: a batch has no half."""
    if not t.max_batch:
        return None
    alt = altair()
    x = alt.X(
        "largest:Q",
        title="largest batch that trains (samples)",
        stack=None,
        axis=alt.Axis(tickMinStep=1, format="d", labelExpr=TICK),
    )
    y = alt.Y("search:N", title=None, sort=None)
    offset = bar_offset("machine")
    colour = alt.Color("machine:N", legend=legend(), sort=None)
    tips = tooltips(("display", "found"), ("precision", "precision"))
    bars = (
        alt.Chart()
        .mark_bar(height={"band": 0.85}, strokeWidth=1.5)
        .encode(
            x=x,
            y=y,
            yOffset=offset,
            color=colour,
            stroke=alt.Color("machine:N", legend=None, sort=None),  # one legend: the fill's
            opacity=alt.condition("datum.limit", alt.value(0.35), alt.value(1)),
            strokeDash=alt.condition("datum.limit", alt.value([4, 3]), alt.value([1, 0])),
            tooltip=tips,
        )
    )
    # On every row, shown where the search stopped short: a layer of its own data (a
    # filter) would be a source of its own, and Vega warned of its empty panels.
    arrows = (
        alt.Chart()
        .mark_point(shape="triangle-right", filled=False, size=70)
        .encode(
            x=x,
            y=y,
            yOffset=offset,
            color=colour,
            opacity=alt.condition("datum.limit", alt.value(1), alt.value(0)),
            tooltip=tips,
        )
    )
    words = (
        alt.Chart()
        .mark_text(align="left", dx=8, fontSize=12)
        .encode(x=x, y=y, yOffset=offset, text=alt.Text("at_least:N"), tooltip=tips)
    )
    chart = (
        alt.layer(bars, arrows, words)
        .transform_filter("isValid(datum.largest)")
        .properties(width=WIDTH, height=alt.Step(BAR))
        .facet(
            row=alt.Row("workload:N", header=header(), sort=None), data=alt.NamedData("max_batch")
        )
        .resolve_scale(y="independent", x="independent")
    )
    return View(
        "max_batch",
        "Largest batch per model",
        "The largest batch each machine trains (the GPU-buying guide's table). '*': not "
        "even the smallest fits (bar at 0). Pale, dashed, with an open arrow and 'at least "
        "N': the search stopped at its limit, or before its answer ('so far': "
        "interrupted), with N still training: the largest is N or more.",
        "max_batch",
        {**as_spec(chart), "usermeta": {"needs": "largest"}},
    )
