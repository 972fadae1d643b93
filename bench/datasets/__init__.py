"""Real datasets from local folders, in their published formats; never downloaded.

`--data KIND:PATH` names one. A token file for decoders (`tokens:PATH`,
`tokens-u32:PATH`) is read step by step like synthetic data: bench.datasets.tokens.
Each kind of labelled images is a module here defining

  DESCRIPTION   the layout it reads, for errors and help
  RECIPE        how --train-to trains on it (bench.datasets.recipe)
  open(path, spec) -> Dataset   reads and checks the files (errors name the file)

A dataset may come from anyone: each kind reads its files as untrusted input, bounded
and kept inside PATH, with bench.datasets.untrusted.

A Dataset holds two Splits, train and val. A split hands out single samples as HWC
float32 images, normalised, and an int label: augmented for training (with the
generator given), plain for evaluation (none given). Every framework's input pipeline
(bench.datasets.pipeline, torch's DataLoader, tf.data) batches the same samples in the
same order for the same seed, so frameworks differ only in how they load.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

# What --data names (bench.config.data_ref), for those that open it from here:
from bench.config.data_ref import KINDS as KINDS
from bench.config.data_ref import TOKEN_KINDS as TOKEN_KINDS
from bench.config.data_ref import DataRef as DataRef
from bench.config.data_ref import parse as parse
from bench.datasets.recipe import Recipe
from bench.util.errors import UsageError

if TYPE_CHECKING:
    import numpy as np

    from bench.config.run_config import PointConfig, RunConfig
    from bench.workloads.base import WorkloadSpec


class DatasetError(UsageError):
    """A dataset that is missing or not in its published layout (one line, exit 2)."""


class Split(Protocol):
    name: str  # "train" or "val"
    # Per channel, of pixels scaled to 0-1: what a sample is normalised by (on the device
    # where the pipeline sends uint8, --input-dtype).
    mean: np.ndarray
    std: np.ndarray

    def __len__(self) -> int: ...

    def sample(
        self, index: int, rng: np.random.Generator | None, raw: bool = False
    ) -> tuple[np.ndarray, int]:
        """Sample `index`: augmented with `rng` (training), or plain (rng None); raw: its
        uint8 pixels, not yet normalised."""


@dataclass(frozen=True)
class Dataset:
    ref: DataRef
    train: Split
    val: Split
    classes: int
    # What the result records of it: sample counts, classes, a checksum where cheap.
    facts: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        return {
            "kind": self.ref.kind,
            "train_samples": len(self.train),
            "val_samples": len(self.val),
            "classes": self.classes,
            **self.facts,
        }


def module(kind: str) -> Any:
    return importlib.import_module(f"bench.datasets.{kind}")


def open_dataset(ref: DataRef, spec: WorkloadSpec) -> Dataset:
    """The dataset, checked against what the workload trains on."""
    kind = module(ref.kind)
    if spec.task != "image-classification" or len(spec.sample_shape) != 3:
        raise UsageError(
            f"data: {ref.kind} holds labelled images; workload {spec.name!r} is "
            f"{spec.task}; choose an image classifier"
        )
    dataset: Dataset = kind.open(ref.path, spec)
    if dataset.classes > spec.num_classes:
        raise DatasetError(
            f"data: {ref.path} has {dataset.classes} classes; {spec.name} predicts "
            f"{spec.num_classes}"
        )
    return dataset


@dataclass(frozen=True)
class Training:
    """A point's training on a dataset: the data, the recipe, how many steps."""

    dataset: Dataset
    recipe: Recipe
    batch_size: int
    epochs: int
    seed: int
    workers: int

    @property
    def steps_per_epoch(self) -> int:
        return len(self.dataset.train) // self.batch_size

    @property
    def total_steps(self) -> int:
        return self.steps_per_epoch * self.epochs

    def lr_factor(self, step: int) -> float:
        return float(self.recipe.lr_factor(step, self.total_steps))

    def details(self) -> dict[str, Any]:
        """What the result records: the dataset and the recipe as applied."""
        return {
            "dataset": self.dataset.describe(),
            "recipe": self.recipe.describe(self.batch_size, self.total_steps),
            "loader_workers": self.workers,
        }


def check(config: RunConfig) -> None:
    """Read the run's dataset once in the parent: an error is one line before any point
    runs, not the same error from every child."""
    ref = parse(config.data)
    if ref is not None and ref.source == "tokens":  # modules imported as the kinds are
        then = None
        if config.train_to_loss is not None:  # the validation file too, beside the first
            then = importlib.import_module("bench.datasets.loss_target").check
        importlib.import_module("bench.datasets.tokens").check(config, then)
    elif ref is not None:
        from bench import registry

        open_dataset(ref, registry.workload(config.workload))


def training(point: PointConfig) -> Training:
    """Open the point's dataset (in the child) and plan its epochs."""
    ref = point.dataset
    if ref is None or point.epochs is None:
        raise UsageError("data: this point trains on synthetic data")
    dataset = open_dataset(ref, point.spec)
    recipe = point.spec.recipes.get(ref.kind) or module(ref.kind).RECIPE
    plan = Training(dataset, recipe, point.batch_size, point.epochs, point.seed, point.num_workers)
    if plan.steps_per_epoch == 0:
        raise DatasetError(
            f"data: {ref.path} has {len(dataset.train)} training samples, fewer than one "
            f"batch of {point.batch_size}"
        )
    return plan
