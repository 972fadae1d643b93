"""LLM training's views: tokens per second per device, MFU, peak memory, dollars per
million tokens and a mixture of experts' figures."""

from __future__ import annotations

from bench.report.moe import FORMULA
from bench.report.tidy import Tidy
from bench.report.views import View, view
from bench.report.views.marks import (
    WIDTH,
    altair,
    as_spec,
    bar_chart,
    has,
    header,
    legend,
    line_detail,
    tooltips,
)


@view(130)
def tokens(t: Tidy) -> View | None:
    """Tokens per second per device (LLM training: torchtitan's TPS/GPU)."""
    if not has(t.points, "unit_per_device"):
        return None
    spec = bar_chart(
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


@view(140)
def mfu(t: Tidy) -> View | None:
    """MFU against sequence length and activation checkpointing (LLM training)."""
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


@view(150)
def memory(t: Tidy) -> View | None:
    """Peak memory per device (LLM training)."""
    if not has(t.points, "peak_mem"):
        return None
    spec = bar_chart(
        "points", "peak_gib", "peak memory per device (GiB)", tooltip=(("mem_text", "peak memory"),)
    )
    return View(
        "memory",
        "Peak memory per device",
        "The most memory a device held while training (LLM training's memory column).",
        "points",
        spec,
    )


@view(160)
def usd_per_m_tokens(t: Tidy) -> View | None:
    """Dollars per million tokens (LLM training)."""
    if not has(t.points, "usd_per_m_units", "unit_per_device"):
        return None
    spec = bar_chart(
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


@view(170)
def experts(t: Tidy) -> View | None:
    """A mixture of experts' tokens/s per device with the all-to-all's share of its step
    (torchtitan's and Megatron's MoE figures)."""
    if not has(t.points, "experts", "unit_per_device"):
        return None
    spec = bar_chart(
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
