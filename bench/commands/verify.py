"""`bench verify FILE...`: is each result file the one bench wrote?"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console

from bench import integrity, result
from bench.report.text import plain

_SAID = {
    integrity.OK: "ok",
    integrity.EDITED: "EDITED: its sha256 does not match its content",
    integrity.ABSENT: "unverified: written before bench wrote checksums",
}


def register(sub: Any) -> None:
    p = sub.add_parser("verify", help="check that result files are as bench wrote them")
    p.add_argument("files", nargs="+", type=Path)
    p.set_defaults(func=cmd_verify)


def cmd_verify(args: argparse.Namespace) -> int:
    """One line per file; exit 0 only when every file is verified."""
    console = Console(highlight=False, soft_wrap=True)
    verified = True
    for path in args.files:
        try:
            state = _SAID[result.load(path).integrity]
        except result.ResultError as error:  # truncated, not JSON, invalid fields
            state = f"UNREADABLE: {error}"
        verified &= state == "ok"
        console.print(plain(f"{path}: {state}"))
    return 0 if verified else 1
