"""--settle (bench diff and bench rerun): where the verdict is "cannot tell", more repeats
of the new side, one child at a time, until bench.stats.sequential's interval (95% however
often it is looked at) decides, a point holds --max-repeats or the --budget ends. Each
repeat is saved as a run's points are (atomically, the file complete after each), so
Ctrl-C and SIGTERM lose only the repeat running. Its options and bounds, and how a
command runs it; the search itself (the Runner that adds the repeats, how a point is judged)
is bench.search.settle; bench.commands.diff says the verdict.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

from bench import result
from bench.commands.options import duration
from bench.config import data_ref
from bench.config.run_config import PointConfig, RunConfig
from bench.report.compare import pool
from bench.result import Point, drift, point_axes
from bench.run import provenance
from bench.run.runner import Runner
from bench.search.settle import (
    MAX_CAP,
    Judge,
    Settle,
    SettleRunner,
    judge_point,
    only_point,
)
from bench.util.errors import UsageError
from bench.util.text import plain

DEFAULT_CAP = 20  # --settle: repeats of a point on the new side, at most
MAX_BUDGET_S = 30 * 24 * 3600.0  # a month: no settle runs longer


def _cap(text: str) -> int:
    try:
        value = int(text) if text.isascii() and text.isdigit() else 0
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_CAP:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not allowed; use a whole number of repeats from 1 to {MAX_CAP}"
        )
    return value


def _budget(text: str) -> float:
    seconds = duration(text)  # positive, else its own one line
    if seconds > MAX_BUDGET_S:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not allowed; use a positive time up to 30 days (e.g. 20m, 2h)"
        )
    return seconds


def add_settle_options(p: argparse.ArgumentParser, new: str, where: str = "") -> None:
    """--settle and its bounds, for bench diff and bench rerun; `new`: what the new
    side is called in the help, `where`: what it needs."""
    p.add_argument(
        "--settle",
        action="store_true",
        help=f"where the verdict is 'cannot tell', run more repeats of {new} here{where} "
        "until a sequential interval (95%% however often it is looked at) decides, or a "
        "bound ends it",
    )
    p.add_argument(
        "--max-repeats",
        type=_cap,
        metavar="N",
        help=f"with --settle: at most N repeats of each point of {new}, its own included "
        f"(default {DEFAULT_CAP})",
    )
    p.add_argument(
        "--budget",
        type=_budget,
        metavar="DURATION",
        help="with --settle: wall time for its repeats (e.g. 30m); a repeat starts only while "
        "the longest so far fits in what is left (default: the cap alone bounds them)",
    )


def check_settle_options(
    args: argparse.Namespace, names: tuple[str, ...] = ("max_repeats", "budget")
) -> None:
    """A bound of --settle without --settle would bound nothing: one line."""
    if not args.settle:
        for name in names:
            if getattr(args, name, None) is not None:
                option = "--" + name.replace("_", "-")
                raise UsageError(f"{option}: only with --settle (it bounds what --settle runs)")


def not_here(new: result.Result, path: Path) -> str | None:
    """Why NEW's config is not run again on this machine for --settle, or None."""
    from bench.commands.run_options import resolve_device

    config = new.config
    if new.ladder or new.tune:
        return f"{path} is a {'ladder' if new.ladder else 'tune'}'s result: it chose its points"
    if config.nnodes > 1:
        return f"{path} ran on {config.nnodes} machines; --settle runs on this one alone"
    refs = [data_ref.parse(d) for d in (config.data, config.val_data) if d is not None]
    named = next((ref for ref in refs if ref is not None), None)
    if named is not None:
        return (
            f"{path} trained on {named.kind}:PATH, and bench never reads a path a result file "
            f"names; bench rerun OLD --settle --data {named.kind}:PATH settles a rerun of OLD "
            "here (this software) against OLD"
        )
    try:
        resolve_device(config.device, config.framework)
    except UsageError as error:
        return str(error)
    # A file may say up to 4096; bench rerun caps them, which --settle cannot (not NEW's).
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    asks = max(config.threads or 0, *config.workers)
    if asks > (cpus or 1):
        return (
            f"{path} asks for {asks} threads or loader workers, more than the {cpus} CPUs bench "
            "may use here"
        )
    here = provenance.collect()
    unlike = drift.unlike(new.environment or {}, {k: here[k] for k in ("host", "cpu")}, False)
    return f"{path} was measured on another machine ({unlike})" if unlike else None


def _run_args(new: result.Result, output_dir: Path | None) -> argparse.Namespace:
    """What run_and_print reads of a command line, for NEW's config run again."""
    pricing = new.pricing or {}
    return argparse.Namespace(
        instance=pricing.get("instance"),
        price_per_hour=pricing.get("usd_per_hour"),
        peak_tflops=new.peak_tflops,
        label=new.label,  # the same column as NEW's in a comparison
        output_dir=output_dir or Path(os.environ.get("BENCH_OUTPUT_DIR", "results")),
        json=False,
    )


def run_settle(
    config: RunConfig,
    args: argparse.Namespace,
    settle: Settle,
    judge: Judge,
    pools: Callable[[dict[str, Any]], str | None] | None = None,
    resume: Path | None = None,
    quiet: bool = False,
) -> tuple[int, result.Result | None, SettleRunner]:
    """run_and_print with a SettleRunner (stdout kept for JSON when `quiet`)."""
    from bench.commands.running import run_and_print

    made: list[SettleRunner] = []

    def runner(*a: Any, **kw: Any) -> SettleRunner:
        made.append(
            SettleRunner(*a, judge=judge, budget=settle.budget, pools=pools, cap=settle.cap, **kw)
        )
        return made[-1]

    with contextlib.redirect_stdout(sys.stderr) if quiet else contextlib.nullcontext():
        code, outcome, path = run_and_print(
            config, args, resume=resume, runner_class=runner, preflighted=resume is not None
        )
    if path is not None and path not in settle.files:
        settle.files.append(path)
    return code, outcome, made[0]


def settle_one(
    console: Console,
    args: argparse.Namespace,
    old: result.Result,
    new: result.Result,
    point: Point,
    settle: Settle,
    quiet: bool,
) -> tuple[int, Point]:
    """One undecided point of NEW run again here until settled: the exit status and
    NEW's point pooled with the repeats run (alone, where they may not pool)."""
    axes = (*point_axes(point), point.devices)
    mine = next(p for p in old.points if (*point_axes(p), p.devices) == axes)  # compare's match
    config = next((c for c in new.config.points() if Runner._same(point, c)), None)
    if config is None:  # a file whose points are not its config's
        settle.stops[point.label] = "not run: NEW's config has no such point"
        return 0, point

    def judge(_: PointConfig, added: Point | None) -> tuple[str | None, str]:
        return judge_point(
            mine, pool([point, added]) if added else point, args.threshold, settle.cap
        )

    def pools(environment: dict[str, Any]) -> str | None:
        unlike = drift.unlike(new.environment or {}, environment)
        return f"not pooled: the repeats here differ from NEW in {unlike}" if unlike else None

    stop, look = judge(config, None)
    if stop is not None:  # futile or at its cap already: no file for no repeat
        console.print(plain(f"settle {point.label}: {look}"))
        settle.stops[point.label], settle.added[point.label] = stop, 0
        return 0, point
    run_args = _run_args(new, args.output_dir)
    only = only_point(new.config, config)
    code, outcome, runner = run_settle(only, run_args, settle, judge, pools, quiet=quiet)
    ran = runner.added.get(config, 0)
    settle.added[point.label] = ran
    settle.stops[point.label] = (
        "interrupted" if code >= 128 else next((why for _, why in runner.stops), "stopped")
    )
    added = outcome.points[0] if outcome and outcome.points and not runner.refused else None
    if added is None or not added.measured or added.status != "ok":
        return code, point
    return code, pool([point, added])
