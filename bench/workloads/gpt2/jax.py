"""GPT-2 in Flax, the same layers and initialisation as torch.py. Attention is
jax.nn.dot_product_attention with is_causal=True: cuDNN's fused kernel where XLA picks
it (no dropout on the attention weights, which that kernel does not take). Activation
checkpointing recomputes the blocks bench.parallel.checkpoint names, through
flax.linen.remat, as llama3's Flax model does."""

from functools import partial

import flax.linen as nn
import jax
import jax.numpy as jnp

from bench.parallel.checkpoint import recomputed, recomputed_count
from bench.workloads._flax import adamw as optimizer  # as the PyTorch side trains it
from bench.workloads._flax import loss
from bench.workloads._numpy import next_token_batch as make_batch
from bench.workloads._numpy import next_token_pairs as token_batch
from bench.workloads.gpt2 import CONTEXT, SIZES, Size

__all__ = ["build_model", "checkpointed_blocks", "loss", "make_batch", "optimizer", "token_batch"]

_init = nn.initializers.normal(0.02)  # GPT-2's N(0, 0.02); biases start at zero


class Block(nn.Module):
    size: Size
    dtype: jnp.dtype
    train: bool  # an attribute, not an argument: nn.remat then needs no static argument

    @nn.compact
    def __call__(self, x):
        hidden, heads = self.size.hidden, self.size.heads
        dense = partial(nn.DenseGeneral, dtype=self.dtype, kernel_init=_init)
        dropout = nn.Dropout(0.1, deterministic=not self.train)
        h = nn.LayerNorm(1e-5, dtype=self.dtype)(x)
        q, k, v = (dense((heads, hidden // heads))(h) for _ in range(3))
        attended = jax.nn.dot_product_attention(q, k, v, is_causal=True)
        x = x + dropout(dense(hidden, axis=(-2, -1))(attended))
        h = nn.LayerNorm(1e-5, dtype=self.dtype)(x)
        h = nn.gelu(dense(4 * hidden)(h), approximate=True)
        return x + dropout(dense(hidden)(h))


class GPT2(nn.Module):
    vocab: int
    size: Size
    dtype: jnp.dtype
    checkpointing: str = "none"  # bench.parallel.checkpoint.MODES, as torch.py's blocks

    @nn.compact
    def __call__(self, tokens, train: bool = True):
        words = nn.Embed(self.vocab, self.size.hidden, dtype=self.dtype, embedding_init=_init)
        positions = nn.Embed(CONTEXT, self.size.hidden, dtype=self.dtype, embedding_init=_init)
        x = words(tokens) + positions(jnp.arange(tokens.shape[1]))[None]
        x = nn.Dropout(0.1, deterministic=not train)(x)
        remat = nn.remat(Block)
        for index in range(self.size.layers):
            block = remat if recomputed(self.checkpointing, index) else Block
            x = block(self.size, self.dtype, train, name=f"Block_{index}")(x)
        return words.attend(nn.LayerNorm(1e-5, dtype=self.dtype)(x))  # tied output layer


def build_model(spec, point, dtype) -> nn.Module:
    return GPT2(spec.num_classes, SIZES[spec.name], dtype, point.activation_checkpointing)


def checkpointed_blocks(spec, point) -> int:
    return recomputed_count(point.activation_checkpointing, SIZES[spec.name].layers)
