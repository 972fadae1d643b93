"""Writing files others may share: atomically, never through a link, folders checked first.

Result folders are often shared (a /results volume, a team's NFS folder), so a write
must never follow a link planted there, never leave half a file behind, and a folder
bench cannot write must be refused before anything is measured, not after. What bench
creates is never writable by everyone (folders 0755, files 0644, less under a stricter
umask), and a file one bench is writing is claimed (FileClaim), so a second bench going
on with the same file is refused instead of overwriting its points.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import tempfile
from pathlib import Path

from bench.util.errors import BenchError, UsageError
from bench.util.text import visible

FOLDER_MODE = 0o755  # and the umask's: mkdir applies it
_CLAIM_TRIES = 100  # a lock removed between open and flock is opened again, this often

# Where the folder is a Docker volume, the usual cause is the image's unprivileged user.
_DOCKER_HINT = (
    'in Docker, run as your own user (--user "$(id -u):$(id -g)") and mount a folder '
    "you own, or choose another folder"
)


class NotRegular(OSError):
    """What open_regular refused: a folder, a FIFO, a device (EINVAL; its strerror says
    which: 'a folder' or 'not a regular file')."""


def open_regular(path: Path | str) -> int:
    """A descriptor of `path` for reading, a regular file: a FIFO opens at once (and is
    refused) instead of blocking, a device is refused instead of read without end.
    OSError (ENOENT, EACCES), or NotRegular for what is no regular file."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        what = "a folder" if stat.S_ISDIR(mode) else "not a regular file"
        raise NotRegular(22, what, str(path))
    return fd


def read_small(path: Path, limit: int) -> bytes:
    """The bytes of a regular file of at most `limit` bytes; OSError (EFBIG) when larger."""
    with os.fdopen(open_regular(path), "rb") as file:
        data = file.read(limit + 1)
    if len(data) > limit:
        raise OSError(27, f"larger than {limit:,} bytes", str(path))
    return data


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def temp_file(directory: Path, name: str) -> tuple[int, Path]:
    """A new hidden file beside `name`, created exclusively (O_EXCL: an existing file or
    link of that name is an error, never followed), with the usual permissions."""
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    # mkstemp makes 0600; results are for sharing: readable, never writable by all.
    os.fchmod(fd, 0o666 & ~(_umask() | 0o002))
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
    under a file. A missing folder is created with its missing parents (as mkdir -p),
    each with FOLDER_MODE: `bench suite quick` in an empty folder makes
    results/suite-quick, as `bench tiny` makes results."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{option}: {folder} is not a folder")
    if not folder.exists():
        # From the first existing ancestor down (Path.mkdir's parents=True would give
        # the parents 0777 less the umask, not FOLDER_MODE).
        levels = [folder]
        while not levels[-1].parent.exists() and levels[-1].parent != levels[-1]:
            levels.append(levels[-1].parent)
        above = (levels[-1] if levels else folder).absolute().parent
        if not above.is_dir():
            raise UsageError(f"{option}: {folder} cannot be created: {above} is not a folder")
        for level in reversed(levels):
            try:
                level.mkdir(mode=FOLDER_MODE)
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


def require_own_dir(folder: Path, option: str) -> Path:
    """require_writable_dir for a folder bench fills with files of fixed names (a
    report's): refused in one line when it is a link (another user who can write the
    folder above plants results/report -> a folder of yours, and bench would write there)
    or another user's (they could replace what bench writes). Checked before and after
    it is made, without following a link."""
    folder = Path(folder)
    _refuse_planted(folder, option)
    require_writable_dir(folder, option)
    _refuse_planted(folder, option)  # made in between, by another
    return folder


def _refuse_planted(folder: Path, option: str) -> None:
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        return
    except OSError as error:
        raise UsageError(visible(f"{option}: {folder} cannot be read ({error.strerror})")) from None
    if stat.S_ISLNK(st.st_mode):
        try:
            to = f" (to {os.readlink(folder)})"
        except OSError:
            to = ""
        raise UsageError(
            visible(
                f"{option}: {folder} is a link{to}; bench writes no "
                "output through a link, which anyone who can write its folder could have "
                "made: remove it, or give -o the folder itself"
            )
        )
    if st.st_uid != os.geteuid():
        raise UsageError(
            visible(
                f"{option}: {folder} belongs to {user_name(st.st_uid)}, not to you, who could "
                "replace what bench writes there: give -o a folder of your own"
            )
        )
    if st.st_mode & 0o002 and not st.st_mode & stat.S_ISVTX:  # a group's write is a choice
        raise UsageError(
            visible(
                f"{option}: {folder} can be written by anyone (mode "
                f"{stat.S_IMODE(st.st_mode):04o}), who could replace what bench writes there: "
                f"chmod o-w {folder}, or give -o a folder of your own"
            )
        )


def require_writable_file(path: Path, option: str) -> Path:
    """The same check for an output file: its folder must be writable; not a folder itself."""
    path = Path(path)
    if path.is_dir():
        raise UsageError(f"{option}: {path} is a folder; name a file")
    require_writable_dir(path.absolute().parent, option)
    return path


class FileClaim:
    """This process's claim on a file it writes, so that no other bench writes it at
    the same time: an advisory lock (flock) on a hidden file beside it, .NAME.lock,
    removed on release. A second claim is refused at once (it never waits), and a
    claim ends with its process however that ended (the kernel drops the lock), so a
    killed run leaves nothing to clean up. Advisory: it keeps bench from bench."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.lock = self.path.with_name(f".{self.path.name}.lock")
        self._fd: int | None = None

    def acquire(self) -> bool:
        """True once this process holds the claim; False if another process does."""
        if self._fd is not None:
            return True
        # O_NONBLOCK: a FIFO planted at the name opens at once instead of waiting.
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        for _ in range(_CLAIM_TRIES):
            fd = os.open(self.lock, flags, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return False
            # The lock is only good on the file still at that name: a holder that
            # released in between removed the one this process opened.
            try:
                held = os.path.samestat(os.fstat(fd), os.stat(self.lock, follow_symlinks=False))
            except FileNotFoundError:
                held = False
            if held:
                self._fd = fd
                return True
            os.close(fd)
        return False  # removed and made again under it, time after time: another's doing

    def hold(self, busy: str) -> FileClaim:
        """Acquire, or refuse in one line: `busy` (UsageError, exit 2) when another
        process holds the claim, naming the lock's owner when that is another user; the
        lock file, its owner and what to do (BenchError) when it cannot be opened: in a
        shared folder another user can make .NAME.lock first, and bench can neither use
        nor remove it."""
        try:
            held = self.acquire()
        except OSError as error:
            raise BenchError(visible(self._blocked(error))) from None
        if not held:
            owner = self._owner()
            raise UsageError(visible(f"{busy} ({self.lock} belongs to {owner})" if owner else busy))
        return self

    def _owner(self) -> str | None:
        return other_owner(self.lock)

    def _blocked(self, error: OSError) -> str:
        owner = self._owner()
        if owner is not None:
            return (
                f"{self.lock} blocks writing {self.path.name}: it belongs to {owner}, not to "
                f"you ({error.strerror}), and bench can neither use nor remove it; give this "
                "run another --output-dir (or ask its owner to remove it)"
            )
        return (
            f"{self.lock}: cannot claim {self.path.name} for writing ({error.strerror}); "
            "remove it if it is not a lock bench made, or give this run another --output-dir"
        )

    def release(self) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            self.lock.unlink()  # while still held: a waiting opener sees it is gone
        os.close(self._fd)
        self._fd = None


def other_owner(path: Path) -> str | None:
    """'uid 1001 (alice)' when `path` (not followed) is another user's, else None."""
    try:
        uid = os.lstat(path).st_uid
    except OSError:
        return None
    return None if uid == os.geteuid() else user_name(uid)


def user_name(uid: int) -> str:
    """'uid 1001 (alice)', or 'uid 1001' where the user has no name here."""
    import pwd

    try:
        return f"uid {uid} ({pwd.getpwuid(uid).pw_name})"
    except KeyError:
        return f"uid {uid}"
