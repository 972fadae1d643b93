"""CIFAR-10 in its official python format: the pickled batches of cifar-10-python.tar.gz.

PATH is the folder cifar-10-batches-py (data_batch_1..5 and test_batch), a folder that
holds it, or the archive itself (read in place, nothing extracted). The batches are
pickles: they are read by an unpickler that builds NumPy arrays and plain data only, so
a file from anyone cannot run code. Files that match the official MD5 sums are marked
`official` in the result; anything else of the same layout (a generated test set) is
read alike and recorded as not official.
"""

from __future__ import annotations

import hashlib
import io
import pickle
import tarfile
from pathlib import Path
from typing import Any

import numpy as np

from bench.datasets import DataRef, Dataset, DatasetError
from bench.datasets.recipe import Recipe

DESCRIPTION = (
    "CIFAR-10's python batches: data_batch_1..data_batch_5 and test_batch (the folder "
    "cifar-10-batches-py of cifar-10-python.tar.gz), or that archive"
)
TRAIN = tuple(f"data_batch_{i}" for i in range(1, 6))
TEST = "test_batch"
FOLDER = "cifar-10-batches-py"
ARCHIVE = "cifar-10-python.tar.gz"
# The official files' MD5 sums (as torchvision checks them).
OFFICIAL_MD5 = {
    "data_batch_1": "c99cafc152244af753f735de768cd75f",
    "data_batch_2": "d4bba439e000b95fd0a9bffe97cbabec",
    "data_batch_3": "54ebc095f3ab1f0389bbae665268c751",
    "data_batch_4": "634d18415352ddfa80567beed471001a",
    "data_batch_5": "482c414d41f54cd18b22e5b47cb7c3cb",
    "test_batch": "40351d587109b95175f43aff81a1287e",
}
CLASSES = 10
MEAN = np.array([0.4914, 0.4822, 0.4465], np.float32)
STD = np.array([0.2470, 0.2435, 0.2616], np.float32)
# The DAWNBench-style CIFAR-10 recipe (Page's ResNet, 94% in 24 epochs): SGD with
# Nesterov momentum, a linear warm-up then a linear decay to zero over the run, weight
# decay 5e-4 and light label smoothing; the peak rate scales with the batch.
RECIPE = Recipe(
    lr_per_256=0.4, momentum=0.9, nesterov=True, weight_decay=5e-4,
    label_smoothing=0.2, warmup_fraction=0.2, schedule="linear",
)  # fmt: skip

# What the official pickles (written by Python 2 with NumPy) are made of, and what
# Python 3 writes for bytes in the same protocol (_codecs.encode); nothing else may be
# built while reading one.
_ALLOWED = {
    ("_codecs", "encode"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
}


class _ArraysOnly(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _ALLOWED:
            raise pickle.UnpicklingError(f"it asks for {module}.{name}, not NumPy data")
        return super().find_class(module, name)


def _batch(name: str, raw: bytes, where: str) -> tuple[np.ndarray, np.ndarray]:
    """(N, 32, 32, 3) uint8 images and (N,) labels from one pickled batch."""
    try:
        content = _ArraysOnly(io.BytesIO(raw), encoding="bytes").load()
    except Exception as error:  # any malformed pickle: the file and why, in one line
        raise DatasetError(f"data: {where} is not a CIFAR-10 python batch ({error})") from None
    if not isinstance(content, dict) or b"data" not in content or b"labels" not in content:
        raise DatasetError(f"data: {where} is not a CIFAR-10 python batch (no data and labels)")
    data, labels = content[b"data"], np.asarray(content[b"labels"])
    if not (isinstance(data, np.ndarray) and data.dtype == np.uint8 and data.ndim == 2
            and data.shape[1] == 3 * 32 * 32):  # fmt: skip
        raise DatasetError(f"data: {where}: data must be uint8 rows of 3072 values (3x32x32)")
    if labels.shape != (len(data),) or labels.dtype.kind not in "iu":
        raise DatasetError(f"data: {where}: expected {len(data)} whole-number labels")
    if len(labels) and not (labels.min() >= 0 and labels.max() < CLASSES):
        raise DatasetError(f"data: {where}: labels must lie in 0..{CLASSES - 1}")
    # Rows are channel-major (R plane, G, B): to HWC.
    return data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1), labels.astype(np.int64)


def _files(path: Path) -> tuple[dict[str, bytes], str]:
    """Each batch file's bytes, from the folder or the archive, and where they came from."""
    names = (*TRAIN, TEST)
    for folder in (path, path / FOLDER):
        if folder.is_dir() and all((folder / n).is_file() for n in names):
            return {n: (folder / n).read_bytes() for n in names}, str(folder)
    archive = path / ARCHIVE if path.is_dir() else path
    if archive.is_file():
        try:
            with tarfile.open(archive, "r:*") as tar:
                found = {Path(m.name).name: m for m in tar.getmembers() if m.isfile()}
                missing = [n for n in names if n not in found]
                if missing:
                    raise DatasetError(
                        f"data: {archive} lacks {', '.join(missing)}; expected {DESCRIPTION}"
                    )
                return {n: tar.extractfile(found[n]).read() for n in names}, str(archive)  # type: ignore[union-attr]
        except (tarfile.TarError, OSError, EOFError) as error:
            raise DatasetError(f"data: {archive} is not a readable archive ({error})") from None
    raise DatasetError(f"data: {path} holds no CIFAR-10 dataset; expected {DESCRIPTION}")


class Arrays:
    """A split held in memory: uint8 HWC images and their labels."""

    def __init__(self, name: str, images: np.ndarray, labels: np.ndarray) -> None:
        self.name, self.images, self.labels = name, images, labels

    def __len__(self) -> int:
        return len(self.labels)

    def sample(self, index: int, rng: np.random.Generator | None) -> tuple[np.ndarray, int]:
        image = self.images[index]
        if rng is not None:  # the standard CIFAR augmentation: pad-4 random crop, flip
            padded = np.pad(image, ((4, 4), (4, 4), (0, 0)), mode="reflect")
            top, left = rng.integers(0, 9, size=2)
            image = padded[top : top + 32, left : left + 32]
            if rng.random() < 0.5:
                image = image[:, ::-1]
        return (image.astype(np.float32) / 255 - MEAN) / STD, int(self.labels[index])


def open(path: str, spec) -> Dataset:
    if tuple(spec.sample_shape) != (3, 32, 32):
        raise DatasetError(
            f"data: CIFAR-10 images are 3x32x32; {spec.name} takes "
            f"{'x'.join(map(str, spec.sample_shape))} (use a CIFAR workload: cnn-s, "
            "resnet50-cifar)"
        )
    raw, source = _files(Path(path))
    parts = {n: _batch(n, raw[n], f"{source}/{n}") for n in raw}
    train = Arrays(
        "train",
        np.concatenate([parts[n][0] for n in TRAIN]),
        np.concatenate([parts[n][1] for n in TRAIN]),
    )
    if not len(train) or not len(parts[TEST][1]):
        raise DatasetError(f"data: {source} has an empty split; expected {DESCRIPTION}")
    md5 = {n: hashlib.md5(raw[n], usedforsecurity=False).hexdigest() for n in raw}
    digest = hashlib.sha256(b"".join(raw[n] for n in (*TRAIN, TEST))).hexdigest()
    return Dataset(
        ref=DataRef("cifar10", path),
        train=train,
        val=Arrays("val", *parts[TEST]),
        classes=CLASSES,
        facts={"sha256": digest, "official": md5 == OFFICIAL_MD5},
    )
