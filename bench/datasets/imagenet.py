"""ImageNet-1k (or any set of the same layout) as JPEG files in class folders.

PATH holds train/ and val/, each with one folder per class (the synset name, e.g.
n01440764) of JPEG images: the usual layout after the validation images are sorted
into class folders. Classes are the sorted folder names of train/; val/ may hold only
those. Images are decoded on the host with Pillow and cropped to the workload's input
size: a random resized crop and a flip for training (Inception-style, as torchvision's
RandomResizedCrop), the shorter side resized to 8/7 of the input and a centre crop for
evaluation (256 -> 224 at the usual size).

The folders may come from anyone (bench.datasets.untrusted): only JPEG and PNG reach a
decoder (ImageNet's train/ holds one PNG named .JPEG, n02105855_2933.JPEG), an image's
file size and its pixels (from its header) are checked before it is decoded, the
listing stops at MAX_CLASSES folders and MAX_FILES images, and no link may lead out of
PATH.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import numpy as np

from bench.datasets import DataRef, Dataset, DatasetError
from bench.datasets.recipe import Recipe
from bench.datasets.untrusted import inside, open_file, reason, shown

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage

DESCRIPTION = "train/ and val/ folders, each holding one folder of JPEG images per class"
EXTENSIONS = (".jpeg", ".jpg")
# Pillow's decoders that may open an image here: JPEG, and PNG for the one PNG in
# ImageNet's train/. Pillow parses dozens of other formats, each a decoder to attack.
FORMATS = ("JPEG", "PNG")
_ALLOWED_FORMATS = "images here are JPEG, or PNG as one in ImageNet's train/ is"
# Refused before decoding: 8192 x 8192, far above ImageNet's photos (a few hundred pixels
# a side) and below Pillow's own threshold (89,478,485), which only warns and decodes.
MAX_PIXELS = 8192 * 8192
MAX_IMAGE_BYTES = 64 * 2**20
MAX_CLASSES = 32_768  # ImageNet-1k has 1,000 classes, ImageNet-21k 21,841
MAX_FILES = 2**24  # images a split: ImageNet-1k's train/ has 1.28 million, 21k 14.2 million
# What a file that Pillow cannot open as JPEG or PNG begins with, to say what it is.
_SIGNATURES = (
    (b"GIF8", "a GIF image"), (b"BM", "a BMP image"), (b"II*\x00", "a TIFF image"),
    (b"MM\x00*", "a TIFF image"), (b"\x00\x00\x01\x00", "an ICO image"),
    (b"\x00\x00\x00\x0cjP  ", "a JPEG 2000 image"), (b"\xff\x4f\xff\x51", "a JPEG 2000 image"),
)  # fmt: skip
# The JPEGs sent to a device's decoder as their bytes (--decode device): RGB and
# greyscale, which nvJPEG decodes to RGB; ImageNet's 22 CMYK JPEGs are decoded here.
DEVICE_MODES = ("RGB", "L")
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
    root: Path, base: Path, split: str, classes: list[str] | None
) -> tuple[list[str], np.ndarray, list[str]]:
    """The images of one split and their labels, counted as they are found; every
    folder and every link among the images checked to lie inside `base`."""
    folder = root / split
    if not folder.is_dir():
        raise DatasetError(f"data: {root} has no {split}/ folder; expected {DESCRIPTION}")
    inside(folder, base, root)
    found = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir():
                found.append(entry.name)
                if len(found) > MAX_CLASSES:
                    raise DatasetError(
                        f"data: {shown(folder)} has more than {MAX_CLASSES:,} class folders; at "
                        f"most {MAX_CLASSES:,} are read"
                    )
    if not found:
        raise DatasetError(f"data: {folder} has no class folders; expected {DESCRIPTION}")
    found.sort()
    if classes is None:
        classes = found
    unknown = sorted(set(found) - set(classes))
    if unknown:
        raise DatasetError(
            f"data: {folder} has classes not in train/: {shown(', '.join(unknown[:5]))}"
        )
    files: list[str] = []
    labels: list[int] = []
    for label, name in enumerate(classes):
        where = folder / name
        if not where.is_dir():
            continue
        inside(where, base, root)
        images = []
        with os.scandir(where) as entries:
            for entry in entries:
                if not entry.name.lower().endswith(EXTENSIONS):
                    continue
                if entry.is_symlink():
                    inside(Path(entry.path), base, root)
                if entry.is_file():
                    images.append(entry.path)
                    if len(files) + len(images) > MAX_FILES:
                        raise DatasetError(
                            f"data: {shown(folder)} holds more than {MAX_FILES:,} images; at "
                            f"most {MAX_FILES:,} a split are read"
                        )
        if not images and split == "train":
            raise DatasetError(f"data: {shown(where)} holds no JPEG images (.JPEG, .jpg)")
        files += sorted(images)
        labels += [label] * len(images)
    if not files:
        raise DatasetError(f"data: {folder} holds no JPEG images; expected {DESCRIPTION}")
    return files, np.asarray(labels, np.int64), classes


def _what(head: bytes) -> str:
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "it is a WebP image"
    for signature, kind in _SIGNATURES:
        if head.startswith(signature):
            return f"it is {kind}"
    return f"it begins {head[:8]!r}, neither JPEG nor PNG"


@contextlib.contextmanager
def _opened(path: str) -> Iterator[tuple[PILImage, BinaryIO]]:
    """The image at `path` opened by Pillow, its header read and nothing decoded yet, and
    its file: a JPEG or PNG of at most MAX_IMAGE_BYTES and MAX_PIXELS, both checked
    before any pixel is decoded."""
    try:
        from PIL import Image
    except ImportError:
        raise DatasetError("data: ImageNet's JPEGs need Pillow (pip install pillow)") from None
    name = shown(path)
    with open_file(path, MAX_IMAGE_BYTES, "an image here") as file:
        try:
            opened = Image.open(file, formats=FORMATS)
        except Image.UnidentifiedImageError:
            file.seek(0)
            raise DatasetError(
                f"data: {name} is not a JPEG that decodes ({_what(file.read(16))}); "
                f"{_ALLOWED_FORMATS}"
            ) from None
        except Image.DecompressionBombError as error:
            raise DatasetError(
                f"data: {name} has too many pixels ({reason(error)}); an image here has at "
                f"most {MAX_PIXELS:,} pixels (8192 x 8192)"
            ) from None
        except (OSError, ValueError, SyntaxError) as error:
            raise DatasetError(
                f"data: {name} is not a JPEG that decodes ({reason(error)})"
            ) from None
        with opened:
            width, height = opened.size
            if width * height > MAX_PIXELS:
                raise DatasetError(
                    f"data: {name} is {width} x {height} = {width * height:,} pixels; an image "
                    f"here has at most {MAX_PIXELS:,} pixels (8192 x 8192)"
                )
            yield opened, file


def _rgb(opened: PILImage, path: str) -> PILImage:
    """An opened image decoded whole, as RGB: a file that does not decode is one line."""
    try:
        return opened.convert("RGB")  # decodes the whole file: errors show here
    except (OSError, ValueError, SyntaxError) as error:
        raise DatasetError(
            f"data: {shown(path)} is not a JPEG that decodes ({reason(error)})"
        ) from None


def _decode(path: str) -> PILImage:
    """The image at `path` as RGB: a JPEG or PNG of at most MAX_IMAGE_BYTES and
    MAX_PIXELS, both checked before any pixel is decoded."""
    with _opened(path) as (opened, _):
        return _rgb(opened, path)


def _encoded(path: str) -> tuple[np.ndarray, tuple[int, int]]:
    """The image at `path` for a device's decoder (--decode device), checked as `_decode`
    checks it before any pixel is decoded, and its size (width, height): a JPEG in RGB
    or greyscale as its file's bytes (1-D uint8); anything else the device's decoder
    may not take (ImageNet's one PNG, its CMYK JPEGs) decoded here, as CHW uint8 RGB."""
    with _opened(path) as (opened, file):
        if opened.format == "JPEG" and opened.mode in DEVICE_MODES:
            file.seek(0)
            return np.frombuffer(file.read(MAX_IMAGE_BYTES + 1), np.uint8), opened.size
        pixels = np.asarray(_rgb(opened, path), np.uint8).transpose(2, 0, 1)
        return np.ascontiguousarray(pixels), opened.size


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

    mean, std = MEAN, STD

    def __init__(self, name: str, files: list[str], labels: np.ndarray, size: tuple[int, int]):
        self.name, self.files, self.labels, self.size = name, files, labels, size

    def __len__(self) -> int:
        return len(self.files)

    def box(
        self, width: int, height: int, rng: np.random.Generator | None
    ) -> tuple[tuple[float, float, float, float], bool]:
        """The region of a width x height image resized to the input size, (left, top,
        right, bottom), and whether it is flipped: a random resized crop and a flip for
        training (rng), the centre crop for evaluation (None)."""
        out_h, out_w = self.size
        if rng is not None:
            box = _random_crop(width, height, rng)
            return (float(box[0]), float(box[1]), float(box[2]), float(box[3])), rng.random() < 0.5
        scale = max(out_h, out_w) * 8 / 7 / min(width, height)
        crop_w, crop_h = out_w / scale, out_h / scale
        left, top = (width - crop_w) / 2, (height - crop_h) / 2
        return (left, top, left + crop_w, top + crop_h), False

    def sample(
        self, index: int, rng: np.random.Generator | None, raw: bool = False
    ) -> tuple[np.ndarray, int]:
        image = _decode(self.files[index])  # says so where Pillow is missing
        from PIL import Image

        height, width = self.size
        box, flip = self.box(*image.size, rng)
        image = image.resize((width, height), Image.Resampling.BILINEAR, box=box)
        if flip:
            image = image.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        if raw:
            return np.asarray(image, np.uint8), int(self.labels[index])
        pixels = np.asarray(image, np.float32) / 255
        return (pixels - MEAN) / STD, int(self.labels[index])

    def encoded(
        self, index: int, rng: np.random.Generator | None
    ) -> tuple[np.ndarray, tuple[float, float, float, float], bool, int]:
        """Sample `index` undecoded, for a device's decoder (--decode device): the file's
        bytes (or, where the device's decoder may not take it, its CHW pixels), the
        region to resize to the input size and the flip (`box`, as `sample` crops it),
        and its label."""
        data, size = _encoded(self.files[index])
        box, flip = self.box(*size, rng)
        return data, box, flip, int(self.labels[index])


def open(path: str, spec) -> Dataset:
    root = Path(path)
    if not root.is_dir():
        raise DatasetError(f"data: {path} is not a folder; expected {DESCRIPTION}")
    size = tuple(spec.sample_shape[1:])
    base = root.resolve()
    train_files, train_labels, classes = _listing(root, base, "train", None)
    val_files, val_labels, _ = _listing(root, base, "val", classes)
    return Dataset(
        ref=DataRef("imagenet", path),
        train=Folder("train", train_files, train_labels, size),
        val=Folder("val", val_files, val_labels, size),
        classes=len(classes),
        facts={"image_size": list(size)},
    )
