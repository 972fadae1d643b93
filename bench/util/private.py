"""Folders only the user can write: where bench keeps what it will trust later (a
compiler's cache, whose code runs as the user; the verdicts of result files already
checked). Such a folder is the user's, 0700, not a link, below folders that only root or
the user can rename it out of; the user's cache home is $XDG_CACHE_HOME, else ~/.cache.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

from bench.util.files import user_name

MODE = 0o700


def cache_home(environ: Mapping[str, str]) -> Path | None:
    """$XDG_CACHE_HOME where it is an absolute path (the XDG spec ignores any other),
    else ~/.cache; None without an absolute home."""
    xdg = environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        return Path(xdg)
    home = environ.get("HOME") or os.path.expanduser("~")
    return Path(home) / ".cache" if os.path.isabs(home) else None


def make(folder: Path) -> str | None:
    """Make `folder` and its missing parents, each MODE (Path.mkdir would give the parents
    0777 less the umask); None once it is there, else why it cannot be made."""
    levels = [folder]
    while not os.path.lexists(levels[-1]) and levels[-1].parent != levels[-1]:
        levels.append(levels[-1].parent)
    for level in reversed(levels):
        try:
            level.mkdir(mode=MODE)
        except FileExistsError:
            pass  # there before, or made in between by anyone: the check says whose
        except OSError as error:
            return f"cannot be made ({error.strerror})"
    return None


def problem(folder: Path) -> str | None:
    """What makes `folder` unfit to hold what bench will trust, or None: it must be a
    folder, not a link, the user's, writable by the user alone, and each folder above
    it (links resolved) root's or the user's and, if others may write it, sticky."""
    try:
        st = os.lstat(folder)
    except OSError as error:
        return f"cannot be read ({error.strerror})"
    if stat.S_ISLNK(st.st_mode):
        return "is a link"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a folder"
    if st.st_uid != os.geteuid():
        return f"belongs to {user_name(st.st_uid)}, not to you"
    if st.st_mode & 0o022:
        return f"can be written by others (mode {stat.S_IMODE(st.st_mode):04o})"
    return problem_above(folder)


def problem_above(folder: Path) -> str | None:
    """What makes the folders above `folder` (links resolved) unfit, or None: each must
    be root's or the user's and, if others may write it, sticky."""
    above = Path(os.path.realpath(folder.parent))
    for parent in (above, *above.parents):
        try:
            st = os.stat(parent)
        except OSError as error:
            return f"is in {parent}, which cannot be read ({error.strerror})"
        if st.st_uid not in (0, os.geteuid()):
            return (
                f"is in {parent}, which belongs to {user_name(st.st_uid)}: they could move "
                "it away and put their own in its place"
            )
        if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
            return (
                f"is in {parent}, which others can write (mode {stat.S_IMODE(st.st_mode):04o}, "
                "not sticky): they could move it away and put their own in its place"
            )
    return None
