"""Synthetic batches as NumPy arrays, for the frameworks that take NHWC images (TensorFlow,
JAX). The same distributions as the PyTorch batches: standard-normal images, uniform
labels; for masked-token training, 15% of tokens masked and only those scored (-100
elsewhere, as PyTorch's ignore_index)."""

from __future__ import annotations

import numpy as np

IGNORE = -100


def image_batch(spec, point, batch_size: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    channels, height, width = spec.input_shape(point.seq_len)
    images = rng.standard_normal((batch_size, height, width, channels), dtype=np.float32)
    labels = rng.integers(0, spec.num_classes, (batch_size,), dtype=np.int32)
    return images, labels


def masked_token_batch(
    spec, point, batch_size: int, seed: int, mask_token: int, fraction: float
) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    shape = (batch_size, spec.input_shape(point.seq_len)[0])
    tokens = rng.integers(0, spec.num_classes, shape, dtype=np.int32)
    masked = rng.random(shape) < fraction
    targets = np.where(masked, tokens, IGNORE).astype(np.int32)
    return np.where(masked, mask_token, tokens).astype(np.int32), targets


def next_token_batch(spec, point, batch_size: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Random token sequences; each position's target is the next token (causal LM)."""
    rng = np.random.default_rng(seed)
    length = spec.input_shape(point.seq_len)[0] + 1
    tokens = rng.integers(0, spec.num_classes, (batch_size, length), dtype=np.int32)
    return tokens[:, :-1], tokens[:, 1:]
