"""ImageNet-1k (or any set of the same layout) as JPEG files in class folders.

PATH holds train/ and val/, each with one folder per class (the synset name, e.g.
n01440764) of JPEG images: the usual layout after the validation images are sorted
into class folders. Classes are the sorted folder names of train/; val/ may hold only
those. Images are decoded on the host with Pillow and cropped to the workload's input
size: a random resized crop and a flip for training (Inception-style, as torchvision's
RandomResizedCrop), the shorter side resized to 8/7 of the input and a centre crop for
evaluation (256 -> 224 at the usual size).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

from bench.datasets import DataRef, Dataset, DatasetError
from bench.datasets.recipe import Recipe

DESCRIPTION = "train/ and val/ folders, each holding one folder of JPEG images per class"
EXTENSIONS = (".jpeg", ".jpg")
MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)
# ResNet-50 on ImageNet after Goyal et al. and the MLPerf reference: peak rate 0.1 per
# 256 samples, 5 of 90 epochs of warm-up, cosine decay, weight decay 1e-4, label
# smoothing 0.1.
RECIPE = Recipe(
    lr_per_256=0.1, momentum=0.9, weight_decay=1e-4, label_smoothing=0.1,
    warmup_fraction=5 / 90, schedule="cosine",
)  # fmt: skip


def _listing(
    root: Path, split: str, classes: list[str] | None
) -> tuple[list[str], np.ndarray, list[str]]:
    folder = root / split
    if not folder.is_dir():
        raise DatasetError(f"data: {root} has no {split}/ folder; expected {DESCRIPTION}")
    found = sorted(entry.name for entry in os.scandir(folder) if entry.is_dir())
    if not found:
        raise DatasetError(f"data: {folder} has no class folders; expected {DESCRIPTION}")
    if classes is None:
        classes = found
    unknown = sorted(set(found) - set(classes))
    if unknown:
        raise DatasetError(f"data: {folder} has classes not in train/: {', '.join(unknown[:5])}")
    files, labels = [], []
    for label, name in enumerate(classes):
        if not (folder / name).is_dir():
            continue
        images = sorted(
            entry.path
            for entry in os.scandir(folder / name)
            if entry.is_file() and entry.name.lower().endswith(EXTENSIONS)
        )
        if not images and split == "train":
            raise DatasetError(f"data: {folder / name} holds no JPEG images (.JPEG, .jpg)")
        files += images
        labels += [label] * len(images)
    if not files:
        raise DatasetError(f"data: {folder} holds no JPEG images; expected {DESCRIPTION}")
    return files, np.asarray(labels, np.int64), classes


def _random_crop(width: int, height: int, rng: np.random.Generator) -> tuple[int, int, int, int]:
    """torchvision's RandomResizedCrop box: 8-100% of the area, aspect 3/4 to 4/3."""
    area = width * height
    for _ in range(10):
        target = area * rng.uniform(0.08, 1.0)
        ratio = math.exp(rng.uniform(math.log(3 / 4), math.log(4 / 3)))
        w, h = round(math.sqrt(target * ratio)), round(math.sqrt(target / ratio))
        if 0 < w <= width and 0 < h <= height:
            left, top = int(rng.integers(0, width - w + 1)), int(rng.integers(0, height - h + 1))
            return left, top, left + w, top + h
    side = min(width, height)  # fall back to the centre square
    left, top = (width - side) // 2, (height - side) // 2
    return left, top, left + side, top + side


class Folder:
    """A split as a list of JPEG files, decoded when a sample is asked for."""

    def __init__(self, name: str, files: list[str], labels: np.ndarray, size: tuple[int, int]):
        self.name, self.files, self.labels, self.size = name, files, labels, size

    def __len__(self) -> int:
        return len(self.files)

    def sample(self, index: int, rng: np.random.Generator | None) -> tuple[np.ndarray, int]:
        try:
            from PIL import Image
        except ImportError:
            raise DatasetError("data: ImageNet's JPEGs need Pillow (pip install pillow)") from None
        path = self.files[index]
        height, width = self.size
        try:
            with Image.open(path) as opened:
                image = opened.convert("RGB")  # decodes the whole file: errors show here
        except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as error:
            raise DatasetError(f"data: {path} is not a JPEG that decodes ({error})") from None
        if rng is not None:
            box = _random_crop(*image.size, rng)
            image = image.resize((width, height), Image.Resampling.BILINEAR, box=box)
            if rng.random() < 0.5:
                image = image.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        else:
            scale = max(height, width) * 8 / 7 / min(image.size)
            w, h = image.size
            crop_w, crop_h = width / scale, height / scale
            left, top = (w - crop_w) / 2, (h - crop_h) / 2
            image = image.resize(
                (width, height), Image.Resampling.BILINEAR,
                box=(left, top, left + crop_w, top + crop_h),
            )  # fmt: skip
        pixels = np.asarray(image, np.float32) / 255
        return (pixels - MEAN) / STD, int(self.labels[index])


def open(path: str, spec) -> Dataset:
    root = Path(path)
    if not root.is_dir():
        raise DatasetError(f"data: {path} is not a folder; expected {DESCRIPTION}")
    size = tuple(spec.sample_shape[1:])
    train_files, train_labels, classes = _listing(root, "train", None)
    val_files, val_labels, _ = _listing(root, "val", classes)
    return Dataset(
        ref=DataRef("imagenet", path),
        train=Folder("train", train_files, train_labels, size),
        val=Folder("val", val_files, val_labels, size),
        classes=len(classes),
        facts={"image_size": list(size)},
    )
