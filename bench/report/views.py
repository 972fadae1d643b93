"""The report's charts as Vega-Lite specs (made with Altair): data-free, each reading a
named table of the page's tidy data (bench.report.tidy), which the page's script
inserts, filtered, into the chart. A view is made only where the results hold its
data, each in the terms of the study it comes from:

- the best configuration per workload relative to the baseline, with the ratio's
  interval and the verdict (pyperf compare_to, OpenBenchmarking.org);
- throughput per configuration with its interval, and normalised to the baseline per
  configuration (the 2020 GPU-buying guide: normalised to one reference GPU);
- the largest batch per model and machine (the GPU-buying guide);
- epoch time against batch size, energy per epoch, samples per joule (the M2 Max vs
  V100 CIFAR study);
- throughput against batch size, dollars per million samples, time and cost to the
  target accuracy with the accuracy curves (the TPUv2 vs V100 comparison);
- the ladder's speed-up per step (the Xeon CPU training study);
- tokens/s per device, MFU against sequence length and checkpointing, peak memory per
  device, dollars per million tokens (LLM training);
- a mixture of experts' tokens/s per device with the all-to-all's share of its step
  (torchtitan's and Megatron's MoE figures);
- scaling efficiency over devices;
- a configuration's history over the dates it was measured (asv).

Charts never draw by hand: Vega-Lite lays out axes, legends and tooltips; tooltips
go through vega-tooltip, which escapes HTML.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from bench.report.colours import PALETTE, machine_colours
from bench.report.moe import FORMULA
from bench.report.tidy import LOSS_ROWS, Tidy

WIDTH = 560
BAR = 14  # pixels per bar
RELATIVE_TITLE = "throughput / the baseline's (best configuration each)"
VERDICTS = ["faster", "slower", "the same", "cannot tell", "one run", "baseline"]
VERDICT_COLOURS = ["#2b8a3e", "#c92a2a", "#1c7ed6", "#adb5bd", "#ced4da", "#495057"]
# Given by machine for the whole page (bench.report.colours): a machine has the same
# colour on every chart, whichever machines a chart holds (Vega-Lite deals them per chart).
MACHINE_COLOURS = PALETTE


@dataclass(frozen=True)
class View:
    id: str
    title: str
    caption: str  # what it shows, in the study's terms, and what a bar's whisker is
    data: str  # the table of Tidy it reads
    spec: dict[str, Any]
    cap: int = 400  # rows a chart draws at most; the page says when it shows fewer
    needs: str | None = None  # the field a row must hold to be drawn
    # A line's x: only panels where a machine has two values of it or more are drawn.
    along: str | None = None
    panels: tuple[str, int] | None = None  # (the panels' field, how many a chart draws)
    # Past ten machines, the ten a chart draws: the lowest of this field first (a cost
    # chart's cheapest), else the baseline and the fastest by geometric mean.
    rank_by: str | None = None


def _alt() -> Any:
    import altair as alt

    return alt


def _legend(title: str | None = None) -> Any:
    """At the top, read before a tall chart's bars (at the bottom it sat under 3,300
    pixels of them); in columns, long labels cut (the tooltip and tables hold them
    whole): a legend never runs off the page or over the chart."""
    alt = _alt()
    return alt.Legend(
        orient="top",
        columns=2,
        labelLimit=360,
        title=title,
        symbolLimit=40,
        titleLimit=400,
        symbolOpacity=1,  # a line chart's legend took its 0.2 from the shaded band
    )


def _header() -> Any:
    alt = _alt()
    return alt.Header(
        title=None,
        labelOrient="top",
        labelAnchor="start",
        labelFontWeight="bold",
        labelFontSize=12,
        labelLimit=WIDTH + 200,
    )


def _tooltip(*extra: tuple[str, str]) -> list[Any]:
    """Every bar's tooltip: its figures with their intervals (texts the page's script
    formats), its configuration and the command that made it."""
    alt = _alt()
    fields = [
        ("machine", "machine"),
        ("workload", "workload"),
        ("config", "configuration"),
        *extra,
        ("command", "command"),
    ]
    return [alt.Tooltip(f"{name}:N", title=title) for name, title in fields]


def _spec(chart: Any) -> dict[str, Any]:
    spec: dict[str, Any] = chart.to_dict()
    spec.pop("$schema", None)
    spec["config"] = {
        "view": {"continuousWidth": WIDTH, "continuousHeight": 220, "stroke": None},
        # 12 px at least, on a phone too (Vega's 10 and 11 px were most of a chart's text)
        "axis": {"labelLimit": 260, "labelFontSize": 12, "titleFontSize": 12},
        "legend": {"labelFontSize": 12, "titleFontSize": 12},
        "header": {"labelFontSize": 12, "titleFontSize": 12},
        "text": {"fontSize": 12},
        "font": "sans-serif",
        "mark": {"invalid": None},
    }
    return spec


# An axis's numbers as the page's texts write them: three digits in scientific notation
# below 0.0001 and from 10^15 ('1.00e-20', and 0 beside them: not 20 zeros), else Vega's.
_TICK = (
    "datum.value == 0 ? (length(datum.label) > 6 ? '0' : datum.label)"
    " : abs(datum.value) < 1e-4 || abs(datum.value) >= 1e15 ? format(datum.value, '.2e')"
    " : datum.label"
)


def _axis() -> Any:
    """Numbers as the page writes them; labels that would touch are dropped ('55,000' and
    '60,000' ran together as '55,00060,000')."""
    return _alt().Axis(labelExpr=_TICK, labelOverlap="greedy", labelSeparation=6)


def _offset(colour: str) -> Any:
    """Bars side by side in the order of `colour`'s values: a machine's by its number
    (bench.report.tidy's machine_index). By name, Vega-Lite wrote each machine's name
    into an expression and Vega keyed objects by it: 'toString' stopped the chart."""
    alt = _alt()
    if colour == "machine":
        return alt.YOffset("machine_index:O", sort="ascending", title="place in the legend")
    return alt.YOffset(f"{colour}:N", sort=None)


def _detail(colour: str) -> Any:
    """A line per machine grouped by its number too: Vega keys a line's points by the
    values that split them into lines, and a machine named '__proto__' drew no line."""
    return _alt().Detail("machine_index:O") if colour == "machine" else _alt().Undefined


def _bars(
    data: str,
    value: str,
    title: str,
    *,
    category: str = "config",
    low: str | None = None,
    high: str | None = None,
    colour: str = "machine",
    reference: float | None = None,
    log: bool = False,
    tooltip: tuple[tuple[str, str], ...] = (),
    shared_x: bool = False,
    part: str | None = None,
) -> dict[str, Any]:
    """Horizontal bars, a panel per workload: one bar per category (and machine, side
    by side), a 95% whisker from `low` to `high` where given, a rule at `reference`, and
    where `part` names a share (0 to 1), that share of each bar darkened from its start."""
    alt = _alt()
    # Side by side, never stacked: a stack sorts by colour, its names in an expression.
    scale = alt.Scale(type="log" if log else "linear")
    x = alt.X(f"{value}:Q", title=title, scale=scale, stack=None, axis=_axis())
    y = alt.Y(f"{category}:N", title=None, sort=None)
    offset = _offset(colour) if colour != category else alt.Undefined
    layers = [
        alt.Chart()
        .mark_bar(height={"band": 0.85})
        .encode(
            x=x,
            y=y,
            yOffset=offset,
            color=alt.Color(f"{colour}:N", legend=_legend(), sort=None),
            tooltip=_tooltip(*tooltip),
        )
    ]
    if part is not None:  # `_part` is made for every row, as _interval_fields does
        layers.append(
            alt.Chart()
            # Read aloud, its length is no figure (the bar's own label gives them all).
            .mark_bar(height={"band": 0.85}, color="black", opacity=0.45, aria=False)
            .encode(
                x=alt.X("_part:Q", title=title, scale=scale, stack=None, axis=_axis()),
                y=y,
                yOffset=offset,
                tooltip=_tooltip(*tooltip),
            )
        )
    if low and high:
        layers += _whiskers(low, high, title, y, offset, _tooltip(*tooltip))
    if reference is not None:
        layers.append(alt.Chart().mark_rule(strokeDash=[4, 3]).encode(x=alt.datum(reference)))
    layered = alt.layer(*layers).transform_filter(f"isValid(datum.{value})")
    if low and high:
        layered = _interval_fields(layered, value, low, high)
    if part is not None:
        layered = layered.transform_calculate(
            _part=f"isValid(datum.{part}) ? datum.{value} * datum.{part} : 0"
        )
    chart = (
        layered.properties(width=WIDTH, height=alt.Step(BAR))
        .facet(row=alt.Row("workload:N", header=_header(), sort=None), data=alt.NamedData(data))
        .resolve_scale(y="independent", x="shared" if shared_x else "independent")
    )
    return {**_spec(chart), "usermeta": {"needs": value}}


def _whiskers(low: str, high: str, title: str, y: Any, offset: Any, tips: list[Any]) -> list[Any]:
    """A 95% interval from `low` to `high`: a rule and a tick at each end, on the bars'
    own rows, hidden where a row has none. It reads `_lo`, `_hi` and `_ci`, which
    _interval_fields makes for every row of the chart: Vega-Lite's errorbar aggregates,
    and a layer whose field some rows lack filters them, each a data source of its own,
    so that each chart logged warnings ('faceted independent scales that union domain
    ... from different source', 'Infinite extent for field tp_lo')."""
    alt = _alt()
    shown = alt.condition("datum._ci", alt.value(1), alt.value(0))
    rule = (
        alt.Chart()
        .mark_rule(color="black")
        .encode(
            x=alt.X("_lo:Q", title=title, axis=_axis()),
            x2="_hi:Q",
            y=y,
            yOffset=offset,
            opacity=shown,
            tooltip=tips,
        )
    )
    ends = [
        alt.Chart()
        .mark_tick(color="black", orient="vertical", thickness=1, size=7)
        .encode(
            x=alt.X(f"{end}:Q", title=title, axis=_axis()),
            y=y,
            yOffset=offset,
            opacity=shown,
            tooltip=tips,
        )
        for end in ("_lo", "_hi")
    ]
    return [rule, *ends]


def _interval_fields(chart: Any, value: str, low: str, high: str) -> Any:
    """`_lo`, `_hi` (the value itself where a row has no interval) and `_ci` (whether
    it has one) on every row, before the layers split (see _whiskers)."""
    return chart.transform_calculate(
        _ci=f"isValid(datum.{low}) && isValid(datum.{high})",
        _lo=f"isValid(datum.{low}) ? datum.{low} : datum.{value}",
        _hi=f"isValid(datum.{high}) ? datum.{high} : datum.{value}",
    )


def _lines(
    data: str,
    x: str,
    y: str,
    x_title: str,
    y_title: str,
    *,
    colour: str = "machine",
    panel: str = "panel",
    low: str | None = None,
    high: str | None = None,
    log_x: bool = False,
    tooltip: tuple[tuple[str, str], ...] = (),
    x_type: str = "Q",
    rule: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """Lines with points, a panel per `panel`, a shaded 95% band where given, and a
    dashed rule at each row where `rule`'s first field is a number (its second field,
    the words, in the rule's tooltip)."""
    alt = _alt()
    scale = alt.Scale(type="log", base=2) if log_x else alt.Scale(zero=False)
    if x_type == "T":
        scale = alt.Undefined
    axis = alt.Axis(format="%Y-%m-%d %H:%M", labelAngle=-30) if x_type == "T" else alt.Undefined
    ex = alt.X(f"{x}:{x_type}", title=x_title, scale=scale, axis=axis)
    layers = []
    if low and high:
        layers.append(
            alt.Chart()
            .mark_area(opacity=0.2)
            .encode(
                x=ex,
                y=alt.Y("_lo:Q", title=y_title, axis=_axis()),
                y2="_hi:Q",
                color=alt.Color(f"{colour}:N", legend=_legend(), sort=None),
                detail=_detail(colour),
            )
        )
    layers.append(
        alt.Chart()
        .mark_line(point=True)
        .encode(
            x=ex,
            y=alt.Y(f"{y}:Q", title=y_title, axis=_axis()),
            color=alt.Color(f"{colour}:N", legend=_legend(), sort=None),
            detail=_detail(colour),
            tooltip=_tooltip(*tooltip),
        )
    )
    if rule is not None:
        marks, words = rule
        layers.append(
            alt.Chart()
            .mark_rule(strokeDash=[5, 3], color="black")
            .encode(x=ex, tooltip=_tooltip((words, "step"), *tooltip))
            .transform_filter(f"isValid(datum.{marks})")
        )
    layered = alt.layer(*layers).transform_filter(f"isValid(datum.{y})")
    if low and high:  # a panel without intervals: a band of no width, not a warning
        layered = _interval_fields(layered, y, low, high)
    chart = (
        layered.properties(width=WIDTH, height=200)
        .facet(row=alt.Row(f"{panel}:N", header=_header(), sort=None), data=alt.NamedData(data))
        .resolve_scale(x="independent", y="independent")
    )
    return {**_spec(chart), "usermeta": {"needs": y}}


def _has(rows: list[dict[str, Any]], *names: str) -> bool:
    return any(all(name in r for name in names) for r in rows)


def _along(rows: list[dict[str, Any]], value: str, x: str) -> bool:
    """Whether a machine has `value` at two values of `x` or more in one panel: a line."""
    seen: dict[tuple[Any, Any], set[Any]] = {}
    for r in rows:
        if value in r and x in r:
            panel = (r["workload"], re.sub(r"^bs \d+ ", "", r.get("config", "")))
            seen.setdefault((r["machine"], panel), set()).add(r[x])
    return any(len(xs) > 1 for xs in seen.values())


_TP = ("tp_text", "throughput (95% interval)")
_REL = ("rel_text", "vs the baseline (95% interval)")
_VERDICT = ("verdict_text", "verdict")  # the page's script words the baseline's too


def _relative_best(t: Tidy) -> View | None:
    if not _has(t.headline, "rel"):
        return None
    alt = _alt()
    y = alt.Y("machine:N", title=None, sort=None)
    colour = alt.Color(
        "verdict:N",
        scale=alt.Scale(domain=VERDICTS, range=VERDICT_COLOURS),
        legend=alt.Legend(orient="top", title=None),
    )
    tips = _tooltip(_TP, _REL, _VERDICT)
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
    whiskers = _whiskers("rel_lo", "rel_hi", RELATIVE_TITLE, y, alt.Undefined, tips)
    rule = alt.Chart().mark_rule(strokeDash=[4, 3]).encode(x=alt.datum(1))
    chart = (
        _interval_fields(
            alt.layer(bars, *whiskers, rule)
            .transform_calculate(rel_shown="datum.baseline ? 1 : datum.rel")
            .transform_filter("isValid(datum.rel_shown)"),
            "rel_shown",
            "rel_lo",
            "rel_hi",
        )
        .properties(width=WIDTH, height=alt.Step(18))
        .facet(
            row=alt.Row("workload:N", header=_header(), sort=None), data=alt.NamedData("headline")
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
        _spec(chart),
        needs="verdict",
    )


def _throughput(t: Tidy) -> View | None:
    if not _has(t.points, "tp"):
        return None
    spec = _bars(
        "points",
        "tp",
        "throughput (samples/s)",
        low="tp_lo",
        high="tp_hi",
        tooltip=(_TP, _REL, _VERDICT),
    )
    return View(
        "throughput",
        "Throughput per configuration",
        "Samples per second over all devices, each bar a configuration of a machine; "
        "whiskers: 95% interval over repeats (none for one run).",
        "points",
        spec,
    )


def _normalised(t: Tidy) -> View | None:
    if not _has(t.points, "rel"):
        return None
    spec = _bars(
        "points",
        "rel",
        "throughput / the baseline's",
        low="rel_lo",
        high="rel_hi",
        reference=1.0,
        shared_x=True,
        tooltip=(_TP, _REL, _VERDICT),
    )
    return View(
        "normalised",
        "Throughput normalised to the baseline, per configuration",
        "As the GPU-buying guide normalises to one reference GPU per model: each "
        "configuration over the baseline's same configuration (dashed: 1). Whiskers: the "
        "ratio's 95% interval.",
        "points",
        spec,
    )


def _max_batch(t: Tidy) -> View | None:
    """Bars of the largest batch that trains; a search that stopped before its answer
    (at its limit, or interrupted) is not an answer: its bar is pale and dashed and ends
    in an open arrow and '>= N', so that a card stopped at batch 2 does not read as one
    that fits 2 and no more. Integer ticks: a batch has no half."""
    if not t.max_batch:
        return None
    alt = _alt()
    x = alt.X(
        "largest:Q",
        title="largest batch that trains (samples)",
        stack=None,
        axis=alt.Axis(tickMinStep=1, format="d", labelExpr=_TICK),
    )
    y = alt.Y("search:N", title=None, sort=None)
    offset = _offset("machine")
    colour = alt.Color("machine:N", legend=_legend(), sort=None)
    tips = _tooltip(("display", "found"), ("precision", "precision"))
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
            row=alt.Row("workload:N", header=_header(), sort=None), data=alt.NamedData("max_batch")
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
        {**_spec(chart), "usermeta": {"needs": "largest"}},
    )


def _throughput_vs_batch(t: Tidy) -> View | None:
    if not _along(t.points, "tp", "batch"):
        return None
    spec = _lines(
        "points",
        "batch",
        "tp",
        "batch size (samples)",
        "throughput (samples/s)",
        panel="panel",
        low="tp_lo",
        high="tp_hi",
        log_x=True,
        tooltip=(_TP,),
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
    )


def _epoch_time(t: Tidy) -> View | None:
    if not _has(t.points, "epoch_s"):
        return None
    tip = (("epoch_text", "epoch time"), _TP)
    title = "Epoch time"
    caption = "Seconds per epoch (epochs 2 onwards; the M2 Max vs V100 study)"
    if not _along(t.points, "epoch_s", "batch"):
        spec = _bars("points", "epoch_s", "epoch time (s)", tooltip=tip)
        return View("epoch_time", title, caption + ": shorter is faster.", "points", spec)
    spec = _lines(
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


def _energy(t: Tidy) -> View | None:
    if _has(t.points, "energy_epoch_j"):
        value, title = "energy_epoch_j", "energy per epoch (J)"
    elif _has(t.points, "energy_sample_j"):
        value, title = "energy_sample_j", "energy per sample (J)"
    else:
        return None
    spec = _bars(
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


def _usd_per_million(t: Tidy) -> View | None:
    if not _has(t.points, "usd_per_m"):
        return None
    spec = _bars(
        "points",
        "usd_per_m",
        "USD per million samples",
        tooltip=(("usd_text", "USD per million samples"), ("usd_h", "USD per hour")),
    )
    return View(
        "usd_per_m",
        "Dollars per million samples",
        "The hourly price over the throughput (the TPUv2 vs V100 comparison's cost per "
        "image): shorter is cheaper.",
        "points",
        spec,
        rank_by="usd_per_m",
    )


def _accuracy(t: Tidy) -> View | None:
    if not t.curves:
        return None
    alt = _alt()
    colour = alt.Color("machine:N", legend=_legend(), sort=None)
    line = (
        alt.Chart()
        .mark_line(point=True)
        .encode(
            x=alt.X("epoch:Q", title="epoch", axis=alt.Axis(tickMinStep=1)),
            y=alt.Y("top1:Q", title="top-1 (validation)", axis=alt.Axis(format="%")),
            color=colour,
            detail=_detail("machine"),
            tooltip=_tooltip(("top1_text", "top-1")),
        )
    )
    target = alt.Chart().mark_rule(strokeDash=[4, 3]).encode(y="mean(target):Q")
    chart = (
        alt.layer(line, target)
        .properties(width=WIDTH, height=200)
        .facet(row=alt.Row("panel:N", header=_header(), sort=None), data=alt.NamedData("curves"))
        .resolve_scale(x="independent")
    )
    return View(
        "accuracy",
        "Accuracy curves and time to accuracy",
        "Top-1 after each epoch (dashed: the target), per point trained on real data (the "
        "TPUv2 vs V100 comparison); time and cost to the target are in the tables below.",
        "curves",
        _spec(chart),
    )


def _loss_along(t: Tidy, x: str, title: str, view_id: str, heading: str) -> View | None:
    if not t.loss_curves:
        return None
    alt = _alt()
    line = (
        alt.Chart()
        .mark_line(point=True)
        .encode(
            x=alt.X(f"{x}:Q", title=title),
            y=alt.Y(
                "loss:Q", title="validation loss (nats per token)", scale=alt.Scale(zero=False)
            ),
            color=alt.Color("machine:N", legend=_legend(), sort=None),
            detail=_detail("machine"),
            tooltip=_tooltip(("loss_text", "validation loss"), ("at_text", "at")),
        )
    )
    target = alt.Chart().mark_rule(strokeDash=[4, 3]).encode(y="mean(target):Q")
    chart = (
        alt.layer(line, target)
        .properties(width=WIDTH, height=200)
        .facet(
            row=alt.Row("panel:N", header=_header(), sort=None), data=alt.NamedData("loss_curves")
        )
        .resolve_scale(x="independent")
    )
    return View(
        view_id,
        heading,
        "The validation loss at each evaluation (dashed: the target), per point trained to "
        "a target loss, as MLPerf's LLM benchmark and the GPT-2 speedrun report it; time, "
        f"tokens and cost to the target are in the tables below. {t.loss_note}".strip(),
        "loss_curves",
        _spec(chart),
        cap=LOSS_ROWS,  # tidy thinned each curve: a chart draws each one whole
        panels=("panel", 12),
    )


def _loss_vs_tokens(t: Tidy) -> View | None:
    return _loss_along(t, "tokens", "tokens trained", "loss_tokens", "Loss against tokens")


def _loss_vs_time(t: Tidy) -> View | None:
    return _loss_along(
        t, "wall_s", "seconds (training plus evaluation)", "loss_time", "Loss against time"
    )


def _ladder(t: Tidy) -> View | None:
    if not _has(t.ladder, "speedup"):
        return None
    alt = _alt()
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
        .facet(row=alt.Row("panel:N", header=_header(), sort=None), data=alt.NamedData("ladder"))
        .resolve_scale(y="independent")
    )
    return View(
        "ladder",
        "The ladder: speed-up per step",
        "Each change on top of the best so far, over the first rung (the Xeon CPU training "
        "study); kept: faster beyond noise.",
        "ladder",
        _spec(chart),
        needs="speedup",
    )


def _tokens_per_device(t: Tidy) -> View | None:
    if not _has(t.points, "unit_per_device"):
        return None
    spec = _bars(
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


def _experts(t: Tidy) -> View | None:
    if not _has(t.points, "experts", "unit_per_device"):
        return None
    spec = _bars(
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


def _mfu(t: Tidy) -> View | None:
    if not _has(t.points, "mfu", "seq_len"):
        return None
    alt = _alt()
    chart = (
        alt.Chart()
        .mark_line(point=True)
        .encode(
            x=alt.X(
                "seq_len:Q", title="sequence length (tokens)", scale=alt.Scale(type="log", base=2)
            ),
            y=alt.Y("mfu:Q", title="MFU", axis=alt.Axis(format="%")),
            color=alt.Color("machine:N", legend=_legend(), sort=None),
            detail=_detail("machine"),
            strokeDash=alt.StrokeDash("checkpointing:N", legend=None, sort=None),
            shape=alt.Shape(
                "checkpointing:N", legend=_legend("activation checkpointing"), sort=None
            ),
            tooltip=_tooltip(("mfu_text", "MFU"), ("checkpointing", "checkpointing")),
        )
        .transform_filter("isValid(datum.mfu) && isValid(datum.seq_len)")
        .properties(width=WIDTH, height=200)
        .facet(row=alt.Row("workload:N", header=_header(), sort=None), data=alt.NamedData("points"))
    )
    return View(
        "mfu",
        "MFU against sequence length and checkpointing",
        "Model FLOPs utilisation per machine and activation-checkpointing mode, of each model "
        "trained on token sequences (decoders by their FLOPs formula, encoders such as BERT "
        "by PyTorch's count).",
        "points",
        _spec(chart),
        needs="mfu",
    )


def _peak_memory(t: Tidy) -> View | None:
    if not _has(t.points, "peak_mem"):
        return None
    spec = _bars(
        "points", "peak_gib", "peak memory per device (GiB)", tooltip=(("mem_text", "peak memory"),)
    )
    return View(
        "memory",
        "Peak memory per device",
        "The most memory a device held while training (LLM training's memory column).",
        "points",
        spec,
    )


def _usd_per_million_tokens(t: Tidy) -> View | None:
    if not _has(t.points, "usd_per_m_units", "unit_per_device"):
        return None
    spec = _bars(
        "points",
        "usd_per_m_units",
        "USD per million tokens",
        tooltip=(("usd_units_text", "USD per million tokens"),),
    )
    return View(
        "usd_per_m_tokens",
        "Dollars per million tokens",
        "The hourly price over tokens per second (LLM training's cost figure).",
        "points",
        spec,
        rank_by="usd_per_m_units",
    )


def _scaling(t: Tidy) -> View | None:
    if not _has(t.points, "scaling"):
        return None
    spec = _lines(
        "points",
        "devices",
        "scaling",
        "devices",
        "scaling efficiency",
        panel="scaling_panel",
        tooltip=(("scaling_text", "scaling efficiency"), _TP),
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


def _history(t: Tidy) -> View | None:
    if not t.history:
        return None
    spec = _lines(
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
        tooltip=(_TP, ("date", "date")),
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


MAKERS = (
    _relative_best,
    _throughput,
    _normalised,
    _max_batch,
    _epoch_time,
    _energy,
    _throughput_vs_batch,
    _usd_per_million,
    _accuracy,
    _loss_vs_tokens,
    _loss_vs_time,
    _ladder,
    _tokens_per_device,
    _mfu,
    _peak_memory,
    _usd_per_million_tokens,
    _experts,
    _scaling,
    _history,
)


def views(t: Tidy) -> list[View]:
    """The views the data holds, in the page's order. A view's rows must hold the field
    it draws (`needs`): a chart is never handed rows it would draw nothing of."""
    made = [view for make in MAKERS if (view := make(t)) is not None]
    colour = t.colours or machine_colours(t.machines)
    coloured = []
    for view in made:
        needs = view.needs or view.spec.get("usermeta", {}).get("needs")
        rows = getattr(t, view.data)
        if needs and any(needs in r for r in rows):  # else the page's script derives it
            rows = [r for r in rows if r.get(needs) is not None]
        drawn = {r.get("machine") for r in rows}
        shown = [m for m in t.machines if m in drawn]  # the legend names only these
        scale = {"domain": shown, "range": [colour[m] for m in shown]} if shown else None
        coloured.append(replace(view, needs=needs, spec=_machines_coloured(view.spec, scale)))
    return coloured


def _machines_coloured(spec: Any, scale: dict[str, Any] | None) -> Any:
    """The spec with every colour by machine on the page's colours (a copy)."""
    if isinstance(spec, list):
        return [_machines_coloured(item, scale) for item in spec]
    if not isinstance(spec, dict):
        return spec
    out = {key: _machines_coloured(value, scale) for key, value in spec.items()}
    colour = out.get("color")
    if scale and isinstance(colour, dict) and colour.get("field") == "machine":
        out["color"] = {**colour, "scale": scale}
    return out


@cache
def bundle() -> str:
    """Vega, Vega-Lite and vega-embed as one script (vl-convert ships them): the page
    fetches nothing."""
    import vl_convert

    code = str(vl_convert.javascript_bundle())  # type: ignore[call-arg]
    # Inline, a '</script' in its text would end the element: in JS, '<\\/' reads the same.
    return re.sub("</(script)", r"<\\/\1", code, flags=re.IGNORECASE)
