"""Result files already checked: a command that reads many (bench report, compare, show,
collect) checks only the bytes it has not checked before.

Reading a result file walks it for its bounds, validates every field and recomputes its
checksum: about 1.5 ms of the 2 ms a file costs (10,000 files: 15 s of 20). What those
checks concluded depends on the file's bytes and on the code that checks, nothing else;
so, as asv does, bench keeps the verdict of each file that passed, keyed by the sha256 of
its raw bytes, under a fingerprint of the code (FINGERPRINTED: the modules of the schema,
its checks, migrations and bounds, and those they import below them, with bench's
version, the schema version and Python's). A file is still read, parsed, migrated and
made a Result every time, exactly as without the cache; only the pure checks are skipped,
and only for bytes that passed them before under the same code. One byte changed is
other bytes: checked again. A file that failed a check is not kept: it is checked and
named again every time. `bench verify` never asks the cache.

The cache is one file, CACHE_HOME/bench/checked/results.txt ($XDG_CACHE_HOME, else
~/.cache), in a folder only the user can write (bench.util.private, the compiler caches'
own check): whoever can write it could mark a hostile file as checked. Its first line is
the code's fingerprint (another one: the whole file is ignored and started over), then a
line per file: the sha256 of its bytes and its integrity verdict ('ok', 'edited',
'absent'). It is read with a bound (MAX_BYTES), a malformed line is ignored, and nothing
of it reaches a terminal: a key only ever matches a hash bench computed. It is written
atomically (a reader sees the old file or the new one); of two commands writing at
once, the last one's file stays. Past MAX_ENTRIES files, the oldest are dropped. Where
no such folder can be had (HOME=/, a folder another user could write) or the cache
cannot be written, the files are read without it: the cache never fails a command.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import bench
from bench.result import integrity, io
from bench.result.document import Result
from bench.result.schema import SCHEMA_VERSION
from bench.util import files, private

# The packages whose modules check a result (io, validate, schema, integrity, migrations;
# the bounds and the stored options of config/) and what they import below them (util/):
# any change to one of their sources is another fingerprint.
FINGERPRINTED = ("result", "config", "util")
FOLDER = ("bench", "checked")  # below the user's cache home
NAME = "results.txt"
HEADER = "bench checked results 1 "  # then the fingerprint
VERDICTS = frozenset((integrity.OK, integrity.EDITED, integrity.ABSENT))
# Reading the cache costs about 0.7 µs and 150 bytes of memory an entry (1 Mi entries:
# 0.7 s and 160 MB on a 2-vCPU EPYC, on every command): 256 Ki entries, 26 folders of
# 10,000 results, cost at most 0.2 s and 40 MB. The longest line is 64 + 1 + 6 bytes.
MAX_ENTRIES = 2**18
MAX_BYTES = len(HEADER) + 64 + 1 + MAX_ENTRIES * (64 + 1 + len(integrity.EDITED) + 1)


@functools.cache
def fingerprint() -> str | None:
    """This bench's code_fingerprint, computed once a process."""
    return code_fingerprint(Path(__file__).resolve().parent.parent)


def code_fingerprint(root: Path) -> str | None:
    """The sha256 of what decides a verdict: bench's version, the schema version,
    Python's version and the source of every module of FINGERPRINTED below `root` (the
    bench package); None where that source cannot be read (no cache then)."""
    digest = hashlib.sha256(f"{bench.__version__}\0{SCHEMA_VERSION}\0{sys.version}\0".encode())
    try:
        for package in FINGERPRINTED:
            sources = sorted((root / package).glob("*.py"))
            if not sources:
                return None
            for source in sources:
                digest.update(f"{package}/{source.name}\0".encode())
                digest.update(hashlib.sha256(source.read_bytes()).digest())
    except OSError:
        return None
    return digest.hexdigest()


def folder(environ: Mapping[str, str]) -> Path | None:
    """CACHE_HOME/bench/checked, made 0700 where missing, if only the user can write it
    (bench.util.private); else None."""
    home = private.cache_home(environ)
    if home is None:
        return None
    where = home.joinpath(*FOLDER)
    if private.make(where) is not None or private.problem(where) is not None:
        return None
    return where


def _entries(path: Path, code: str) -> dict[str, str]:
    """The verdicts of the cache file at `path` kept under the fingerprint `code`; none
    where it is missing, another user's, larger than MAX_BYTES, not ASCII text or kept
    under other code. A malformed line is left out."""
    try:
        fd = files.open_regular(path)
    except OSError:
        return {}
    with os.fdopen(fd, "rb") as file:
        if os.fstat(file.fileno()).st_uid != os.geteuid():
            return {}
        raw = file.read(MAX_BYTES + 1)
    if len(raw) > MAX_BYTES:
        return {}
    try:
        lines = raw.decode("ascii").split("\n")
    except UnicodeDecodeError:
        return {}
    if lines[0] != HEADER + code:
        return {}
    pairs = (line.split(" ") for line in lines[1:])
    found = {
        pair[0]: pair[1]
        for pair in pairs
        if len(pair) == 2 and len(pair[0]) == 64 and pair[1] in VERDICTS
    }
    if len(found) > MAX_ENTRIES:  # duplicated keys do not count, only what is kept
        return {}
    return found


class Checked:
    """The verdicts of the result files already checked, for one command that reads
    many: `read_document` and `from_document` as bench.result's, then `save`. Without a
    cache folder (`Checked.open()` found none), it checks every file."""

    def __init__(self, path: Path | None, code: str | None, entries: dict[str, str]) -> None:
        self.path, self.code = path, code
        self._known = entries  # sha256 of a file's bytes -> its integrity verdict
        self._used: dict[str, str] = {}  # those met again by this command, and new ones
        self._added = 0
        self._keys: dict[Path, str] = {}  # a document read, not yet made a Result

    @classmethod
    def open(cls, environ: Mapping[str, str] | None = None) -> Checked:
        """The user's cache, or none (never an error): see the module's docstring."""
        code = fingerprint()
        where = folder(os.environ if environ is None else environ) if code else None
        if where is None or code is None:
            return cls(None, None, {})
        path = where / NAME
        return cls(path, code, _entries(path, code))

    def read_document(self, path: str | Path) -> Any:
        """As bench.result.read_document; bytes that passed its bounds before are only
        parsed, not walked again."""
        path = Path(path)
        raw = io.read_raw(path)
        if self.path is None:
            return io.parse_raw(path, raw)
        key = hashlib.sha256(raw).hexdigest()
        self._keys[path] = key
        return io.parse_raw(path, raw, scanned=key in self._known)

    def from_document(self, path: str | Path, data: Any, *, warn_edited: bool = True) -> Result:
        """As bench.result.from_document for the document `read_document` just read of
        `path`: its checksum and validation are skipped where its bytes passed them
        before, and its verdict is kept where they pass now."""
        path = Path(path)
        key = self._keys.pop(path, None)
        verdict = self._known.get(key) if key is not None else None
        loaded = io.from_document(path, data, warn_edited=warn_edited, checked_as=verdict)
        if key is not None:
            self._used[key] = loaded.integrity
            self._added += verdict is None
        return loaded

    def save(self) -> None:
        """Keep what this command checked (nothing to write: nothing is), the entries it
        met again last; the oldest dropped past MAX_ENTRIES. An error writing leaves the
        cache as it was."""
        if self.path is None or self.code is None or not self._added:
            return
        kept = {key: v for key, v in self._known.items() if key not in self._used}
        kept.update(self._used)
        lines = [f"{key} {verdict}" for key, verdict in kept.items()][-MAX_ENTRIES:]
        with contextlib.suppress(OSError):
            files.replace(self.path, "\n".join([HEADER + self.code, *lines]) + "\n")
