"""The big Transformer in Flax, layer for layer torch.nn.Transformer as torch.py uses it
(the same parameter count): post-LN layers, ReLU feed-forward, a final layer norm on
each stack, one embedding shared by source, target and output layer."""

import flax.linen as nn
import jax
import jax.numpy as jnp

from bench.workloads._numpy import sinusoids
from bench.workloads._numpy import translation_batch as make_batch
from bench.workloads.transformer_big import (
    D_MODEL,
    DROPOUT,
    FFN,
    HEADS,
    LABEL_SMOOTHING,
    LAYERS,
    PAD,
)

__all__ = ["build_model", "loss", "make_batch"]

_EPS = 1e-5  # torch.nn.Transformer's layer-norm epsilon


class Layer(nn.Module):
    """An encoder layer, or with `cross` a decoder layer (causal self-attention, then
    attention over the encoder's output)."""

    cross: bool
    dtype: jnp.dtype

    @nn.compact
    def __call__(self, x, memory, train: bool):
        dropout = nn.Dropout(DROPOUT, deterministic=not train)

        def attention(queries, keys, mask=None):
            return nn.MultiHeadDotProductAttention(
                HEADS, dtype=self.dtype, dropout_rate=DROPOUT, deterministic=not train
            )(queries, keys, mask=mask)

        def residual(update):
            return nn.LayerNorm(_EPS, dtype=self.dtype)(x + dropout(update))

        causal = nn.make_causal_mask(x[..., 0]) if self.cross else None
        x = residual(attention(x, x, causal))
        if self.cross:
            x = residual(attention(x, memory))
        hidden = dropout(nn.relu(nn.Dense(FFN, dtype=self.dtype)(x)))
        return residual(nn.Dense(D_MODEL, dtype=self.dtype)(hidden))


class TransformerBig(nn.Module):
    vocab: int
    max_len: int
    dtype: jnp.dtype

    @nn.compact
    def __call__(self, pair, train: bool = True):
        # Scaled by sqrt(D_MODEL) on the way in, as torch.py initialises it.
        init = nn.initializers.normal(D_MODEL**-0.5)
        embedding = nn.Embed(self.vocab, D_MODEL, dtype=self.dtype, embedding_init=init)
        positions = jnp.asarray(sinusoids(self.max_len, D_MODEL))
        dropout = nn.Dropout(DROPOUT, deterministic=not train)

        def embed(tokens):
            scaled = embedding(tokens) * D_MODEL**0.5
            return dropout(scaled + positions[: tokens.shape[1]].astype(scaled.dtype))

        memory = embed(pair[:, 0])
        for _ in range(LAYERS):
            memory = Layer(False, self.dtype)(memory, None, train)
        memory = nn.LayerNorm(_EPS, dtype=self.dtype)(memory)
        x = embed(pair[:, 1])
        for _ in range(LAYERS):
            x = Layer(True, self.dtype)(x, memory, train)
        return embedding.attend(nn.LayerNorm(_EPS, dtype=self.dtype)(x))  # tied output layer


def build_model(spec, point, dtype) -> nn.Module:
    return TransformerBig(spec.num_classes, spec.max_seq_len, dtype)


def loss(logits, targets):
    """Label-smoothed cross-entropy (torch's: (1 - e) x the target's term + e x the mean
    over the vocabulary), averaged over the tokens that are not padding."""
    log_p = jax.nn.log_softmax(logits, axis=-1)
    target_term = -jnp.take_along_axis(log_p, targets[..., None], axis=-1)[..., 0]
    per_token = (1 - LABEL_SMOOTHING) * target_term - LABEL_SMOOTHING * log_p.mean(-1)
    scored = targets != PAD
    return (per_token * scored).sum() / jnp.maximum(scored.sum(), 1)
