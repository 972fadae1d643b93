"""Throughput and how machines compare on it: over the baseline, per configuration,
normalised, against batch size, the largest batch, scaling over devices, bench ladder's
rungs and a configuration's history."""

from __future__ import annotations

from bench.report.tidy import Tidy
from bench.report.views import View, view
from bench.report.views.marks import (
    BAR,
    REL,
    TICK,
    TP,
    VERDICT,
    WIDTH,
    altair,
    as_spec,
    bar_chart,
    bar_offset,
    has,
    has_lines,
    header,
    interval_fields,
    legend,
    line_chart,
    tooltips,
    whisker_layers,
)

RELATIVE_TITLE = "throughput / the baseline's (best configuration each)"


VERDICTS = ["faster", "slower", "the same", "cannot tell", "one run", "baseline"]


VERDICT_COLOURS = ["#2b8a3e", "#c92a2a", "#1c7ed6", "#adb5bd", "#ced4da", "#495057"]


@view(10)
def relative(t: Tidy) -> View | None:
    """Each machine's best configuration per workload over the baseline's best, with the
    verdict (pyperf compare_to, OpenBenchmarking.org)."""
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


@view(20)
def throughput(t: Tidy) -> View | None:
    """Throughput per configuration with its 95% interval."""
    if not has(t.points, "tp"):
        return None
    spec = bar_chart(
        "points",
        "tp",
        "throughput (samples/s)",
        low="tp_lo",
        high="tp_hi",
        tooltip=(TP, REL, VERDICT),
    )
    return View(
        "throughput",
        "Throughput per configuration",
        "Samples per second over all devices, each bar a configuration of a machine; "
        "whiskers: 95% interval over repeats (none for one run).",
        "points",
        spec,
    )


@view(30)
def normalised(t: Tidy) -> View | None:
    """Throughput over the baseline's, configuration by configuration (the 2020 GPU-buying
    guide)."""
    if not has(t.points, "rel"):
        return None
    spec = bar_chart(
        "points",
        "rel",
        "throughput / the baseline's",
        low="rel_lo",
        high="rel_hi",
        reference=1.0,
        shared_x=True,
        tooltip=(TP, REL, VERDICT),
    )
    return View(
        "normalised",
        "Throughput normalised to the baseline, per configuration",
        "As the GPU-buying guide normalises to one reference GPU per model: each "
        "configuration over the baseline's same configuration (dashed: 1). Whiskers: the "
        "ratio's 95% interval.",
        "points",
        spec,
        figure="relative_throughput",
    )


@view(40)
def max_batch(t: Tidy) -> View | None:
    """The largest batch each machine trains, per model (the GPU-buying guide)."""
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


@view(70)
def vs_batch(t: Tidy) -> View | None:
    """Throughput against batch size (the TPUv2 vs V100 comparison, the Xeon study)."""
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


@view(120)
def ladder(t: Tidy) -> View | None:
    """bench ladder's speed-up per step (the Xeon CPU training study)."""
    if not has(t.ladder, "speedup"):
        return None
    alt = altair()
    chart = (
        alt.Chart()
        .mark_bar()
        .encode(
            x=alt.X("speedup:Q", title="throughput / the first rung", stack=None),
            y=alt.Y("rung:N", title=None, sort=None),
            color=alt.Color(
                "kept_text:N",
                title=None,
                legend=alt.Legend(orient="top"),
                scale=alt.Scale(domain=["kept", "left out"], range=["#1c7ed6", "#ced4da"]),
            ),
            tooltip=[
                alt.Tooltip("rung:N"),
                alt.Tooltip("speedup_text:N", title="speed-up"),
                alt.Tooltip("why:N"),
            ],
        )
        .transform_filter("isValid(datum.speedup)")
        .properties(width=WIDTH, height=alt.Step(BAR + 4))
        .facet(row=alt.Row("panel:N", header=header(), sort=None), data=alt.NamedData("ladder"))
        .resolve_scale(y="independent")
    )
    return View(
        "ladder",
        "The ladder: speed-up per step",
        "Each change on top of the best so far, over the first rung (the Xeon CPU training "
        "study); kept: faster beyond noise.",
        "ladder",
        as_spec(chart),
        needs="speedup",
    )


@view(180)
def scaling(t: Tidy) -> View | None:
    """Scaling efficiency over devices."""
    if not has(t.points, "scaling"):
        return None
    spec = line_chart(
        "points",
        "devices",
        "scaling",
        "devices",
        "scaling efficiency",
        panel="scaling_panel",
        tooltip=(("scaling_text", "scaling efficiency"), TP),
    )
    return View(
        "scaling",
        "Scaling efficiency over devices",
        "Throughput on N devices over N times one device's, same configuration (1: "
        "perfect scaling).",
        "points",
        spec,
        needs="scaling",
    )


@view(190)
def history(t: Tidy) -> View | None:
    """A configuration's throughput over the dates it was measured (asv)."""
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
