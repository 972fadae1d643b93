"""GPT-2 in MLX, the same layers and initialisation as torch.py. Attention is
mx.fast.scaled_dot_product_attention with a causal mask, MLX's fused kernel (no dropout
on the attention weights, which that kernel does not take: as jax.py)."""

import mlx.core as mx
import mlx.nn as nn

from bench.workloads._mlx import adamw as optimizer  # as the PyTorch side trains it
from bench.workloads._mlx import loss, normal_init
from bench.workloads._numpy import next_token_batch as make_batch
from bench.workloads.gpt2 import CONTEXT, DROPOUT, SIZES, Size

__all__ = ["build_model", "loss", "make_batch", "optimizer"]


class Block(nn.Module):
    def __init__(self, size: Size) -> None:
        super().__init__()
        self.heads = size.heads
        self.attention_norm = nn.LayerNorm(size.hidden, eps=1e-5)
        self.qkv = nn.Linear(size.hidden, 3 * size.hidden)
        self.attention_out = nn.Linear(size.hidden, size.hidden)
        self.mlp_norm = nn.LayerNorm(size.hidden, eps=1e-5)
        self.mlp_in = nn.Linear(size.hidden, 4 * size.hidden)
        self.mlp_out = nn.Linear(4 * size.hidden, size.hidden)
        self.dropout = nn.Dropout(DROPOUT)

    def __call__(self, x: mx.array) -> mx.array:
        batch, length, hidden = x.shape
        head_dim = hidden // self.heads
        q, k, v = (
            t.reshape(batch, length, self.heads, head_dim).transpose(0, 2, 1, 3)
            for t in mx.split(self.qkv(self.attention_norm(x)), 3, axis=-1)
        )
        attended = mx.fast.scaled_dot_product_attention(
            q, k, v, scale=head_dim**-0.5, mask="causal"
        )
        attended = attended.transpose(0, 2, 1, 3).reshape(batch, length, hidden)
        x = x + self.dropout(self.attention_out(attended))
        h = nn.gelu_approx(self.mlp_in(self.mlp_norm(x)))
        return x + self.dropout(self.mlp_out(h))


class GPT2(nn.Module):
    def __init__(self, vocab: int, size: Size) -> None:
        super().__init__()
        self.words = nn.Embedding(vocab, size.hidden)
        self.positions = nn.Embedding(CONTEXT, size.hidden)
        self.dropout = nn.Dropout(DROPOUT)
        self.layers = [Block(size) for _ in range(size.layers)]
        self.norm = nn.LayerNorm(size.hidden, eps=1e-5)
        normal_init(self)

    def __call__(self, tokens: mx.array) -> mx.array:
        x = self.words(tokens) + self.positions(mx.arange(tokens.shape[1]))
        x = self.dropout(x)
        for block in self.layers:
            x = block(x)
        return self.words.as_linear(self.norm(x))  # the output layer is the embedding (tied)


def build_model(spec, point) -> nn.Module:
    return GPT2(spec.num_classes, SIZES[spec.name])
