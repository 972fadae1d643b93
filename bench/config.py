"""Frozen, self-validating configuration: one object for the CLI and the Python API.

RunConfig is what the user asked for (lists make a sweep); PointConfig is one point of
that sweep, the whole of what a child process needs to measure it. Every check names
the field, the bad value and what is allowed, and raises UsageError.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Self

from bench import data_ref, registry
from bench.axes import AXES, CHECKPOINTING_MODES, MEMORY_FORMATS, NAMES, PRECISIONS, RUNTIME
from bench.errors import UsageError
from bench.options_table import ATTENTION_KERNELS, LOSSES, MAX_PAD_VOCAB
from bench.text import visible

__all__ = ["CHECKPOINTING_MODES", "MEMORY_FORMATS", "PRECISIONS", "PointConfig", "RunConfig"]
DATA_SOURCES = ("synthetic", "loader")  # or a dataset or token file, KIND:PATH (bench.data_ref)
MAX_THREADS = 4096  # threads and loader workers: more than any machine's CPUs


def _positive(
    name: str, value: int | None, *, zero_ok: bool = False, most: int | None = None
) -> None:
    if value is None:
        return
    low = 0 if zero_ok else 1
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        allowed = "zero or a positive whole number" if zero_ok else "a positive whole number"
        raise UsageError(f"{name}: {value!r} is not allowed; use {allowed}")
    if most is not None and value > most:
        raise UsageError(f"{name}: {value!r} is not allowed; use at most {most}")


def _choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise UsageError(f"{name}: {value!r} is not allowed; choose from: {', '.join(allowed)}")


_COMPILER = re.compile(r"[A-Za-z0-9_-]{1,40}(:[A-Za-z0-9_-]{1,40})?")


def _check_variant(framework_name: str, memory_format: str, compile: str | None) -> None:
    """The memory format and compiler of one point, against what the framework offers."""
    framework = registry.framework(framework_name)
    _choice("memory_format", memory_format, MEMORY_FORMATS)
    if memory_format not in framework.memory_formats:
        raise UsageError(
            f"memory_format: {memory_format!r} is not available with {framework.name}; "
            f"choose from: {', '.join(framework.memory_formats)}"
        )
    if compile is not None and not _COMPILER.fullmatch(compile):  # a name, from any file
        raise UsageError(
            f"compile: {visible(compile)!r} is not a compiler's name (letters, digits, '_', "
            "'-', and ':MODE')"
        )
    framework.check_compile(compile)


def _check_common(cfg: RunConfig | PointConfig) -> None:
    """Checks shared by a run and its points (the same fields, single-valued here)."""
    spec = registry.workload(cfg.workload)
    if cfg.framework not in spec.frameworks():
        raise UsageError(
            f"framework {cfg.framework!r} does not implement workload {cfg.workload!r}; "
            f"it has: {', '.join(spec.frameworks())}"
        )
    framework = registry.framework(cfg.framework)
    registry.platform(cfg.device)
    ref = data_ref.parse(cfg.data)
    if ref is None:
        kinds = data_ref.KINDS + data_ref.TOKEN_KINDS
        _choice("data", cfg.data, DATA_SOURCES + tuple(f"{k}:PATH" for k in kinds))
    source = ref.source if ref else cfg.data
    if source == "tokens" and spec.task != "causal-lm":
        decoders = [n for n, s in registry.workloads().items() if s.task == "causal-lm"]
        raise UsageError(
            f"data: {cfg.data.partition(':')[0]}:PATH holds token ids for a decoder; workload "
            f"{spec.name!r} is {spec.task}; choose one of {', '.join(decoders)}"
        )
    if source not in framework.data_sources:
        raise UsageError(
            f"data: {cfg.data!r} is not available with {framework.name}; "
            f"choose from: {', '.join(framework.data_sources)}"
        )
    if cfg.threads is not None and not framework.sets_threads:
        raise UsageError(
            f"threads: {framework.name} has no setting for its CPU thread pool; "
            "limit the CPUs instead (taskset, or docker run --cpuset-cpus)"
        )
    for name in ("steps", "epochs", "epoch_samples", "seq_len", "memory_limit_bytes"):
        _positive(name, getattr(cfg, name))
    for name in ("warmup_steps", "seed"):
        _positive(name, getattr(cfg, name), zero_ok=True)
    # Each a thread or a process started: a file saying 2**31-1 is no machine's.
    _positive("threads", cfg.threads, most=MAX_THREADS)
    _positive("num_workers", cfg.num_workers, zero_ok=True, most=MAX_THREADS)
    if cfg.num_workers and source in ("synthetic", "tokens"):
        raise UsageError(
            "num_workers: only applies with a loader or a dataset of images (--data); a "
            "token file is read in the training process"
        )
    _check_dataset(cfg, source == "dataset")
    _check_loss_target(cfg, source)
    if cfg.seq_len is not None:
        if not spec.takes_seq_len:
            raise UsageError(f"seq_len: workload {spec.name!r} takes no sequence length")
        if spec.max_seq_len and cfg.seq_len > spec.max_seq_len:
            raise UsageError(
                f"seq_len: {cfg.seq_len} is longer than {spec.name}'s maximum {spec.max_seq_len}"
            )
    if cfg.epoch_samples is not None and cfg.epochs is None:
        raise UsageError("epoch_samples: only applies with epochs (epoch mode)")
    _check_launch(cfg, framework)
    _check_runtime(cfg)
    _check_optimize(cfg, framework)
    _check_checkpointing(cfg, framework, spec)
    _check_float8(cfg, framework, spec)
    _check_levers(cfg, framework, spec)
    _check_expert_parallel(cfg, spec)


# Each lever's RunConfig field, its PointConfig field and its value that changes nothing.
_LEVERS = (("attentions", "attention", "auto"), ("cross_entropies", "cross_entropy", "plain"),
           ("pad_vocabs", "pad_vocab", 0))  # fmt: skip


def _check_levers(cfg: RunConfig | PointConfig, framework: Any, spec: Any) -> None:
    """The decoders' levers (bench.workloads._levers): known values, on a framework and a
    workload that take them, the attention kernel one the device has
    (Platform.attention_unsupported). A workload that takes them declares `llm_levers`
    (bench.workloads._levers.DecoderSpec, as the mixtures' spec declares `experts`)."""
    platform = registry.platform(cfg.device)
    for many, one, off in _LEVERS:
        values = getattr(cfg, many) if isinstance(cfg, RunConfig) else (getattr(cfg, one),)
        for value in values:
            if one == "pad_vocab":
                _positive(one, value, zero_ok=True, most=MAX_PAD_VOCAB)
            else:
                _choice(one, value, ATTENTION_KERNELS if one == "attention" else LOSSES)
            if value == off:
                continue
            if not framework.llm_levers:
                able = [n for n in registry.framework_names() if registry.framework(n).llm_levers]
                raise UsageError(
                    f"{one}: {value!r} is not available with {framework.name}; it applies to "
                    f"{' and '.join(able)}"
                )
            if not getattr(spec, "llm_levers", False):
                able = [n for n, s in registry.workloads().items() if getattr(s, "llm_levers", 0)]
                raise UsageError(
                    f"{one}: {spec.name!r} does not take it; it applies to {', '.join(able)}"
                )
            dropout = getattr(spec, "attention_dropout", 0.0) > 0
            why = platform.attention_unsupported(value, dropout) if one == "attention" else None
            if why:
                raise UsageError(why)


MAX_EXPERT_PARALLEL = 4096  # ranks the experts split over, at most


def _check_expert_parallel(cfg: RunConfig | PointConfig, spec: Any) -> None:
    """--expert-parallel N: a mixture of experts (its spec's `experts`) whose experts and
    every point's ranks N divides. A workload's experts: its spec's `experts` (the
    mixtures' WorkloadSpec subclass, bench.workloads.moe.MoESpec; 0 elsewhere)."""
    parallel = cfg.expert_parallel
    if type(parallel) is not int or not 1 <= parallel <= MAX_EXPERT_PARALLEL:
        raise UsageError(
            f"expert_parallel: {visible(repr(parallel))[:40]} must be a whole number from 1 to "
            f"{MAX_EXPERT_PARALLEL}"
        )
    if parallel == 1:
        return
    experts = getattr(spec, "experts", 0)
    if not experts:
        mixtures = [n for n, s in registry.workloads().items() if getattr(s, "experts", 0)]
        raise UsageError(
            f"expert_parallel: {spec.name!r} has no experts to split; it applies to the "
            f"mixtures of experts: {', '.join(mixtures)}"
        )
    if experts % parallel:
        raise UsageError(
            f"expert_parallel: {parallel} does not divide {spec.name}'s {experts} "
            f"experts; use a divisor of {experts}"
        )
    counts = cfg.devices if isinstance(cfg, RunConfig) else (cfg.devices,)
    for count in counts:
        ranks = (count or 1) * cfg.nnodes
        if ranks % parallel:
            raise UsageError(
                f"expert_parallel: {parallel} does not divide the {ranks} rank(s) of a point "
                f"(--devices {count or 1} x --nnodes {cfg.nnodes}); give a multiple of "
                f"{parallel} ranks"
            )


def _check_float8(cfg: RunConfig | PointConfig, framework: Any, spec: Any) -> None:
    """fp8 (bench.parallel.float8): float8 training of a decoder's linear layers, on a
    framework that applies it; the device's own support is the platform's question."""
    precisions = cfg.precisions if isinstance(cfg, RunConfig) else (cfg.precision,)
    if "fp8" not in precisions:
        return
    if not framework.float8:
        raise UsageError(
            f"precision: fp8 is not available with {framework.name}; float8 training "
            "applies to torch (torchao)"
        )
    if spec.sharding != "fsdp":
        raise UsageError(
            f"precision: fp8 applies to the decoders bench shards with FSDP2 (gpt2, llama3); "
            f"{spec.name} trains in fp32, tf32, fp16 or bf16"
        )


def _check_checkpointing(cfg: RunConfig | PointConfig, framework: Any, spec: Any) -> None:
    """Activation checkpointing (bench.parallel.checkpoint): a known mode, on a framework
    that applies it, for a workload whose model keeps its blocks where it can find them."""
    if isinstance(cfg, RunConfig):
        modes = cfg.activation_checkpointings
    else:
        modes = (cfg.activation_checkpointing,)
    for mode in modes:
        _choice("activation_checkpointing", mode, CHECKPOINTING_MODES)
        if mode == "none":
            continue
        if not framework.activation_checkpointing:
            able = [
                n
                for n in registry.framework_names()
                if registry.framework(n).activation_checkpointing
            ]
            raise UsageError(
                f"activation_checkpointing: {mode!r} is not available with {framework.name}; "
                f"it applies to {' and '.join(able)}"
            )
        if not spec.checkpointable:
            raise UsageError(
                f"activation_checkpointing: {spec.name!r} has no transformer blocks to "
                "checkpoint; it applies to the decoders (gpt2, llama3)"
            )


def _check_optimize(cfg: RunConfig | PointConfig, framework: Any) -> None:
    """A framework's whole-model optimisation (torch: ipex.optimize): known values only,
    on a platform where the framework runs them (torch: IPEX is its CPU build). Whether
    one is installed is the parent's question (Framework.preflight), so that a result
    keeps loading on a machine without it."""
    if isinstance(cfg, RunConfig):
        compilers, optimizations = cfg.compilers, cfg.optimizations
    else:
        compilers, optimizations = (cfg.compile,), (cfg.optimize,)
    for value in optimizations:
        if value is not None and value not in framework.optimizations:
            offered = ", ".join(framework.optimizations) or "none"
            raise UsageError(
                f"optimize: {value!r} is not available with {framework.name}; it offers: {offered}"
            )
    framework.check_platform(registry.platform(cfg.device), compilers, optimizations)


def _check_dataset(cfg: RunConfig | PointConfig, dataset: bool) -> None:
    """Training on a real dataset (and to a target accuracy): whole epochs, every step
    counted toward accuracy, one process."""
    if cfg.train_to is not None:
        if (
            isinstance(cfg.train_to, bool)
            or not isinstance(cfg.train_to, int | float)
            or not (0 < cfg.train_to <= 1)
        ):
            raise UsageError(
                f"train_to: {cfg.train_to!r} is not allowed; use a top-1 accuracy between "
                "0 and 1 (e.g. 0.94)"
            )
        if not dataset:
            raise UsageError(
                "train_to: needs a real dataset to evaluate on "
                f"(--data {'|'.join(k + ':PATH' for k in data_ref.KINDS)})"
            )
    if not dataset:
        return
    if cfg.epochs is None:
        raise UsageError(
            "epochs: training on a dataset needs --epochs N (with --train-to: the most "
            "epochs to try, also spelled --max-epochs)"
        )
    if cfg.epoch_samples is not None:
        raise UsageError("epoch_samples: an epoch on a dataset is the whole training split")
    if cfg.warmup_steps:
        raise UsageError(
            "warmup_steps: on a dataset every step trains toward accuracy; epoch 1 holds "
            "the start-up costs (throughput reads epochs 2..N)"
        )


LOSS_TARGET_FIELDS = ("val_data", "max_tokens", "eval_every", "eval_sequences", "recipe")
# Declared here, below the datasets that implement them (tests/test_to_loss.py checks
# they agree with bench.datasets.loss_target.EVALUATORS and recipe.DECODER_RECIPES).
LOSS_FRAMEWORKS = ("torch",)  # frameworks that evaluate a validation loss over ranks
DECODER_RECIPES = ("default", "llmc-gpt2-124m", "mlperf-llama31-8b")
EVAL_UNITS = ("tokens", "sequences")


def _check_loss_target(cfg: RunConfig | PointConfig, source: str) -> None:
    """Training a decoder to a validation loss (bench.datasets.loss_target): a token file
    to train on and another to evaluate on, every step counted toward the target."""
    if cfg.train_to_loss is None:
        given = [name for name in LOSS_TARGET_FIELDS if getattr(cfg, name) is not None]
        if given:
            raise UsageError(f"{given[0]}: only applies with train_to_loss (--train-to-loss)")
        return
    loss = cfg.train_to_loss
    if isinstance(loss, bool) or not isinstance(loss, int | float) or not 0 < loss < 1e6:
        raise UsageError(
            f"train_to_loss: {loss!r} is not allowed; use a validation loss in nats per "
            "token (log perplexity) above 0, e.g. 3.28"
        )
    if cfg.framework not in LOSS_FRAMEWORKS:
        raise UsageError(
            f"train_to_loss: {cfg.framework} has no validation loss over a token file yet "
            f"(an evaluation split over ranks); it applies to {', '.join(LOSS_FRAMEWORKS)}"
        )
    if source != "tokens":
        raise UsageError(
            "train_to_loss: needs a token file to train on (--data tokens:PATH, a glob for "
            "several shards) and one to evaluate on (--val-data tokens:PATH)"
        )
    ref = data_ref.parse(cfg.val_data or "")
    if ref is None or ref.source != "tokens":
        raise UsageError(
            f"val_data: {cfg.val_data!r} is not allowed; train_to_loss needs the validation "
            "token file as tokens:PATH (or tokens-u32:PATH)"
        )
    for name in ("max_tokens", "eval_every", "eval_sequences"):
        _positive(name, getattr(cfg, name))
    _choice("eval_every_unit", cfg.eval_every_unit, EVAL_UNITS)
    if cfg.recipe is not None:
        _choice("recipe", cfg.recipe, DECODER_RECIPES)
    if cfg.warmup_steps:
        raise UsageError(
            "warmup_steps: with train_to_loss every step trains toward the target (the "
            "first steps hold the start-up costs, counted as MLPerf counts them)"
        )
    if cfg.epochs is not None:
        raise UsageError("epochs: train_to_loss counts tokens (--max-tokens), not epochs")
    optimizations = cfg.optimizations if isinstance(cfg, RunConfig) else (cfg.optimize,)
    if any(optimizations):
        raise UsageError(
            "optimize: train_to_loss builds its own AdamW (its recipe's), which "
            "ipex.optimize would not see; leave --optimize out"
        )


def _check_runtime(cfg: RunConfig | PointConfig) -> None:
    """Allocator, OpenMP runtime and NUMA binding: known values (None: as launched)."""
    for axis in RUNTIME:
        many = isinstance(cfg, RunConfig)
        values = getattr(cfg, axis.many) if many else (getattr(cfg, axis.one),)
        for value in values:
            if value is not None and axis.allowed is not None:
                _choice(axis.one, value, axis.allowed)


def _check_launch(cfg: RunConfig | PointConfig, framework: Any) -> None:
    """Ranks and machines: torchrun's flags, for frameworks whose ranks it launches."""
    _positive("nnodes", cfg.nnodes)
    _positive("node_rank", cfg.node_rank, zero_ok=True)
    counts = cfg.devices if isinstance(cfg, RunConfig) else (cfg.devices,)
    for count in counts:
        _positive("devices", count)
    spread = cfg.nnodes > 1 or any(count not in (None, 1) for count in counts)
    if spread and not framework.launches_ranks:
        raise UsageError(
            f"devices: {framework.name} spreads a point over every local device in one "
            "process; --devices and --nnodes apply to torch (choose devices with "
            "CUDA_VISIBLE_DEVICES)"
        )
    if cfg.nnodes == 1:
        if cfg.node_rank or cfg.rdzv_endpoint:
            raise UsageError("node_rank, rdzv_endpoint: only apply with nnodes above 1")
        return
    if not cfg.rdzv_endpoint:
        raise UsageError(
            f"rdzv_endpoint: nnodes {cfg.nnodes} needs the rendezvous HOST:PORT of node 0, "
            "the same on every machine (e.g. --rdzv-endpoint 10.0.0.1:29500)"
        )
    host, _, port = cfg.rdzv_endpoint.rpartition(":")
    if not host or not port.isascii() or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(
            f"rdzv_endpoint: {cfg.rdzv_endpoint!r} is not HOST:PORT with a port 1-65535"
        )
    if cfg.node_rank >= cfg.nnodes:
        raise UsageError(f"node_rank: {cfg.node_rank} must be below nnodes {cfg.nnodes}")


_AXES = NAMES  # bench.axes declares them
# Points of one sweep, at most: each is measured in fresh processes, so more is no run
# anyone waits for, and a config from a file (bench rerun) must not enumerate billions.
MAX_SWEEP_POINTS = 10_000


def _check_sweep_size(cfg: RunConfig) -> None:
    """The cross product of the sweep axes, refused above MAX_SWEEP_POINTS before any
    point is built (its size is the product of the axes' lengths)."""
    lengths = {axis: len(getattr(cfg, axis)) for axis in reversed(_AXES)}  # batch first
    size = math.prod(lengths.values())
    if size > MAX_SWEEP_POINTS:
        factors = " x ".join(f"{n} {axis}" for axis, n in lengths.items() if n > 1)
        raise UsageError(
            f"sweep: {size:,} points ({factors}) is more than {MAX_SWEEP_POINTS:,}; "
            "split it into several runs"
        )


@dataclass(frozen=True)
class PointConfig:
    """One measured point: everything the child process needs, and nothing else."""

    workload: str
    framework: str = "torch"
    device: str = "cpu"
    batch_size: int = 32
    precision: str = "fp32"
    memory_format: str = ""  # empty: the framework's default (contiguous for torch)
    compile: str | None = None  # a compiler (torch.compile backend, tensorflow 'xla'), or None
    threads: int | None = None
    data: str = "synthetic"  # synthetic, loader, a dataset KIND:PATH, or tokens:PATH
    num_workers: int = 0
    warmup_steps: int = 5
    steps: int = 20
    epochs: int | None = None  # epoch mode: `epochs` passes over `epoch_samples` samples
    epoch_samples: int | None = None
    seq_len: int | None = None
    memory_limit_bytes: int | None = None
    seed: int = 0
    # Ranks per machine, one device each (torch, launched by torchrun when above 1);
    # None: the framework's own use of the local devices (one process).
    devices: int | None = None
    nnodes: int = 1  # machines; above 1 every machine runs the same command (torchrun's flags)
    node_rank: int = 0
    rdzv_endpoint: str | None = None  # HOST:PORT of node 0's rendezvous
    # The child's memory allocator, OpenMP runtime and NUMA binding (launchers.runtime);
    # None: as bench itself was launched.
    allocator: str | None = None
    openmp: str | None = None
    numa: str | None = None
    # Train on the dataset until top-1 on its validation split reaches this (at most
    # `epochs` epochs); None: train `epochs` epochs, evaluating after each.
    train_to: float | None = None
    # The framework's whole-model optimisation (torch: 'ipex', ipex.optimize), or None.
    optimize: str | None = None
    # Activation checkpointing of the model's blocks: none, selective, full.
    activation_checkpointing: str = "none"
    # A decoder trained on a token file until the loss on `val_data` reaches this, within
    # `max_tokens` (bench.datasets.loss_target); the evaluation every `eval_every`
    # tokens or sequences (`eval_every_unit`) on `eval_sequences` validation windows.
    train_to_loss: float | None = None
    val_data: str | None = None
    max_tokens: int | None = None
    eval_every: int | None = None
    eval_every_unit: str = "tokens"
    eval_sequences: int | None = None
    recipe: str | None = None  # bench.datasets.recipe.DECODER_RECIPES; None: "default"
    # Mixtures of experts: the experts split over this many ranks, tokens exchanged by
    # all-to-all (bench.parallel.expert); 1: every rank holds every expert.
    expert_parallel: int = 1
    # A decoder's levers (bench.workloads._levers): scaled_dot_product_attention's kernel
    # (auto: PyTorch chooses), its loss whole or in chunks of tokens (plain, chunked), its
    # vocabulary padded to a multiple of this (0: unpadded).
    attention: str = "auto"
    cross_entropy: str = "plain"
    pad_vocab: int = 0

    def __post_init__(self) -> None:
        _check_common(self)
        _positive("batch_size", self.batch_size)
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
        _choice("precision", self.precision, PRECISIONS)
        if not self.memory_format:
            default = registry.framework(self.framework).memory_formats[0]
            object.__setattr__(self, "memory_format", default)
        _check_variant(self.framework, self.memory_format, self.compile)
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
        return registry.workload(self.workload)

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
    """What the user asked for. Sweep axes are tuples; their cross product is run."""

    workload: str
    framework: str = "torch"
    device: str = "cpu"
    batch_sizes: tuple[int, ...] = ()  # empty: the workload's default batch size
    precisions: tuple[str, ...] = ("fp32",)
    memory_formats: tuple[str, ...] = ()  # empty: the framework's default format
    compilers: tuple[str | None, ...] = (None,)
    threads: int | None = None
    data: str = "synthetic"
    num_workers: int = 0
    warmup_steps: int | None = None  # None: 5 steps, or 0 in epoch mode (epoch 1 warms up)
    steps: int = 20
    epochs: int | None = None
    epoch_samples: int | None = None
    seq_len: int | None = None
    repeats: int | None = 1  # None: automatic, until the spread is small enough
    min_repeats: int = 3  # automatic repeats: never fewer (a spread needs several)
    max_repeats: int = 10
    # Automatic repeats stop once the relative standard deviation of the repeats'
    # throughput is at most this; 3.5% is the Phoronix Test Suite's default threshold.
    target_rsd: float = 0.035
    find_max_batch: bool = False
    # Search the largest sequence length that trains at the one batch size given (or the
    # workload's default), up to the workload's longest (bench.runner.SEQ_LEN_STEP).
    find_max_seq_len: bool = False
    max_batch_limit: int = 4096  # the search never probes past this batch size
    # Above this batch the search probes its multiples and stops one step short of the
    # first failure; 1: the exact largest batch (more probes, each a fresh process).
    max_batch_step: int = 8
    # Where the search starts (the smallest --batch-size given); None: the workload's
    # smallest batch, which approaches the limit from below, where failures are clean.
    max_batch_start: int | None = None
    probe_steps: int = 2  # steps per max-batch probe: the first allocates optimizer state
    memory_limit_bytes: int | None = None
    timeout_s: float | None = None  # per child process
    seed: int = 0
    # Ranks per machine, a sweep axis (None: the framework's own use of the devices).
    devices: tuple[int | None, ...] = (None,)
    nnodes: int = 1
    node_rank: int = 0
    rdzv_endpoint: str | None = None
    # Sweep axes of the child's runtime (None: as launched): allocator, OpenMP, NUMA.
    allocators: tuple[str | None, ...] = (None,)
    openmps: tuple[str | None, ...] = (None,)
    numas: tuple[str | None, ...] = (None,)
    train_to: float | None = None
    optimizations: tuple[str | None, ...] = (None,)  # sweep axis of PointConfig.optimize
    # Sweep axis of PointConfig.activation_checkpointing.
    activation_checkpointings: tuple[str, ...] = ("none",)
    # Train a decoder to a validation loss (PointConfig's fields of the same names).
    train_to_loss: float | None = None
    val_data: str | None = None
    max_tokens: int | None = None
    eval_every: int | None = None
    eval_every_unit: str = "tokens"
    eval_sequences: int | None = None
    recipe: str | None = None
    expert_parallel: int = 1  # PointConfig's field of the same name
    # Sweep axes of a decoder's levers (PointConfig.attention, cross_entropy, pad_vocab).
    attentions: tuple[str, ...] = ("auto",)
    cross_entropies: tuple[str, ...] = ("plain",)
    pad_vocabs: tuple[int, ...] = (0,)

    def __post_init__(self) -> None:
        for name in _AXES:
            object.__setattr__(self, name, tuple(getattr(self, name)))
        if not self.batch_sizes:
            object.__setattr__(
                self, "batch_sizes", (registry.workload(self.workload).default_batch_size,)
            )
        if not self.memory_formats:
            default = registry.framework(self.framework).memory_formats[:1]
            object.__setattr__(self, "memory_formats", default)
        if self.warmup_steps is None:
            ref = data_ref.parse(self.data)
            epoch_mode = self.epochs is not None or (ref is not None and ref.source == "dataset")
            to_loss = self.train_to_loss is not None  # every step counts toward the target
            object.__setattr__(self, "warmup_steps", 0 if epoch_mode or to_loss else 5)
        _check_sweep_size(self)  # first: later checks go through the axes' products
        _check_common(self)
        for batch in self.batch_sizes:
            _positive("batch_size", batch)
        platform = registry.platform(self.device)
        for precision in self.precisions:
            _choice("precision", precision, PRECISIONS)
            if precision not in platform.precisions:
                raise UsageError(platform.precision_unsupported(precision) or precision)
        for fmt, compiler in itertools.product(self.memory_formats, self.compilers):
            _check_variant(self.framework, fmt, compiler)
        for axis in _AXES:
            values = getattr(self, axis)
            if not values or len(set(values)) != len(values):
                raise UsageError(f"{axis}: {list(values)} must be a non-empty list without repeats")
        if self.repeats is not None:
            _positive("repeats", self.repeats)
        _positive("min_repeats", self.min_repeats)
        _positive("max_repeats", self.max_repeats)
        if self.max_repeats < self.min_repeats:
            raise UsageError(
                f"max_repeats: {self.max_repeats} is below min_repeats {self.min_repeats}"
            )
        if not 0 < self.target_rsd < 1:
            raise UsageError(
                f"target_rsd: {self.target_rsd!r} must be between 0 and 1 (e.g. 0.035)"
            )
        _positive("max_batch_limit", self.max_batch_limit)
        _positive("max_batch_step", self.max_batch_step)
        if self.max_batch_start is not None:
            _positive("max_batch_start", self.max_batch_start)
        _positive("probe_steps", self.probe_steps)
        if self.timeout_s is not None and not self.timeout_s > 0:
            raise UsageError(f"timeout_s: {self.timeout_s!r} must be a positive number of seconds")
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
        spec = registry.workload(self.workload)
        if self.find_max_seq_len and not (spec.takes_seq_len and spec.max_seq_len):
            takers = [
                n for n, s in registry.workloads().items() if s.takes_seq_len and s.max_seq_len
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
        for name in _AXES:
            data[name] = list(data[name])
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise UsageError(f"config: unknown field(s) {', '.join(unknown)}")
        return cls(**data)
