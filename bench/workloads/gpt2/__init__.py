"""gpt2 and gpt2-medium: the workloads' specs (bench.workloads.base.WorkloadSpec); a module
beside this one builds the model in each framework that runs it."""

import functools
from typing import NamedTuple

from bench.result.mfu import decoder_flops
from bench.workloads._levers import DecoderSpec
from bench.workloads.base import Task


class Size(NamedTuple):
    hidden: int
    layers: int
    heads: int


# GPT-2's small (124 M parameters) and medium (355 M) sizes (Radford et al. 2019).
SIZES = {"gpt2": Size(768, 12, 12), "gpt2-medium": Size(1024, 24, 16)}
PARAMETERS = {"gpt2": 124_439_808, "gpt2-medium": 354_823_168}  # as published (tied)
CONTEXT = 1024  # learned positions: the longest sequence
VOCAB = 50_257  # GPT-2's byte-level BPE vocabulary
DROPOUT = 0.1  # GPT-2's, after the embeddings, attention's softmax, and each residual


def non_embedding_parameters(size: Size) -> int:
    """N of the decoder formula: every parameter but the two embedding lookups, plus the
    output layer (the token embedding, tied): nanoGPT's non-embedding count, which its
    MFU estimate uses (123,653,376 for GPT-2 small)."""
    h = size.hidden
    block = 4 * h * h + 4 * h + 2 * (4 * h * h) + 5 * h + 2 * 2 * h  # attention, MLP, 2 norms
    return size.layers * block + 2 * h + VOCAB * h  # + final norm + output layer


def flops(size: Size, seq_len: int) -> dict:
    """Training FLOPs by bench.result.mfu's decoder formula (6N + 12LHQT), as for llama3."""
    head_dim = size.hidden // size.heads
    return decoder_flops(non_embedding_parameters(size), size.layers, size.heads, head_dim,
                         seq_len)  # fmt: skip


WORKLOADS = tuple(
    DecoderSpec(
        name=name,
        description=(
            f"GPT-2 {'small' if name == 'gpt2' else 'medium'} decoder ({size.layers} layers, "
            f"hidden {size.hidden}) trained on next tokens; fused causal attention"
        ),
        task=Task.CAUSAL_LM,
        parameter_count=PARAMETERS[name],
        num_classes=VOCAB,
        default_batch_size=8 if name == "gpt2" else 4,
        epoch_samples=100_000,
        dataset="random token sequences",
        default_seq_len=1024,
        max_seq_len=CONTEXT,
        sharding="fsdp",  # over ranks, FSDP2 per block as llama3 (nanoGPT and llm.c: DDP)
        checkpointable=True,
        analytic_flops=functools.partial(flops, size),
        attention_dropout=DROPOUT,
    )
    for name, size in SIZES.items()
)
