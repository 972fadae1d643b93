"""ViT-B/16 in Flax, layer for layer torchvision's (the same parameter count)."""

import flax.linen as nn
import jax.numpy as jnp

from bench.workloads._flax import loss, make_batch
from bench.workloads.vit_b16 import EPS, HEADS, HIDDEN, LAYERS, MLP, PATCH

__all__ = ["build_model", "loss", "make_batch"]


class EncoderLayer(nn.Module):
    dtype: jnp.dtype

    @nn.compact
    def __call__(self, x):
        h = nn.LayerNorm(EPS, dtype=self.dtype)(x)
        x = x + nn.MultiHeadDotProductAttention(HEADS, dtype=self.dtype)(h)
        h = nn.LayerNorm(EPS, dtype=self.dtype)(x)
        h = nn.Dense(HIDDEN, dtype=self.dtype)(nn.gelu(nn.Dense(MLP, dtype=self.dtype)(h), False))
        return x + h


class VisionTransformer(nn.Module):
    classes: int
    dtype: jnp.dtype

    @nn.compact
    def __call__(self, images, train: bool = True):
        x = nn.Conv(HIDDEN, (PATCH, PATCH), PATCH, "VALID", dtype=self.dtype)(images)
        x = x.reshape(x.shape[0], -1, HIDDEN)  # (batch, patches, hidden)
        token = self.param("class_token", nn.initializers.zeros, (1, 1, HIDDEN))
        x = jnp.concatenate(
            [jnp.broadcast_to(token, (x.shape[0], 1, HIDDEN)).astype(x.dtype), x], 1
        )
        positions = self.param("positions", nn.initializers.normal(0.02), (1, *x.shape[1:]))
        x = x + positions.astype(x.dtype)
        for _ in range(LAYERS):
            x = EncoderLayer(self.dtype)(x)
        x = nn.LayerNorm(EPS, dtype=self.dtype)(x)
        return nn.Dense(self.classes, dtype=self.dtype)(x[:, 0])


def build_model(spec, point, dtype) -> nn.Module:
    return VisionTransformer(spec.num_classes, dtype)
