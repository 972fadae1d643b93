"""What a workload's framework module provides: one typed contract per framework.

A workload folder's `torch.py`, `jax.py`, `tensorflow.py` or `mlx.py` defines functions that the
framework's session calls. Each contract below names them with their signatures: a
field without a default is required, one that defaults to None is optional (a model
that brings its own optimiser, a decoder that reads token files), and `ONE_OF` names
groups of which the module gives at least one. Discovery (bench.registry.workloads)
reads each module's source, without importing its framework, and refuses in one line a
module that lacks a required function; a session resolves the module once into its
contract (`Contract.load`) and calls typed attributes, never `hasattr`.

Why a dataclass rather than a `typing.Protocol`: a Protocol has no optional members,
and the session needs one typed object holding both kinds. Not frozen: a test stands in
for one of its functions (monkeypatch) as it did on the module.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, Self, cast

from bench.util.errors import BenchError

if TYPE_CHECKING:
    from bench.config.run_config import PointConfig


class Spec(Protocol):
    """What a contract reads of a workload's spec (bench.workloads.base.WorkloadSpec,
    which imports this module: a Protocol keeps that import one way)."""

    @property
    def name(self) -> str: ...

    @property
    def package(self) -> str: ...


if TYPE_CHECKING:
    BuildModel = Callable[[Spec, PointConfig], Any]
    Batch = tuple[Any, Any]  # (inputs, targets): tensors, or tuples and dicts of them


class WorkloadError(BenchError):
    """A workload folder breaks its contract: one line naming the workload, the file and
    what is missing."""


@dataclass
class Contract:
    """The functions a workload's module for one framework provides (see the module's
    docstring). Subclasses set FRAMEWORK, the module's name in the workload's folder."""

    FRAMEWORK: ClassVar[str] = ""
    ONE_OF: ClassVar[tuple[tuple[str, ...], ...]] = ()

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def missing(cls, defined: Collection[str]) -> list[str]:
        """What a module defining `defined` lacks: required names, then 'a or b' for each
        ONE_OF group it gives none of; [] when it keeps the contract."""
        lacking = [
            f.name
            for f in dataclasses.fields(cls)
            if f.default is dataclasses.MISSING and f.name not in defined
        ]
        return lacking + [" or ".join(group) for group in cls.ONE_OF if not set(group) & {*defined}]

    @classmethod
    def needs(cls) -> str:
        """'build_model, make_batch and loss or train_loss': what every module gives."""
        required = [f.name for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING]
        every = required + [" or ".join(group) for group in cls.ONE_OF]
        return ", ".join(every[:-1]) + f" and {every[-1]}" if len(every) > 1 else every[0]

    @classmethod
    def refusal(cls, workload: str, path: str, lacking: list[str]) -> WorkloadError:
        return WorkloadError(
            f"workload {workload!r}: {path} has no {', '.join(lacking)} "
            f"(a {cls.FRAMEWORK} workload defines {cls.needs()})"
        )

    @classmethod
    def of(cls, module: ModuleType, workload: str) -> Self:
        """The module's functions as this contract (the one lookup by name)."""
        given = {name: getattr(module, name) for name in cls.names() if hasattr(module, name)}
        lacking = cls.missing(given)
        if lacking:
            raise cls.refusal(
                workload, getattr(module, "__file__", None) or module.__name__, lacking
            )
        return cls(**given)

    @classmethod
    def load(cls, spec: Spec) -> Self:
        """The workload's implementation in this framework (imports the framework)."""
        return cls.of(importlib.import_module(f"{spec.package}.{cls.FRAMEWORK}"), spec.name)


@dataclass
class TorchWorkload(Contract):
    """`torch.py`: image classifiers take `loss` and `make_batch` from
    bench.workloads._torch."""

    FRAMEWORK: ClassVar[str] = "torch"
    # A model that computes its own losses (detection, GANs) gives train_loss alone.
    ONE_OF: ClassVar[tuple[tuple[str, ...], ...]] = (("loss", "train_loss"),)

    build_model: BuildModel  # (spec, point) -> torch.nn.Module, on the current device
    # (spec, point, batch size, torch.Generator) -> (inputs, targets) on the host.
    make_batch: Callable[[Spec, PointConfig, int, Any], Batch]
    loss: Callable[[Any, Any], Any] | None = None  # (outputs, targets) -> scalar loss
    train_loss: Callable[[Any, Any, Any], Any] | None = None  # (model, inputs, targets)
    optimizer: Callable[[Iterable[Any]], Any] | None = None  # (parameters) -> its own
    token_batch: Callable[[Any], Batch] | None = None  # token windows -> (inputs, targets)
    # (model, step times) -> details.moe: a mixture of experts' account of its steps.
    moe_report: Callable[[Any, list[float]], dict[str, Any]] | None = None

    def training_loss(self) -> Callable[[Any, Any, Any], Any]:
        """(model, inputs, targets) -> loss: its own `train_loss` when the model computes
        its losses, else `loss(model(inputs), targets)`."""
        if self.train_loss is not None:
            return self.train_loss
        loss = cast("Callable[[Any, Any], Any]", self.loss)  # ONE_OF: checked by `of`
        return lambda model, inputs, targets: loss(model(inputs), targets)


@dataclass
class JaxWorkload(Contract):
    """`jax.py`: Flax modules; shared pieces in bench.workloads._flax and _numpy."""

    FRAMEWORK: ClassVar[str] = "jax"

    build_model: Callable[[Spec, PointConfig, Any], Any]  # (spec, point, dtype)
    # (spec, point, batch size, seed) -> (inputs, targets) as NumPy arrays.
    make_batch: Callable[[Spec, PointConfig, int, int], Batch]
    loss: Callable[[Any, Any], Any]  # (logits, targets) -> scalar loss
    optimizer: Callable[[], tuple[Any, str]] | None = None  # () -> (optax, its description)
    token_batch: Callable[[Any], Batch] | None = None
    # (spec, point) -> how many blocks activation checkpointing wraps.
    checkpointed_blocks: Callable[[Spec, PointConfig], int] | None = None


@dataclass
class TensorflowWorkload(Contract):
    """`tensorflow.py`: Keras models; shared pieces in bench.workloads._keras and _numpy."""

    FRAMEWORK: ClassVar[str] = "tensorflow"

    build_model: BuildModel  # (spec, point) -> keras.Model, inside the strategy's scope
    make_batch: Callable[[Spec, PointConfig, int, int], Batch]
    loss: Callable[[Any, Any], Any]
    optimizer: Callable[[], tuple[Any, str]] | None = None  # () -> (Keras, its description)


@dataclass
class MlxWorkload(Contract):
    """`mlx.py`: mlx.nn modules taking NHWC images; shared pieces in bench.workloads._mlx
    and _numpy."""

    FRAMEWORK: ClassVar[str] = "mlx"

    build_model: BuildModel  # (spec, point) -> mlx.nn.Module, float32 parameters
    make_batch: Callable[[Spec, PointConfig, int, int], Batch]  # NumPy arrays, as jax.py's
    loss: Callable[[Any, Any], Any]  # (logits, targets) -> scalar mean loss
    # () -> (an mlx.optimizers optimizer, its description) where not SGD with momentum.
    optimizer: Callable[[], tuple[Any, str]] | None = None


# Framework module name -> its contract. A framework without one here runs no workload.
CONTRACTS: dict[str, type[Contract]] = {
    c.FRAMEWORK: c for c in (TorchWorkload, JaxWorkload, TensorflowWorkload, MlxWorkload)
}
