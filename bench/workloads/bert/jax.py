"""BERT (base or large) for masked-token training in Flax, the same layers as torch.py."""

import flax.linen as nn
import jax.numpy as jnp
import optax

from bench.workloads._numpy import IGNORE, masked_token_batch
from bench.workloads.bert import MASK_FRACTION, MASK_TOKEN, MAX_POSITIONS, SIZES, Size

_EPS = 1e-12  # BERT's layer-norm epsilon


class EncoderLayer(nn.Module):
    """Post-LN transformer layer, as BERT and torch.nn.TransformerEncoderLayer."""

    size: Size
    dtype: jnp.dtype

    @nn.compact
    def __call__(self, x, train: bool):
        dropout = nn.Dropout(0.1, deterministic=not train)
        attended = nn.MultiHeadDotProductAttention(
            self.size.heads, dtype=self.dtype, dropout_rate=0.1, deterministic=not train
        )(x)
        x = nn.LayerNorm(_EPS, dtype=self.dtype)(x + dropout(attended))
        hidden = nn.gelu(nn.Dense(self.size.ffn, dtype=self.dtype)(x), approximate=False)
        hidden = nn.Dense(self.size.hidden, dtype=self.dtype)(hidden)
        return nn.LayerNorm(_EPS, dtype=self.dtype)(x + dropout(hidden))


class BertForMaskedLM(nn.Module):
    vocab: int
    size: Size
    dtype: jnp.dtype

    @nn.compact
    def __call__(self, tokens, train: bool = True):
        hidden = self.size.hidden
        words = nn.Embed(self.vocab, hidden, dtype=self.dtype)
        positions = nn.Embed(MAX_POSITIONS, hidden, dtype=self.dtype)(jnp.arange(tokens.shape[1]))
        segments = nn.Embed(2, hidden, dtype=self.dtype)(jnp.zeros_like(tokens))
        x = words(tokens) + positions[None] + segments
        x = nn.Dropout(0.1, deterministic=not train)(nn.LayerNorm(_EPS, dtype=self.dtype)(x))
        for _ in range(self.size.layers):
            x = EncoderLayer(self.size, self.dtype)(x, train)
        x = nn.gelu(nn.Dense(hidden, dtype=self.dtype)(x), approximate=False)
        x = nn.LayerNorm(_EPS, dtype=self.dtype)(x)
        # The output projection is the word embedding, transposed (tied, as BERT).
        bias = self.param("decoder_bias", nn.initializers.zeros, (self.vocab,))
        return words.attend(x) + bias.astype(self.dtype)


def build_model(spec, point, dtype) -> nn.Module:
    return BertForMaskedLM(spec.num_classes, SIZES[spec.name], dtype)


def make_batch(spec, point, batch_size: int, seed: int):
    return masked_token_batch(spec, point, batch_size, seed, MASK_TOKEN, MASK_FRACTION)


def loss(logits, targets):
    """Mean cross-entropy over the masked tokens only."""
    scored = targets != IGNORE
    per_token = optax.softmax_cross_entropy_with_integer_labels(
        logits, jnp.where(scored, targets, 0)
    )
    return (per_token * scored).sum() / jnp.maximum(scored.sum(), 1)
