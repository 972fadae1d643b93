"""Samples for PyTorch's DataLoader in bench's session: a fixed random dataset made on
the host (--data loader), a dataset split (--data KIND:PATH), and a map over a batch's
tensors."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from bench.datasets import pipeline

if TYPE_CHECKING:
    from bench import datasets
    from bench.config.run_config import PointConfig
    from bench.workloads.contract import TorchWorkload


class SyntheticSamples:
    """Sample i of a fixed random dataset, made on the host (for --data loader)."""

    def __init__(
        self, impl: TorchWorkload, point: PointConfig, length: int, offset: int = 0
    ) -> None:
        self.impl, self.point, self.length, self.offset = impl, point, length, offset

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int):
        import torch

        sample = self.offset + index  # each rank its own samples
        generator = torch.Generator().manual_seed(self.point.seed * 1_000_003 + sample)
        batch = self.impl.make_batch(self.point.spec, self.point, 1, generator)
        return tree_map(lambda tensor: tensor[0], batch)


class SplitSamples:
    """A dataset split as a map-style dataset: CHW tensors, augmented as epoch `epoch`
    of the shared order (bench.datasets.pipeline); raw: uint8 pixels, normalised on the
    device (--input-dtype uint8)."""

    def __init__(
        self, split: datasets.Split, seed: int, epoch: int, train: bool, raw: bool = False
    ) -> None:
        self.split, self.seed, self.epoch, self.train = split, seed, epoch, train
        self.raw = raw

    def __len__(self) -> int:
        return len(self.split)

    def __getitem__(self, index: int):
        import numpy as np
        import torch

        rng = pipeline.sample_rng(self.seed, self.epoch, index) if self.train else None
        image, label = self.split.sample(index, rng, raw=self.raw)
        return torch.from_numpy(np.ascontiguousarray(image.transpose(2, 0, 1))), label


def split_loader(
    split: datasets.Split, batch_size: int, *, seed: int, epoch: int, train: bool, workers: int,
    pin_memory: bool, prefetch_factor: int | None = None, rank: int = 0, ranks: int = 1,
    raw: bool = False,
) -> Any:  # fmt: skip
    """PyTorch's DataLoader over a split in the shared order (bench.datasets.pipeline),
    its `workers` processes decoding and augmenting on the host: what a run on real data
    trains from (TorchSession) and what `bench loader` times alone. raw: batches of uint8
    pixels, not normalised (--input-dtype uint8)."""
    return ordered_loader(
        SplitSamples(split, seed, epoch, train, raw), split, batch_size, seed=seed,
        epoch=epoch, train=train, workers=workers, pin_memory=pin_memory,
        prefetch_factor=prefetch_factor, rank=rank, ranks=ranks,
    )  # fmt: skip


def ordered_loader(
    samples: Any, split: datasets.Split, batch_size: int, *, seed: int, epoch: int,
    train: bool, workers: int, pin_memory: bool, prefetch_factor: int | None = None,
    rank: int = 0, ranks: int = 1, collate_fn: Callable[[Any], Any] | None = None,
) -> Any:  # fmt: skip
    """PyTorch's DataLoader over `samples` (a map-style dataset of the split) in batches
    of the shared order (bench.datasets.pipeline): the host's decode (split_loader) and
    the device's (bench.frameworks._torch_decode) read the same indices."""
    import torch

    return torch.utils.data.DataLoader(
        samples,
        batch_sampler=[c.tolist() for c in pipeline.indices(
            split, batch_size, seed, epoch, train, rank, ranks)],
        num_workers=workers,
        pin_memory=pin_memory,
        prefetch_factor=prefetch(workers, prefetch_factor),
        collate_fn=collate_fn,
    )  # fmt: skip


def pins(platform: Any, pin_memory: str | None) -> bool:
    """Page-locked host memory for a loader's batches: --pin-memory on or off, else where
    the platform copies a batch to a GPU (Platform.torch_pins_host_memory)."""
    return platform.torch_pins_host_memory if pin_memory is None else pin_memory == "on"


def normaliser(split: datasets.Split, device: Any) -> Callable[[Any], Any]:
    """--input-dtype uint8: a batch's pixels (NCHW, 0-255) made float and normalised by the
    split's mean and deviation on `device`, as the host does for float32."""
    import torch

    mean = torch.tensor(split.mean * 255, device=device).view(1, -1, 1, 1)
    std = torch.tensor(split.std * 255, device=device).view(1, -1, 1, 1)
    return lambda pixels: (pixels.float() - mean) / std


def prefetch(workers: int, factor: int | None) -> int | None:
    """The DataLoader's prefetch_factor: the one asked for (--prefetch-factor), or None,
    its own default (2 with workers). Without workers there is nothing ahead (the config
    refuses the pair; the DataLoader too)."""
    return factor if workers > 0 else None


def tree_map(function: Callable[[Any], Any], batch: Any) -> Any:
    """`function` on every tensor of a batch: a tensor, or tuples, lists and dicts of them
    (detection targets are a dict of boxes, labels and masks)."""
    if isinstance(batch, tuple | list):
        return type(batch)(tree_map(function, item) for item in batch)
    if isinstance(batch, dict):
        return {key: tree_map(function, item) for key, item in batch.items()}
    return function(batch)
