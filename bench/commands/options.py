"""Argument types and checks shared by the command modules, and their parser class."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from bench import registry
from bench.config.bounds import TUNE_BUDGET
from bench.config.option_types import bounded
from bench.config.option_types import measure as measure  # the run options' types, for the
from bench.config.option_types import number as number  # commands' own options too
from bench.util.errors import UsageError


class UsageParser(argparse.ArgumentParser):
    """One-line errors; no abbreviated options: '--price-per' was --price-per-hour, past
    every check that names the options a fleet, tune or ladder keeps for itself (and an
    abbreviation's meaning changes as options are added)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self.commands: dict[str, argparse.ArgumentParser] = {}  # its subcommands, by name

    def add_subparsers(self, **kwargs: Any) -> Any:
        """argparse's, its subcommands' parsers kept in `commands` (argparse keeps them
        in private attributes)."""
        kwargs.setdefault("parser_class", UsageParser)
        action = super().add_subparsers(**kwargs)
        self.commands = action.choices
        return action

    def error(self, message: str):
        # One line, not argparse's usage block; the caller prints it and exits 2.
        raise UsageError(f"{message} (see: {self.prog} --help)")


def require_extra(command: str, *modules: str, extra: str | None = None) -> None:
    """One line, not a traceback, when an optional library of an extra is missing:
    'bench diff needs scipy: pip install 'bench[report]''. The extra is looked up in
    registry.EXTRAS, the one table (`extra`, where a caller names it, must agree)."""
    if extra is not None and any(registry.EXTRAS[m] != extra for m in modules):
        raise ValueError(f"{modules} are not all in bench[{extra}] (registry.EXTRAS)")
    registry.require(f"bench {command}", *modules)


_DURATION = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([smh]?)\s*")
_SECONDS = {"s": 1, "m": 60, "h": 3600}


def duration(text: str) -> float:
    """Seconds from '20m', '90s', '1.5h' or plain seconds."""
    match = _DURATION.fullmatch(text)
    if not match or float(match.group(1)) <= 0:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected a positive time such as 20m, 90s or 1.5h"
        )
    return float(match.group(1)) * _SECONDS[match.group(2) or "s"]


# bench tune's --budget: a duration within the rule of the tune record's budget_s, so a
# budget too short for any probe is refused here, and none is saved that bench refuses.
tune_budget = bounded(TUNE_BUDGET, duration)


def workload_and_run_options(parser: argparse.ArgumentParser, options_help: str) -> None:
    """WORKLOAD, then every bench run option (commands that build on a run: ladder, tune)."""
    parser.add_argument("workload", help="what to train (see: bench list)")
    parser.add_argument("options", nargs=argparse.REMAINDER, help=options_help)


def option_names(options: list[str]) -> list[str]:
    """The options named in a list of run arguments, in order ('--steps=5' is --steps)."""
    return [option.split("=")[0] for option in options if option.startswith("--")]


def add_resume(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--resume", type=Path, metavar="FILE", default=None,
        help=f"go on with an interrupted {what}: its result file, with the same command",
    )  # fmt: skip


def own_options(
    prog: str, args: argparse.Namespace, *names: str
) -> tuple[argparse.Namespace, list[str]]:
    """A command's own options (`names`, registered on its parser as `args` holds them),
    also when they come after the workload, among the run options; and the rest."""
    own = UsageParser(prog=prog, add_help=False)
    if "--budget" in names:
        own.add_argument("--budget", type=tune_budget, default=args.budget)
    if "--resume" in names:
        own.add_argument("--resume", type=Path, default=args.resume)
    return own.parse_known_args(args.options)
