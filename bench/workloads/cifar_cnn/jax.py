"""cnn-s, cnn-m, cnn-l and cnn-xl in JAX (Flax): build_model, loss, make_batch
(bench.workloads.contract)."""

import flax.linen as nn
import jax.numpy as jnp

from bench.workloads._flax import loss, make_batch
from bench.workloads.cifar_cnn import ARCHITECTURES

__all__ = ["build_model", "loss", "make_batch"]


class CifarCnn(nn.Module):
    """TensorFlow's CNN tutorial network, widened per ARCHITECTURES (as torch.py)."""

    convs: tuple[int, ...]
    dense: int
    num_classes: int
    dtype: jnp.dtype

    @nn.compact
    def __call__(self, x, train: bool = True):
        for i, out in enumerate(self.convs):
            x = nn.relu(nn.Conv(out, (3, 3), padding="VALID", dtype=self.dtype)(x))
            if i < len(self.convs) - 1:
                x = nn.max_pool(x, (2, 2), strides=(2, 2))
        x = nn.relu(nn.Dense(self.dense, dtype=self.dtype)(x.reshape((x.shape[0], -1))))
        return nn.Dense(self.num_classes, dtype=self.dtype)(x)


def build_model(spec, point, dtype) -> nn.Module:
    convs, dense = ARCHITECTURES[spec.name]
    return CifarCnn(convs, dense, spec.num_classes, dtype)
