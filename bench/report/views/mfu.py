"""MFU against sequence length and activation checkpointing (LLM training)."""

from __future__ import annotations

from bench.report.tidy import Tidy
from bench.report.views.marks import (
    WIDTH,
    altair,
    as_spec,
    has,
    header,
    legend,
    line_detail,
    tooltips,
)
from bench.report.views.view import View

PLACE = 140  # on the page, after the views of lower places


def make(t: Tidy) -> View | None:
    if not has(t.points, "mfu", "seq_len"):
        return None
    alt = altair()
    chart = (
        alt.Chart()
        .mark_line(point=True)
        .encode(
            x=alt.X(
                "seq_len:Q", title="sequence length (tokens)", scale=alt.Scale(type="log", base=2)
            ),
            y=alt.Y("mfu:Q", title="MFU", axis=alt.Axis(format="%")),
            color=alt.Color("machine:N", legend=legend(), sort=None),
            detail=line_detail("machine"),
            strokeDash=alt.StrokeDash("checkpointing:N", legend=None, sort=None),
            shape=alt.Shape(
                "checkpointing:N", legend=legend("activation checkpointing"), sort=None
            ),
            tooltip=tooltips(("mfu_text", "MFU"), ("checkpointing", "checkpointing")),
        )
        .transform_filter("isValid(datum.mfu) && isValid(datum.seq_len)")
        .properties(width=WIDTH, height=200)
        .facet(row=alt.Row("workload:N", header=header(), sort=None), data=alt.NamedData("points"))
    )
    return View(
        "mfu",
        "MFU against sequence length and checkpointing",
        "Model FLOPs utilisation per machine and activation-checkpointing mode, of each model "
        "trained on token sequences (decoders by their FLOPs formula, encoders such as BERT "
        "by PyTorch's count).",
        "points",
        as_spec(chart),
        needs="mfu",
    )
