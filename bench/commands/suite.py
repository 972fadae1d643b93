"""`bench suite NAME [RUN OPTIONS]`: a named preset of runs, one result each, resumable.

The presets live in bench/data/suites.toml; a preset's `matrix` runs each of its runs
once per value of an option (the memory ladder: once per emulated card size). Every run
of the suite is parsed and validated before the first one starts. Results go to
--output-dir (default results/suite-NAME); a state file there (suite-NAME.json,
rewritten atomically after every run) records where each run's result is, so the same
command again after a Ctrl-C, a SIGTERM or a reboot skips the finished runs and goes on
with an interrupted one in its own file, keeping its measured points.
"""

from __future__ import annotations

import argparse
import itertools
import json
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.table import Table

from bench import files, result
from bench.errors import UsageError
from bench.report.collect import SUITE_STATE_KIND
from bench.report.table import console
from bench.text import plain

SUITES_FILE = Path(__file__).resolve().parent.parent / "data" / "suites.toml"


@dataclass(frozen=True)
class Suite:
    name: str
    description: str
    runs: tuple[tuple[str, ...], ...]


def _expand(runs: list[list[str]], matrix: dict[str, list[str]]) -> tuple[tuple[str, ...], ...]:
    """Every run once per combination of the matrix's option values, each labelled with
    its values ('memory-limit 16GiB') so bench compare gives each its own column."""
    combinations = list(itertools.product(*([(k, v) for v in vs] for k, vs in matrix.items())))
    expanded = []
    for run in runs:
        for combination in combinations:
            options = [part for pair in combination for part in pair]
            label = ", ".join(f"{k.lstrip('-')} {v}" for k, v in combination)
            expanded.append((*run, *options, *(("--label", label) if combination else ())))
    return tuple(expanded)


def suites() -> dict[str, Suite]:
    data = tomllib.loads(SUITES_FILE.read_text())
    return {
        name: Suite(name, entry["description"], _expand(entry["runs"], entry.get("matrix", {})))
        for name, entry in data.items()
    }


def register(sub: Any) -> None:
    p = sub.add_parser(
        "suite",
        help="run a named preset of workloads and sweeps, one result each (resumable)",
        description="Presets: "
        + "; ".join(f"{s.name}: {s.description}" for s in suites().values()),
    )
    p.add_argument("name", help=", ".join(suites()) + "; or 'list'")
    p.add_argument(
        "options",
        nargs=argparse.REMAINDER,
        help="bench run options added to every run (e.g. --device cpu --instance m7i.large)",
    )
    p.set_defaults(func=cmd_suite)


def _state_path(output_dir: Path, name: str) -> Path:
    return output_dir / f"suite-{name}.json"


def _load_state(path: Path, name: str) -> dict[str, str]:
    """Runs started before: their command line -> their result file."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
        done = data["done"] if data.get("suite") == name else None
        if not isinstance(done, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in done.items()
        ):
            raise ValueError
    except (OSError, ValueError, KeyError, TypeError):
        raise UsageError(
            f"{path}: not the state of suite {name!r}; move it away to start the suite afresh"
        ) from None
    return done


def _status(path: str | None) -> str | None:
    """'complete', 'interrupted' or 'running' (to go on with), or None (run it afresh): a file
    that is missing or does not load is run again."""
    if path is None:
        return None
    try:
        return result.load(path).status
    except UsageError:
        return None


def cmd_suite(args: argparse.Namespace) -> int:
    from bench.commands import run_options  # `bench run`'s parser and runner: one set of rules

    known = suites()
    if args.name == "list":
        for suite in known.values():
            print(f"{suite.name}: {suite.description} ({len(suite.runs)} runs)")
        return 0
    if args.name not in known:
        from bench.registry import did_you_mean

        raise UsageError(
            f"unknown suite {args.name!r}{did_you_mean(args.name, known)}; "
            f"choose from: {', '.join(known)}"
        )
    suite = known[args.name]
    # Every run parsed and validated before anything runs; the user's options last.
    planned = []
    for run in suite.runs:
        argv = ["run", *run, *args.options]
        try:
            parsed = run_options.parse_run(argv[1:])
            if "--output-dir" not in args.options:  # its own folder: resumable, comparable
                parsed.output_dir = parsed.output_dir / f"suite-{suite.name}"
            planned.append((" ".join(argv[1:]), parsed, run_options.config_from_args(parsed)))
        except UsageError as error:
            raise UsageError(f"suite {suite.name}, run '{' '.join(run)}': {error}") from None
    output_dir = planned[0][1].output_dir
    files.require_writable_dir(output_dir, "output-dir")
    state_path = _state_path(output_dir, suite.name)
    claim = files.FileClaim(state_path)  # one suite of a name per folder at a time
    claim.hold(
        f"suite {suite.name} is running in {output_dir} already (another bench holds "
        f"{claim.lock.name}); let it finish, or give this one another --output-dir"
    )
    try:
        return _run_suite(suite, planned, output_dir, state_path)
    finally:
        claim.release()


def _run_suite(
    suite: Suite, planned: list[tuple[str, Any, Any]], output_dir: Path, state_path: Path
) -> int:
    from bench.commands import run_options

    done = _load_state(state_path, suite.name)
    out = console()
    worst = 0
    for i, (key, parsed, config) in enumerate(planned, 1):
        status = _status(done.get(key))
        if status == "complete":
            out.print(plain(f"suite {suite.name} {i}/{len(planned)}: done before: {done[key]}"))
            continue
        # interrupted, or "running": killed too hard to say (SIGKILL, a reboot)
        resume = Path(done[key]) if status in ("interrupted", "running") else None
        going_on = f" (going on with {resume})" if resume else ""
        out.print(plain(f"suite {suite.name} {i}/{len(planned)}: bench {key}{going_on}"))
        code, outcome, path = run_options.run_and_print(config, parsed, resume)
        if outcome is not None and path is not None:  # complete, or interrupted and saved
            done[key] = str(path)
            state = {"kind": SUITE_STATE_KIND, "suite": suite.name, "done": done}
            files.replace(state_path, json.dumps(state, indent=1))
        if code == run_options.EXIT_INTERRUPTED or code >= 128:
            out.print(plain(f"suite {suite.name}: stopped; run the same command to go on"))
            return code
        worst = max(worst, code)
    summary = Table(title=plain(f"suite {suite.name}: {suite.description}"), title_justify="left")
    summary.add_column("run")
    summary.add_column("result")
    for key, _, _ in planned:
        summary.add_row(plain(key), plain(done.get(key, "not run")))
    out.print(summary)
    out.print(
        plain(
            f"compare them: bench compare {output_dir} (with other machines' "
            f"results: --baseline MACHINE); a report: bench report {output_dir}"
        )
    )
    return worst
