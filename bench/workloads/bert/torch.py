"""BERT (base or large) for masked-token training, initialised locally (nothing downloaded)."""

import torch
import torch.nn.functional as F
from torch import nn

from bench.workloads._torch import normal_init
from bench.workloads.bert import MASK_FRACTION, MASK_TOKEN, MAX_POSITIONS, SIZES, Size


class BertForMaskedLM(nn.Module):
    def __init__(self, vocab: int, size: Size) -> None:
        super().__init__()
        hidden = size.hidden
        self.words = nn.Embedding(vocab, hidden)
        self.positions = nn.Embedding(MAX_POSITIONS, hidden)
        self.segments = nn.Embedding(2, hidden)
        self.embed_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.dropout = nn.Dropout(0.1)
        layer = nn.TransformerEncoderLayer(
            hidden,
            size.heads,
            size.ffn,
            dropout=0.1,
            activation="gelu",
            batch_first=True,
            layer_norm_eps=1e-12,  # post-LN, as BERT
        )
        self.encoder = nn.TransformerEncoder(layer, size.layers, enable_nested_tensor=False)
        self.head = nn.Sequential(
            nn.Linear(hidden, hidden), nn.GELU(), nn.LayerNorm(hidden, eps=1e-12)
        )
        self.decoder = nn.Linear(hidden, vocab)
        self.decoder.weight = self.words.weight  # tied input and output embeddings, as BERT
        normal_init(self)  # BERT's initialisation

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.words(tokens) + self.positions(positions) + self.segments(torch.zeros_like(tokens))
        x = self.encoder(self.dropout(self.embed_norm(x)))
        return self.decoder(self.head(x))


def build_model(spec, point) -> nn.Module:
    return BertForMaskedLM(spec.num_classes, SIZES[spec.name])


def make_batch(spec, point, batch_size: int, generator: torch.Generator):
    seq_len = spec.input_shape(point.seq_len)[0]
    tokens = torch.randint(0, spec.num_classes, (batch_size, seq_len), generator=generator)
    masked = torch.rand((batch_size, seq_len), generator=generator) < MASK_FRACTION
    targets = torch.where(masked, tokens, torch.full_like(tokens, -100))  # -100: not scored
    return torch.where(masked, torch.full_like(tokens, MASK_TOKEN), tokens), targets


def loss(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(outputs.flatten(0, 1).float(), targets.flatten(), ignore_index=-100)
