"""Command line: the parser built from the command modules, and dispatch. User errors
are one line and exit 2.

    bench WORKLOAD [options]     (shorthand for `bench run WORKLOAD`)
    bench list | show FILE... | rerun FILE

Exit status: 0 every point measured; 1 a point failed (the others are saved);
2 bad usage; 130 interrupted (finished points are saved).

A command is a module in bench/commands/ with register(subparsers), named in
COMMAND_MODULES; each sets its parser's func.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping

import bench
from bench import registry
from bench.commands import (
    compare,
    diff,
    fleet,
    ladder,
    loader,
    rerun,
    results,
    run,
    suite,
    tune,
    verify,
)
from bench.commands.options import UsageParser
from bench.commands.running import EXIT_INTERRUPTED
from bench.config import discovery
from bench.util.errors import BenchError, UsageError
from bench.util.text import one_line

COMMAND_MODULES = (run, results, rerun, compare, diff, verify, suite, ladder, tune, fleet, loader)
# The page of the manual (docs/) that covers each command, named at the end of its --help;
# a command's subcommands (bench fleet plan, ...) point to the command's page.
MANUAL_PAGES = {
    "run": "running.md", "suite": "running.md", "list": "workloads.md",
    "show": "results.md", "collect": "results.md", "compare": "results.md",
    "report": "results.md", "diff": "results.md", "verify": "results.md",
    "rerun": "results.md", "ladder": "cpu.md", "tune": "cpu.md", "fleet": "fleets.md",
    "loader": "measuring.md",
}  # fmt: skip


def manual_line(page: str) -> str:
    """Where the manual covers a command: the page in docs/, and the same page built."""
    return f"Manual: docs/{page} (or site/{page.removesuffix('.md')}.html, built by nox -s docs)"


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return dict(getattr(parser, "commands", {}))  # UsageParser keeps its subcommands


def _point_to_the_manual(
    parser: argparse.ArgumentParser, page: str, pages: Mapping[str, str]
) -> None:
    """End this parser's --help with `page`, and each subcommand's with its entry in `pages`
    (its own subcommands with the same page)."""
    parser.epilog = manual_line(page)
    for name, child in _subparsers(parser).items():
        _point_to_the_manual(child, pages.get(name, page), {})


def build_parser() -> argparse.ArgumentParser:
    parser = UsageParser(prog="bench", description="Benchmarks of deep-learning training.")
    parser.add_argument("--version", action="version", version=f"bench {bench.__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=UsageParser)
    for module in COMMAND_MODULES:
        module.register(sub)
    _point_to_the_manual(parser, "index.md", MANUAL_PAGES)
    return parser


def commands(parser: argparse.ArgumentParser) -> tuple[str, ...]:
    """Every command's name, in the order the modules register them."""
    return tuple(_subparsers(parser))


def _no_near_command(word: str, names: tuple[str, ...]) -> None:
    """`bench shw x` is a mistyped command, not a workload called 'shw'."""
    if all(name in registry.workloads() for name in word.split(",")):
        return
    near = discovery.did_you_mean(word, names)
    if near:
        raise UsageError(
            f"unknown command or workload {word!r}{near}; commands: {', '.join(names)}; "
            "workloads: bench list"
        )


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser()
        names = commands(parser)
        if argv and argv[0] not in names and not argv[0].startswith("-"):
            _no_near_command(argv[0], names)
            argv.insert(0, "run")  # `bench resnet50 ...` == `bench run resnet50 ...`
        args = parser.parse_args(argv)
        return args.func(args)
    except BenchError as error:
        # Escaped here too: an error may quote a file's name or text (bench rerun CRAFTED).
        print(f"bench: error: {one_line(str(error))}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt as stop:
        print("bench: interrupted", file=sys.stderr)
        return getattr(stop, "exit_code", EXIT_INTERRUPTED)
