"""Running a RunConfig for a command (run, rerun, suite, tune, ladder): what it needs
refused first (preflight), then measured, its tables printed, its result saved
(run_and_print), and the exit status of a stop."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

from bench import datasets, registry, result
from bench.config.run_config import RunConfig
from bench.report.live import LiveReporter
from bench.report.table import console, notes, tables
from bench.result import Result, catalog
from bench.run import runtime, stopping
from bench.run.runner import Runner
from bench.util.errors import BenchError
from bench.util.text import one_line, plain
from bench.workloads import memory_floor

EXIT_INTERRUPTED = 130


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
    framework = registry.framework(config.framework)
    framework.preflight(config.points())
    platform = registry.platform(config.device)
    for optimize in dict.fromkeys(o for o in config.optimizations if o):  # IPEX on an AMD CPU
        note = framework.optimization_note(platform, optimize)
        if note:
            print_line(console_for(args), note)
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
    `runner_class`: what decides the points (bench.search.ladder.LadderRunner climbs a ladder);
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
                probes = finished_probes(outcome)
                if outcome.points:
                    saved = f"finished points are saved in {runner.path}"
                elif probes:  # a search's probes: tune's rounds, max-batch searches
                    saved = (
                        f"no point of its own had finished; the {probes} that finished "
                        f"{'is' if probes == '1 probe' else 'are'} saved in {runner.path}"
                    )
                else:
                    saved = f"no point had finished; {runner.path} records the stopped run"
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


def finished_probes(outcome: Any) -> str | None:
    """'3 probes': what a search interrupted before its own points had finished saved
    (bench tune's rounds' points, a max-batch search's probes), or None."""
    count = sum(len(r.get("points") or ()) for r in (outcome.tune or {}).get("rounds") or ())
    count += sum(len(search.probes) for search in outcome.max_batch)
    return None if not count else ("1 probe" if count == 1 else f"{count} probes")
