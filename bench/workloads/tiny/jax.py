"""tiny in JAX (Flax): build_model, loss, make_batch (bench.workloads.contract)."""

import flax.linen as nn
import jax.numpy as jnp

from bench.workloads._flax import loss, make_batch

__all__ = ["build_model", "loss", "make_batch"]


class Tiny(nn.Module):
    num_classes: int
    dtype: jnp.dtype

    @nn.compact
    def __call__(self, x, train: bool = True):
        x = nn.relu(nn.Conv(8, (3, 3), padding="SAME", dtype=self.dtype)(x))
        x = nn.max_pool(x, (2, 2), strides=(2, 2))
        return nn.Dense(self.num_classes, dtype=self.dtype)(x.reshape((x.shape[0], -1)))


def build_model(spec, point, dtype) -> nn.Module:
    return Tiny(spec.num_classes, dtype)
