"""Argument types and checks shared by the command modules and cli.py."""

from __future__ import annotations

import argparse
import importlib.util
import math
import re

from bench.errors import UsageError

_NUMBER = re.compile(r"-?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?")


def number(text: str) -> float:
    """A finite decimal number in ASCII (no 'nan', 'inf', '1e400' or non-ASCII digits)."""
    value = float(text) if _NUMBER.fullmatch(text) else math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not allowed; use a finite number in digits 0-9 (e.g. 0.5 or 1e-3)"
        )
    return value


def require_extra(command: str, *modules: str) -> None:
    """One line, not a traceback, when an optional library of [report] is missing."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise UsageError(f"bench {command} needs {', '.join(missing)}: pip install 'bench[report]'")
