"""Top-1 after each epoch against the target (the TPUv2 vs V100 comparison)."""

from __future__ import annotations

from bench.report.tidy import Tidy
from bench.report.views.marks import WIDTH, altair, as_spec, header, legend, line_detail, tooltips
from bench.report.views.view import View

PLACE = 90  # on the page, after the views of lower places


def make(t: Tidy) -> View | None:
    if not t.curves:
        return None
    alt = altair()
    colour = alt.Color("machine:N", legend=legend(), sort=None)
    line = (
        alt.Chart()
        .mark_line(point=True)
        .encode(
            x=alt.X("epoch:Q", title="epoch", axis=alt.Axis(tickMinStep=1)),
            y=alt.Y("top1:Q", title="top-1 (validation)", axis=alt.Axis(format="%")),
            color=colour,
            detail=line_detail("machine"),
            tooltip=tooltips(("top1_text", "top-1")),
        )
    )
    target = alt.Chart().mark_rule(strokeDash=[4, 3]).encode(y="mean(target):Q")
    chart = (
        alt.layer(line, target)
        .properties(width=WIDTH, height=200)
        .facet(row=alt.Row("panel:N", header=header(), sort=None), data=alt.NamedData("curves"))
        .resolve_scale(x="independent")
    )
    return View(
        "accuracy",
        "Accuracy curves and time to accuracy",
        "Top-1 after each epoch (dashed: the target), per point trained on real data (the "
        "TPUv2 vs V100 comparison); time and cost to the target are in the tables below.",
        "curves",
        as_spec(chart),
    )
