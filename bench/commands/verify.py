"""`bench verify FILE...`: is each result file, image or vendor archive the one bench
(or nox) wrote?"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rich.console import Console

from bench import result
from bench.result import archive, integrity
from bench.util.text import plain

_SAID = {
    integrity.OK: "ok",
    integrity.EDITED: "EDITED: its sha256 does not match its content",
    integrity.ABSENT: "unverified: written before bench wrote checksums",
}


def register(sub: Any) -> None:
    p = sub.add_parser(
        "verify", help="check that result files and image archives are as they were written"
    )
    p.add_argument(
        "files",
        nargs="+",
        type=Path,
        help="result JSON (or folders of them), or archives from nox -s save / vendor",
    )
    p.set_defaults(func=cmd_verify)


def _files(paths: list[Path]) -> Iterator[tuple[Path, Any]]:
    """The files named, and the results found in the folders named (as bench show finds
    them; bench's other outputs there, a suite's state, are no results to verify), each
    with its document where a folder's scan already read it (None: read it below)."""
    from bench.report.collect import is_bench_document, result_files

    for path in paths:
        if not path.is_dir():
            yield path, None
            continue
        for inner in result_files([path]):
            try:
                document = result.read_document(inner)
            except result.ResultError:
                yield inner, None  # read again below, and said unreadable there
                continue
            if not is_bench_document(document):
                yield inner, document


def cmd_verify(args: argparse.Namespace) -> int:
    """One line per file; exit 0 only when every file is verified."""
    console = Console(highlight=False, soft_wrap=True)
    verified = True
    for path, document in _files(args.files):
        if archive.is_archive(path):
            ok, state = archive.verify(path)
        else:
            try:
                if document is None:
                    document = result.read_document(path)
                state = _SAID[result.from_document(path, document).integrity]
            except result.ResultError as error:  # truncated, not JSON, invalid fields
                state = f"UNREADABLE: {error}"
            ok = state == "ok"
        verified &= ok
        console.print(plain(f"{path}: {state}"))
    return 0 if verified else 1
