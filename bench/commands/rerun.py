"""`bench rerun FILE`: a saved result's config again, into a new file, then whether it
drifted."""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import registry, result
from bench.commands import diff, settle
from bench.commands.options import require_extra
from bench.commands.run_options import (
    add_machine_options,
    add_options,
    add_output_options,
    resolve_device,
    resolve_devices,
)
from bench.commands.running import console_for, print_line, run_and_print
from bench.config import data_ref
from bench.config.options import RUN_OPTIONS
from bench.config.run_config import RunConfig
from bench.result import drift
from bench.run.runner import Runner
from bench.util.errors import UsageError

# What a rerun takes from its own command line, never from the file (the option table's
# `rerun`): the ranks and machines as `bench run` declares them, and the data's paths,
# declared here (a path of the file's kind).
FROM_HERE = tuple(o for o in RUN_OPTIONS if o.rerun)
_OWN = ("data", "val_data")


def register(sub: Any) -> None:
    rerun = sub.add_parser(
        "rerun",
        help="run the config of a saved result again, into a new file",
        description="The workload, sizes and settings come from the file; the ranks and "
        "machines (--devices, --nnodes, --node-rank, --rdzv-endpoint) and the data's paths "
        "(--data, --val-data) only from this command line: a result run on several machines "
        "runs again "
        "on this one alone, and its threads and loader workers are capped at this "
        "machine's CPUs.",
    )
    rerun.add_argument("file", type=Path)
    rerun.add_argument(
        "--data",
        metavar="KIND:PATH",
        help="for a result that trained on a dataset or token file: the one to train on "
        "here, of the same kind (the path the file names is never read)",
    )
    rerun.add_argument(
        "--val-data",
        metavar="tokens:PATH",
        help="for a result that trained to a validation loss: the token file to evaluate on "
        "here (the path the file names is never read)",
    )
    add_options(rerun, (o for o in FROM_HERE if o.field not in _OWN))
    add_machine_options(rerun)
    add_output_options(rerun)
    settle.add_settle_options(rerun, "the rerun")
    rerun.set_defaults(func=cmd_rerun)


def rerun_config(old: RunConfig, args: argparse.Namespace) -> tuple[RunConfig, list[str]]:
    """A saved config to run again here, and a line for each thing that differs from it.

    The file says what to train and how; where the ranks run comes from this command
    line only. A file is anyone's to write: the machines it names are not to be joined
    (a rendezvous endpoint in it would make node 0 a member of whatever process group
    listens there), and the devices it names are another machine's."""
    import dataclasses

    framework = registry.framework(old.framework)
    here: dict[str, Any] = {o.field: getattr(args, o.name, None) for o in FROM_HERE if o.field}
    here["data"] = _data(old, here["data"], args.file)
    here["val_data"] = _val_data(old, here["val_data"], args.file)
    threads, workers, said = _capped(old)
    try:  # as `bench run` resolves them, the saved config's rules checked again
        resolve_device(old.device, old.framework)
        config = dataclasses.replace(
            old,
            **{
                **here,
                "devices": resolve_devices(here["devices"], old.device, old.framework),
                "threads": threads,
                "workers": workers,
            },
        )
    except UsageError as error:
        raise UsageError(f"{args.file}: cannot run it here: {error}") from None
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


def _data(old: RunConfig, given: str | None, file: Path) -> str:
    """What to train on: the saved source when it names no path (synthetic, loader);
    else --data, of the saved kind. A file's own path is never used: whoever wrote the
    file would choose which local file is read, and its size and sha256 go into the
    new result, which is usually sent back."""
    saved = data_ref.parse(old.data)
    if saved is None:
        if given is not None:
            raise UsageError(
                f"--data: {file} trained on {old.data} data and reruns on it; --data is for "
                "a result that trained on a dataset or token file"
            )
        return old.data
    if given is None:
        raise UsageError(
            f"{file}: trained on {saved.kind}:PATH; a rerun never reads the path a file "
            f"names: give --data {saved.kind}:PATH (yours) on this command line"
        )
    mine = data_ref.parse(given)
    if mine is None or mine.kind != saved.kind:
        raise UsageError(
            f"--data: {file} trained on {saved.kind}:PATH; give --data {saved.kind}:PATH"
        )
    return given


def _val_data(old: RunConfig, given: str | None, file: Path) -> str | None:
    """The validation tokens of a run to a target loss: --val-data, never the file's path
    (as _data: the sender would choose which local file is read and evaluated)."""
    if old.val_data is None:
        if given is not None:
            raise UsageError(f"--val-data: {file} did not train to a validation loss")
        return None
    if given is None:
        raise UsageError(
            f"{file}: trained to a validation loss on tokens:PATH; a rerun never reads the "
            "path a file names: give --val-data tokens:PATH (yours) on this command line"
        )
    return given


def _capped(old: RunConfig) -> tuple[int | None, tuple[int, ...], list[str]]:
    """The saved threads and loader workers, capped at the CPUs bench may use here (a
    file may say any number up to RunConfig's bound), and a line saying so."""
    affinity = getattr(os, "sched_getaffinity", None)
    cpus = (len(affinity(0)) if affinity else os.cpu_count()) or 1
    threads = old.threads
    asked = []
    if threads is not None and threads > cpus:
        asked.append(f"{threads} threads")
        threads = cpus
    over = [w for w in old.workers if w > cpus]
    if over:
        asked.append(f"{max(over)} loader workers")
    # Capped, each value once: 2,8,16 on 4 CPUs runs 2,4.
    workers = tuple(dict.fromkeys(min(w, cpus) for w in old.workers))
    said = [
        f"rerun: the saved run asked for {' and '.join(asked)}; capped at the {cpus} CPUs "
        "bench may use on this machine"
    ]
    return threads, workers, said if asked else []


def cmd_rerun(args: argparse.Namespace) -> int:
    """The old config again, into a new file, then the drift verdict against the old. A
    ladder is climbed again, a tune searches again (on another machine their paths may
    differ). Ranks and machines are this command line's (rerun_config)."""
    from bench.search.ladder import LadderRunner
    from bench.search.tune import TuneRunner, check_file_record

    settle.check_settle_options(args)
    if args.settle:  # its interval needs scipy: one line before anything runs
        require_extra("rerun --settle", "scipy")
    old = result.load(args.file)
    config, said = rerun_config(old.config, args)
    if args.settle:
        _check_settle(old, config, args.file)
    for line in said:
        print_line(console_for(args), line)
    climb: Callable[..., Runner] = LadderRunner if old.ladder else Runner
    if old.tune:  # the same grid, budget and seed; the record checked as a resume's is
        check_file_record(old.tune, config, args.file)  # (a budget of 1e21 s, say)
        climb = functools.partial(TuneRunner, budget_s=old.tune["budget_s"])
    # --json with --settle: one document on stdout, the file as settled, at the end
    quiet = args.settle and args.json
    run_args = argparse.Namespace(**{**vars(args), "json": False}) if quiet else args
    with contextlib.redirect_stdout(sys.stderr) if quiet else contextlib.nullcontext():
        code, outcome, path = run_and_print(config, run_args, runner_class=climb)
    if code != 0 or outcome is None or outcome.status != "complete":
        return code
    if args.settle and path is not None:
        return diff.settle_rerun(console_for(args), run_args, old, outcome, path, quiet)
    return diff.verdict_after_rerun(console_for(args), args.file, outcome)


def _check_settle(old: result.Result, config: RunConfig, file: Path) -> None:
    """--settle adds repeats to the rerun's points: one line, before anything runs, where
    the rerun would not be repeats of the saved configuration, or has none to add to."""
    if old.ladder or old.tune:
        kind = "ladder" if old.ladder else "tune"
        raise UsageError(f"--settle: {file} is a {kind}'s result: it chose its points as it ran")
    if config.nnodes > 1:
        raise UsageError("--settle: runs on this machine alone (no --nnodes)")
    drift.check_same_config(old.config, config)
