"""`bench suite NAME [RUN OPTIONS]`: a named preset of runs, one result each, resumable.

The presets live in bench/data/suites.toml; a preset's `matrix` runs each of its runs
once per value of an option (the memory ladder: once per emulated card size). Every run
of the suite is parsed and validated before the first one starts. Results go to
--output-dir (default results/suite-NAME); a state file there (suite-NAME.json,
rewritten atomically after every run) records where each run's result is, so the same
command again after a Ctrl-C, a SIGTERM or a reboot skips the finished runs and goes on
with an interrupted one in its own file, keeping its measured points.

An output folder may be shared (nox makes ./results writable by all when run as root),
so the state is trusted only as far as it can be checked: it must be the user's own
file, and may name only result files in its own folder (resolved: no link out), each
with the sha256 it had when recorded. A result file that is another user's, or changed
since, is run again with a warning; a state that names anything outside its folder is
refused in one line. A state of bench before sha256 were recorded is hashed on reading:
its files are trusted if they are in the folder and the user's own.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import re
import stat
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.table import Table

from bench import result
from bench.report.collect import SUITE_STATE_KIND
from bench.report.table import console
from bench.result.io import MAX_RESULT_BYTES
from bench.run import provenance
from bench.util import files
from bench.util.errors import BenchError, UsageError
from bench.util.text import plain, visible

SUITES_FILE = Path(__file__).resolve().parent.parent / "data" / "suites.toml"
MAX_STATE_BYTES = 2**20  # a suite's state: a path and a digest per run, a few KiB
_SHA256 = re.compile(r"[0-9a-f]{64}")
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # never a link or a wait


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


@dataclass
class _State:
    """Runs started before: their command line -> their result file, and -> its sha256
    (none for a file a bench before this one recorded, until it is hashed on reading)."""

    path: Path
    name: str
    done: dict[str, str]
    sha256: dict[str, str]


def _refuse(path: Path, what: str) -> UsageError:
    return UsageError(visible(f"{path}: {what}"))


def _read_own(path: Path, most: int) -> tuple[os.stat_result, bytes]:
    """A regular file's identity and bytes (at most `most` + 1), opened without following
    a link; OSError as the OS says it, ValueError naming what the file is instead."""
    with os.fdopen(os.open(path, _READ), "rb") as file:
        st = os.fstat(file.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("not a regular file")
        if st.st_uid != os.geteuid():
            raise ValueError(f"it belongs to {files.user_name(st.st_uid)}, not to you")
        return st, file.read(most + 1)


def _load_state(path: Path, name: str, output_dir: Path) -> _State:
    """The state, checked: the user's own regular file, of this suite, naming only files
    in `output_dir` (resolved), each with a sha256 if any; refused in one line if not."""
    try:
        _, raw = _read_own(path, MAX_STATE_BYTES)
    except FileNotFoundError:
        return _State(path, name, {}, {})
    except ValueError as error:
        raise _refuse(
            path,
            f"not usable as this suite's state: {error}; bench neither trusts nor replaces "
            "such a file: give the suite another --output-dir",
        ) from None
    except OSError as error:
        owner = files.other_owner(path)
        raise _refuse(
            path,
            f"cannot read this suite's state ({error.strerror}"
            f"{f'; it belongs to {owner}' if owner else ''}): give the suite another "
            "--output-dir",
        ) from None
    try:
        data = json.loads(raw) if len(raw) <= MAX_STATE_BYTES else None
    except (ValueError, RecursionError):
        data = None
    if not isinstance(data, dict) or data.get("suite") != name:
        raise _refuse(path, f"not the state of suite {name!r}; move it away to start it afresh")
    done, sha256 = data.get("done"), data.get("sha256", {})
    if not isinstance(done, dict) or not all(isinstance(v, str) for v in done.values()):
        raise _refuse(path, "done: expected each run's result file; move it away")
    if not isinstance(sha256, dict) or not all(
        isinstance(v, str) and _SHA256.fullmatch(v) for v in sha256.values()
    ):
        raise _refuse(path, "sha256: expected 64 hex digits for each run; move it away")
    folder = os.path.realpath(output_dir)
    for recorded in done.values():
        try:
            where = os.path.dirname(os.path.realpath(recorded))
        except ValueError:  # a NUL byte, or a character no file name can be encoded with
            raise _refuse(
                path,
                f"names {recorded!r}, not a path a file can have: not a state bench wrote; "
                "move it away to start the suite afresh",
            ) from None
        if where != folder:
            raise _refuse(
                path,
                f"names {recorded}, outside its folder {output_dir} (or a link out of it): "
                "not a state bench wrote; move it away to start the suite afresh",
            )
    return _State(path, name, done, {k: v for k, v in sha256.items() if k in done})


def _warn(line: str) -> None:
    print(visible(f"bench: warning: {line}"), file=sys.stderr)


def _status(state: _State, key: str) -> str | None:
    """'complete', 'interrupted' or 'running' (to go on with), or None (run it afresh): a
    file that is missing, does not load, is another user's or is not the file recorded
    (its sha256) is run again. A file recorded without a sha256 gets it now."""
    recorded = state.done.get(key)
    if recorded is None:
        return None
    try:
        st, raw = _read_own(Path(recorded), MAX_RESULT_BYTES)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        why = error.strerror if isinstance(error, OSError) else str(error)
        _warn(f"{state.path} names {recorded}: {why}; running it again")
        return None
    digest = hashlib.sha256(raw).hexdigest()
    if state.sha256.setdefault(key, digest) != digest:
        _warn(
            f"{state.path} names {recorded}, but its sha256 is not the one recorded (changed "
            "since, or killed while running); running it again"
        )
        return None
    try:
        status = result.load(recorded).status
        now = os.stat(recorded)  # still the file hashed
    except (UsageError, OSError):
        return None
    same = os.path.samestat(st, now) and (st.st_size, st.st_mtime_ns) == (
        now.st_size,
        now.st_mtime_ns,
    )
    return status if same else None


def _record(state: _State, key: str, path: Path) -> None:
    """The run's result file and its sha256, in the state file (atomically)."""
    try:
        _, raw = _read_own(path, MAX_RESULT_BYTES)
        state.done[key] = str(path)
        state.sha256[key] = hashlib.sha256(raw).hexdigest()
        saved = {"kind": SUITE_STATE_KIND, "suite": state.name, "done": state.done}
        files.replace(state.path, json.dumps({**saved, "sha256": state.sha256}, indent=1))
    except (OSError, ValueError) as error:
        why = error.strerror if isinstance(error, OSError) else str(error)
        raise BenchError(
            visible(f"{state.path}: cannot record the suite's progress ({why})")
        ) from None


def cmd_suite(args: argparse.Namespace) -> int:
    from bench.commands import (  # `bench run`'s parser and runner: one set of rules
        run_options,
        running,
    )

    known = suites()
    if args.name == "list":
        for suite in known.values():
            runs = len(suite.runs)
            print(f"{suite.name}: {suite.description} ({runs} run{'s' if runs != 1 else ''})")
        return 0
    if args.name not in known:
        from bench.config.discovery import did_you_mean

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
    for key, parsed, config in planned:  # what any run lacks (an extra, a dataset): first
        try:
            running.preflight(config, parsed)
        except UsageError as error:
            raise UsageError(f"suite {suite.name}, run '{key}': {error}") from None
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
    from bench.commands import running

    state = _load_state(state_path, suite.name, output_dir)
    out = console()
    worst = 0
    for i, (key, parsed, config) in enumerate(planned, 1):
        status = _status(state, key)
        if status == "complete":
            out.print(
                plain(f"suite {suite.name} {i}/{len(planned)}: done before: {state.done[key]}")
            )
            continue
        # interrupted, or "running": killed too hard to say (SIGKILL, a reboot)
        resume = Path(state.done[key]) if status in ("interrupted", "running") else None
        going_on = f" (going on with {resume})" if resume else ""
        out.print(plain(f"suite {suite.name} {i}/{len(planned)}: bench {key}{going_on}"))
        code, outcome, path = running.run_and_print(config, parsed, resume, preflighted=True)
        if outcome is not None and path is not None:  # complete, or interrupted and saved
            _record(state, key, path)
        if code == running.EXIT_INTERRUPTED or code >= 128:
            out.print(plain(f"suite {suite.name}: stopped; run the same command to go on"))
            return code
        worst = max(worst, code)
    summary = Table(title=plain(f"suite {suite.name}: {suite.description}"), title_justify="left")
    summary.add_column("run")
    summary.add_column("result")
    for key, _, _ in planned:
        summary.add_row(plain(key), plain(state.done.get(key, "not run")))
    out.print(summary)
    out.print(plain(_closing_hint(output_dir)))
    return worst


def _closing_hint(output_dir: Path | str) -> str:
    """What to type next, where the user is. In a bench image (make quickstart, make run)
    the host has no bench: the same command through make, whose run mounts ./results at
    /results; the report page (its libraries are in no image) from a native install."""
    if not provenance.in_image():
        return (
            f"compare them: bench compare {output_dir} (with other machines' "
            f"results: --baseline MACHINE); a report: bench report {output_dir}"
        )
    mounted = Path(output_dir)
    here = (
        Path("results", mounted.relative_to("/results"))
        if mounted.is_relative_to("/results")
        else mounted
    )
    return (
        f'compare them: make run ARGS="compare {output_dir}" (./results is the image\'s '
        f"/results); a report needs bench here: pip install '.[report]' && bench report {here}"
    )
