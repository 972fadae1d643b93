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


def next_token_pairs(windows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A decoder's inputs and targets from windows of seq_len + 1 tokens of a token file
    (--data tokens:PATH), as int32 like the random ones: each target is the next token."""
    windows = windows.astype(np.int32)
    return windows[:, :-1], windows[:, 1:]


def translation_batch(spec, point, batch_size: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Source and target sentences of --seq-len tokens (never the padding id 0), stacked
    as inputs of shape (batch, 2, length): the source, then the target shifted right
    behind a start token. The targets are the target tokens themselves."""
    rng = np.random.default_rng(seed)
    length = spec.input_shape(point.seq_len)[0]
    source = rng.integers(1, spec.num_classes, (batch_size, length), dtype=np.int32)
    target = rng.integers(1, spec.num_classes, (batch_size, length + 1), dtype=np.int32)
    return np.stack([source, target[:, :-1]], axis=1), target[:, 1:]


def sinusoids(length: int, width: int) -> np.ndarray:
    """The Transformer's sinusoidal position table, (length, width) float32: sines in
    the even columns, cosines in the odd ones."""
    position = np.arange(length, dtype=np.float64)[:, None]
    rate = np.exp(np.arange(0, width, 2) * (-np.log(10_000.0) / width))
    table = np.zeros((length, width), dtype=np.float64)
    table[:, 0::2], table[:, 1::2] = np.sin(position * rate), np.cos(position * rate)
    return table.astype(np.float32)
