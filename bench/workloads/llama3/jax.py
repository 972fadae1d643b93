"""The Llama 3 decoder in Flax, layer for layer torch.py's: RMSNorm, rotary position
embeddings (Meta's interleaved pairs, theta from the Size), grouped-query attention
through jax.nn.dot_product_attention(is_causal=True) (cuDNN's fused kernel where XLA
picks it; K/V heads shared without copying), SwiGLU feed-forward, no biases, the output
layer tied to the embedding where the Size says so. The same initialisation: normal
0.02, each block's output projections (wo, w2) scaled by 1/sqrt(2 x layers), norms one.

The model knows nothing of how it is sharded: the JAX session applies
bench.parallel.jax_fsdp to its parameters from outside (the spec's sharding="fsdp").
Activation checkpointing recomputes the blocks bench.parallel.checkpoint names for the
PyTorch model, each through flax.linen.remat (the parameters keep their names).
"""

from __future__ import annotations

import math
from functools import partial

import flax.linen as nn
import jax
import jax.numpy as jnp

from bench.parallel.checkpoint import recomputed, recomputed_count
from bench.workloads._flax import adamw as optimizer  # as the PyTorch side trains it
from bench.workloads._flax import loss
from bench.workloads._numpy import next_token_batch as make_batch
from bench.workloads._numpy import next_token_pairs as token_batch
from bench.workloads.llama3 import SIZES, Size

__all__ = ["build_model", "loss", "make_batch", "optimizer", "token_batch"]


def rotary_angles(size: Size, length: int):
    """cos and sin of each position's angle per frequency pair: (length, head_dim/2) each,
    for the positions used only (the 1B's full table of 131,072 would be a 32 MB constant)."""
    half = size.head_dim // 2
    frequencies = size.rope_theta ** (-jnp.arange(half, dtype=jnp.float32) / half)
    angles = jnp.outer(jnp.arange(length, dtype=jnp.float32), frequencies)
    return jnp.cos(angles), jnp.sin(angles)


def rotate(x, cos, sin):
    """Rotary embedding of (batch, length, heads, head_dim), dimension pairs (2i, 2i+1)
    rotated by position x frequency i (Meta's interleaved layout), in float32."""
    pairs = x.astype(jnp.float32).reshape(*x.shape[:-1], -1, 2)
    cos, sin = cos[None, :, None, :], sin[None, :, None, :]
    even, odd = pairs[..., 0], pairs[..., 1]
    rotated = jnp.stack((even * cos - odd * sin, even * sin + odd * cos), axis=-1)
    return rotated.reshape(x.shape).astype(x.dtype)


class RMSNorm(nn.Module):
    eps: float
    dtype: jnp.dtype

    @nn.compact
    def __call__(self, x):
        weight = self.param("weight", nn.initializers.ones, (x.shape[-1],))
        wide = x.astype(jnp.float32)
        normed = wide * jax.lax.rsqrt(jnp.mean(wide * wide, axis=-1, keepdims=True) + self.eps)
        return normed.astype(self.dtype) * weight.astype(self.dtype)


def _dense(features: int, name: str, dtype, std: float = 0.02) -> nn.Dense:
    return nn.Dense(features, use_bias=False, dtype=dtype, name=name,
                    kernel_init=nn.initializers.normal(std))  # fmt: skip


class Attention(nn.Module):
    size: Size
    dtype: jnp.dtype

    @nn.compact
    def __call__(self, x, cos, sin):
        size, (batch, length, _) = self.size, x.shape
        heads, kv_heads, head_dim = size.heads, size.kv_heads, size.head_dim
        q = _dense(heads * head_dim, "wq", self.dtype)(x).reshape(batch, length, heads, head_dim)
        k = _dense(kv_heads * head_dim, "wk", self.dtype)(x)
        v = _dense(kv_heads * head_dim, "wv", self.dtype)(x)
        k, v = (t.reshape(batch, length, kv_heads, head_dim) for t in (k, v))
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        # Grouped-query: each K/V head serves heads / kv_heads query heads.
        attended = jax.nn.dot_product_attention(q, k, v, is_causal=True)
        depth_std = 0.02 / math.sqrt(2 * size.layers)
        return _dense(size.dim, "wo", self.dtype, depth_std)(attended.reshape(batch, length, -1))


class FeedForward(nn.Module):
    """SwiGLU: w2(silu(w1 x) * w3 x)."""

    size: Size
    dtype: jnp.dtype

    @nn.compact
    def __call__(self, x):
        dense = partial(_dense, dtype=self.dtype)
        hidden = nn.silu(dense(self.size.ffn, "w1")(x)) * dense(self.size.ffn, "w3")(x)
        return dense(self.size.dim, "w2", std=0.02 / math.sqrt(2 * self.size.layers))(hidden)


class Block(nn.Module):
    size: Size
    dtype: jnp.dtype

    @nn.compact
    def __call__(self, x, cos, sin):
        norm = partial(RMSNorm, self.size.norm_eps, self.dtype)
        x = x + Attention(self.size, self.dtype, name="attention")(
            norm(name="attention_norm")(x), cos, sin
        )
        return x + FeedForward(self.size, self.dtype, name="feed_forward")(norm(name="ffn_norm")(x))


class Llama(nn.Module):
    size: Size
    dtype: jnp.dtype = jnp.float32
    checkpointing: str = "none"  # bench.parallel.checkpoint.MODES

    @nn.compact
    def __call__(self, tokens, train: bool = True):  # train: no dropout, nothing differs
        size = self.size
        embedding = nn.Embed(size.vocab, size.dim, dtype=self.dtype, name="embedding",
                             embedding_init=nn.initializers.normal(0.02))  # fmt: skip
        x = embedding(tokens)
        cos, sin = rotary_angles(size, tokens.shape[1])
        remat = nn.remat(Block)
        for index in range(size.layers):
            block = remat if recomputed(self.checkpointing, index) else Block
            x = block(size, self.dtype, name=f"layers_{index}")(x, cos, sin)
        x = RMSNorm(size.norm_eps, self.dtype, name="norm")(x)
        if size.tied:
            return embedding.attend(x)
        return _dense(size.vocab, "output", self.dtype)(x)


def build_model(spec, point, dtype) -> nn.Module:
    return Llama(SIZES[spec.name], dtype, point.activation_checkpointing)


def checkpointed_blocks(spec, point) -> int:
    return recomputed_count(point.activation_checkpointing, SIZES[spec.name].layers)
