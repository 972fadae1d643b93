"""The options every command that runs points shares (run, rerun, suite, tune, ladder,
fleet), and what they become: a RunConfig with its devices resolved (config_from_args).
The options that set a config field are declared in bench.config.options and added from
it; the machine's and the output's are here. Running the config, printing and saving
its result: bench.commands.running."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bench import registry
from bench.commands.options import UsageParser
from bench.config import bounds
from bench.config.option import RunOption
from bench.config.option_types import measure
from bench.config.options import DEFAULT_COMPILER, RUN_OPTIONS
from bench.config.run_config import RunConfig
from bench.run import provenance
from bench.util.errors import UsageError


def add_options(p: argparse.ArgumentParser, options: Iterable[RunOption]) -> None:
    """Each option as bench.config.options declares it (an environment variable that is
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
    """Every option of bench.config.options, then the machine's and the output's."""
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
    if not bounds.label(text):  # the result reader's rule
        raise argparse.ArgumentTypeError(
            f"label: {text!r} is not {bounds.LABEL_WORDS}, e.g. before or new-driver"
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
    (bench.config.options), then what is resolved here: the device and its ranks, the
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
