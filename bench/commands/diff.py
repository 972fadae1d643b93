"""`bench diff OLD NEW`: did anything drift between two results of one config, and what
changed around it. Also the verdict `bench rerun` ends with.

--settle (here and in bench rerun): where the verdict is "cannot tell", more repeats of
the new side, one child at a time, until bench.sequential's interval (95% however often
it is looked at) decides, a point holds --max-repeats or the --budget ends. Each repeat
is saved as a run's points are (atomically, the file complete after each), so Ctrl-C
and SIGTERM lose only the repeat running.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench import data_ref, drift, probe, provenance, registry, result, sequential
from bench.axes import AXES
from bench.commands.options import duration, require_extra
from bench.config import PointConfig, RunConfig
from bench.errors import UsageError
from bench.report.collect import DIFF_KIND
from bench.report.compare import pool
from bench.report.table import console as terminal
from bench.result import POINT_AXES, Point, point_axes
from bench.runner import Runner
from bench.text import plain

EXIT_DRIFT = 3  # 0: nothing drifted; 1: a point failed; 2: bad input
DEFAULT_CAP = 20  # --settle: repeats of a point on the new side, at most
MAX_CAP = 1000  # past this no number of repeats is a practical answer (verdict.PRACTICAL_N)
MAX_BUDGET_S = 30 * 24 * 3600.0  # a month: no settle runs longer


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
    `settle`: judged as --settle judges (bench.sequential), and why each settle stopped."""
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


# --settle ------------------------------------------------------------------------------


@dataclasses.dataclass
class Budget:
    """Wall time a settle may spend (None: only the cap bounds it). A repeat starts only
    while the longest so far fits in what is left; the first always starts."""

    seconds: float | None
    started: float = dataclasses.field(default_factory=lambda: time.monotonic())
    longest: float = 0.0

    def why_not(self) -> str | None:
        if self.seconds is None:
            return None
        left = self.seconds - (time.monotonic() - self.started)
        if left > self.longest:
            return None
        return (
            f"the budget of {probe.format_seconds(self.seconds)}: "
            f"{probe.format_seconds(max(left, 0.0))} left, a repeat takes up to "
            f"{probe.format_seconds(self.longest)}"
        )


@dataclasses.dataclass
class Settle:
    """What --settle did: its bounds, why each point's repeats stopped (by its label),
    how many it ran, and the files that hold them."""

    cap: int
    budget: Budget
    stops: dict[str, str] = dataclasses.field(default_factory=dict)
    added: dict[str, int] = dataclasses.field(default_factory=dict)
    files: list[Path] = dataclasses.field(default_factory=list)

    def lines(self, drifts: list[drift.PointDrift]) -> list[str]:
        """Per point, how the settle ended; then what the sequential verdict promises."""
        said = []
        for d in drifts:
            if d.label in self.stops or d.label in self.added:
                ran = self.added.get(d.label, 0)
                stop = self.stops.get(d.label, "decided")
                runs = f"{ran} repeat{'' if ran == 1 else 's'} run here"
                said.append(f"settle: {d.label}: {stop}; {runs}, {d.basis}")
        said += [f"settle: the repeats run here are in {path}" for path in self.files]
        said.append(
            f"sequential: each verdict above is a {1 - sequential.ALPHA:.0%} confidence "
            f"sequence (bench.sequential): at most a {sequential.ALPHA:.0%} chance that any "
            "is wrong, however often --settle looked; wider than a fixed-sample interval"
        )
        return said

    def to_json(self, drifts: list[drift.PointDrift]) -> dict[str, Any]:
        return {
            "rule": "normal-mixture confidence sequence (bench.sequential)",
            "alpha": sequential.ALPHA,
            "max_repeats": self.cap,
            "budget_s": self.budget.seconds,
            "points": {
                d.label: {"stopped": self.stops.get(d.label, "decided"),
                          "repeats_run": self.added.get(d.label, 0)}
                for d in drifts
                if d.label in self.stops or d.label in self.added
            },
            "files": [str(path) for path in self.files],
        }  # fmt: skip


# judge(point, its repeats in the file so far) -> (why to stop, or None; the look in words)
Judge = Callable[[PointConfig, Point | None], tuple[str | None, str]]


class SettleRunner(Runner):
    """Adds repeats, one child each, to the points of its config that `judge` does not
    stop, round after round, until each is decided, at its cap, failed, or the budget
    ends. Each repeat joins its point as bench pools runs of one configuration
    (bench.report.compare.pool) and the file is saved after it: Ctrl-C and SIGTERM
    (bench.stopping, through run_and_print) lose only the repeat running. `pools`: asked
    once of the first child's environment; a reason not to pool (another machine or
    other software) ends the settle, its repeat kept in the file but not counted."""

    def __init__(
        self,
        *args: Any,
        judge: Judge,
        budget: Budget,
        pools: Callable[[dict[str, Any]], str | None] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.judge, self.budget, self.pools = judge, budget, pools
        self.stops: list[tuple[PointConfig, str]] = []
        self.added: dict[PointConfig, int] = {}
        self.refused: str | None = None
        self._failed: dict[PointConfig, str] = {}

    def _index(self, point: PointConfig) -> int | None:
        return next((i for i, p in enumerate(self.result.points) if self._same(p, point)), None)

    def _sweep(self) -> None:
        going = list(self.config.points())
        while going:
            for point in list(going):
                index = self._index(point)
                stop = self._why_stop(point, None if index is None else self.result.points[index])
                if stop is not None:
                    self.stops.append((point, stop))
                    going.remove(point)
                else:
                    self._one_more(point, index)

    def _why_stop(self, point: PointConfig, current: Point | None) -> str | None:
        if self.refused is not None:
            return self.refused
        if point in self._failed:
            return f"a repeat failed: {self._failed[point]}"
        stop, look = self.judge(point, current)
        if look:
            axes = dict(zip(POINT_AXES, point_axes(point), strict=True))
            self.reporter.finish(Point(**axes, devices=point.ranks).label, "settle", look)
        return stop or self.budget.why_not()

    def _one_more(self, point: PointConfig, index: int | None) -> None:
        started = time.monotonic()
        one = self._measure(point, repeats=1)
        self.budget.longest = max(self.budget.longest, time.monotonic() - started)
        self.added[point] = self.added.get(point, 0) + 1
        if index is None:
            self.result.points.append(one)
        elif one.status == "ok":
            self.result.points[index] = pool([self.result.points[index], one])
        if one.status != "ok":
            self._failed[point] = one.error_line
        self._save()
        if self.pools is not None and self.added[point] == 1 and sum(self.added.values()) == 1:
            self.refused = self.pools(self.result.environment or {})

    def label_of(self, point: PointConfig) -> str | None:
        index = self._index(point)
        return None if index is None else self.result.points[index].label


def _only(config: RunConfig, point: PointConfig) -> RunConfig:
    """The config of one point of a sweep: its own file, which diffs as that point."""
    one: dict[str, Any] = {axis.many: (getattr(point, axis.one),) for axis in AXES}
    return dataclasses.replace(config, **one)


def _repeats(point: Point | None) -> int:
    return len(point.repeat_throughputs()) if point is not None and point.measured else 0


def _judge(old: Point, new: Point | None, threshold: float, cap: int) -> tuple[str | None, str]:
    """Stop when bench.sequential decides, the new side fails or holds `cap` repeats, or
    more repeats are futile (bench.sequential.futile)."""
    if new is None:
        return None, "no repeat yet"
    said = drift.settle_point(old, new, threshold, cap)
    look = f"{_repeats(new)} repeats new, {_repeats(old)} old: {said.reason or said.verdict}"
    if said.verdict == drift.FAILED:
        return f"a repeat failed: {said.reason}", look
    if said.verdict != drift.CANNOT_TELL:
        return "decided", look
    if _repeats(new) >= cap:
        return f"the cap of {cap} repeats", look
    width = sequential.futile(new.repeat_throughputs(), old.repeat_throughputs(), cap, threshold)
    if width is not None:
        wide = f"±{width:.1%}" if width < 1 else f"a factor of {1 + width:.1f} either way"
        return (
            f"futile: at the cap of {cap} repeats the interval would still be about "
            f"{wide}, wider than the ±{threshold:.0%} margin, and no change it still "
            "allows is as large: more repeats of the old side, or a quieter machine, would "
            "settle it"
        ), look
    return None, look


def _not_here(new: result.Result, path: Path) -> str | None:
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
    asks = max(config.threads or 0, config.num_workers)
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


def _settle_run(
    config: RunConfig,
    args: argparse.Namespace,
    settle: Settle,
    judge: Judge,
    pools: Callable[[dict[str, Any]], str | None] | None = None,
    resume: Path | None = None,
    quiet: bool = False,
) -> tuple[int, result.Result | None, SettleRunner]:
    """run_and_print with a SettleRunner (stdout kept for JSON when `quiet`)."""
    from bench.commands.run_options import run_and_print

    made: list[SettleRunner] = []

    def runner(*a: Any, **kw: Any) -> SettleRunner:
        made.append(SettleRunner(*a, judge=judge, budget=settle.budget, pools=pools, **kw))
        return made[-1]

    with contextlib.redirect_stdout(sys.stderr) if quiet else contextlib.nullcontext():
        code, outcome, path = run_and_print(
            config, args, resume=resume, runner_class=runner, preflighted=resume is not None
        )
    if path is not None and path not in settle.files:
        settle.files.append(path)
    return code, outcome, made[0]


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
    why = _not_here(new, args.new) if undecided else None
    code, pooled = 0, list(new.points)
    for index, point in enumerate(new.points):
        if point.label not in undecided:
            continue
        if why is not None or code >= 128:
            settle.stops[point.label] = f"not run: {why}" if why else "interrupted"
            continue
        code, pooled[index] = _settle_point(console, args, old, new, point, settle, quiet)
    new = dataclasses.replace(new, points=pooled)
    if quiet:
        drifted = _print_json(args, old, new, settle) == EXIT_DRIFT
    else:
        drifted = show(console, old, new, args.threshold, settle)
    return _exit(code, drifted)


def _exit(code: int, drifted: bool) -> int:
    """A signal's status first (the settle was stopped), then drift, then a failed repeat."""
    return code if code >= 128 else EXIT_DRIFT if drifted else code


def _settle_point(
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
        return _judge(mine, pool([point, added]) if added else point, args.threshold, settle.cap)

    def pools(environment: dict[str, Any]) -> str | None:
        unlike = drift.unlike(new.environment or {}, environment)
        return f"not pooled: the repeats here differ from NEW in {unlike}" if unlike else None

    stop, look = judge(config, None)
    if stop is not None:  # futile or at its cap already: no file for no repeat
        console.print(plain(f"settle {point.label}: {look}"))
        settle.stops[point.label], settle.added[point.label] = stop, 0
        return 0, point
    run_args = _run_args(new, args.output_dir)
    only = _only(new.config, config)
    if args.budget is not None:  # no child runs past the whole budget, whatever NEW said
        only = dataclasses.replace(only, timeout_s=min(only.timeout_s or args.budget, args.budget))
    code, outcome, runner = _settle_run(only, run_args, settle, judge, pools, quiet=quiet)
    ran = runner.added.get(config, 0)
    settle.added[point.label] = ran
    settle.stops[point.label] = (
        "interrupted" if code >= 128 else next((why for _, why in runner.stops), "stopped")
    )
    added = outcome.points[0] if outcome and outcome.points and not runner.refused else None
    if added is None or not added.measured or added.status != "ok":
        return code, point
    return code, pool([point, added])


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
        return _judge(mine, current, threshold, settle.cap)

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
        code, settled, runner = _settle_run(
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
