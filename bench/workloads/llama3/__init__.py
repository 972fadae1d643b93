"""Llama 3 decoders at published sizes (Meta's Llama 3.2 1B and Llama 3.1 8B), and a
tiny one of the same architecture for tests.

The sizes are a table of named arguments; the architecture is written once per
framework, in torch.py and jax.py (the same layers, names and initialisation). FLOPs
per token are counted by formula here (no model is built for it), so that MFU reads
the same for every size and framework.
"""

import functools
from typing import NamedTuple

from bench.result.mfu import decoder_flops
from bench.workloads._levers import DecoderSpec
from bench.workloads.base import Task

VOCAB = 128_256  # Llama 3's tiktoken-based vocabulary


class Size(NamedTuple):
    dim: int
    layers: int
    heads: int
    kv_heads: int  # grouped-query attention: each K/V head serves heads / kv_heads queries
    ffn: int  # SwiGLU's hidden width
    tied: bool  # the output layer is the embedding
    max_seq_len: int
    vocab: int = VOCAB
    rope_theta: float = 500_000.0
    norm_eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        return self.dim // self.heads


SIZES = {
    # Llama 3.2 1B (1,235,814,400 parameters, tied embeddings), context 131,072.
    "llama3-1b": Size(2048, 16, 32, 8, 8192, tied=True, max_seq_len=131_072),
    # Llama 3.1 8B (8,030,261,248 parameters), context 131,072.
    "llama3-8b": Size(4096, 32, 32, 8, 14_336, tied=False, max_seq_len=131_072),
    # The same code at toy sizes, for tests: trains in a second on a CPU.
    "llama3-tiny": Size(64, 2, 4, 2, 192, tied=False, max_seq_len=256, vocab=512),
}


def non_embedding_parameters(size: Size) -> int:
    """N of the formula: the parameters every token multiplies, forward and backward.
    The embedding table is a lookup, not a matmul; the output layer is a matmul
    (counted here also when it shares the embedding's weights, so a tied and an untied
    model of the same shape do the same work)."""
    dim, kv_dim = size.dim, size.kv_heads * size.head_dim
    attention = 2 * dim * dim + 2 * dim * kv_dim  # q, o; k, v
    block = attention + 3 * dim * size.ffn + 2 * dim  # SwiGLU's three; two RMSNorms
    return size.layers * block + dim + size.vocab * dim  # + final norm + output layer


def parameters(size: Size) -> int:
    """Every parameter: N of the formula, plus the embedding table unless the output
    layer is the embedding (tied)."""
    return non_embedding_parameters(size) + (0 if size.tied else size.vocab * size.dim)


# What training holds whatever the batch: fp32 weights and their fp32 gradients (FSDP2
# keeps the sharded parameters in fp32 and casts when it gathers; autocast on one
# device does the same) and AdamW's two fp32 moments. torch.py's optimizer is AdamW.
STATE_BYTES_PER_PARAMETER = 4 + 4 + 2 * 4


def _model_state(name: str):
    count = parameters(SIZES[name])

    def state() -> tuple[int, str]:
        return STATE_BYTES_PER_PARAMETER * count, (
            f"fp32 weights, gradients and AdamW's two moments "
            f"({STATE_BYTES_PER_PARAMETER} B x {count:,} parameters)"
        )

    return state


def flops(size: Size, seq_len: int) -> dict:
    """Training FLOPs by bench.result.mfu's decoder formula (6N + 12LHQT)."""
    n = non_embedding_parameters(size)
    return decoder_flops(n, size.layers, size.heads, size.head_dim, seq_len)


def flops_per_token(size: Size, seq_len: int) -> int:
    """Training FLOPs per token (forward and backward, 2 FLOPs per multiply-add)."""
    return flops(size, seq_len)["per_token"]


def _flops(name: str):
    return functools.partial(flops, SIZES[name])


_DESCRIPTIONS = {
    "llama3-1b": "Llama 3.2 1B",
    "llama3-8b": "Llama 3.1 8B",
    "llama3-tiny": "Llama 3 architecture at toy size (tests)",
}

WORKLOADS = tuple(
    DecoderSpec(
        name=name,
        description=(
            f"{_DESCRIPTIONS[name]} decoder ({size.layers} layers, dim {size.dim}, "
            f"{size.heads}/{size.kv_heads} query/KV heads), next-token loss; sharded FSDP-style"
        ),
        task=Task.CAUSAL_LM,
        parameter_count=parameters(size),  # as counted: 164,160 for llama3-tiny
        num_classes=size.vocab,
        default_batch_size=4 if name == "llama3-tiny" else 8,  # 8 GPUs: one sequence each
        epoch_samples=100_000,
        dataset="random token sequences",
        default_seq_len=8192 if name != "llama3-tiny" else 64,
        max_seq_len=size.max_seq_len,
        sharding="fsdp",
        checkpointable=True,
        analytic_flops=_flops(name),
        model_state=_model_state(name),
    )
    for name, size in SIZES.items()
)
