"""JPEGs decoded on the device (--decode device): the loader's workers read each file's
bytes and the region to crop (bench.datasets.imagenet's Folder.encoded, checked as the
host's decode checks it), and the training process decodes the batch where it trains,
with torchvision's decode_jpeg (nvJPEG on a CUDA GPU, batched), then crops, resizes,
flips and normalises it there (torchvision.transforms.v2 on tensors). The same function
runs on the CPU, which is how the tests check it against the host's batch."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.datasets import DatasetError, pipeline
from bench.datasets.untrusted import reason, shown
from bench.frameworks._torch_data import normaliser, ordered_loader
from bench.frameworks._torch_data import pins as pins_memory
from bench.util.errors import UsageError

if TYPE_CHECKING:
    import torch

    from bench import datasets
    from bench.config.run_config import PointConfig

# torchvision's version.py says which CUDA it was built with: `cuda = '13.0'`, or None.
_BUILT_WITH = re.compile(r"^cuda\s*=\s*(None|['\"][0-9.]+['\"])\s*$", re.MULTILINE)


def check_decode(points: Iterable[PointConfig]) -> None:
    """In the parent, before any child: one line where a point decodes on the device and
    torchvision here cannot (TorchFramework.preflight)."""
    why = missing() if any(p.decode == "device" for p in points) else None
    if why:
        raise UsageError(why)


def missing() -> str | None:
    """Why torchvision here cannot decode JPEGs on a GPU, in one line (None where it can):
    judged from its version.py, which says the CUDA it was built with, without importing
    it (the parent's check: Framework.preflight)."""
    spec = importlib.util.find_spec("torchvision")
    if spec is None or spec.origin is None:
        return "decode: device needs torchvision (pip install 'bench[torch]')"
    return built_without_cuda(Path(spec.origin).with_name("version.py"))


def built_without_cuda(version_file: Path) -> str | None:
    """One line where the torchvision whose version.py this is was built without CUDA
    (no nvJPEG for decode_jpeg on a GPU), else None."""
    try:
        found = _BUILT_WITH.search(version_file.read_text(errors="replace"))
    except OSError as error:
        return f"decode: torchvision's {version_file.name} cannot be read ({reason(error)})"
    if found and found.group(1) != "None":
        return None
    return ("decode: device needs a torchvision built with CUDA (nvJPEG); this one is "
            "CPU-only: pip install torchvision from the PyTorch index of your CUDA")  # fmt: skip


class EncodedSamples:
    """A split's samples undecoded, as a map-style dataset for the DataLoader: the file's
    bytes (or pixels the device's decoder may not take), the region to crop (float
    left, top, right, bottom), the flip, the label and the index, augmented as epoch
    `epoch` of the shared order (bench.datasets.pipeline)."""

    def __init__(self, split: datasets.Split, seed: int, epoch: int, train: bool) -> None:
        self.split, self.seed, self.epoch, self.train = split, seed, epoch, train

    def __len__(self) -> int:
        return len(self.split)

    def __getitem__(self, index: int):
        import torch

        rng = pipeline.sample_rng(self.seed, self.epoch, index) if self.train else None
        data, box, flip, label = self.split.encoded(index, rng)  # type: ignore[attr-defined]
        return torch.from_numpy(data.copy()), box, flip, label, index


def collate(samples: list[tuple[Any, ...]]) -> tuple[list[Any], Any, Any, Any, Any]:
    """A batch of EncodedSamples: the files' bytes as a list (each its own length), the
    regions (N x 4, float), the flips (N, bool), the labels and the indices (N, int64)."""
    import torch

    data, boxes, flips, labels, indices = zip(*samples, strict=True)
    return (
        list(data),
        torch.tensor(boxes, dtype=torch.float64),
        torch.tensor(flips, dtype=torch.bool),
        torch.tensor(labels, dtype=torch.int64),
        torch.tensor(indices, dtype=torch.int64),
    )


def loader(
    split: datasets.Split, batch_size: int, *, seed: int, epoch: int, train: bool,
    workers: int, pin_memory: bool, prefetch_factor: int | None = None, rank: int = 0,
    ranks: int = 1,
) -> Any:  # fmt: skip
    """PyTorch's DataLoader over a split in the shared order, its workers reading files,
    not decoding them: batches for `decode_batch`."""
    return ordered_loader(
        EncodedSamples(split, seed, epoch, train), split, batch_size, seed=seed, epoch=epoch,
        train=train, workers=workers, pin_memory=pin_memory, prefetch_factor=prefetch_factor,
        rank=rank, ranks=ranks, collate_fn=collate,
    )  # fmt: skip


def decoder(
    split: datasets.Split, device: Any
) -> Callable[[tuple[list[Any], Any, Any, Any, Any]], tuple[torch.Tensor, torch.Tensor]]:
    """What turns a batch of `loader`'s into (inputs, targets) on `device`: each JPEG
    decoded there (decode_jpeg, the batch at once), cropped to its region and resized to
    the split's input size (bilinear, antialiased, as Pillow resizes on the host),
    flipped where drawn, stacked and normalised by the split's mean and deviation: the
    batch the host would have sent as float32, decoded by another decoder."""
    import torch
    from torchvision.io import ImageReadMode, decode_jpeg
    from torchvision.transforms.v2 import functional as F

    height, width = split.size  # type: ignore[attr-defined]
    normalise = normaliser(split, device)  # as a uint8 batch from the host is

    def decode(batch: tuple[list[Any], Any, Any, Any, Any]) -> tuple[torch.Tensor, torch.Tensor]:
        data, boxes, flips, labels, indices = batch
        files = [i for i, item in enumerate(data) if item.dim() == 1]
        images: list[Any] = [item.to(device, non_blocking=True) for item in data]
        if files:
            try:
                decoded = decode_jpeg([data[i] for i in files], mode=ImageReadMode.RGB,
                                      device=device)  # fmt: skip
            except RuntimeError as error:
                names = ", ".join(shown(split.files[int(indices[i])]) for i in files[:3])  # type: ignore[attr-defined]
                raise DatasetError(
                    f"data: a JPEG of the batch did not decode on {device} ({reason(error)}); "
                    f"among {names}"
                ) from None
            for i, image in zip(files, decoded, strict=True):
                images[i] = image
        out = []
        for image, box, flip in zip(images, boxes.tolist(), flips.tolist(), strict=True):
            left, top, right, bottom = box
            top_px, left_px = round(top), round(left)
            crop = F.resized_crop(
                image, top_px, left_px, max(1, round(bottom) - top_px),
                max(1, round(right) - left_px), [height, width], antialias=True,
            )  # fmt: skip
            out.append(F.horizontal_flip(crop) if flip else crop)
        return normalise(torch.stack(out)), labels.to(device, non_blocking=True)

    return decode


def device_batches(
    session: Any, split: datasets.Split, epoch: int, train: bool, rank: int, ranks: int
) -> Iterator[tuple[Any, Any]]:
    """A TorchSession's batches of the split decoded on its device (its loader with
    --decode device), laid out as the session lays out its inputs (channels_last)."""
    point = session.point
    pins = pins_memory(session.platform, point.pin_memory)
    batches = loader(split, point.batch_size, seed=point.seed, epoch=epoch, train=train,
                     workers=session.training.workers, pin_memory=pins,
                     prefetch_factor=point.prefetch_factor, rank=rank, ranks=ranks)  # fmt: skip
    decode = decoder(split, session.device)
    try:
        for batch in batches:
            inputs, targets = decode(batch)
            yield session._to_device(inputs), targets
    except Exception as error:  # a worker's DatasetError arrives wrapped
        pipeline.reraise(error)
        raise
