"""`bench rerun FILE`: a saved result's config again, into a new file, then whether it
drifted."""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import registry, result
from bench.commands import diff
from bench.commands.run_options import (
    add_launch_options,
    add_machine_options,
    add_output_options,
    console_for,
    print_line,
    resolve_device,
    resolve_devices,
    run_and_print,
)
from bench.config import RunConfig
from bench.errors import UsageError
from bench.runner import Runner


def register(sub: Any) -> None:
    rerun = sub.add_parser(
        "rerun",
        help="run the config of a saved result again, into a new file",
        description="The workload, sizes and settings come from the file; the ranks and "
        "machines (--devices, --nnodes, --node-rank, --rdzv-endpoint) only from this "
        "command line: a result run on several machines runs again on this one alone.",
    )
    rerun.add_argument("file", type=Path)
    add_launch_options(rerun)
    add_machine_options(rerun)
    add_output_options(rerun)
    rerun.set_defaults(func=cmd_rerun)


def rerun_config(old: RunConfig, args: argparse.Namespace) -> tuple[RunConfig, list[str]]:
    """A saved config to run again here, and a line for each thing that differs from it.

    The file says what to train and how; where the ranks run comes from this command
    line only. A file is anyone's to write: the machines it names are not to be joined
    (a rendezvous endpoint in it would make node 0 a member of whatever process group
    listens there), and the devices it names are another machine's."""
    import dataclasses

    framework = registry.framework(old.framework)
    try:  # as `bench run` resolves them, the saved config's rules checked again
        resolve_device(old.device, old.framework)
        config = dataclasses.replace(
            old,
            devices=resolve_devices(args.devices, old.device, old.framework),
            nnodes=args.nnodes,
            node_rank=args.node_rank,
            rdzv_endpoint=args.rdzv_endpoint,
        )
    except UsageError as error:
        raise UsageError(f"{args.file}: cannot run it here: {error}") from None
    said = []
    if old.nnodes > 1 and config.nnodes == 1:
        said.append(
            f"rerun: the saved run used {old.nnodes} machines; this rerun runs on this one "
            "only (for several, give --nnodes, --node-rank, --rdzv-endpoint and "
            "BENCH_RDZV_TOKEN on each)"
        )
    if framework.launches_ranks and old.devices != config.devices:
        counts = ",".join(str(d or 1) for d in old.devices)
        said.append(
            f"rerun: the saved run used --devices {counts}; this rerun uses "
            f"{','.join(str(d or 1) for d in config.devices)} (give --devices to choose)"
        )
    return config, said


def cmd_rerun(args: argparse.Namespace) -> int:
    """The old config again, into a new file, then the drift verdict against the old. A
    ladder is climbed again, a tune searches again (on another machine their paths may
    differ). Ranks and machines are this command line's (rerun_config)."""
    from bench.ladder import LadderRunner
    from bench.tune import TuneRunner

    old = result.load(args.file)
    config, said = rerun_config(old.config, args)
    for line in said:
        print_line(console_for(args), line)
    climb: Callable[..., Runner] = LadderRunner if old.ladder else Runner
    if old.tune:  # the same grid, budget and seed
        climb = functools.partial(TuneRunner, budget_s=old.tune["budget_s"])
    code, outcome, _ = run_and_print(config, args, runner_class=climb)
    if code != 0 or outcome is None or outcome.status != "complete":
        return code
    return diff.verdict_after_rerun(console_for(args), args.file, outcome)
