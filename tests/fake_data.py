"""Small learnable datasets written in the exact published layouts (for tests).

Each class has its own colour; every image is that colour plus noise, so a small CNN
separates the classes within an epoch or two, and crops and flips keep the class."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np


def _images(rng: np.random.Generator, labels: np.ndarray, size: int, classes: int) -> np.ndarray:
    # Corners of the RGB cube, then mixes of them: colours far apart for 10 classes.
    levels = (40, 215, 128)
    base = np.array([(r, g, b) for r in levels for g in levels for b in levels][:classes])
    noise = rng.normal(0, 20, (len(labels), size, size, 3))
    return np.clip(base[labels][:, None, None, :] + noise, 0, 255).astype(np.uint8)


def write_cifar10(folder: Path, per_batch: int = 200, test: int = 200, seed: int = 0) -> Path:
    """data_batch_1..5 and test_batch in cifar-10-batches-py/, pickled as the official
    archive's: a dict of bytes keys, data as (N, 3072) uint8 rows, labels a list."""
    rng = np.random.default_rng(seed)
    out = folder / "cifar-10-batches-py"
    out.mkdir(parents=True, exist_ok=True)
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    for name in names:
        count = test if name == "test_batch" else per_batch
        labels = rng.integers(0, 10, count)
        rows = _images(rng, labels, 32, 10).transpose(0, 3, 1, 2).reshape(count, -1)
        content = {
            b"batch_label": name.encode(),
            b"labels": [int(x) for x in labels],
            b"data": rows,
            b"filenames": [f"{i}.png".encode() for i in range(count)],
        }
        (out / name).write_bytes(pickle.dumps(content, protocol=2))
    return out


def write_imagenet(folder: Path, classes: int = 4, train: int = 40, val: int = 10,
                   size: int = 40, seed: int = 0) -> Path:  # fmt: skip
    """train/ and val/ folders of class folders (synset-like names) of JPEGs."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    for split, count in (("train", train), ("val", val)):
        for label in range(classes):
            target = folder / split / f"n{label:08d}"
            target.mkdir(parents=True, exist_ok=True)
            for i, image in enumerate(_images(rng, np.full(count, label), size, classes)):
                Image.fromarray(image).save(target / f"img_{i}.JPEG", quality=90)
    return folder


# A short sequence of distinct ids below 512 (llama3-tiny's vocabulary), repeated: each
# token says which comes next, so a tiny decoder learns it within a few steps.
PERIOD = (3, 141, 59, 26, 5, 358, 97, 93, 238, 462, 64, 33, 83, 279, 50, 28, 88)
LLMC = {"gpt-2": (20240520, 1, "<u2"), "llama-3": (20240801, 7, "<u4")}


def periodic_tokens(count: int) -> np.ndarray:
    return np.resize(np.array(PERIOD, np.int64), count)


def write_tokens(path: Path, tokens: np.ndarray, layout: str = "nanogpt") -> Path:
    """Token ids as nanoGPT writes train.bin ('nanogpt': uint16, no header; 'u32': uint32,
    no header) or llm.c's write_datafile ('gpt-2', 'llama-3': a 256-int32 header of magic,
    version and count, then uint16 or uint32 tokens)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if layout in LLMC:
        magic, version, dtype = LLMC[layout]
        header = np.zeros(256, "<i4")
        header[:3] = magic, version, len(tokens)
        path.write_bytes(header.tobytes() + np.asarray(tokens, dtype).tobytes())
    else:
        path.write_bytes(np.asarray(tokens, "<u4" if layout == "u32" else "<u2").tobytes())
    return path
