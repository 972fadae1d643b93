"""What a workload is, independent of the framework that trains it.

A workload is a folder under bench/workloads/: its __init__.py defines WORKLOADS, a
tuple of WorkloadSpec, and imports no framework. Beside it, one module per framework
(torch.py, tensorflow.py, jax.py) implements the same work, keeping that framework's
contract (bench.workloads.contract). Discovery finds both: adding a workload edits no
existing file.
"""

from __future__ import annotations

import enum
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.workloads.contract import CONTRACTS, Contract, WorkloadError


class Task(enum.StrEnum):
    """What one sample and its target are. A str: compared with, printed and stored as
    the same strings as before it was an enum."""

    IMAGE_CLASSIFICATION = "image-classification"
    SEMANTIC_SEGMENTATION = "semantic-segmentation"
    INSTANCE_SEGMENTATION = "instance-segmentation"
    IMAGE_TO_IMAGE = "image-to-image"
    MASKED_LM = "masked-lm"
    CAUSAL_LM = "causal-lm"
    TRANSLATION = "translation"


@dataclass(frozen=True)
class WorkloadSpec:
    name: str
    description: str
    task: Task  # what one sample and its target are (a Task, or its string)
    num_classes: int  # classes, or the vocabulary size for language models
    sample_shape: tuple[int, ...] = ()  # one input sample (images); empty for token sequences
    default_batch_size: int = 32
    # Smallest batch that can train at all (batch norm on a 1x1 map needs 2 samples).
    min_batch_size: int = 1
    # One epoch in epoch mode (the M2 Max vs V100 CIFAR study): the size of the dataset
    # this workload stands for.
    epoch_samples: int = 50_000
    dataset: str = "synthetic"
    # Sequence workloads take --seq-len; None means the option does not apply.
    default_seq_len: int | None = None
    max_seq_len: int | None = None
    # Throughput's natural unit besides samples: sequences count tokens (--seq-len per
    # sample; a translation pair its target's); "pixels" counts height x width per sample.
    per_sample_unit: str | None = None
    # How --train-to trains it on a dataset, where the dataset's own recipe does not suit
    # it: dataset kind -> bench.datasets.recipe.Recipe.
    recipes: dict[str, Any] = field(default_factory=dict, compare=False)
    # How a point over several ranks shares the model: None, DistributedDataParallel (a
    # replica per rank); "fsdp": FSDP2 (bench.parallel.fsdp), each rank a shard of the
    # parameters, gradients and optimizer state (models too large to replicate); in JAX
    # the same over the devices of its mesh (bench.parallel.jax_fsdp).
    sharding: str | None = None
    # Whether its torch model keeps its repeated blocks in `model.layers`, where
    # activation checkpointing (bench.parallel.checkpoint) wraps them.
    checkpointable: bool = False
    # FLOPs by formula, for models whose count is a published convention (LLMs' 6N +
    # attention): seq_len -> {"formula", "per_token", "per_sample", ...}. None: counted by
    # the framework (PyTorch's FlopCounterMode) in a child of its own.
    analytic_flops: Callable[[int], dict[str, Any]] | None = field(default=None, compare=False)
    # Bytes of training state that live on the devices whatever the batch (weights,
    # gradients, optimizer state) and what they are, by formula of the parameter count:
    # () -> (bytes, "fp32 weights, gradients and AdamW's two moments (16 B x N)").
    # bench.workloads.memory_floor refuses a point whose share per rank cannot fit. None: not
    # checked.
    model_state: Callable[[], tuple[int, str]] | None = field(default=None, compare=False)
    # Trainable parameters of its PyTorch model, each shared tensor once, as counted
    # (tests/test_workloads.py builds the model and checks it; docs/workloads.md
    # shows it).
    parameter_count: int | None = None
    # Set by discovery: the package whose submodules implement this workload per framework.
    package: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.task, Task):
            try:
                object.__setattr__(self, "task", Task(self.task))
            except ValueError:
                raise WorkloadError(
                    f"workload {self.name!r}: task {self.task!r} is not one of: {', '.join(Task)}"
                ) from None

    @property
    def takes_seq_len(self) -> bool:
        return self.default_seq_len is not None

    def input_shape(self, seq_len: int | None = None) -> tuple[int, ...]:
        """The shape of one input sample, without the batch dimension."""
        if self.takes_seq_len:
            return (seq_len or self.default_seq_len,)  # type: ignore[return-value]
        return self.sample_shape

    def units_per_sample(self, seq_len: int | None = None) -> tuple[str, int] | None:
        """('tokens', 1024): the natural unit of one sample and how many it holds."""
        if self.takes_seq_len:
            return "tokens", self.input_shape(seq_len)[0]
        if self.per_sample_unit == "pixels":
            return "pixels", self.sample_shape[-2] * self.sample_shape[-1]
        return None

    def flops(self, seq_len: int | None = None) -> dict[str, Any] | None:
        """The formula's count at this sequence length, or None (counted by running)."""
        if self.analytic_flops is None:
            return None
        return self.analytic_flops(self.input_shape(seq_len)[0])

    def frameworks(self) -> tuple[str, ...]:
        """Frameworks that implement this workload: the framework modules in its folder."""
        from bench.config import discovery

        return tuple(
            name
            for name in discovery.framework_names()
            if importlib.util.find_spec(f"{self.package}.{name}") is not None
        )

    def defines(self, framework: str, name: str) -> bool:
        """Whether this workload's `framework` module defines `name` at its top level
        (an optional function of its contract), read from its source: nothing imported."""
        from bench.config import discovery

        defined = discovery.defined_names(f"{self.package}.{framework}")
        return defined is not None and name in defined

    def check_implementations(self) -> None:
        """Refuse in one line (WorkloadError) a framework module of this workload that
        lacks a function its framework's contract requires: read from the module's
        source, nothing imported (discovery calls it for every workload)."""
        from bench.config import discovery

        for framework in self.frameworks():
            module = f"{self.package}.{framework}"
            contract, defined = CONTRACTS.get(framework), discovery.defined_names(module)
            if contract is None or defined is None:  # a star import: checked when loaded
                continue
            lacking = contract.missing(defined)
            if lacking:
                raise contract.refusal(self.name, discovery.source_path(module), lacking)

    def implementation(self, framework: str) -> Contract:
        """What implements this workload in `framework`, as that framework's contract
        (imports the framework). A session asks its own contract, typed:
        `TorchWorkload.load(spec)`."""
        contract = CONTRACTS.get(framework)
        if contract is None:
            raise WorkloadError(f"framework {framework!r} has no workload contract")
        return contract.load(self)
