"""The parts the views are made of (Altair): bars with whiskers, lines with bands, their
axes, legends, tooltips and facets, each said once for every view."""

from __future__ import annotations

import re
from typing import Any

WIDTH = 560
BAR = 14  # pixels per bar


def altair() -> Any:
    import altair as alt

    return alt


def legend(title: str | None = None) -> Any:
    """At the top, read before a tall chart's bars (at the bottom it sat under 3,300
    pixels of them); in columns, long labels cut (the tooltip and tables hold them
    whole): a legend never runs off the page or over the chart."""
    alt = altair()
    return alt.Legend(
        orient="top",
        columns=2,
        labelLimit=360,
        title=title,
        symbolLimit=40,
        titleLimit=400,
        symbolOpacity=1,  # a line chart's legend took its 0.2 from the shaded band
    )


def header() -> Any:
    alt = altair()
    return alt.Header(
        title=None,
        labelOrient="top",
        labelAnchor="start",
        labelFontWeight="bold",
        labelFontSize=12,
        labelLimit=WIDTH + 200,
    )


def tooltips(*extra: tuple[str, str]) -> list[Any]:
    """Every bar's tooltip: its figures with their intervals (texts the page's script
    formats), its configuration and the command that made it."""
    alt = altair()
    fields = [
        ("machine", "machine"),
        ("workload", "workload"),
        ("config", "configuration"),
        *extra,
        ("command", "command"),
    ]
    return [alt.Tooltip(f"{name}:N", title=title) for name, title in fields]


def as_spec(chart: Any) -> dict[str, Any]:
    spec: dict[str, Any] = chart.to_dict(validate=False)  # checked by the tests
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
TICK = (
    "datum.value == 0 ? (length(datum.label) > 6 ? '0' : datum.label)"
    " : abs(datum.value) < 1e-4 || abs(datum.value) >= 1e15 ? format(datum.value, '.2e')"
    " : datum.label"
)


def number_axis() -> Any:
    """Numbers as the page writes them; labels that would touch are dropped ('55,000' and
    '60,000' ran together as '55,00060,000')."""
    return altair().Axis(labelExpr=TICK, labelOverlap="greedy", labelSeparation=6)


def bar_offset(colour: str) -> Any:
    """Bars side by side in the order of `colour`'s values: a machine's by its number
    (bench.report.tidy's machine_index). By name, Vega-Lite wrote each machine's name
    into an expression and Vega keyed objects by it: 'toString' stopped the chart."""
    alt = altair()
    if colour == "machine":
        return alt.YOffset("machine_index:O", sort="ascending", title="place in the legend")
    return alt.YOffset(f"{colour}:N", sort=None)


def line_detail(colour: str) -> Any:
    """A line per machine grouped by its number too: Vega keys a line's points by the
    values that split them into lines, and a machine named '__proto__' drew no line."""
    return altair().Detail("machine_index:O") if colour == "machine" else altair().Undefined


def bar_chart(
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
    alt = altair()
    # Side by side, never stacked: a stack sorts by colour, its names in an expression.
    scale = alt.Scale(type="log" if log else "linear")
    x = alt.X(f"{value}:Q", title=title, scale=scale, stack=None, axis=number_axis())
    y = alt.Y(f"{category}:N", title=None, sort=None)
    offset = bar_offset(colour) if colour != category else alt.Undefined
    layers = [
        alt.Chart()
        .mark_bar(height={"band": 0.85})
        .encode(
            x=x,
            y=y,
            yOffset=offset,
            color=alt.Color(f"{colour}:N", legend=legend(), sort=None),
            tooltip=tooltips(*tooltip),
        )
    ]
    if part is not None:  # `_part` is made for every row, as interval_fields does
        layers.append(
            alt.Chart()
            # Read aloud, its length is no figure (the bar's own label gives them all).
            .mark_bar(height={"band": 0.85}, color="black", opacity=0.45, aria=False)
            .encode(
                x=alt.X("_part:Q", title=title, scale=scale, stack=None, axis=number_axis()),
                y=y,
                yOffset=offset,
                tooltip=tooltips(*tooltip),
            )
        )
    if low and high:
        layers += whisker_layers(low, high, title, y, offset, tooltips(*tooltip))
    if reference is not None:
        layers.append(alt.Chart().mark_rule(strokeDash=[4, 3]).encode(x=alt.datum(reference)))
    layered = alt.layer(*layers).transform_filter(f"isValid(datum.{value})")
    if low and high:
        layered = interval_fields(layered, value, low, high)
    if part is not None:
        layered = layered.transform_calculate(
            _part=f"isValid(datum.{part}) ? datum.{value} * datum.{part} : 0"
        )
    chart = (
        layered.properties(width=WIDTH, height=alt.Step(BAR))
        .facet(row=alt.Row("workload:N", header=header(), sort=None), data=alt.NamedData(data))
        .resolve_scale(y="independent", x="shared" if shared_x else "independent")
    )
    return {**as_spec(chart), "usermeta": {"needs": value}}


def whisker_layers(
    low: str, high: str, title: str, y: Any, offset: Any, tips: list[Any]
) -> list[Any]:
    """A 95% interval from `low` to `high`: a rule and a tick at each end, on the bars'
    own rows, hidden where a row has none. It reads `_lo`, `_hi` and `_ci`, which
    interval_fields makes for every row of the chart: Vega-Lite's errorbar aggregates,
    and a layer whose field some rows lack filters them, each a data source of its own,
    so that each chart logged warnings ('faceted independent scales that union domain
    ... from different source', 'Infinite extent for field tp_lo')."""
    alt = altair()
    shown = alt.condition("datum._ci", alt.value(1), alt.value(0))
    rule = (
        alt.Chart()
        .mark_rule(color="black")
        .encode(
            x=alt.X("_lo:Q", title=title, axis=number_axis()),
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
            x=alt.X(f"{end}:Q", title=title, axis=number_axis()),
            y=y,
            yOffset=offset,
            opacity=shown,
            tooltip=tips,
        )
        for end in ("_lo", "_hi")
    ]
    return [rule, *ends]


def interval_fields(chart: Any, value: str, low: str, high: str) -> Any:
    """`_lo`, `_hi` (the value itself where a row has no interval) and `_ci` (whether
    it has one) on every row, before the layers split (see whisker_layers)."""
    return chart.transform_calculate(
        _ci=f"isValid(datum.{low}) && isValid(datum.{high})",
        _lo=f"isValid(datum.{low}) ? datum.{low} : datum.{value}",
        _hi=f"isValid(datum.{high}) ? datum.{high} : datum.{value}",
    )


def line_chart(
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
    alt = altair()
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
                y=alt.Y("_lo:Q", title=y_title, axis=number_axis()),
                y2="_hi:Q",
                color=alt.Color(f"{colour}:N", legend=legend(), sort=None),
                detail=line_detail(colour),
            )
        )
    layers.append(
        alt.Chart()
        .mark_line(point=True)
        .encode(
            x=ex,
            y=alt.Y(f"{y}:Q", title=y_title, axis=number_axis()),
            color=alt.Color(f"{colour}:N", legend=legend(), sort=None),
            detail=line_detail(colour),
            tooltip=tooltips(*tooltip),
        )
    )
    if rule is not None:
        marks, words = rule
        layers.append(
            alt.Chart()
            .mark_rule(strokeDash=[5, 3], color="black")
            .encode(x=ex, tooltip=tooltips((words, "step"), *tooltip))
            .transform_filter(f"isValid(datum.{marks})")
        )
    layered = alt.layer(*layers).transform_filter(f"isValid(datum.{y})")
    if low and high:  # a panel without intervals: a band of no width, not a warning
        layered = interval_fields(layered, y, low, high)
    chart = (
        layered.properties(width=WIDTH, height=200)
        .facet(row=alt.Row(f"{panel}:N", header=header(), sort=None), data=alt.NamedData(data))
        .resolve_scale(x="independent", y="independent")
    )
    return {**as_spec(chart), "usermeta": {"needs": y}}


def has(rows: list[dict[str, Any]], *names: str) -> bool:
    return any(all(name in r for name in names) for r in rows)


def has_lines(rows: list[dict[str, Any]], value: str, x: str) -> bool:
    """Whether a machine has `value` at two values of `x` or more in one panel: a line."""
    seen: dict[tuple[Any, Any], set[Any]] = {}
    for r in rows:
        if value in r and x in r:
            panel = (r["workload"], re.sub(r"^bs \d+ ", "", r.get("config", "")))
            seen.setdefault((r["machine"], panel), set()).add(r[x])
    return any(len(xs) > 1 for xs in seen.values())


TP = ("tp_text", "throughput (95% interval)")
REL = ("rel_text", "vs the baseline (95% interval)")
VERDICT = ("verdict_text", "verdict")  # the page's script words the baseline's too
