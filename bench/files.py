"""Writing files others may share: atomically, never through a link, folders checked first.

Result folders are often shared (a /results volume, a team's NFS folder), so a write
must never follow a link planted there, never leave half a file behind, and a folder
bench cannot write must be refused before anything is measured, not after.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from bench.errors import UsageError

# Where the folder is a Docker volume, the usual cause is the image's unprivileged user.
_DOCKER_HINT = (
    'in Docker, run as your own user (--user "$(id -u):$(id -g)") and mount a folder '
    "you own, or choose another folder"
)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def temp_file(directory: Path, name: str) -> tuple[int, Path]:
    """A new hidden file beside `name`, created exclusively (O_EXCL: an existing file or
    link of that name is an error, never followed), with the usual permissions."""
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; results are for sharing
    return fd, Path(tmp)


def write_temp(path: Path, data: str | bytes) -> Path:
    """`data` in a fresh temporary file beside `path`, flushed to disk. On any failure
    (a full disk, Ctrl-C) the temporary file is removed and the error raised."""
    fd, tmp = temp_file(path.parent, path.name)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return tmp


def replace(path: Path, data: str | bytes) -> None:
    """Write `path` atomically: readers see the old file or the new one, never half.
    A link at `path` is replaced, not followed."""
    tmp = write_temp(path, data)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def create(path: Path, data: str | bytes) -> bool:
    """Write a new file at `path` atomically; False (nothing written) if the name exists."""
    tmp = write_temp(path, data)
    try:
        os.link(tmp, path)  # fails if the name exists, as a file or a link: no overwrite
        return True
    except FileExistsError:
        return False
    finally:
        tmp.unlink()


def require_writable_dir(folder: Path, option: str) -> Path:
    """Refuse, in one line, a folder bench could not write: read-only, not a folder, or
    under a missing path. The folder itself is created when only it is missing."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{option}: {folder} is not a folder")
    if not folder.exists():
        parent = folder.absolute().parent
        if not parent.is_dir():
            raise UsageError(
                f"{option}: {folder} cannot be created: {parent} does not exist "
                "(create it first, or check the path)"
            )
        try:
            folder.mkdir()
        except FileExistsError:
            pass
        except OSError as error:
            raise UsageError(
                f"{option}: cannot create {folder} ({error.strerror}); {_DOCKER_HINT}"
            ) from None
    try:
        fd, tmp = temp_file(folder, "bench-write-check")
        os.close(fd)
        tmp.unlink()
    except OSError as error:
        raise UsageError(
            f"{option}: cannot write in {folder} ({error.strerror}) as uid {os.getuid()}; "
            f"{_DOCKER_HINT}"
        ) from None
    return folder


def require_writable_file(path: Path, option: str) -> Path:
    """The same check for an output file: its folder must be writable; not a folder itself."""
    path = Path(path)
    if path.is_dir():
        raise UsageError(f"{option}: {path} is a folder; name a file")
    require_writable_dir(path.absolute().parent, option)
    return path
