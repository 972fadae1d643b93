"""The options every command that runs points shares (run, rerun, suite, tune, ladder,
fleet), and what they become: a RunConfig, resolved devices, then a measured, printed
and saved result (run_and_print). The options that set a config field are declared in
bench.options_table and added from it; the machine's and the output's are here."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from rich.console import Console

from bench import catalog, datasets, memory_floor, provenance, registry, result, runtime, stopping
from bench.commands.options import UsageParser
from bench.config import RunConfig
from bench.errors import BenchError, UsageError
from bench.option_types import measure
from bench.options_table import DEFAULT_COMPILER, RUN_OPTIONS, RunOption
from bench.report.live import LiveReporter
from bench.report.table import console, notes, tables
from bench.result import Result
from bench.runner import Runner
from bench.text import one_line, plain

EXIT_INTERRUPTED = 130


def add_options(p: argparse.ArgumentParser, options: Iterable[RunOption]) -> None:
    """Each option as bench.options_table declares it (an environment variable that is
    set is its default)."""
    for option in options:
        kwargs: dict[str, Any] = {"help": option.help}
        if option.switch:
            kwargs["action"] = "store_true"
        else:
            env = os.environ.get(option.env) if option.env else None
            kwargs["default"] = env or option.default
        for key, value in (
            ("type", option.type),
            ("metavar", option.metavar),
            ("dest", option.dest),
            ("const", option.bare),
        ):
            if value is not None:
                kwargs[key] = value
        if option.bare is not None:
            kwargs["nargs"] = "?"
        if not option.flag.startswith("-"):  # the workload: positional, no default
            del kwargs["default"]
        p.add_argument(*option.flags, **kwargs)


def add_run_options(p: argparse.ArgumentParser) -> None:
    """Every option of bench.options_table, then the machine's and the output's."""
    add_options(p, RUN_OPTIONS)
    add_machine_options(p)
    add_output_options(p)


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
    p.add_argument("--price-per-hour", type=measure, help="the machine's price in USD per hour")
    p.add_argument(
        "--peak-tflops",
        type=measure,
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


def config_from_args(args: argparse.Namespace) -> RunConfig:
    """The RunConfig the options ask for: each option's value in its field
    (bench.options_table), then what is resolved here: the device and its ranks, the
    memory formats (--channels-last too), the compiler --compile names by default, the
    steps (not beside --epochs), where a max-batch search starts and what --eval-every
    counts."""
    formats = args.memory_format or (("channels_last",) if args.channels_last else ())
    if args.memory_format and args.channels_last:
        raise UsageError("use either --channels-last or --memory-format, not both")
    registry.workload(args.workload)  # name an unknown workload before probing devices
    framework = registry.framework(args.framework)
    compilers = tuple(
        framework.default_compiler if c == DEFAULT_COMPILER else c for c in args.compile
    )
    device = resolve_device(args.device, args.framework)
    given = {o.field: getattr(args, o.name) for o in RUN_OPTIONS if o.field is not None}
    every, unit = args.eval_every or (None, "tokens")
    try:
        return RunConfig(
            **{
                **given,
                "device": device,
                "devices": resolve_devices(args.devices, device, args.framework),
                "memory_formats": formats,
                "compilers": compilers,
                "steps": _steps(args),
                "max_batch_start": min(args.batch_size) if args.batch_size else None,
                "eval_every": every,
                "eval_every_unit": unit,
            }
        )
    except UsageError as error:  # a config names its fields; a command line, its options
        raise UsageError(_as_option(str(error))) from None


# Each run option by the names a config's message gives it: a sweep axis's one value
# (batch_size), another option's field and its parsed name (memory_limit_bytes).
_OPTION_BY_NAME = {
    name: option.flag
    for option in RUN_OPTIONS
    if option.flag.startswith("--")
    for name in (option.name, option.sweep or option.field)
    if name is not None
}


def _as_option(message: str) -> str:
    """'batch_size: 0 is not allowed' as the user typed it: '--batch-size: 0 is ...'."""
    field, colon, rest = message.partition(": ")
    option = _OPTION_BY_NAME.get(field) if colon and field.isidentifier() else None
    return f"{option}: {rest}" if option else message


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
