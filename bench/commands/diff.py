"""`bench diff OLD NEW`: did anything drift between two results of one config, and what
changed around it. Also the verdict `bench rerun` ends with, and the one --settle ends
with (bench.commands.settle runs its repeats).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench import registry, result
from bench.commands.options import require_extra
from bench.commands.settle import (
    DEFAULT_CAP,
    add_settle_options,
    check_settle_options,
    not_here,
    run_settle,
    settle_one,
)
from bench.config.run_config import PointConfig
from bench.report.collect import DIFF_KIND
from bench.report.table import console as terminal
from bench.result import Point, drift
from bench.run.runner import Runner
from bench.search.settle import Budget, Settle, judge_point
from bench.util.errors import UsageError
from bench.util.text import plain

EXIT_DRIFT = 3  # 0: nothing drifted; 1: a point failed; 2: bad input


def _threshold(text: str) -> float:
    try:
        value = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    except ValueError:
        value = -1.0
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(
            f"threshold: {text!r} is not a fraction in [0, 1) or a percentage like 2%"
        )
    return value


def register(sub: Any) -> None:
    p = sub.add_parser("diff", help="did two results of one config drift, and what changed")
    p.add_argument("old", type=Path)
    p.add_argument("new", type=Path)
    p.add_argument(
        "--threshold",
        type=_threshold,
        default=drift.DEFAULT_THRESHOLD,
        help="smallest change that counts as drift, when significant, and the margin within "
        "which a point is called the same (default 2%%)",
    )
    p.add_argument("--format", choices=("table", "json"), default="table")
    add_settle_options(p, "NEW", " (NEW measured on this machine)")
    p.add_argument(
        "--output-dir",
        type=Path,
        help="with --settle: where the result files of its repeats go (default ./results)",
    )
    p.set_defaults(func=cmd_diff)


def _percent(value: float | None) -> str:
    return f"{value:+.1%}" if value is not None else ""


def _value(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= 60 else text[:57] + "..."


def show(
    console: Console,
    old: result.Result,
    new: result.Result,
    threshold: float,
    settle: Settle | None = None,
) -> bool:
    """Print the verdict per point and the environment changes; True if anything drifted.
    `settle`: judged as --settle judges (bench.stats.sequential), and why each settle stopped."""
    drifts = drift.compare(old, new, threshold, settle.cap if settle else None)
    table = Table(title="drift per point (new against old)", title_justify="left")
    for name in (
        "point",
        "old\nsamples/s",
        "new\nsamples/s",
        "change",
        "95% CI",
        "verdict",
        "basis",
    ):
        table.add_column(name, justify="right" if "samples" in name or name == "change" else "left")
    for d in drifts:
        ci = f"{d.ci95[0]:+.1%} to {d.ci95[1]:+.1%}" if d.ci95 else ""
        verdict = d.reason if d.judged else f"{d.verdict}: {d.reason}" if d.reason else d.verdict
        table.add_row(
            *map(
                plain,
                (
                    d.label,
                    f"{d.old:,.1f}" if d.old is not None else "",
                    f"{d.new:,.1f}" if d.new is not None else "",
                    _percent(d.change),
                    ci,
                    verdict,
                    d.basis,
                ),
            )
        )
    console.print(table)
    changes = drift.environment_changes(old, new)
    if changes:
        env = Table(title="what changed in the environment", title_justify="left")
        for name in ("field", "old", "new"):
            env.add_column(name)
        for key, a, b in changes:
            env.add_row(plain(key), plain(_value(a)), plain(_value(b)))
        console.print(env)
    else:
        console.print(plain("environment: no change in any recorded field"))
    if settle is not None:
        for line in settle.lines(drifts):
            console.print(plain(line))
    console.print(plain(summary(drifts, threshold, settle is not None)))
    return any(d.drifted for d in drifts)


def summary(drifts: list[drift.PointDrift], threshold: float, settled: bool = False) -> str:
    """The last line: drift where there is some; else how many points are shown the same
    and how many cannot tell, never 'no drift' for an interval too wide to say."""
    drifted = [d.label for d in drifts if d.drifted]
    if drifted:
        return f"drift: {len(drifted)} of {len(drifts)} points ({', '.join(drifted)})"
    unsure = [d.label for d in drifts if d.verdict in (drift.CANNOT_TELL, drift.UNTESTABLE)]
    same = sum(d.verdict == drift.SAME for d in drifts)
    if unsure:
        return (
            f"cannot tell: {len(unsure)} of {len(drifts)} points too noisy to say whether "
            f"they drifted ({', '.join(unsure)}); {same} the same within ±{threshold:.0%}. "
            + (
                "--settle stopped before deciding (why: above)"
                if settled
                else "More --repeats, or --settle, would settle it"
            )
        )
    small = sum(d.verdict in (drift.FASTER, drift.SLOWER) for d in drifts)
    added = sum(d.verdict == drift.MISSING_OLD for d in drifts)
    return (
        f"no drift: {same} of {len(drifts)} points the same within ±{threshold:.0%}"
        + (f", {small} changed by less than that" if small else "")
        + (f", {added} new" if added else "")
    )


def cmd_diff(args: argparse.Namespace) -> int:
    require_extra("diff", "scipy")  # its two-sample tests: one line, before any file is read
    check_settle_options(args, ("max_repeats", "budget", "output_dir"))
    old, new = result.load(args.old), result.load(args.new)
    if args.settle:
        return settle_diff(args, old, new)
    if args.format == "json":
        return _print_json(args, old, new)
    return EXIT_DRIFT if show(terminal(), old, new, args.threshold) else 0


def _print_json(
    args: argparse.Namespace, old: result.Result, new: result.Result, settle: Settle | None = None
) -> int:
    drifts = drift.compare(old, new, args.threshold, settle.cap if settle else None)
    document = {
        "kind": DIFF_KIND,
        "old": str(args.old),
        "new": str(args.new),
        "threshold": args.threshold,
        "points": [{**asdict(d), "drifted": d.drifted} for d in drifts],
        "environment_changes": [
            {"field": k, "old": a, "new": b} for k, a, b in drift.environment_changes(old, new)
        ],
    }
    if settle is not None:
        document["settle"] = settle.to_json(drifts)
    print(json.dumps(document, indent=1))
    return EXIT_DRIFT if any(d.drifted for d in drifts) else 0


def verdict_after_rerun(console: Console, old_path: Path, new: result.Result) -> int:
    """`bench rerun`'s last word: 0 or EXIT_DRIFT; a note (and 0) without scipy."""
    try:
        registry.require("the drift verdict", "scipy")
    except registry.MissingExtra as missing:
        console.print(
            plain(
                f"drift: no verdict here ({missing}; or run bench diff {old_path} NEW where it is)"
            )
        )
        return 0
    try:
        old = result.load(old_path)
    except UsageError as error:
        console.print(plain(f"drift: no verdict ({error})"))
        return 0
    return EXIT_DRIFT if show(console, old, new, drift.DEFAULT_THRESHOLD) else 0


def settle_diff(args: argparse.Namespace, old: result.Result, new: result.Result) -> int:
    """bench diff --settle: NEW's undecided points run again here, each into a file of
    its own, and judged pooled with NEW's repeats."""
    quiet = args.format == "json"
    console = terminal(stderr=quiet)
    drift.check_comparable(old, new)
    drift.check_same_config(old.config, new.config)
    settle = Settle(args.max_repeats or DEFAULT_CAP, Budget(args.budget))
    undecided = {
        d.label for d in drift.compare(old, new, args.threshold, settle.cap)
        if d.verdict == drift.CANNOT_TELL
    }  # fmt: skip
    why = not_here(new, args.new) if undecided else None
    code, pooled = 0, list(new.points)
    for index, point in enumerate(new.points):
        if point.label not in undecided:
            continue
        if why is not None or code >= 128:
            settle.stops[point.label] = f"not run: {why}" if why else "interrupted"
            continue
        code, pooled[index] = settle_one(console, args, old, new, point, settle, quiet)
    new = dataclasses.replace(new, points=pooled)
    if quiet:
        drifted = _print_json(args, old, new, settle) == EXIT_DRIFT
    else:
        drifted = show(console, old, new, args.threshold, settle)
    return _exit(code, drifted)


def _exit(code: int, drifted: bool) -> int:
    """A signal's status first (the settle was stopped), then drift, then a failed repeat."""
    return code if code >= 128 else EXIT_DRIFT if drifted else code


def settle_rerun(
    console: Console, args: argparse.Namespace, old: result.Result, outcome: result.Result,
    path: Path, json_out: bool = False,
) -> int:  # fmt: skip
    """bench rerun --settle: the rerun's undecided points get more repeats, in its own
    file, until settled; then the sequential verdict against the old result. `json_out`:
    the file as settled is printed on stdout at the end (the tables went to stderr)."""
    settle = Settle(args.max_repeats or DEFAULT_CAP, Budget(args.budget))
    threshold = drift.DEFAULT_THRESHOLD

    def judge(point: PointConfig, current: Point | None) -> tuple[str | None, str]:
        mine = next((p for p in old.points if Runner._same(p, point)), None)
        if mine is None or current is None:
            return _NOTHING, ""
        return judge_point(mine, current, threshold, settle.cap)

    code, first = 0, {}  # the first look at each point the rerun measured
    for config in outcome.config.points():
        current = next((p for p in outcome.points if Runner._same(p, config)), None)
        if current is not None:
            first[current.label] = judge(config, current)
    if all(stop is not None for stop, _ in first.values()):  # no repeat to run: no resume
        for label, (stop, look) in first.items():
            if stop not in (_NOTHING, "decided"):
                console.print(plain(f"settle {label}: {look}"))
                settle.stops[label], settle.added[label] = stop or "", 0
    else:
        code, settled, runner = run_settle(
            outcome.config, args, settle, judge, resume=path, quiet=json_out
        )
        outcome = settled or outcome
        stops = dict(runner.stops)
        for point in {*stops, *runner.added}:
            named, why = runner.label_of(point), stops.get(point)
            if named is None or (why in (_NOTHING, "decided") and point not in runner.added):
                continue  # decided before any repeat: nothing to say
            settle.stops[named] = why or ("interrupted" if code >= 128 else "stopped")
            settle.added[named] = runner.added.get(point, 0)
    drifted = show(console, old, outcome, threshold, settle)
    if json_out:
        print(result.dumps(outcome))
    return _exit(code, drifted)


_NOTHING = "no point of the old result to compare with"
