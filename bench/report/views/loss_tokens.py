"""The validation loss against tokens trained (MLPerf's LLM benchmark, the GPT-2
speedrun)."""

from __future__ import annotations

from bench.report.tidy import LOSS_ROWS, Tidy
from bench.report.views.marks import WIDTH, altair, as_spec, header, legend, line_detail, tooltips
from bench.report.views.view import View

PLACE = 100  # on the page, after the views of lower places


def loss_along(t: Tidy, x: str, title: str, view_id: str, heading: str) -> View | None:
    if not t.loss_curves:
        return None
    alt = altair()
    line = (
        alt.Chart()
        .mark_line(point=True)
        .encode(
            x=alt.X(f"{x}:Q", title=title),
            y=alt.Y(
                "loss:Q", title="validation loss (nats per token)", scale=alt.Scale(zero=False)
            ),
            color=alt.Color("machine:N", legend=legend(), sort=None),
            detail=line_detail("machine"),
            tooltip=tooltips(("loss_text", "validation loss"), ("at_text", "at")),
        )
    )
    target = alt.Chart().mark_rule(strokeDash=[4, 3]).encode(y="mean(target):Q")
    chart = (
        alt.layer(line, target)
        .properties(width=WIDTH, height=200)
        .facet(
            row=alt.Row("panel:N", header=header(), sort=None), data=alt.NamedData("loss_curves")
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
        as_spec(chart),
        cap=LOSS_ROWS,  # tidy thinned each curve: a chart draws each one whole
        panels=("panel", 12),
    )


def make(t: Tidy) -> View | None:
    return loss_along(t, "tokens", "tokens trained", "loss_tokens", "Loss against tokens")
