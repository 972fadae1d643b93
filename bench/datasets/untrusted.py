"""Reading a dataset that someone else made: bounded, inside its folder, refused in one line.

A dataset is often a copy from someone else, so each of its files is handled as hostile
input. A file's size is checked before its bytes are read, a count before a list grows,
and a declared shape before anything is allocated. Only regular files are opened, and
never in a way that blocks (a FIFO cannot hang a run). A link that stays inside the
data folder is followed, since sorted validation splits are often links into one
folder. A link that leads out of it is refused: through it, a dataset would read any
file of the user's that its maker chose. Each refusal is a DatasetError of one line.
It names the file by its path under the data folder as the user gave it, with control
characters escaped, then says what is wrong and what is allowed.
"""

from __future__ import annotations

import errno
import os
import resource
import stat
from pathlib import Path
from typing import BinaryIO

from bench.datasets import DatasetError
from bench.util import files


def shown(text: object) -> str:
    """`text` for a one-line message: control characters (a newline, an escape
    sequence in a file name) written as Python escapes."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def reason(error: BaseException, limit: int = 200) -> str:
    """A library's error message, as one line of at most `limit` characters."""
    text = shown(error) or type(error).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def inside(path: Path, base: Path, root: object) -> None:
    """Refuse `path` where it resolves outside `base`: the data folder `root`, resolved."""
    try:
        target = path.resolve()
    except (OSError, RuntimeError) as error:  # a loop of links
        raise DatasetError(
            f"data: {shown(path)} is a link that does not resolve ({reason(error)}); links "
            "must lead to a file inside the data folder"
        ) from None
    if not target.is_relative_to(base):
        raise DatasetError(
            f"data: {shown(path)} leads outside {shown(root)} (to {shown(target)}); links must "
            "stay inside the data folder"
        )


def open_file(path: Path | str, limit: int, what: str) -> BinaryIO:
    """`path` opened for reading: a regular file of at most `limit` bytes. `what` names
    such a file in a refusal ('a CIFAR-10 batch')."""
    try:
        fd = files.open_regular(path)
    except files.NotRegular:
        kind = what_it_is(path)
        named = kind if kind == "a folder" else f"{kind}, not a regular file"
        raise DatasetError(f"data: {shown(path)} is {named}; {what} is a file") from None
    except OSError as error:
        if error.errno in (errno.EMFILE, errno.ENFILE):
            raise DatasetError(f"data: {shown(path)} cannot be opened: {too_many(error)}") from None
        raise DatasetError(f"data: {shown(path)} cannot be read ({reason(error)})") from None
    file = os.fdopen(fd, "rb")
    info = os.fstat(fd)
    if info.st_size > limit:
        file.close()
        raise DatasetError(
            f"data: {shown(path)} is {info.st_size:,} bytes; {what} is at most {limit:,} bytes"
        )
    return file


def what_it_is(path: Path | str) -> str:
    """What a path that is no regular file is, for a refusal: 'a folder', 'a FIFO', 'a
    device', 'a socket' (as it is now: it may have changed since it was opened)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return "not a regular file"
    kinds = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a device"),
             (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket"))  # fmt: skip
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def too_many(error: OSError) -> str:
    """The cause of EMFILE or ENFILE, and what to do: the open-file limit and `ulimit -n`
    (the bare errno read 'cannot be read ([Errno 24] Too many open files)')."""
    if error.errno == errno.ENFILE:
        return "too many open files on this machine (the system's table of open files is full)"
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return "too many open files (the process has no limit: the system refused one more)"
    return (
        f"too many open files: this process may hold {soft:,} open files (ulimit -n {soft}) "
        "and has them all open; raise the limit before running bench, e.g. `ulimit -n 4096`"
    )


def read_file(path: Path, limit: int, what: str) -> bytes:
    """The bytes of `path`, a regular file of at most `limit` bytes (see open_file)."""
    with open_file(path, limit, what) as file:
        size = os.fstat(file.fileno()).st_size
        data = file.read(size + 1)  # a buffer of the size measured, not of the limit
    if len(data) > size:  # it grew after it was measured
        raise DatasetError(f"data: {shown(path)} changed as it was read; {what} is a file")
    return data
