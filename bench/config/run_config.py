"""Frozen, self-validating configuration: one object for the CLI and the Python API.

RunConfig is what the user asked for (lists make a sweep); PointConfig is one point of
that sweep, the whole of what a child process needs to measure it. Every check names
the field, the bad value and what is allowed, and raises UsageError: the checks a run
and its points share are bench.config.checks' (with bench.config.levers and
bench.config.targets), one field's are bench.config.fields'.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, Self

from bench.config import data_ref, discovery
from bench.config.bounds import TIMEOUT
from bench.config.checks import (
    DATA_SOURCES,
    MAX_SWEEP_POINTS,
    MAX_THREADS,
    check_common,
    check_sweep_size,
    check_variant,
)
from bench.config.fields import choice, positive
from bench.config.levers import MAX_EXPERT_PARALLEL
from bench.config.options import STEPS, WARMUP_STEPS, point_default, run_default
from bench.config.sweep import AXES, CHECKPOINTING_MODES, MEMORY_FORMATS, NAMES, PRECISIONS
from bench.config.targets import DECODER_RECIPES, EVAL_UNITS, LOSS_FRAMEWORKS, LOSS_TARGET_FIELDS
from bench.util.errors import UsageError

__all__ = [
    "CHECKPOINTING_MODES",
    "DATA_SOURCES",
    "DECODER_RECIPES",
    "EVAL_UNITS",
    "LOSS_FRAMEWORKS",
    "LOSS_TARGET_FIELDS",
    "MAX_EXPERT_PARALLEL",
    "MAX_SWEEP_POINTS",
    "MAX_THREADS",
    "MEMORY_FORMATS",
    "PRECISIONS",
    "PointConfig",
    "RunConfig",
]


@dataclass(frozen=True)
class PointConfig:
    """One measured point: everything the child process needs, and nothing else. A field
    an option sets defaults to the option's (bench.config.options.point_default); the few
    written out here are resolved before a point is built."""

    sweeps: ClassVar[bool] = False  # one value of each sweep axis (bench.config.fields.values)

    workload: str
    framework: str = point_default("framework")
    device: str = "cpu"  # the command line's "auto" is resolved first (config_from_args)
    batch_size: int = 32  # a run's are given or the workload's
    precision: str = point_default("precision")
    memory_format: str = ""  # empty: the framework's default (contiguous for torch)
    # A compiler (torch.compile backend, tensorflow 'xla'), or None
    compile: str | None = point_default("compile")
    threads: int | None = point_default("threads")
    data: str = point_default("data")  # synthetic, loader, a dataset KIND:PATH, or tokens:PATH
    num_workers: int = point_default("num_workers")
    # Batches a loader worker prepares ahead (None: torch's)
    prefetch_factor: int | None = point_default("prefetch_factor")
    # The batch as the host sends it (uint8: normalised on device)
    input_dtype: str = point_default("input_dtype")
    # on or off; None: the platform's (Platform.torch_pins_host_memory)
    pin_memory: str | None = point_default("pin_memory")
    # Where a dataset's JPEGs are decoded: cpu (the workers) or device
    decode: str = point_default("decode")
    warmup_steps: int = WARMUP_STEPS  # a run's None resolved (RunConfig.__post_init__)
    steps: int = STEPS
    # Epoch mode: `epochs` passes over `epoch_samples` samples
    epochs: int | None = point_default("epochs")
    epoch_samples: int | None = point_default("epoch_samples")
    seq_len: int | None = point_default("seq_len")
    memory_limit_bytes: int | None = point_default("memory_limit_bytes")
    seed: int = point_default("seed")
    # Ranks per machine, one device each (torch, launched by torchrun when above 1);
    # None: the framework's own use of the local devices (one process).
    devices: int | None = None
    # Machines; above 1 every machine runs the same command (torchrun's flags)
    nnodes: int = point_default("nnodes")
    node_rank: int = point_default("node_rank")
    rdzv_endpoint: str | None = point_default("rdzv_endpoint")  # HOST:PORT of node 0's rendezvous
    # The child's memory allocator, OpenMP runtime and NUMA binding (launchers.runtime);
    # None: as bench itself was launched.
    allocator: str | None = point_default("allocator")
    openmp: str | None = point_default("openmp")
    numa: str | None = point_default("numa")
    # Train on the dataset until top-1 on its validation split reaches this (at most
    # `epochs` epochs); None: train `epochs` epochs, evaluating after each.
    train_to: float | None = point_default("train_to")
    # The framework's whole-model optimisation (torch: 'ipex', ipex.optimize), or None.
    optimize: str | None = point_default("optimize")
    # Activation checkpointing of the model's blocks: none, selective, full.
    activation_checkpointing: str = point_default("activation_checkpointing")
    # A decoder trained on a token file until the loss on `val_data` reaches this, within
    # `max_tokens` (bench.datasets.loss_target); the evaluation every `eval_every`
    # tokens or sequences (`eval_every_unit`) on `eval_sequences` validation windows.
    train_to_loss: float | None = point_default("train_to_loss")
    val_data: str | None = point_default("val_data")
    max_tokens: int | None = point_default("max_tokens")
    eval_every: int | None = point_default("eval_every")
    eval_every_unit: str = "tokens"
    eval_sequences: int | None = point_default("eval_sequences")
    # bench.datasets.recipe.DECODER_RECIPES; None: "default"
    recipe: str | None = point_default("recipe")
    # Mixtures of experts: the experts split over this many ranks, tokens exchanged by
    # all-to-all (bench.parallel.expert); 1: every rank holds every expert.
    expert_parallel: int = point_default("expert_parallel")
    # A decoder's levers (bench.workloads._levers): scaled_dot_product_attention's kernel
    # (auto: PyTorch chooses), its loss whole or in chunks of tokens (plain, chunked), its
    # vocabulary padded to a multiple of this (0: unpadded).
    attention: str = point_default("attention")
    cross_entropy: str = point_default("cross_entropy")
    pad_vocab: int = point_default("pad_vocab")

    def __post_init__(self) -> None:
        check_common(self)
        positive("batch_size", self.batch_size)
        if self.batch_size % self.ranks:
            raise UsageError(
                f"batch_size: {self.batch_size} does not split evenly over {self.ranks} ranks "
                f"({self.devices or 1} per machine on {self.nnodes} machine(s)); the batch is "
                f"GLOBAL: use a multiple of {self.ranks}"
            )
        if self.batch_size < self.spec.min_batch_size:
            raise UsageError(
                f"batch_size: {self.batch_size} is below {self.workload}'s minimum "
                f"{self.spec.min_batch_size}"
            )
        choice("precision", self.precision, PRECISIONS)
        if not self.memory_format:
            default = discovery.framework(self.framework).memory_formats[0]
            object.__setattr__(self, "memory_format", default)
        check_variant(self.framework, self.memory_format, self.compile)
        if self.epochs is not None and self.epoch_samples is None and not self.dataset:
            object.__setattr__(self, "epoch_samples", self.spec.epoch_samples)
        if self.epoch_samples is not None and self.epoch_samples < self.batch_size:
            raise UsageError(
                f"epoch_samples: {self.epoch_samples} is smaller than one batch ({self.batch_size})"
            )
        if self.eval_sequences is not None and self.eval_sequences % self.ranks:
            raise UsageError(
                f"eval_sequences: {self.eval_sequences} does not split evenly over "
                f"{self.ranks} ranks; use a multiple of {self.ranks}"
            )

    @property
    def spec(self):
        return discovery.workload(self.workload)

    @property
    def dataset(self) -> data_ref.DataRef | None:
        """The labelled images this point trains on, whole epochs at a time, or None."""
        ref = data_ref.parse(self.data)
        return ref if ref is not None and ref.source == "dataset" else None

    @property
    def tokens(self) -> data_ref.DataRef | None:
        """The token file this point trains on, step by step as on synthetic data, or None."""
        ref = data_ref.parse(self.data)
        return ref if ref is not None and ref.source == "tokens" else None

    @property
    def ranks(self) -> int:
        """Processes that train this point together (the world size)."""
        return (self.devices or 1) * self.nnodes

    @property
    def steps_per_epoch(self) -> int | None:
        """Whole batches per epoch; the remainder is dropped so every step has one shape.
        None on a dataset: its size is known once the child has read it."""
        if self.epochs is None or self.epoch_samples is None:
            return None
        return self.epoch_samples // self.batch_size

    @property
    def tokens_per_step(self) -> int:
        """Tokens the GLOBAL batch trains on per step (a decoder's sequence length each)."""
        return self.batch_size * self.spec.input_shape(self.seq_len)[0]

    @property
    def budget_steps(self) -> int:
        """With train_to_loss: the most steps, --max-tokens of them (else --steps)."""
        if self.max_tokens is None:
            return self.steps
        return max(1, self.max_tokens // self.tokens_per_step)

    @property
    def measured_steps(self) -> int:
        if self.train_to_loss is not None:
            return self.budget_steps
        if self.epochs is not None:
            return self.epochs * (self.steps_per_epoch or 0)
        return self.steps

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        return cls(**data)


@dataclass(frozen=True)
class RunConfig:
    """What the user asked for. Sweep axes are tuples; their cross product is run. A field
    an option sets defaults to the option's (bench.config.options.run_default), but for
    the few the command line resolves before it builds a config (written out here)."""

    sweeps: ClassVar[bool] = True  # each sweep axis a tuple (bench.config.fields.values)

    workload: str
    framework: str = run_default("framework")
    device: str = "cpu"  # --device auto is resolved first (config_from_args)
    batch_sizes: tuple[int, ...] = run_default("batch_sizes")  # empty: the workload's default
    precisions: tuple[str, ...] = run_default("precisions")
    memory_formats: tuple[str, ...] = ()  # empty: the framework's default format
    compilers: tuple[str | None, ...] = run_default("compilers")
    threads: int | None = run_default("threads")
    data: str = run_default("data")
    # Sweep axes of the input pipeline (PointConfig.num_workers, prefetch_factor,
    # input_dtype, pin_memory, decode).
    workers: tuple[int, ...] = run_default("workers")
    prefetch_factors: tuple[int | None, ...] = run_default("prefetch_factors")
    input_dtypes: tuple[str, ...] = run_default("input_dtypes")
    pin_memories: tuple[str | None, ...] = run_default("pin_memories")
    decodes: tuple[str, ...] = run_default("decodes")
    # None: WARMUP_STEPS, or 0 in epoch mode (epoch 1 warms up)
    warmup_steps: int | None = run_default("warmup_steps")
    steps: int = STEPS  # --steps is None as parsed, to refuse it beside --epochs
    epochs: int | None = run_default("epochs")
    epoch_samples: int | None = run_default("epoch_samples")
    seq_len: int | None = run_default("seq_len")
    # None: automatic, until the spread is small enough
    repeats: int | None = run_default("repeats")
    # Automatic repeats: never fewer (a spread needs several)
    min_repeats: int = run_default("min_repeats")
    max_repeats: int = run_default("max_repeats")
    # Automatic repeats stop once the relative standard deviation of the repeats'
    # throughput is at most this; 3.5% is the Phoronix Test Suite's default threshold.
    target_rsd: float = run_default("target_rsd")
    find_max_batch: bool = run_default("find_max_batch")
    # Search the largest sequence length that trains at the one batch size given (or the
    # workload's default), up to the workload's longest (bench.run.max_batch.SEQ_LEN_STEP).
    find_max_seq_len: bool = run_default("find_max_seq_len")
    # The search never probes past this batch size
    max_batch_limit: int = run_default("max_batch_limit")
    # Above this batch the search probes its multiples and stops one step short of the
    # first failure; 1: the exact largest batch (more probes, each a fresh process).
    max_batch_step: int = run_default("max_batch_step")
    # Where the search starts (the smallest --batch-size given); None: the workload's
    # smallest batch, which approaches the limit from below, where failures are clean.
    max_batch_start: int | None = None
    probe_steps: int = 2  # steps per max-batch probe: the first allocates optimizer state
    memory_limit_bytes: int | None = run_default("memory_limit_bytes")
    timeout_s: float | None = run_default("timeout_s")  # per child process
    seed: int = run_default("seed")
    # Ranks per machine, a sweep axis (None: the framework's own use of the devices).
    devices: tuple[int | None, ...] = (None,)  # --devices all is resolved first
    nnodes: int = run_default("nnodes")
    node_rank: int = run_default("node_rank")
    rdzv_endpoint: str | None = run_default("rdzv_endpoint")
    # Sweep axes of the child's runtime (None: as launched): allocator, OpenMP, NUMA.
    allocators: tuple[str | None, ...] = run_default("allocators")
    openmps: tuple[str | None, ...] = run_default("openmps")
    numas: tuple[str | None, ...] = run_default("numas")
    train_to: float | None = run_default("train_to")
    # Sweep axis of PointConfig.optimize
    optimizations: tuple[str | None, ...] = run_default("optimizations")
    # Sweep axis of PointConfig.activation_checkpointing.
    activation_checkpointings: tuple[str, ...] = run_default("activation_checkpointings")
    # Train a decoder to a validation loss (PointConfig's fields of the same names).
    train_to_loss: float | None = run_default("train_to_loss")
    val_data: str | None = run_default("val_data")
    max_tokens: int | None = run_default("max_tokens")
    eval_every: int | None = run_default("eval_every")
    eval_every_unit: str = "tokens"
    eval_sequences: int | None = run_default("eval_sequences")
    recipe: str | None = run_default("recipe")
    expert_parallel: int = run_default("expert_parallel")  # PointConfig's field of the same name
    # Sweep axes of a decoder's levers (PointConfig.attention, cross_entropy, pad_vocab).
    attentions: tuple[str, ...] = run_default("attentions")
    cross_entropies: tuple[str, ...] = run_default("cross_entropies")
    pad_vocabs: tuple[int, ...] = run_default("pad_vocabs")

    def __post_init__(self) -> None:
        for name in NAMES:
            object.__setattr__(self, name, tuple(getattr(self, name)))
        if not self.batch_sizes:
            object.__setattr__(
                self, "batch_sizes", (discovery.workload(self.workload).default_batch_size,)
            )
        if not self.memory_formats:
            default = discovery.framework(self.framework).memory_formats[:1]
            object.__setattr__(self, "memory_formats", default)
        if self.warmup_steps is None:
            ref = data_ref.parse(self.data)
            epoch_mode = self.epochs is not None or (ref is not None and ref.source == "dataset")
            to_loss = self.train_to_loss is not None  # every step counts toward the target
            object.__setattr__(self, "warmup_steps", 0 if epoch_mode or to_loss else WARMUP_STEPS)
        check_sweep_size(self)  # first: later checks go through the axes' products
        check_common(self)
        for batch in self.batch_sizes:
            positive("batch_size", batch)
        platform = discovery.platform(self.device)
        trains_at = discovery.framework(self.framework).precisions
        for precision in self.precisions:
            choice("precision", precision, PRECISIONS)
            if precision not in platform.precisions:
                raise UsageError(platform.precision_unsupported(precision) or precision)
            if trains_at is not None and precision not in trains_at:
                raise UsageError(
                    f"precision {precision!r} is not available with {self.framework}; "
                    f"choose from: {', '.join(trains_at)}"
                )
        for fmt, compiler in itertools.product(self.memory_formats, self.compilers):
            check_variant(self.framework, fmt, compiler)
        for axis in NAMES:
            values = getattr(self, axis)
            if not values or len(set(values)) != len(values):
                raise UsageError(f"{axis}: {list(values)} must be a non-empty list without repeats")
        if self.repeats is not None:
            positive("repeats", self.repeats)
        positive("min_repeats", self.min_repeats)
        positive("max_repeats", self.max_repeats)
        if self.max_repeats < self.min_repeats:
            raise UsageError(
                f"max_repeats: {self.max_repeats} is below min_repeats {self.min_repeats}"
            )
        if not 0 < self.target_rsd < 1:
            raise UsageError(
                f"target_rsd: {self.target_rsd!r} must be between 0 and 1 (e.g. 0.035)"
            )
        positive("max_batch_limit", self.max_batch_limit)
        positive("max_batch_step", self.max_batch_step)
        if self.max_batch_start is not None:
            positive("max_batch_start", self.max_batch_start)
        positive("probe_steps", self.probe_steps)
        if self.timeout_s is not None and not TIMEOUT(self.timeout_s):  # as --timeout takes it
            raise UsageError(TIMEOUT.refusal("timeout_s", self.timeout_s))
        self._check_search()
        if self.nnodes > 1 and (self.repeats is None or self.searches):
            # Every machine must launch the same points in the same order; automatic
            # repeats and the search decide from figures only node 0 sees.
            raise UsageError(
                "nnodes: several machines need a fixed --repeats and no --find-max-batch or "
                "--find-max-seq-len (run the search on one machine)"
            )
        # Building every point validates the per-point rules too (e.g. epoch_samples
        # smaller than a batch) before anything runs.
        list(self.points())

    @property
    def searches(self) -> bool:
        """Whether this run searches the largest batch or sequence length that trains."""
        return self.find_max_batch or self.find_max_seq_len

    def _check_search(self) -> None:
        if self.find_max_batch and self.find_max_seq_len:
            raise UsageError(
                "find_max_seq_len: cannot be combined with find_max_batch; search one at a time"
            )
        name = "find_max_seq_len" if self.find_max_seq_len else "find_max_batch"
        if self.searches and self.epochs is not None:
            raise UsageError(f"{name}: cannot be combined with epochs")
        if self.searches and self.train_to_loss is not None:
            raise UsageError(f"{name}: cannot be combined with train_to_loss")
        spec = discovery.workload(self.workload)
        if self.find_max_seq_len and not (spec.takes_seq_len and spec.max_seq_len):
            takers = [
                n for n, s in discovery.workloads().items() if s.takes_seq_len and s.max_seq_len
            ]
            raise UsageError(
                f"find_max_seq_len: workload {spec.name!r} takes no sequence length; "
                f"choose one of {', '.join(takers)}"
            )
        search = "sequence-length" if self.find_max_seq_len else "max-batch"
        axes = [a.many for a in AXES if a.one_value_in_search]
        if self.find_max_seq_len:
            axes.insert(0, "batch_sizes")  # the max-batch search starts at the smallest
        for axis in axes:
            if self.searches and len(getattr(self, axis)) > 1:
                raise UsageError(f"{axis}: the {search} search takes one value, not a sweep")

    def _point(self, **axes: Any) -> PointConfig:
        shared = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(PointConfig)
            if f.name not in axes and hasattr(self, f.name)
        }
        return PointConfig(**shared, **axes)

    def points(self) -> Iterator[PointConfig]:
        """The sweep, in order: batch size varies fastest, as in the published tables,
        and the device count slowest (a scaling table reads down one config)."""
        for values in itertools.product(*(getattr(self, axis.many) for axis in AXES)):
            yield self._point(**{axis.one: value for axis, value in zip(AXES, values, strict=True)})

    def probe(
        self, batch_size: int, precision: str, memory_format: str, compile: str | None,
        seq_len: int | None = None,
    ) -> PointConfig:  # fmt: skip
        """A short point for a search: enough steps to allocate everything; `seq_len`:
        the length probed (None: the config's)."""
        fixed = {a.one: getattr(self, a.many)[0] for a in AXES if a.one_value_in_search}
        return dataclasses.replace(
            self._point(
                batch_size=batch_size,
                precision=precision,
                memory_format=memory_format,
                compile=compile,
                **fixed,
            ),
            warmup_steps=0,
            steps=self.probe_steps,
            seq_len=seq_len or self.seq_len,
        )

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        for name in NAMES:
            data[name] = list(data[name])
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise UsageError(f"config: unknown field(s) {', '.join(unknown)}")
        return cls(**data)
