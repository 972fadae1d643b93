"""bench ladder's speed-up per step (the Xeon CPU training study)."""

from __future__ import annotations

from bench.report.tidy import Tidy
from bench.report.views.marks import BAR, WIDTH, altair, as_spec, has, header
from bench.report.views.view import View

PLACE = 120  # on the page, after the views of lower places


def make(t: Tidy) -> View | None:
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
