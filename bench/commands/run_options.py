"""The options every command that runs points shares (run, rerun, suite, tune, ladder,
fleet), and what they become: a RunConfig, resolved devices, then a measured, printed
and saved result (run_and_print)."""

from __future__ import annotations

import argparse
import functools
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

from bench import catalog, datasets, memory_floor, provenance, registry, result, runtime, stopping
from bench.axes import (
    ALLOCATORS,
    CHECKPOINTING_MODES,
    MEMORY_FORMATS,
    NUMA_MODES,
    OPENMP_RUNTIMES,
    PRECISIONS,
)
from bench.commands.options import UsageParser
from bench.commands.options import measure as _measure
from bench.commands.options import number as _number
from bench.config import RunConfig
from bench.errors import BenchError, UsageError
from bench.report.live import LiveReporter
from bench.report.table import console, notes, tables
from bench.result import Result
from bench.result.schema import MAX_TOKENS  # a quadrillion tokens: past any training run
from bench.runner import Runner
from bench.text import one_line, plain
from bench.units import parse_size

EXIT_INTERRUPTED = 130


def _list_of(convert: Callable[[str], Any], what: str, allowed: str) -> Callable[[str], tuple]:
    def parse(text: str) -> tuple:
        values = []
        for item in text.split(","):
            try:
                values.append(convert(item.strip()))
            except ValueError:
                raise argparse.ArgumentTypeError(
                    f"{what}: {item.strip()!r} is not allowed; use {allowed}"
                ) from None
        return tuple(values)

    return parse


# Whole numbers as C libraries and devices take them; written in ASCII digits only
# (Python's int() also takes '٣٢', '１６' and '1_000').
MAX_WHOLE = 2**31 - 1
_WHOLE = re.compile(r"-?[0-9]+")


def _strict_int(text: str) -> int:
    if not _WHOLE.fullmatch(text) or abs(int(text)) > MAX_WHOLE:
        raise ValueError(text)
    return int(text)


def _whole(text: str) -> int:
    """An option's whole number; argparse names the option in front of the message."""
    try:
        return _strict_int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not allowed; use a whole number in digits 0-9, at most {MAX_WHOLE}"
        ) from None


def _one_length(text: str) -> int:
    """--seq-len: one length; a list (2048,8192) is refused saying how to sweep it."""
    if "," in text:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not allowed; one sequence length a run (the result's rows are "
            "per length): run bench once per length"
        )
    return _whole(text)


def _choice_list(what: str, choices: tuple[str, ...]) -> Callable[[str], tuple]:
    def convert(item: str) -> str:
        if item not in choices:
            raise ValueError
        return item

    return _list_of(convert, what, "one or more of " + ", ".join(choices) + " (comma-separated)")


# `--compile` without a value: the framework's own compiler (torch: inductor, tensorflow: xla).
DEFAULT_COMPILER = "default"


def _compilers(text: str) -> tuple[str | None, ...]:
    return tuple(
        None if item.strip() in ("none", "eager") else item.strip() for item in text.split(",")
    )


def _repeats(text: str) -> int | None:
    if text == "auto":
        return None
    try:
        return _strict_int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"repeats: {text!r} is not allowed; use a positive whole number or auto"
        ) from None


def _size(text: str) -> int:
    try:
        return parse_size(text, "memory-limit")
    except UsageError as error:  # argparse would replace a ValueError's message
        raise argparse.ArgumentTypeError(str(error)) from None


_COUNT = re.compile(r"([0-9]+(?:\.[0-9]+)?)([KMBT]?)")
_SCALE = {"": 1, "K": 10**3, "M": 10**6, "B": 10**9, "T": 10**12}


def _tokens(text: str) -> int:
    """'10B' -> 10,000,000,000: a count of tokens with an optional K, M, B or T."""
    match = _COUNT.fullmatch(text.strip())
    value = int(float(match.group(1)) * _SCALE[match.group(2)]) if match else 0
    if not 0 < value <= MAX_TOKENS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not allowed; use a count of tokens with an optional K, M, B or T "
            f"(e.g. 10B), from 1 to 1T x 1000"
        )
    return value


def _eval_every(text: str) -> tuple[int, str]:
    """'50M' (tokens) or '12288seq' (sequences): how often --train-to-loss evaluates."""
    if text.endswith("seq"):
        return _tokens(text[:-3]), "sequences"
    return _tokens(text), "tokens"


def add_loss_target_options(p: argparse.ArgumentParser) -> None:
    """A decoder trained to a validation loss (bench.datasets.loss_target)."""
    p.add_argument(
        "--train-to-loss",
        type=_number,
        metavar="LOSS",
        help="decoders on --data tokens:PATH: stop once the loss on --val-data reaches LOSS "
        "(nats per token: log perplexity, e.g. 3.28), at most --max-tokens; records time, "
        "tokens, energy and cost to it (training plus evaluation) and the loss curve",
    )
    p.add_argument(
        "--val-data",
        metavar="SOURCE",
        help="with --train-to-loss: the validation token file, tokens:PATH (same format and "
        "vocabulary as --data, never the same file)",
    )
    p.add_argument(
        "--max-tokens",
        type=_tokens,
        metavar="N",
        help="with --train-to-loss: the token budget, e.g. 10B (default: --steps steps)",
    )
    p.add_argument(
        "--eval-every",
        type=_eval_every,
        metavar="N",
        help="with --train-to-loss: evaluate every N training tokens (50M) or sequences "
        "(12288seq), rounded to whole steps (default: 20 evaluations over the budget)",
    )
    p.add_argument(
        "--eval-sequences",
        type=_whole,
        metavar="M",
        help="with --train-to-loss: validation sequences per evaluation, the file's first M "
        "(default: up to 1,024), split evenly over the ranks",
    )
    p.add_argument(
        "--recipe",
        metavar="NAME",
        help="with --train-to-loss: AdamW's learning rate, warm-up and decay: default, "
        "llmc-gpt2-124m, mlperf-llama31-8b (bench.datasets.recipe)",
    )


def add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "workload", help="what to train (see: bench list); a,b runs each in turn, one result each"
    )
    p.add_argument(
        "--framework",
        default=os.environ.get("BENCH_FRAMEWORK", "torch"),
        help="torch (default), tensorflow, jax; an image sets its own default",
    )
    p.add_argument(
        "--device",
        default=os.environ.get("BENCH_DEVICE", "auto"),
        help="auto (default: the best available), cpu, cuda, rocm, mps, tpu",
    )
    p.add_argument(
        "--batch-size",
        type=_list_of(_strict_int, "batch-size", f"whole numbers up to {MAX_WHOLE}, e.g. 16,32"),
        default=(),
        help="global batch size(s), comma-separated for a sweep",
    )
    p.add_argument(
        "--precision",
        type=_choice_list("precision", PRECISIONS),
        default=("fp32",),
        help="fp32, tf32, fp16 (with a grad scaler), bf16; comma-separated for a sweep",
    )
    p.add_argument(
        "--memory-format",
        type=_choice_list("memory-format", MEMORY_FORMATS),
        default=None,
        help="contiguous, channels_last; comma-separated for a sweep",
    )
    p.add_argument(
        "--channels-last", action="store_true", help="same as --memory-format channels_last"
    )
    p.add_argument(
        "--compile",
        type=_compilers,
        nargs="?",
        const=(DEFAULT_COMPILER,),
        default=(None,),
        metavar="BACKEND",
        help="torch: torch.compile with BACKEND (default inductor; ipex: IPEX's backend), "
        "or inductor:MODE (reduce-overhead: CUDA graphs on a GPU; max-autotune, "
        "max-autotune-no-cudagraphs, default); tensorflow: xla (jit_compile); jax always "
        "compiles; a list like none,inductor sweeps",
    )
    p.add_argument(
        "--optimize",
        type=_compilers,
        default=(None,),
        metavar="WHAT",
        help="torch: fused trains with SGD's fused kernel where torch has one for the "
        "device; on the cpu, ipex applies ipex.optimize(model, optimizer, dtype) (Intel "
        "Extension for PyTorch, in bench:xeon-ipex); none,fused sweeps",
    )
    p.add_argument(
        "--expert-parallel",
        type=_whole,
        default=1,
        metavar="N",
        help="mixtures of experts (moe-tiny, olmoe-1b-7b, gpt-oss-20b): split the experts "
        "over N ranks, tokens exchanged by all-to-all; FSDP2 shards the rest (default 1)",
    )
    p.add_argument(
        "--activation-checkpointing",
        type=_choice_list("activation-checkpointing", CHECKPOINTING_MODES),
        default=("none",),
        metavar="MODE",
        help="torch and jax, llama3: recompute blocks' activations in the backward: none, "
        "selective (every other block), full (every block); a list like none,full sweeps",
    )
    p.add_argument("--threads", type=_whole, help="intra-op CPU threads (default: the framework's)")
    _add_runtime_options(p)
    add_launch_options(p)
    p.add_argument(
        "--data",
        default="synthetic",
        metavar="SOURCE",
        help="synthetic: one batch made on the device (default); loader: synthetic samples "
        "through a real DataLoader; cifar10:PATH or imagenet:PATH: train on a real dataset "
        "in its published layout, a whole epoch at a time, with top-1 after each; "
        "tokens:PATH: decoders (torch, jax) train on a token file, llm.c's .bin (its header "
        "says uint16 or uint32) or nanoGPT's train.bin (uint16, no header); "
        "tokens-u32:PATH: uint32 tokens with no header",
    )
    p.add_argument(
        "--num-workers",
        type=_whole,
        default=0,
        help="input pipeline workers with --data loader or a dataset (default 0: in the "
        "training process)",
    )
    p.add_argument(
        "--train-to",
        type=_number,
        metavar="TOP1",
        help="with a dataset: stop once top-1 on its validation split reaches TOP1 "
        "(e.g. 0.94), at most --max-epochs epochs; records time, energy and cost to it",
    )
    add_loss_target_options(p)
    p.add_argument(
        "--warmup-steps", type=_whole, help="unmeasured steps first (default 5; 0 in epoch mode)"
    )
    p.add_argument("--steps", type=_whole, help="measured steps (default 20)")
    p.add_argument(
        "--epochs",
        "--max-epochs",
        type=_whole,
        help="epoch mode: time N epochs, summarise epochs 2..N (with --train-to: the most "
        "epochs to train)",
    )
    p.add_argument(
        "--epoch-samples", type=_whole, help="samples per epoch (default: the dataset's size)"
    )
    p.add_argument(
        "--seq-len", type=_one_length, help="sequence length, for language workloads (one a run)"
    )
    p.add_argument(
        "--repeats",
        type=_repeats,
        default=1,
        help="fresh processes per point (default 1); auto: until the spread is under "
        "--target-rsd, between --min-repeats and --max-repeats",
    )
    p.add_argument("--min-repeats", type=_whole, default=3)
    p.add_argument("--max-repeats", type=_whole, default=10)
    p.add_argument(
        "--target-rsd",
        type=_number,
        default=0.035,
        help="relative standard deviation that ends automatic repeats (default 0.035)",
    )
    p.add_argument(
        "--find-max-batch",
        action="store_true",
        help="search the largest batch that trains (grow, then bisect)",
    )
    p.add_argument(
        "--find-max-seq-len",
        action="store_true",
        help="search the longest sequence that trains at one --batch-size, up to the "
        "workload's longest: powers of two below 128, multiples of 128 above",
    )
    p.add_argument(
        "--max-batch-limit", type=_whole, default=4096, help="largest batch the search probes"
    )
    p.add_argument(
        "--max-batch-step",
        type=_whole,
        default=8,
        help="the search's resolution: above this batch it probes only its multiples "
        "(default 8; 1 for the exact batch)",
    )
    p.add_argument(
        "--memory-limit",
        type=_size,
        help="cap the child's memory, e.g. 16GiB (GPU: per-process fraction; CPU: rlimit)",
    )
    p.add_argument("--timeout", type=_measure, dest="timeout_s", help="seconds per child process")
    p.add_argument("--seed", type=_whole, default=0)
    add_machine_options(p)
    add_output_options(p)


def _device_count(text: str) -> int | str:
    return "all" if text == "all" else _strict_int(text)


def add_launch_options(p: argparse.ArgumentParser) -> None:
    """Ranks and machines (torch, through torchrun: the same flags torchrun takes)."""
    p.add_argument(
        "--devices",
        type=_list_of(_device_count, "devices", "all or whole numbers, e.g. 1,2,4,8"),
        default=("all",),
        help="torch: data-parallel ranks on this machine, one device each, launched by "
        "torchrun (default all: every GPU; 1 on a CPU, where N ranks get N shares of the "
        "cores); comma-separated for a scaling sweep. TensorFlow and JAX use every device",
    )
    p.add_argument("--nnodes", type=_whole, default=1, help="machines training each point together")
    p.add_argument("--node-rank", type=_whole, default=0, help="this machine's rank (0: writes)")
    p.add_argument(
        "--rdzv-endpoint",
        metavar="HOST:PORT",
        help="node 0's rendezvous, the same on every machine",
    )


def resolve_devices(
    counts: tuple[int | str, ...], device: str, framework_name: str
) -> tuple[int | None, ...]:
    """'all' -> this machine's devices, for frameworks that launch ranks; a count larger
    than the machine holds is refused here, before anything runs."""
    framework = registry.framework(framework_name)
    if not framework.launches_ranks:
        if counts != ("all",):
            raise UsageError(
                f"devices: {framework.name} spreads a point over every local device in one "
                "process; --devices applies to torch (choose devices with CUDA_VISIBLE_DEVICES)"
            )
        return (None,)
    platform = registry.platform(device)
    resolved = tuple(platform.all_devices() if c == "all" else c for c in counts)
    here = None
    for count in resolved:
        if isinstance(count, int) and count > 1:
            here = platform.devices_here() if here is None else here
            if count > here:
                raise UsageError(
                    f"devices: {count} ranks need {count} {platform.rank_resource}; "
                    f"this machine has {here}"
                )
    return resolved  # type: ignore[return-value]


def add_machine_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--instance",
        help="cloud instance type, priced from bench's catalogue (one it lacks lists those it has)",
    )
    p.add_argument("--price-per-hour", type=_measure, help="the machine's price in USD per hour")
    p.add_argument(
        "--peak-tflops",
        type=_measure,
        help="peak TFLOP/s of all devices, for MFU where the catalogue has none",
    )


def _label(text: str) -> str:
    if not text.strip() or len(text) > 80 or not text.isprintable():
        raise argparse.ArgumentTypeError(
            f"label: {text!r} is not 1 to 80 printable characters, e.g. before or new-driver"
        )
    if provenance.redact(text) != text:  # a label is stored and shown as given
        raise argparse.ArgumentTypeError(
            "label: it looks like a credential, and a label is stored in the result as "
            "given; use a plain name, e.g. before or new-driver"
        )
    return text.strip()


def add_output_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--label",
        type=_label,
        help="a name for this run in comparisons (e.g. before, after); runs of one machine "
        "with different labels are different columns",
    )
    p.add_argument(
        "--output-dir",
        type=Path,
        default=Path(os.environ.get("BENCH_OUTPUT_DIR", "results")),
        help="where the result JSON goes (default ./results)",
    )
    p.add_argument("--json", action="store_true", help="print the result JSON on stdout")


def resolve_device(name: str, framework_name: str = "torch") -> str:
    """'auto' -> the available platform with the highest priority; else check it is usable.

    The framework answers (TensorFlow and JAX with light checks that do not open the
    device: a TPU admits one process, and the child needs it)."""
    framework = registry.framework(framework_name)
    if name != "auto":
        reason = framework.unavailable_reason(registry.platform(name))
        if reason:
            raise UsageError(f"device {name!r} is not available: {reason}")
        return name
    ranked = sorted(registry.platforms().values(), key=lambda p: -p.auto_priority)
    reasons = {p.name: framework.unavailable_reason(p) for p in ranked}
    usable = [name for name, reason in reasons.items() if reason is None]
    if not usable:  # the framework itself is missing: the last resort says why
        raise UsageError(f"framework {framework.name!r}: {reasons[ranked[-1].name]}")
    return usable[0]


def _add_runtime_options(p: argparse.ArgumentParser) -> None:
    """The child's allocator, OpenMP runtime and NUMA binding: sweep axes. Their default
    is $BENCH_ALLOCATOR, $BENCH_OPENMP, $BENCH_NUMA (bench:xeon sets them), else the
    child runs as bench was launched."""
    for option, env, choices, what in (
        ("--allocator", "BENCH_ALLOCATOR", ALLOCATORS, "memory allocator preloaded in the child"),
        ("--openmp", "BENCH_OPENMP", OPENMP_RUNTIMES, "OpenMP runtime (gnu: libgomp, intel: "
         "libiomp5, preloaded)"),
        ("--numa", "BENCH_NUMA", NUMA_MODES, "bind the child with numactl to one thread per "
         "physical core and their NUMA nodes"),
    ):  # fmt: skip
        p.add_argument(
            option,
            type=_choice_list(option[2:], choices),
            default=os.environ.get(env) or None,
            help=f"{what}: {', '.join(choices)}; comma-separated for a sweep "
            f"(default ${env}, else as bench was launched)",
        )


def config_from_args(args: argparse.Namespace) -> RunConfig:
    formats = args.memory_format or (("channels_last",) if args.channels_last else ())
    if args.memory_format and args.channels_last:
        raise UsageError("use either --channels-last or --memory-format, not both")
    registry.workload(args.workload)  # name an unknown workload before probing devices
    framework = registry.framework(args.framework)
    compilers = tuple(
        framework.default_compiler if c == DEFAULT_COMPILER else c for c in args.compile
    )
    device = resolve_device(args.device, args.framework)
    try:
        return _config(args, device, formats, compilers)
    except UsageError as error:  # a config names its fields; a command line, its options
        raise UsageError(_as_option(str(error))) from None


@functools.cache
def _options() -> dict[str, str]:
    """Each run option by the name a config's message gives it (the option's dest)."""
    parser = UsageParser(prog="bench run")
    add_run_options(parser)
    named = {
        action.dest: next(o for o in action.option_strings if o.startswith("--"))
        for action in parser._actions
        if action.option_strings
    }
    return {**named, "memory_limit_bytes": "--memory-limit"}


def _as_option(message: str) -> str:
    """'batch_size: 0 is not allowed' as the user typed it: '--batch-size: 0 is ...'."""
    field, colon, rest = message.partition(": ")
    option = _options().get(field) if colon and field.isidentifier() else None
    return f"{option}: {rest}" if option else message


def _config(
    args: argparse.Namespace, device: str, formats: tuple[str, ...], compilers: tuple[Any, ...]
) -> RunConfig:
    return RunConfig(
        workload=args.workload,
        framework=args.framework,
        device=device,
        devices=resolve_devices(args.devices, device, args.framework),
        nnodes=args.nnodes,
        node_rank=args.node_rank,
        rdzv_endpoint=args.rdzv_endpoint,
        batch_sizes=args.batch_size,
        precisions=args.precision,
        memory_formats=formats,
        compilers=compilers,
        threads=args.threads,
        data=args.data,
        num_workers=args.num_workers,
        warmup_steps=args.warmup_steps,
        steps=_steps(args),
        epochs=args.epochs,
        epoch_samples=args.epoch_samples,
        seq_len=args.seq_len,
        repeats=args.repeats,
        min_repeats=args.min_repeats,
        max_repeats=args.max_repeats,
        target_rsd=args.target_rsd,
        find_max_batch=args.find_max_batch,
        find_max_seq_len=args.find_max_seq_len,
        max_batch_limit=args.max_batch_limit,
        max_batch_step=args.max_batch_step,
        max_batch_start=min(args.batch_size) if args.batch_size else None,
        memory_limit_bytes=args.memory_limit,
        timeout_s=args.timeout_s,
        seed=args.seed,
        allocators=args.allocator or (None,),
        openmps=args.openmp or (None,),
        numas=args.numa or (None,),
        optimizations=args.optimize,
        activation_checkpointings=args.activation_checkpointing,
        train_to=args.train_to,
        train_to_loss=args.train_to_loss,
        val_data=args.val_data,
        max_tokens=args.max_tokens,
        eval_every=args.eval_every[0] if args.eval_every else None,
        eval_every_unit=args.eval_every[1] if args.eval_every else "tokens",
        eval_sequences=args.eval_sequences,
        recipe=args.recipe,
        expert_parallel=args.expert_parallel,
    )


def _steps(args: argparse.Namespace) -> int:
    """--steps, or 20; refused beside --epochs, which times whole epochs (it was ignored)."""
    if args.steps is not None and args.epochs is not None:
        raise UsageError(
            "--steps: not used with --epochs, which times whole epochs (each its samples "
            "over the batch); give one of them"
        )
    return 20 if args.steps is None else args.steps


def console_for(args: argparse.Namespace | None = None) -> Console:
    # With --json, stdout carries only the JSON; people read stderr.
    return console(stderr=bool(getattr(args, "json", False)))


def preflight(config: RunConfig, args: argparse.Namespace) -> dict[str, Any] | None:
    """What a run needs and this machine lacks, refused in one line before any child
    starts (bench run A,B and bench suite ask it of every run before the first); the
    run's pricing."""
    pricing = catalog.pricing(args.instance, args.price_per_hour)
    registry.require_installed(config.workload, config.framework)  # timm for nasnet-large
    runtime.check(config.allocators, config.openmps)  # a missing library: one line, first
    # What the framework needs installed (torch: IPEX, for this torch), before any child.
    registry.framework(config.framework).preflight(config.points())
    datasets.check(config)  # a missing or malformed dataset too, before any child starts
    memory_floor.check(config)  # weights, gradients and optimizer state that cannot fit
    return pricing


def run_and_print(
    config: RunConfig,
    args: argparse.Namespace,
    resume: Path | None = None,
    runner_class: Callable[..., Runner] = Runner,
    preflighted: bool = False,
) -> tuple[int, Result | None, Path | None]:
    """Measure, print the tables, save: the exit status, and the result and its file when
    it is saved. `resume`: an interrupted result of this config to go on with;
    `runner_class`: what decides the points (bench.ladder.LadderRunner climbs a ladder);
    `preflighted`: its caller asked `preflight` of every run before the first (a
    dataset's files are not read twice)."""
    console = console_for(args)
    if preflighted:
        pricing = catalog.pricing(args.instance, args.price_per_hour)
    else:
        pricing = preflight(config, args)
    with LiveReporter(console) as reporter, stopping.stop_on_signals():
        runner = runner_class(
            config, args.output_dir, reporter=reporter, command=["bench", *sys.argv[1:]]
        )
        if resume is not None:
            runner.resume(resume)
        runner.result.pricing, runner.result.peak_tflops = pricing, args.peak_tflops
        runner.result.label = args.label
        try:
            outcome = runner.run()
        except KeyboardInterrupt as stop:
            outcome, code = runner.result, getattr(stop, "exit_code", EXIT_INTERRUPTED)
            signame = stop.args[0] if isinstance(stop, stopping.Interrupted) else "SIGINT"
            if runner.path is None:  # stopped before the result file existed
                print_line(console, f"bench: interrupted ({signame}); nothing was measured")
                return code, None, None
            if runner.save_error is None:
                saved = (
                    f"finished points are saved in {runner.path}"
                    if outcome.points
                    else f"no point had finished; {runner.path} records the stopped run"
                )
                print_line(console, f"bench: interrupted ({signame}); {saved}")
                return code, outcome, runner.path
        else:
            code = 1 if outcome.failed else 0
    if not runner.writes:  # another machine's node 0 holds the figures and the file
        for point in outcome.points:
            print_line(console, f"{point.label}: {point.status}"
                   + (f": {point.error_line}" if point.status != "ok" else ""))  # fmt: skip
        print_line(console, f"node {config.node_rank} of {config.nnodes}: node 0 writes the result")
        return code, None, None
    for table in tables(outcome, console.width):
        console.print(table)
    note = notes(outcome)
    if note:
        print_line(console, note)
    if runner.save_error is not None:
        # Nothing measured is lost: the figures above, and the whole result on stdout.
        print(result.dumps(outcome))
        unsaved = (
            f"could not save {runner.path} ({runner.save_error.strerror}): the result "
            f"is printed above as JSON; {runner.path} still holds the last complete save"
        )
        if code >= 128:  # stopped by a signal: its exit status, as a saved stop gives
            print(one_line(f"bench: interrupted; {unsaved}"), file=sys.stderr)
            return code, None, None
        raise BenchError(unsaved)
    print_line(console, f"result: {runner.path}")
    if args.json:
        print(result.dumps(outcome))
    return code, outcome, runner.path


def print_line(console: Console, line: str) -> None:
    """Lines that may hold text from a file, a path or a child: never read as markup,
    control characters made visible."""
    for part in line.split("\n"):
        console.print(plain(part), highlight=False)


def workload_list(text: str) -> list[str]:
    """'resnet50,cnn-s' -> both names, each known, none twice."""
    names = text.split(",")
    if "" in names or len(set(names)) != len(names):
        raise UsageError(
            f"workload: {text!r} is not a list of distinct workloads, e.g. resnet50,cnn-s"
        )
    for name in names:
        registry.workload(name)  # an unknown one is named, with a near name if any
    return names


def parse_run(argv: list[str]) -> argparse.Namespace:
    """`bench run ARGV`, parsed by the run command's own rules (suite, tune, ladder and
    fleet files run points as `bench run` would)."""
    parser = UsageParser(prog="bench run")
    add_run_options(parser)
    return parser.parse_args(argv)
