"""The Llama 3 decoder in MLX, layer for layer torch.py's: RMSNorm, rotary position
embeddings (Meta's interleaved pairs: nn.RoPE's traditional layout, theta from the
Size), grouped-query attention through mx.fast.scaled_dot_product_attention with a
causal mask (K/V heads shared without copying), SwiGLU feed-forward, no biases, the
output layer tied to the embedding where the Size says so. The same initialisation:
normal 0.02, each block's output projections (wo, w2) scaled by 1/sqrt(2 x layers),
norms one."""

import mlx.core as mx
import mlx.nn as nn

from bench.workloads._mlx import adamw as optimizer  # as the PyTorch side trains it
from bench.workloads._mlx import loss, normal_init
from bench.workloads._numpy import next_token_batch as make_batch
from bench.workloads.llama3 import SIZES, Size

__all__ = ["build_model", "loss", "make_batch", "optimizer"]


class Attention(nn.Module):
    def __init__(self, size: Size) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = size.heads, size.kv_heads, size.head_dim
        self.wq = nn.Linear(size.dim, size.heads * size.head_dim, bias=False)
        self.wk = nn.Linear(size.dim, size.kv_heads * size.head_dim, bias=False)
        self.wv = nn.Linear(size.dim, size.kv_heads * size.head_dim, bias=False)
        self.wo = nn.Linear(size.heads * size.head_dim, size.dim, bias=False)
        self.rope = nn.RoPE(size.head_dim, traditional=True, base=size.rope_theta)

    def __call__(self, x: mx.array) -> mx.array:
        batch, length, _ = x.shape

        def heads(t: mx.array, count: int) -> mx.array:
            return t.reshape(batch, length, count, self.head_dim).transpose(0, 2, 1, 3)

        q = self.rope(heads(self.wq(x), self.heads))
        k = self.rope(heads(self.wk(x), self.kv_heads))
        v = heads(self.wv(x), self.kv_heads)
        attended = mx.fast.scaled_dot_product_attention(
            q, k, v, scale=self.head_dim**-0.5, mask="causal"
        )
        return self.wo(attended.transpose(0, 2, 1, 3).reshape(batch, length, -1))


class FeedForward(nn.Module):
    """SwiGLU: w2(silu(w1 x) * w3 x)."""

    def __init__(self, size: Size) -> None:
        super().__init__()
        self.w1 = nn.Linear(size.dim, size.ffn, bias=False)
        self.w2 = nn.Linear(size.ffn, size.dim, bias=False)
        self.w3 = nn.Linear(size.dim, size.ffn, bias=False)

    def __call__(self, x: mx.array) -> mx.array:
        return self.w2(nn.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, size: Size) -> None:
        super().__init__()
        self.attention_norm = nn.RMSNorm(size.dim, eps=size.norm_eps)
        self.attention = Attention(size)
        self.ffn_norm = nn.RMSNorm(size.dim, eps=size.norm_eps)
        self.feed_forward = FeedForward(size)

    def __call__(self, x: mx.array) -> mx.array:
        x = x + self.attention(self.attention_norm(x))
        return x + self.feed_forward(self.ffn_norm(x))


class Llama(nn.Module):
    def __init__(self, size: Size) -> None:
        super().__init__()
        self.embedding = nn.Embedding(size.vocab, size.dim)
        self.layers = [Block(size) for _ in range(size.layers)]
        self.norm = nn.RMSNorm(size.dim, eps=size.norm_eps)
        if not size.tied:
            self.output = nn.Linear(size.dim, size.vocab, bias=False)
        self.tied = size.tied
        normal_init(self, scaled=("wo", "w2"), layers=size.layers)

    def __call__(self, tokens: mx.array) -> mx.array:
        x = self.embedding(tokens)
        for block in self.layers:
            x = block(x)
        x = self.norm(x)
        return self.embedding.as_linear(x) if self.tied else self.output(x)


def build_model(spec, point) -> nn.Module:
    return Llama(SIZES[spec.name])
