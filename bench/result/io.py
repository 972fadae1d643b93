"""Reading and writing result files: atomic saves that never overwrite another run's
file, and a load that reads with bounds, migrates, validates, and names the file and
the field of anything wrong in one line.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.config.bounds import MAX_DEPTH, MAX_INT, MAX_TEXT
from bench.config.run_config import RunConfig
from bench.result import integrity
from bench.result.document import Result
from bench.result.migrations import migrate
from bench.result.schema import SCHEMA_VERSION
from bench.result.validate import InvalidField, brief, validate
from bench.util import files
from bench.util.errors import BenchError, UsageError
from bench.util.text import visible

# Read no more than this: a measured run of 90 epochs at thousands of steps each, with
# its input waits, stays well below it; memory for the parsed file is a few times this.
MAX_RESULT_BYTES = 128 * 2**20
# Parsed, a file costs memory per value, not per byte: 16 MiB of `[{},{},...]` is 5.6
# million objects (467 MB, 4 s), and an object's keys cost as much as its values (8.4
# million distinct keys: 1.2 GB, 11 s). So values and keys are counted before parsing,
# over the raw bytes (every value but a container's first follows a comma, every key
# precedes a colon; commas and colons inside strings count too, which only errs on the
# safe side). The largest result bench writes in earnest, 90 epochs of ImageNet at
# 450,450 steps with their input waits, holds about 0.9 million; containers cost the
# most each (64 bytes or more), and bench writes a few per point and repeat, not per step.
MAX_VALUES = 2**22  # 4 Mi values and keys: a few hundred MB and a few seconds at most
MAX_CONTAINERS = 2**20  # objects and lists: ~70 MB parsed


class ResultError(UsageError):
    """A result file that cannot be read: names the file and what is wrong."""


def default_name(config: RunConfig, when: datetime | None = None) -> str:
    stamp = (when or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    return f"{config.workload}-{config.framework}-{config.device}-{stamp}.json"


def create(result: Result, directory: Path) -> Path:
    """Write a new result file atomically and never over an existing one."""
    directory.mkdir(parents=True, exist_ok=True)
    base = default_name(result.config)
    text = dumps(result)
    for n in range(1, 1000):
        path = directory / (base if n == 1 else base.replace(".json", f"-{n}.json"))
        if files.create(path, text):
            return path
    raise BenchError(f"could not find a free result file name in {directory}")


def update(result: Result, path: Path) -> None:
    """Atomically replace a result file this run created (readers never see half a file;
    on a full disk the previous complete file stays)."""
    files.replace(path, dumps(result))


def dumps(result: Result) -> str:
    """The file's text: the result and, last, the checksum of everything above it."""
    return json.dumps(integrity.seal(result.to_json()), indent=1)


def _scan(data: Any) -> str | None:
    """What makes a document no result at all, found in one pass without recursion (a
    hostile file may nest far deeper than Python's stack) and in memory that grows with
    the depth only: nesting deeper than MAX_DEPTH, a whole number no field of a result
    holds (past 64 bits, arithmetic and printing take time that grows with its digits),
    or a string or key longer than MAX_TEXT."""
    stack: list[tuple[Iterator[tuple[Any, Any]], tuple[Any, ...]]] = [(iter([(None, data)]), ())]
    while stack:
        items, trail = stack[-1]
        for key, value in items:
            if isinstance(value, dict | list):
                if len(stack) > MAX_DEPTH:
                    return f"nested deeper than {MAX_DEPTH} levels"
                if type(value) is list and _plain(value):  # nothing inside to look at
                    continue
                inner = value.items() if isinstance(value, dict) else enumerate(value)
                stack.append((iter(inner), (key, trail)))
                break
            if isinstance(value, int) and not -MAX_INT <= value <= MAX_INT:
                return f"{_trail((key, trail))}: a whole number beyond 64 bits"
            if isinstance(key, str) and len(key) > MAX_TEXT:
                return f"a key of more than {MAX_TEXT:,} characters"
            if isinstance(value, str) and len(value) > MAX_TEXT:
                return f"{_trail((key, trail))}: text of more than {MAX_TEXT:,} characters"
        else:
            stack.pop()
    return None


_NUMBERS = frozenset((float, bool, type(None)))


def _plain(items: list[Any]) -> bool:
    """Whether a list holds only what _scan lets pass at C speed: floats, flags, nulls,
    whole numbers within 64 bits, text of at most MAX_TEXT (most of a result: its
    steps' seconds). Anything else, or anything wrong, is left to _scan to walk."""
    kinds = set(map(type, items))
    if kinds <= _NUMBERS:
        return True
    if kinds == {int}:
        return min(items) >= -MAX_INT and max(items) <= MAX_INT
    if kinds == {str}:
        return max(map(len, items)) <= MAX_TEXT
    return False


def _trail(trail: tuple[Any, ...]) -> str:
    """'points[0].batch_size' from the scan's (key, (parent's key, (...))) chain."""
    keys = []
    while trail:
        key, trail = trail
        if key is not None:  # the document itself
            keys.append(f"[{key}]" if isinstance(key, int) else f".{key}")
    return "".join(reversed(keys)).removeprefix(".") or "the document"


def _failure(path: Path, what: str) -> ResultError:
    """The one line naming the file and what is wrong, control characters (of a file's
    name or of its content) made visible: it may reach a terminal."""
    return ResultError(visible(f"{path}: {what}"))


def count_containers(raw: bytes) -> int:
    """At most the objects and lists in a JSON text (brackets in strings count too)."""
    return raw.count(b"{") + raw.count(b"[")


def count_values(raw: bytes) -> int:
    """At most the values and keys in a JSON text, containers included: every value but
    the first of its container follows a comma, every key precedes a colon."""
    return count_containers(raw) + raw.count(b",") + raw.count(b":") + 1


def _too_many(raw: bytes) -> str | None:
    """Why parsing `raw` would cost far more than a result's memory, or None: C-speed
    counts over the bytes, before json builds anything."""
    if count_containers(raw) > MAX_CONTAINERS:
        return f"more than {MAX_CONTAINERS:,} objects and lists"
    if count_values(raw) > MAX_VALUES:
        return f"more than {MAX_VALUES:,} values"
    return None


class _Refused(Exception):
    """What makes a file no result, found by the reader (without the file's name)."""


def _read_bounded(path: Path) -> bytes:
    """The bytes of a regular file of at most MAX_RESULT_BYTES (+1, to tell), read once.
    O_NONBLOCK: a FIFO opens at once (and is refused as no regular file)."""
    try:  # a FIFO would block, /dev/zero never end
        fd = files.open_regular(path)
    except files.NotRegular as refused:
        raise _Refused(refused.strerror) from None
    with os.fdopen(fd, "rb") as file:
        return file.read(MAX_RESULT_BYTES + 1)


def _parse(raw: bytes, *, scanned: bool = False) -> Any:
    """The JSON of `raw` within the bounds, or _Refused saying which it exceeds. Bytes
    `scanned` before (these very bytes passed every bound, bench.result.checked) are
    parsed without the counts and the walk."""
    if len(raw) > MAX_RESULT_BYTES:
        raise _Refused(f"larger than {MAX_RESULT_BYTES // 2**20} MiB: not a bench result")
    problem = None if scanned else _too_many(raw)
    try:
        if problem is not None:
            raise _Refused(f"not a bench result ({problem})")
        data = json.loads(raw.decode())
    except UnicodeDecodeError as error:
        raise _Refused(f"cannot read ({error})") from None
    except json.JSONDecodeError as error:
        raise _Refused(f"not a bench result (invalid JSON: {error})") from None
    except RecursionError:
        raise _Refused("not a bench result (nested too deeply)") from None
    except ValueError:  # Python's own limit on the digits of a whole number
        digits = sys.get_int_max_str_digits()
        raise _Refused(
            f"not a bench result (a whole number of more than {digits} digits)"
        ) from None
    problem = None if scanned else _scan(data)
    if problem is not None:
        raise _Refused(f"not a bench result ({problem})")
    return data


def read_document(path: str | Path) -> Any:
    """A file's JSON, read once with bounds: a regular file of at most MAX_RESULT_BYTES,
    MAX_VALUES values and keys (MAX_CONTAINERS objects and lists) counted before
    parsing, whole numbers of at most 64 bits, nesting at most MAX_DEPTH levels;
    ResultError otherwise. `from_document` makes it a Result: a reader that must also
    know what else a file is (bench report) reads it once and asks both."""
    path = Path(path)
    return parse_raw(path, read_raw(path))


def read_raw(path: Path) -> bytes:
    """The bytes of the result file `path`, read as read_document reads them (a regular
    file, at most MAX_RESULT_BYTES + 1 of them); ResultError otherwise."""
    try:
        return _read_bounded(path)
    except _Refused as refused:
        raise _failure(path, str(refused)) from None
    except FileNotFoundError:
        raise _failure(path, "no such result file") from None
    except OSError as error:
        raise _failure(path, f"cannot read ({error})") from None


def parse_raw(path: Path, raw: bytes, *, scanned: bool = False) -> Any:
    """The document of `raw`, the bytes of `path` (read_raw), within read_document's
    bounds; ResultError naming `path` otherwise. `scanned`: these very bytes passed the
    bounds before, under this very code (bench.result.checked): they are not walked again."""
    try:
        return _parse(raw, scanned=scanned)
    except _Refused as refused:
        raise _failure(path, str(refused)) from None


def _no_result(data: Any) -> str | None:
    """What makes a document no result of a version this bench reads, or None."""
    if not isinstance(data, dict) or "schema_version" not in data:
        return "not a bench result (no schema_version)"
    version = data["schema_version"]
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        return (
            f"not a bench result (schema_version: expected a whole number from 1 to "
            f"{SCHEMA_VERSION}, found {brief(version)})"
        )
    if version > SCHEMA_VERSION:
        return (
            f"schema version {version} is newer than this bench reads (up to {SCHEMA_VERSION}); "
            "upgrade bench"
        )
    points = data.get("points", [])
    if not isinstance(points, list) or not all(isinstance(p, dict) for p in points):
        return "invalid result (points: expected a list of objects)"
    return None


def load(path: str | Path) -> Result:
    """Read a result of this or any older schema version; errors name file and field."""
    return from_document(path, read_document(path))


def from_document(
    path: str | Path, data: Any, *, warn_edited: bool = True, checked_as: str | None = None
) -> Result:
    """The Result a document read by read_document holds (`path` names it in errors).
    A file changed since bench wrote it is said on stderr, unless the caller groups
    such files itself (`warn_edited=False`; the Result's `integrity` tells).
    `checked_as`: the integrity verdict these very bytes were given when they passed
    every check before, under this very code (bench.result.checked): the checksum and
    the validation, which only check, are not run again; the migrations and the Result
    are made as ever."""
    path = Path(path)
    problem = _no_result(data)
    if problem is not None:
        raise _failure(path, problem)
    # before migrations: the checksum covers the file
    sealed = integrity.check(data) if checked_as is None else checked_as
    if sealed == integrity.EDITED and warn_edited:
        print(
            visible(
                f"bench: warning: {path} was changed after bench wrote it (its sha256 does "
                "not match): its figures may not be the ones measured"
            ),
            file=sys.stderr,
        )
    try:
        migrated = migrate(data, data["schema_version"])
        loaded = Result.from_json(migrated if checked_as is not None else validate(migrated))
        loaded.integrity = sealed
        return loaded
    except (UsageError, InvalidField) as error:
        raise _failure(path, f"invalid result ({error})") from None
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        # Migrations run before validation, so they may meet any malformed shape.
        raise _failure(path, f"invalid result ({type(error).__name__}: {error})") from None
