"""The checks a run and each of its points share (the same fields, single-valued in a
point): the workload, framework, device and data agree, counts are in range, ranks and
machines are torchrun's, the child's runtime and the framework's optimisations are known,
the sweep is not too large; with what a model's levers take (bench.config.levers) and
training to a target (bench.config.targets). Each raises UsageError naming the field.
"""

from __future__ import annotations

import math
import re
from typing import Any

from bench.config import data_ref, discovery
from bench.config.bounds import MAX_PREFETCH
from bench.config.fields import Config, choice, positive, values
from bench.config.levers import (
    check_checkpointing,
    check_expert_parallel,
    check_float8,
    check_levers,
)
from bench.config.options import DECODES, INPUT_DTYPES, PIN_MEMORY
from bench.config.sweep import MEMORY_FORMATS, NAMES, RUNTIME
from bench.config.targets import check_dataset, check_loss_target
from bench.util.errors import UsageError
from bench.util.text import visible

# or a dataset or token file, KIND:PATH (bench.config.data_ref)
DATA_SOURCES = ("synthetic", "loader")
MAX_THREADS = 4096  # threads and loader workers: more than any machine's CPUs

# A name and a mode start with a letter, digit or '_': one that starts with '-' reads as
# an option to whatever is handed it ('--privileged').
_COMPILER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,39}(:[A-Za-z0-9_][A-Za-z0-9_-]{0,39})?")


def check_variant(framework_name: str, memory_format: str, compile: str | None) -> None:
    """The memory format and compiler of one point, against what the framework offers."""
    framework = discovery.framework(framework_name)
    choice("memory_format", memory_format, MEMORY_FORMATS)
    if memory_format not in framework.memory_formats:
        raise UsageError(
            f"memory_format: {memory_format!r} is not available with {framework.name}; "
            f"choose from: {', '.join(framework.memory_formats)}"
        )
    if compile is not None and not _COMPILER.fullmatch(compile):  # a name, from any file
        raise UsageError(
            f"compile: {visible(compile)!r} is not a compiler's name (letters, digits, '_', "
            "'-' after the first, and ':MODE')"
        )
    framework.check_compile(compile)


def check_common(cfg: Config) -> None:
    """Checks shared by a run and its points (the same fields, single-valued here)."""
    spec = discovery.workload(cfg.workload)
    if cfg.framework not in spec.frameworks():
        raise UsageError(
            f"framework {cfg.framework!r} does not implement workload {cfg.workload!r}; "
            f"it has: {', '.join(spec.frameworks())}"
        )
    framework = discovery.framework(cfg.framework)
    discovery.platform(cfg.device)
    ref = data_ref.parse(cfg.data)
    if ref is None:
        kinds = data_ref.KINDS + data_ref.TOKEN_KINDS
        choice("data", cfg.data, DATA_SOURCES + tuple(f"{k}:PATH" for k in kinds))
    source = ref.source if ref else cfg.data
    if source == "tokens" and spec.task != "causal-lm":
        decoders = [n for n, s in discovery.workloads().items() if s.task == "causal-lm"]
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
        positive(name, getattr(cfg, name))
    for name in ("warmup_steps", "seed"):
        positive(name, getattr(cfg, name), zero_ok=True)
    # Each a thread or a process started: a file saying 2**31-1 is no machine's.
    positive("threads", cfg.threads, most=MAX_THREADS)
    workers = values(cfg, "workers", "num_workers")
    prefetches = [p for p in values(cfg, "prefetch_factors", "prefetch_factor") if p is not None]
    for count in workers:
        positive("num_workers", count, zero_ok=True, most=MAX_THREADS)
    if any(workers) and source in ("synthetic", "tokens"):
        raise UsageError(
            "num_workers: only applies with a loader or a dataset of images (--data); a "
            "token file is read in the training process"
        )
    for factor in prefetches:
        positive("prefetch_factor", factor, most=MAX_PREFETCH)
    if prefetches and not all(workers):
        raise UsageError(
            "prefetch_factor: batches a loader worker prepares ahead; it needs --num-workers "
            "1 or more"
        )
    if prefetches and not framework.prefetches_batches:
        raise UsageError(f"prefetch_factor: {framework.name}'s input pipeline has no such "
                         "setting; it is PyTorch's DataLoader's")  # fmt: skip
    check_feed(cfg, framework, source)
    check_dataset(cfg, source == "dataset")
    check_loss_target(cfg, source)
    if cfg.seq_len is not None:
        if not spec.takes_seq_len:
            raise UsageError(f"seq_len: workload {spec.name!r} takes no sequence length")
        if spec.max_seq_len and cfg.seq_len > spec.max_seq_len:
            raise UsageError(
                f"seq_len: {cfg.seq_len} is longer than {spec.name}'s maximum {spec.max_seq_len}"
            )
    if cfg.epoch_samples is not None and cfg.epochs is None:
        raise UsageError("epoch_samples: only applies with epochs (epoch mode)")
    check_launch(cfg, framework)
    check_runtime(cfg)
    check_optimize(cfg, framework, spec)
    check_checkpointing(cfg, framework, spec)
    check_float8(cfg, framework, spec)
    check_levers(cfg, framework, spec)
    check_expert_parallel(cfg, spec)


def check_feed(cfg: Config, framework: Any, source: str) -> None:
    """The input pipeline's levers (--input-dtype, --pin-memory, --decode): known values,
    on data that goes through a loader, in a framework that has them
    (Framework.sends_uint8, pins_memory, decodes_on_device), pinned memory where the
    platform copies a batch to a device (Platform.pin_memory_unfit), JPEGs decoded on
    a device that has a decoder bench drives (Platform.device_decode_unfit)."""
    for dtype in values(cfg, "input_dtypes", "input_dtype"):
        choice("input_dtype", dtype, INPUT_DTYPES)
        if dtype == "float32":
            continue
        if source != "dataset":
            raise UsageError(
                f"input_dtype: {dtype} is a dataset's pixels as the host decoded them; it "
                "needs --data imagenet:PATH or cifar10:PATH"
            )
        if not framework.sends_uint8:
            raise UsageError(f"input_dtype: {framework.name}'s input pipeline sends float32; "
                             "uint8 normalised on the device is PyTorch's here")  # fmt: skip
    for where in values(cfg, "decodes", "decode"):
        choice("decode", where, DECODES)
        if where == "cpu":
            continue
        if source != "dataset" or cfg.data.partition(":")[0] != "imagenet":
            raise UsageError(
                "decode: device decodes a dataset's JPEG files; it needs --data imagenet:PATH "
                "(CIFAR-10's images are raw pixels, with nothing to decode)"
            )
        if not framework.decodes_on_device:
            raise UsageError(f"decode: {framework.name}'s input pipeline decodes on the host; "
                             "JPEGs decoded on the device are PyTorch's here")  # fmt: skip
        why = discovery.platform(cfg.device).device_decode_unfit()
        if why:
            raise UsageError(why)
    for pin in values(cfg, "pin_memories", "pin_memory"):
        if pin is None:
            continue
        choice("pin_memory", pin, PIN_MEMORY)
        if source not in ("loader", "dataset"):
            raise UsageError(
                "pin_memory: host memory of a loader's batches; it needs --data loader or a "
                "dataset of images"
            )
        if not framework.pins_memory:
            raise UsageError(f"pin_memory: {framework.name}'s input pipeline has no such "
                             "setting; it is PyTorch's DataLoader's")  # fmt: skip
        why = discovery.platform(cfg.device).pin_memory_unfit() if pin == "on" else None
        if why:
            raise UsageError(why)


def check_optimize(cfg: Config, framework: Any, spec: Any) -> None:
    """A framework's whole-model optimisation (torch: ipex.optimize): known values only,
    on a platform where the framework runs them (torch: IPEX is its CPU build), and
    only where it acts on the workload (Framework.unused_optimization). Whether
    one is installed is the parent's question (Framework.preflight), so that a result
    keeps loading on a machine without it."""
    compilers = values(cfg, "compilers", "compile")
    optimizations = values(cfg, "optimizations", "optimize")
    for value in optimizations:
        if value is not None and value not in framework.optimizations:
            offered = ", ".join(framework.optimizations) or "none"
            raise UsageError(
                f"optimize: {value!r} is not available with {framework.name}; it offers: {offered}"
            )
        if value is not None and (unused := framework.unused_optimization(spec, value)):
            raise UsageError(f"optimize: {unused}")
    framework.check_platform(discovery.platform(cfg.device), compilers, optimizations)


def check_runtime(cfg: Config) -> None:
    """Allocator, OpenMP runtime and NUMA binding: known values (None: as launched)."""
    for axis in RUNTIME:
        for value in values(cfg, axis.many, axis.one):
            if value is not None and axis.allowed is not None:
                choice(axis.one, value, axis.allowed)


def check_launch(cfg: Config, framework: Any) -> None:
    """Ranks and machines: torchrun's flags, for frameworks whose ranks it launches."""
    positive("nnodes", cfg.nnodes)
    positive("node_rank", cfg.node_rank, zero_ok=True)
    counts = values(cfg, "devices", "devices")
    for count in counts:
        positive("devices", count)
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


# Points of one sweep, at most: each is measured in fresh processes, so more is no run
# anyone waits for, and a config from a file (bench rerun) must not enumerate billions.
MAX_SWEEP_POINTS = 10_000


def check_sweep_size(cfg: Config) -> None:
    """The cross product of the sweep axes, refused above MAX_SWEEP_POINTS before any
    point is built (its size is the product of the axes' lengths)."""
    lengths = {axis: len(getattr(cfg, axis)) for axis in reversed(NAMES)}  # batch first
    size = math.prod(lengths.values())
    if size > MAX_SWEEP_POINTS:
        factors = " x ".join(f"{n} {axis}" for axis, n in lengths.items() if n > 1)
        raise UsageError(
            f"sweep: {size:,} points ({factors}) is more than {MAX_SWEEP_POINTS:,}; "
            "split it into several runs"
        )
