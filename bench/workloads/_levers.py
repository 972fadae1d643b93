"""The decoders that take the LLM levers (--attention, --loss, --pad-vocab):
their torch model holds attention to one kernel (bench.workloads._attention) and
computes its own loss from its last hidden states (bench.workloads._loss). gpt2 and
llama3 declare this spec; the mixtures of experts do not yet."""

from __future__ import annotations

from dataclasses import dataclass

from bench.workloads.base import WorkloadSpec


@dataclass(frozen=True)
class DecoderSpec(WorkloadSpec):
    """A decoder whose torch model takes --attention, --loss and --pad-vocab."""

    llm_levers: bool = True
    attention_dropout: float = 0.0  # in training (gpt2: 0.1); some kernels take none
