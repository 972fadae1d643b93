"""The order, augmentation and batching every framework shares.

Epoch E of seed S visits the training samples in one permutation, and sample i is
augmented by a generator seeded with (S, E, i): the same images in the same order
whichever framework or how many loader workers. `batches` is the host pipeline of the
frameworks without a loader of their own here (JAX): a thread pool that decodes and
augments whole batches ahead of the step that needs them.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from bench.datasets import DatasetError, Split


def order(length: int, seed: int, epoch: int) -> np.ndarray:
    return np.random.default_rng([seed, epoch]).permutation(length)


def sample_rng(seed: int, epoch: int, index: int) -> np.random.Generator:
    return np.random.default_rng([seed, epoch, index, 1])


def indices(
    split: Split, batch_size: int, seed: int, epoch: int, train: bool, rank: int = 0, ranks: int = 1
) -> list[np.ndarray]:
    """The samples of each batch: training drops the last partial batch (every step
    has one shape), evaluation keeps it (every sample counts once).

    `batch_size` is the GLOBAL batch. Over several ranks, training gives each rank its
    equal slice of every global batch, so together they train the very batches of one
    process; evaluation gives each rank a contiguous 1/ranks of the split."""
    share = batch_size // ranks
    if train:
        visit = order(len(split), seed, epoch)
        stop = len(visit) - len(visit) % batch_size
        return [visit[start + rank * share : start + (rank + 1) * share]
                for start in range(0, stop, batch_size)]  # fmt: skip
    visit = np.array_split(np.arange(len(split)), ranks)[rank]
    return [visit[start : start + share] for start in range(0, len(visit), share)]


def make_batch(
    split: Split, chosen: np.ndarray, seed: int, epoch: int, train: bool, pad_to: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """(images NHWC float32, labels int32) of the chosen samples; padded to `pad_to`
    samples with copies of the last, labelled -1 (no prediction matches them), where a
    compiled step needs every batch whole."""
    samples = [
        split.sample(int(i), sample_rng(seed, epoch, int(i)) if train else None) for i in chosen
    ]
    images = np.stack([s[0] for s in samples])
    labels = np.array([s[1] for s in samples], np.int32)
    missing = pad_to - len(labels)
    if missing > 0:
        images = np.concatenate([images, np.repeat(images[-1:], missing, axis=0)])
        labels = np.concatenate([labels, np.full(missing, -1, np.int32)])
    return images, labels


def batches(
    split: Split, batch_size: int, *, seed: int, epoch: int, train: bool, workers: int
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Host batches, made by `workers` threads ahead of use (0: made when asked for).
    Every batch is whole: evaluation pads its last one (see make_batch)."""
    plan = indices(split, batch_size, seed, epoch, train)
    if workers == 0:
        for chosen in plan:
            yield make_batch(split, chosen, seed, epoch, train, batch_size)
        return
    pool = ThreadPoolExecutor(workers, thread_name_prefix="bench-data")
    try:
        pending: deque = deque()
        for chosen in plan:
            pending.append(pool.submit(make_batch, split, chosen, seed, epoch, train, batch_size))
            if len(pending) > workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


_MESSAGE = re.compile(r"DatasetError: (data: [^\n]*)")


def reraise(error: BaseException) -> None:
    """A DatasetError raised inside a loader's worker (a DataLoader process, a tf.data
    function) reaches the main process wrapped in the loader's own error and traceback:
    raise it again as the one line it was."""
    found = _MESSAGE.search(str(error))
    if found:
        raise DatasetError(found.group(1)) from None
