"""What training costs and reaches: epoch time, energy, dollars per million samples, and
top-1 or the validation loss on the way to a target."""

from __future__ import annotations

from bench.report.tidy import LOSS_ROWS, Tidy
from bench.report.views import View, view
from bench.report.views.marks import (
    TP,
    WIDTH,
    altair,
    as_spec,
    bar_chart,
    has,
    has_lines,
    header,
    legend,
    line_chart,
    line_detail,
    tooltips,
)


@view(50)
def epoch_time(t: Tidy) -> View | None:
    """Epoch time, against the batch size where it varies (the M2 Max vs V100 CIFAR study)."""
    if not has(t.points, "epoch_s"):
        return None
    tip = (("epoch_text", "epoch time"), TP)
    title = "Epoch time"
    caption = "Seconds per epoch (epochs 2 onwards; the M2 Max vs V100 study)"
    if not has_lines(t.points, "epoch_s", "batch"):
        spec = bar_chart("points", "epoch_s", "epoch time (s)", tooltip=tip)
        return View("epoch_time", title, caption + ": shorter is faster.", "points", spec)
    spec = line_chart(
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


@view(60)
def energy(t: Tidy) -> View | None:
    """Energy per epoch or per sample (the M2 Max vs V100 CIFAR study)."""
    if has(t.points, "energy_epoch_j"):
        value, title = "energy_epoch_j", "energy per epoch (J)"
    elif has(t.points, "energy_sample_j"):
        value, title = "energy_sample_j", "energy per sample (J)"
    else:
        return None
    spec = bar_chart(
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


@view(80)
def usd_per_m(t: Tidy) -> View | None:
    """Dollars per million samples (the TPUv2 vs V100 comparison)."""
    if not has(t.points, "usd_per_m"):
        return None
    spec = bar_chart(
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


@view(90)
def accuracy(t: Tidy) -> View | None:
    """Top-1 after each epoch against the target (the TPUv2 vs V100 comparison)."""
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


@view(100)
def loss_tokens(t: Tidy) -> View | None:
    """The validation loss against tokens trained (MLPerf's LLM benchmark, the GPT-2
    speedrun)."""
    return loss_along(t, "tokens", "tokens trained", "loss_tokens", "Loss against tokens")


@view(110)
def loss_time(t: Tidy) -> View | None:
    """The validation loss against seconds trained (see loss_tokens)."""
    return loss_along(
        t, "wall_s", "seconds (training plus evaluation)", "loss_time", "Loss against time"
    )
