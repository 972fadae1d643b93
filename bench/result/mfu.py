"""Model FLOPs utilisation of one measured repeat, for workloads whose FLOPs are a
formula (WorkloadSpec.analytic_flops: LLMs' 6N + attention).

MFU = the formula's FLOPs per token x tokens per second / the peak FLOP/s of the
devices that trained (bench/data/peak_flops.json through bench.result.catalog): on
accelerators the peak of one device times the devices (torch's ranks, or every local
device JAX and TensorFlow spread one process over); on a CPU the whole processor's
peak (its ranks or emulated devices share it) times the machines. Where no peak is
known (most CPUs at bf16, an unknown device) MFU is None with the reason: nothing is
estimated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bench.result import catalog
from bench.stats.estimate import throughput

if TYPE_CHECKING:
    from bench.config.run_config import PointConfig

DECODER_FORMULA = (
    "6N+12LHQT: 6 x non-embedding parameters (every matmul weight, the output layer "
    "included even when tied) + 12 x layers x heads x head_dim x seq_len (attention's "
    "score and value matmuls, forward and backward, causal attention NOT halved: "
    "torchtitan's and PaLM's convention)"
)


def decoder_flops(
    non_embedding: int, layers: int, heads: int, head_dim: int, seq_len: int
) -> dict[str, Any]:
    """A decoder's training FLOPs by DECODER_FORMULA (2 FLOPs per multiply-add), per
    token and per sample of `seq_len` tokens: what WorkloadSpec.analytic_flops returns."""
    per_token = 6 * non_embedding + 12 * layers * heads * head_dim * seq_len
    return {
        "formula": DECODER_FORMULA,
        "per_token": per_token,
        "per_sample": per_token * seq_len,
        "non_embedding_parameters": non_embedding,
    }


MOE_FORMULA = (
    "6N_active+12LHQT: 6 x active non-embedding parameters (the router, the top-k "
    "experts a token goes to, attention, norms and the output layer; not the experts it "
    "skips) + 12 x layers x heads x head_dim x seq_len (attention, causal NOT halved): "
    "torchtitan's convention for mixtures of experts"
)


def moe_flops(
    active_non_embedding: int, layers: int, heads: int, head_dim: int, seq_len: int
) -> dict[str, Any]:
    """A mixture of experts' training FLOPs by MOE_FORMULA: the decoder formula over
    the parameters one token multiplies, so that MFU counts work done, not weights held."""
    flops = decoder_flops(active_non_embedding, layers, heads, head_dim, seq_len)
    del flops["non_embedding_parameters"]
    return {
        **flops,
        "formula": MOE_FORMULA,
        "active_non_embedding_parameters": active_non_embedding,
    }


def _peak(
    point: PointConfig, environment: dict[str, Any] | None, devices: int
) -> tuple[float | None, str]:
    """Peak FLOP/s of the devices the point trained on, and where it comes from."""
    # float8 training is measured against the dense bf16 peak, as torchtitan reports it:
    # its attention, norms and output layer stay in bf16.
    precision = "bf16" if point.precision == "fp8" else point.precision
    machine_peak, source = catalog.peak_flops(environment, precision)
    if machine_peak is None:
        return None, source
    if precision != point.precision:
        source = f"{source} (bf16 peak for an fp8 run)"
    accelerator = (environment or {}).get("accelerator") or {}
    count = accelerator.get("accelerator_count") or 0
    if accelerator.get("accelerator") and count:
        return machine_peak / count * devices, f"{source}; x {devices} device(s)"
    return machine_peak * point.nnodes, f"{source}; the whole CPU, shared by its ranks"


def record(
    point: PointConfig,
    step_times_s: list[float],
    environment: dict[str, Any] | None,
    devices: int | None = None,
) -> dict[str, Any] | None:
    """What a point's details hold about its FLOPs and MFU (None: not a formula workload).
    devices: how many trained it together (the session's count; else the point's ranks)."""
    flops = point.spec.flops(point.seq_len)
    if flops is None:
        return None
    seq_len = point.spec.input_shape(point.seq_len)[0]
    result: dict[str, Any] = {
        "formula": flops["formula"],
        "flops_per_token": flops["per_token"],
        "value": None,
        "reason": None,
        "measured_over": "this repeat's measured steps (the first repeat's where several ran)",
    }
    if not step_times_s:
        result["reason"] = "no measured steps"
        return result
    tokens_per_s = throughput(point.batch_size * seq_len, step_times_s)
    achieved = flops["per_token"] * tokens_per_s
    devices = devices or point.ranks
    peak, source = _peak(point, environment, devices)
    result.update(
        tokens_per_s=tokens_per_s,
        tokens_per_s_per_device=tokens_per_s / devices,
        achieved_flops=achieved,
        peak_flops=peak,
        peak_source=source,
        devices=devices,
    )
    if peak is None:
        result["reason"] = source
    else:
        result["value"] = achieved / peak
    return result
