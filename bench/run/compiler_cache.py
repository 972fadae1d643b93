"""Compiler caches in folders only the user can write: what a compiler loads from its
cache runs as the user.

torch.compile's Inductor keeps the Python and the kernels it generates in
TORCHINDUCTOR_CACHE_DIR, by default /tmp/torchinductor_<user>, which PyTorch makes with
makedirs(exist_ok=True) and never checks: another local user who makes that folder first
(mode 0777) and fills it runs code as the next user who compiles. Triton loads kernels
from TRITON_CACHE_DIR alike, and Inductor keeps precompiled headers and an on-disk cache
in TMPDIR/torchinductor_<user> whatever TORCHINDUCTOR_CACHE_DIR says. So every child
bench starts (bench.run.launchers) gets all three in the user's own cache home
($XDG_CACHE_HOME/bench/compile, else ~/.cache/bench/compile: inductor, triton, tmp), each
folder made 0700 and checked once made: a folder, not a link, the user's, written by no
one else, below folders that only root or the user can rename it out of (the child opens
the name again, minutes later). A user's own setting is kept if it passes the same check
(a TMPDIR that fails it, /tmp as a rule, is replaced; a cache folder that fails it is
refused); so is JAX_COMPILATION_CACHE_DIR, which bench never sets (JAX keeps no
persistent cache unless it is set; TensorFlow's XLA neither, unless its flags say so).
Where no cache home can be made (Docker as a user without a home: HOME=/), a fresh
private folder (mkdtemp: 0700, a name no one could make first) serves this bench's
children and is removed when it exits. Refusals are one line naming the folder, what is
wrong and what to do.
"""

from __future__ import annotations

import atexit
import os
import shutil
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path

from bench.util.errors import UsageError
from bench.util.files import user_name
from bench.util.text import one_line

# The variable and its folder below the cache home: set for every child.
DEFAULTS = {"TORCHINDUCTOR_CACHE_DIR": "inductor", "TRITON_CACHE_DIR": "triton"}
# And the temporary folder, where the user's is not one only they can write (/tmp):
# Inductor keeps its precompiled headers and an on-disk cache in
# TMPDIR/torchinductor_<user> whatever TORCHINDUCTOR_CACHE_DIR says (torch 2.14).
FOLDERS = {**DEFAULTS, "TMPDIR": "tmp"}
# Kept where the user set them, once checked; never set by bench.
USER_ONLY = ("JAX_COMPILATION_CACHE_DIR",)
MODE = 0o700
_fallback: Path | None = None  # this process's mkdtemp folder, once made
_MINE = "give {name} a folder of your own (mode 0700), or unset it"
_REMOVE = (
    "remove it (bench makes it again, 0700), or set XDG_CACHE_HOME, or "
    "TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR, to a folder of your own"
)


def child_env(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` with every compiler cache in a folder only the user can write, as an
    absolute path; UsageError, in one line, for a folder another user could write."""
    env = dict(environ)
    for name in (*DEFAULTS, *USER_ONLY):
        if env.get(name):
            folder = Path(env[name]).absolute()
            env[name] = str(_own(folder, name, _MINE.format(name=name)))
    missing = [name for name in DEFAULTS if not env.get(name)]
    temporary = env.get("TMPDIR", "")
    if not (os.path.isabs(temporary) and problem(Path(temporary)) is None):
        missing.append("TMPDIR")  # /tmp itself, as a rule: anyone may write it
    if missing:
        root = default_root(env)
        for name in missing:
            env[name] = str(_own(root / FOLDERS[name], "compiler cache", _REMOVE))
    return env


def cache_home(environ: Mapping[str, str]) -> Path | None:
    """$XDG_CACHE_HOME where it is an absolute path (the XDG spec ignores any other),
    else ~/.cache; None without an absolute home."""
    xdg = environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        return Path(xdg)
    home = environ.get("HOME") or os.path.expanduser("~")
    return Path(home) / ".cache" if os.path.isabs(home) else None


def default_root(environ: Mapping[str, str]) -> Path:
    """The folder of bench's compiler caches: CACHE_HOME/bench/compile where it can be
    made, else this process's private temporary folder."""
    home = cache_home(environ)
    root = home / "bench" / "compile" if home is not None else None
    # A cache home others may write into (~/.cache 0775 under a umask of 002, as on
    # user-private-group systems) is not the user's mistake to be refused for: the
    # private temporary folder serves instead. A planted folder or link is refused.
    if root is not None and _make(root) is None and _above(root) is None:
        return _own(root, "compiler cache", _REMOVE)
    return _own(_temporary(), "compiler cache", "set XDG_CACHE_HOME to a folder of your own")


def _make(folder: Path) -> str | None:
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


def _temporary() -> Path:
    """This process's private folder for its children's caches, made once: mkdtemp's
    0700 folder of a random name, which no one could have made first."""
    global _fallback
    if _fallback is None:
        try:
            _fallback = Path(tempfile.mkdtemp(prefix="bench-compile-"))
        except OSError as error:
            raise UsageError(
                one_line(
                    f"compiler cache: no folder for it can be made here ({error.strerror} in "
                    f"{tempfile.gettempdir()}); set XDG_CACHE_HOME to a folder of your own"
                )
            ) from None
        atexit.register(shutil.rmtree, _fallback, ignore_errors=True)
    return _fallback


def problem(folder: Path) -> str | None:
    """What makes `folder` unfit to hold code a compiler will load, or None: it must be
    a folder, not a link, the user's, writable by the user alone, and each folder above
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
    return _above(folder)


def _above(folder: Path) -> str | None:
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


def _own(folder: Path, name: str, todo: str) -> Path:
    """`folder`, made if missing, if it may hold a compiler's cache; else UsageError."""
    why = _make(folder) or problem(folder)
    if why is None:  # every folder of its real path was checked: the child gets that one,
        return Path(os.path.realpath(folder))  # not a link above it someone could repoint
    raise UsageError(
        one_line(
            f"{name}: {folder} {why}; a compiler runs what it finds in its cache, so bench "
            f"keeps it where only you can write: {todo}"
        )
    )
