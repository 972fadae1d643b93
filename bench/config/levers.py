"""What a model's levers take, checked for a run and for each of its points: a decoder's
attention kernel, loss and padded vocabulary (bench.workloads._levers), a mixture's
expert parallelism, float8 training and activation checkpointing, each on a framework,
a workload and a device that apply it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench.config import discovery
from bench.config.fields import Config, choice, positive, values
from bench.config.options import ATTENTION_KERNELS, LOSSES, MAX_PAD_VOCAB, RUN_OPTIONS
from bench.config.sweep import CHECKPOINTING_MODES
from bench.util.errors import UsageError
from bench.util.text import visible

# Each lever's RunConfig field, its PointConfig field and its value that changes nothing.
# The decoders' levers: (RunConfig's field, PointConfig's, the value that leaves it off),
# from the option table.
_LEVERS = tuple(
    (o.many, o.one, o.stored.older)
    for o in RUN_OPTIONS
    if o.sweeps and o.many in ("attentions", "cross_entropies", "pad_vocabs") and o.stored
)


def _workloads(applies: Callable[[Any], Any]) -> str:
    """'gpt2, gpt2-medium, ...': the workloads whose spec says a lever applies to them
    (bench.workloads.<name>: a new workload's spec says it, and nothing here names it)."""
    return ", ".join(name for name, spec in discovery.workloads().items() if applies(spec))


def _frameworks(lever: str) -> str:
    """'torch and jax': the frameworks that apply `lever` (their own attribute of it)."""
    names = discovery.framework_names()
    return " and ".join(name for name in names if getattr(discovery.framework(name), lever))


def check_levers(cfg: Config, framework: Any, spec: Any) -> None:
    """The decoders' levers (bench.workloads._levers): known values, on a framework and a
    workload that take them, the attention kernel one the device has
    (Platform.attention_unsupported). A workload that takes them declares `llm_levers`
    (bench.workloads._levers.DecoderSpec, as the mixtures' spec declares `experts`)."""
    platform = discovery.platform(cfg.device)
    for many, one, off in _LEVERS:
        for value in values(cfg, many, one):
            if one == "pad_vocab":
                positive(one, value, zero_ok=True, most=MAX_PAD_VOCAB)
            else:
                choice(one, value, ATTENTION_KERNELS if one == "attention" else LOSSES)
            if value == off:
                continue
            if not framework.llm_levers:
                raise UsageError(
                    f"{one}: {value!r} is not available with {framework.name}; it applies to "
                    f"{_frameworks('llm_levers')}"
                )
            if not getattr(spec, "llm_levers", False):
                raise UsageError(
                    f"{one}: {spec.name!r} does not take it; it applies to "
                    f"{_workloads(lambda s: getattr(s, 'llm_levers', False))}"
                )
            dropout = getattr(spec, "attention_dropout", 0.0) > 0
            why = platform.attention_unsupported(value, dropout) if one == "attention" else None
            if why:
                raise UsageError(why)


MAX_EXPERT_PARALLEL = 4096  # ranks the experts split over, at most


def check_expert_parallel(cfg: Config, spec: Any) -> None:
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
        raise UsageError(
            f"expert_parallel: {spec.name!r} has no experts to split; it applies to the "
            f"mixtures of experts: {_workloads(lambda s: getattr(s, 'experts', 0))}"
        )
    if experts % parallel:
        raise UsageError(
            f"expert_parallel: {parallel} does not divide {spec.name}'s {experts} "
            f"experts; use a divisor of {experts}"
        )
    for count in values(cfg, "devices", "devices"):
        ranks = (count or 1) * cfg.nnodes
        if ranks % parallel:
            raise UsageError(
                f"expert_parallel: {parallel} does not divide the {ranks} rank(s) of a point "
                f"(--devices {count or 1} x --nnodes {cfg.nnodes}); give a multiple of "
                f"{parallel} ranks"
            )


def check_float8(cfg: Config, framework: Any, spec: Any) -> None:
    """fp8 (bench.parallel.float8): float8 training of a decoder's linear layers, on a
    framework that applies it; the device's own support is the platform's question."""
    if "fp8" not in values(cfg, "precisions", "precision"):
        return
    if not framework.float8:
        raise UsageError(
            f"precision: fp8 is not available with {framework.name}; float8 training "
            f"applies to {_frameworks('float8')}"
        )
    if spec.sharding != "fsdp":
        raise UsageError(
            "precision: fp8 applies to the decoders bench shards with FSDP2 "
            f"({_workloads(lambda s: s.sharding == 'fsdp')}); {spec.name} trains in fp32, "
            "tf32, fp16 or bf16"
        )


def check_checkpointing(cfg: Config, framework: Any, spec: Any) -> None:
    """Activation checkpointing (bench.parallel.checkpoint): a known mode, on a framework
    that applies it, for a workload whose model keeps its blocks where it can find them."""
    for mode in values(cfg, "activation_checkpointings", "activation_checkpointing"):
        choice("activation_checkpointing", mode, CHECKPOINTING_MODES)
        if mode == "none":
            continue
        if not framework.activation_checkpointing:
            raise UsageError(
                f"activation_checkpointing: {mode!r} is not available with {framework.name}; "
                f"it applies to {_frameworks('activation_checkpointing')}"
            )
        if not spec.checkpointable:
            raise UsageError(
                f"activation_checkpointing: {spec.name!r} has no transformer blocks to "
                f"checkpoint; it applies to the decoders ({_workloads(lambda s: s.checkpointable)})"
            )
