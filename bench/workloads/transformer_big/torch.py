"""The big Transformer of "Attention Is All You Need", initialised locally: post-LN
encoder-decoder (torch.nn.Transformer), sinusoidal positions, one embedding shared by
source, target and output layer (scaled by sqrt(d_model)), label smoothing 0.1. The
training step is teacher forcing: the decoder reads the target shifted right."""

import math

import torch
import torch.nn.functional as F
from torch import nn

from bench.workloads._numpy import sinusoids
from bench.workloads.transformer_big import (
    D_MODEL,
    DROPOUT,
    FFN,
    HEADS,
    LABEL_SMOOTHING,
    LAYERS,
    PAD,
)


class TransformerBig(nn.Module):
    def __init__(self, vocab: int, max_len: int) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab, D_MODEL, padding_idx=PAD)
        # Scaled by sqrt(D_MODEL) on the way in, unit-sized there; logits of unit size out.
        nn.init.normal_(self.embedding.weight, std=D_MODEL**-0.5)
        with torch.no_grad():
            self.embedding.weight[PAD].zero_()
        self.transformer = nn.Transformer(
            D_MODEL, HEADS, LAYERS, LAYERS, FFN, DROPOUT, batch_first=True
        )
        self.dropout = nn.Dropout(DROPOUT)
        self.positions: torch.Tensor
        table = torch.from_numpy(sinusoids(max_len, D_MODEL))
        self.register_buffer("positions", table, persistent=False)

    def _embed(self, tokens: torch.Tensor) -> torch.Tensor:
        scaled = self.embedding(tokens) * math.sqrt(D_MODEL)
        return self.dropout(scaled + self.positions[: tokens.shape[1]])

    def forward(self, pair: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        source, target_in = pair
        causal = nn.Transformer.generate_square_subsequent_mask(
            target_in.shape[1], device=target_in.device, dtype=torch.bool
        )
        hidden = self.transformer(
            self._embed(source), self._embed(target_in), tgt_mask=causal, tgt_is_causal=True
        )
        return hidden @ self.embedding.weight.T


def build_model(spec, point) -> nn.Module:
    return TransformerBig(spec.num_classes, spec.max_seq_len)


def make_batch(spec, point, batch_size: int, generator: torch.Generator):
    """Source and target sentences of --seq-len tokens; the decoder reads the target
    shifted right behind a start token and predicts it."""
    seq_len = spec.input_shape(point.seq_len)[0]
    source = torch.randint(1, spec.num_classes, (batch_size, seq_len), generator=generator)
    target = torch.randint(1, spec.num_classes, (batch_size, seq_len + 1), generator=generator)
    return (source, target[:, :-1]), target[:, 1:]


def loss(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(
        outputs.flatten(0, 1).float(),
        targets.flatten(),
        ignore_index=PAD,
        label_smoothing=LABEL_SMOOTHING,
    )
