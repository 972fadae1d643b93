"""Mixture-of-experts decoders at published shapes (OLMoE-1B-7B, GPT-OSS-20B), and a
tiny one of the same code for tests and two CPU ranks.

Each block's feed-forward is a mixture of SwiGLU experts behind a top-k softmax router
(torch.py); the rest is a Llama-style decoder (RMSNorm, rotary positions, grouped-query
attention). Parameter counts (total, and active: what one token multiplies) and the
FLOPs formula are computed here from the shape, so that MFU counts active parameters
only (torchtitan's convention for MoE) and no model is built for it.
"""

import functools
from dataclasses import dataclass
from typing import NamedTuple

from bench.result.mfu import moe_flops
from bench.util.errors import UsageError
from bench.util.units import format_bytes
from bench.workloads.base import Task, WorkloadSpec


class Size(NamedTuple):
    dim: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    experts: int
    top_k: int  # experts each token goes to
    expert_ffn: int  # each expert's SwiGLU hidden width
    vocab: int
    max_seq_len: int
    bias: bool = False  # attention, expert and router biases (GPT-OSS has them)
    qk_norm: bool = False  # RMSNorm over the whole q and k projections (OLMoE)
    renormalize: bool = False  # top-k weights rescaled to sum to one (GPT-OSS)
    balance_coef: float = 0.01  # the load-balancing loss's weight (OLMoE: 0.01)
    z_coef: float = 0.0  # the router z-loss's weight (OLMoE: 0.001; 0: none)
    capacity_factor: float | None = None  # None: dropless
    rope_theta: float = 10_000.0
    norm_eps: float = 1e-5


SIZES = {
    # OLMoE-1B-7B (allenai/OLMoE-1B-7B-0924): 6,919,161,856 parameters, 1.28B active.
    "olmoe-1b-7b": Size(2048, 16, 16, 16, 128, experts=64, top_k=8, expert_ffn=1024,
                        vocab=50_304, max_seq_len=4096, qk_norm=True, z_coef=0.001),
    # GPT-OSS-20B (openai/gpt-oss-20b): 20.91B parameters, 3.61B active (the model card's
    # count: every parameter one token multiplies but the embedding lookup). Differences
    # from the published model: docs/llm.md ("Mixtures of experts").
    "gpt-oss-20b": Size(2880, 24, 64, 8, 64, experts=32, top_k=4, expert_ffn=2880,
                        vocab=201_088, max_seq_len=131_072, bias=True, renormalize=True,
                        rope_theta=150_000.0),
    # The same code at toy sizes: seconds on a CPU, for tests and two gloo ranks.
    "moe-tiny": Size(64, 2, 4, 2, 16, experts=8, top_k=2, expert_ffn=32, vocab=512,
                     max_seq_len=256, z_coef=0.001),
}  # fmt: skip


def check_size(name: str, size: Size) -> None:
    """A shape that cannot route: one line naming what is wrong and what is allowed."""
    if not 1 <= size.top_k <= size.experts:
        raise UsageError(
            f"{name}: top_k {size.top_k} must be between 1 and its {size.experts} experts"
        )
    if size.heads % size.kv_heads:
        raise UsageError(f"{name}: {size.heads} heads do not split over {size.kv_heads} KV heads")
    if size.capacity_factor is not None and not size.capacity_factor > 0:
        raise UsageError(f"{name}: capacity_factor {size.capacity_factor!r} must be above 0")


def _attention(size: Size) -> int:
    q, kv = size.heads * size.head_dim, size.kv_heads * size.head_dim
    weights = 2 * size.dim * q + 2 * size.dim * kv  # q, o; k, v
    biases = (q + 2 * kv + size.dim) if size.bias else 0
    return weights + biases + ((q + kv) if size.qk_norm else 0)


def _expert(size: Size) -> int:
    """One SwiGLU expert: gate and up (dim x ffn each), down (ffn x dim), and biases."""
    biases = (2 * size.expert_ffn + size.dim) if size.bias else 0
    return 3 * size.dim * size.expert_ffn + biases


def _block(size: Size, experts: int) -> int:
    router = size.dim * size.experts + (size.experts if size.bias else 0)
    return _attention(size) + router + experts * _expert(size) + 2 * size.dim  # + 2 norms


def parameters(size: Size) -> int:
    """Every parameter (untied embedding and output layer)."""
    return size.layers * _block(size, size.experts) + size.dim + 2 * size.vocab * size.dim


def active_parameters(size: Size) -> int:
    """The parameters one token multiplies (top_k experts of each block), embedding and
    output layer included: OLMoE's 'active' count."""
    return size.layers * _block(size, size.top_k) + size.dim + 2 * size.vocab * size.dim


def active_non_embedding(size: Size) -> int:
    """N of the formula: the active parameters but the embedding lookup (the output
    layer is a matmul and counts): GPT-OSS's model card's 'active' count."""
    return active_parameters(size) - size.vocab * size.dim


# fp32 weights and gradients, AdamW's two fp32 moments (as llama3).
STATE_BYTES_PER_PARAMETER = 4 + 4 + 2 * 4


GPU_BYTES = 80 * 2**30  # the devices MoE training is sized by (H100, A100 80 GB)


def _model_state(name: str):
    count = parameters(SIZES[name])

    def state() -> tuple[int, str]:
        total = STATE_BYTES_PER_PARAMETER * count
        gpus = -(-total // GPU_BYTES)
        return total, (
            f"fp32 weights, gradients and AdamW's two moments "
            f"({STATE_BYTES_PER_PARAMETER} B x {count:,} parameters, every expert: "
            f"{format_bytes(total)} in all, {gpus} GPU(s) of 80 GiB at the very least)"
        )

    return state


def flops(size: Size, seq_len: int) -> dict:
    """Training FLOPs by bench.result.mfu's MoE formula (6 x active N + 12LHQT)."""
    return moe_flops(active_non_embedding(size), size.layers, size.heads, size.head_dim,
                     seq_len)  # fmt: skip


_DESCRIPTIONS = {
    "olmoe-1b-7b": "OLMoE-1B-7B",
    "gpt-oss-20b": "GPT-OSS-20B's shape",
    "moe-tiny": "Mixture of experts at toy size (tests)",
}

for _name, _size in SIZES.items():
    check_size(_name, _size)


@dataclass(frozen=True)
class MoESpec(WorkloadSpec):
    """A workload spec that says how many experts each block has and how many a token
    goes to (what --expert-parallel is checked against, bench.config.run_config)."""

    experts: int = 0
    top_k: int = 0


WORKLOADS = tuple(
    MoESpec(
        name=name,
        description=(
            f"{_DESCRIPTIONS[name]} decoder ({size.layers} layers, dim {size.dim}, "
            f"{size.experts} experts top-{size.top_k}), next-token loss + load balance; "
            "sharded FSDP-style, experts over ranks with --expert-parallel"
        ),
        task=Task.CAUSAL_LM,
        parameter_count=parameters(size),  # as counted: 189,760 for moe-tiny
        num_classes=size.vocab,
        default_batch_size=4 if name == "moe-tiny" else 8,
        epoch_samples=100_000,
        dataset="random token sequences",
        default_seq_len=64 if name == "moe-tiny" else 4096,
        max_seq_len=size.max_seq_len,
        sharding="fsdp",
        checkpointable=True,
        analytic_flops=functools.partial(flops, size),
        model_state=_model_state(name),
        experts=size.experts,
        top_k=size.top_k,
    )
    for name, size in SIZES.items()
)
