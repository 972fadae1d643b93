"""`bench run WORKLOAD[,WORKLOAD...] [options]` (also `bench WORKLOAD ...`): measure."""

from __future__ import annotations

import argparse
from typing import Any

from bench.commands.run_options import add_run_options, config_from_args, workload_list
from bench.commands.running import console_for, preflight, print_line, run_and_print
from bench.util.errors import UsageError


def register(sub: Any) -> None:
    run = sub.add_parser("run", help="measure a workload (also: bench WORKLOAD ...)")
    add_run_options(run)
    run.set_defaults(func=cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    """One workload, or several in turn (`bench run a,b`): one result each. Every
    config is checked before the first runs; a stop (Ctrl-C, SIGTERM) ends them all,
    with what the current one measured saved."""
    names = workload_list(args.workload)
    if len(names) > 1 and args.json:
        raise UsageError("--json prints one result: give one workload (each run writes its file)")
    configs = [config_from_args(argparse.Namespace(**{**vars(args), "workload": n})) for n in names]
    several = len(configs) > 1
    if several:  # what any of them lacks, before the first runs
        for config in configs:
            preflight(config, args)
    worst = 0
    for i, config in enumerate(configs, 1):
        if several:
            print_line(console_for(args), f"workload {i}/{len(configs)}: {config.workload}")
        code = run_and_print(config, args, preflighted=several)[0]
        if code >= 128:  # stopped by a signal: nothing more runs
            return code
        worst = max(worst, code)
    return worst
