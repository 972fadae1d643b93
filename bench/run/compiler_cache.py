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
folder made 0700 and checked once made (bench.util.private): a folder, not a link, the
user's, written by no one else, below folders that only root or the user can rename it
out of (the child opens the name again, minutes later). A user's own setting is kept if
it passes the same check (a TMPDIR that fails it, /tmp as a rule, is replaced; a cache
folder that fails it is refused); so is JAX_COMPILATION_CACHE_DIR, which bench never sets
(JAX keeps no persistent cache unless it is set; TensorFlow's XLA neither, unless its
flags say so).
Where no cache home can be made (Docker as a user without a home: HOME=/), a fresh
private folder (mkdtemp: 0700, a name no one could make first) serves this bench's
children and is removed when it exits. Refusals are one line naming the folder, what is
wrong and what to do.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from bench.util.errors import UsageError
from bench.util.private import cache_home, make, problem, problem_above
from bench.util.text import one_line

# The variable and its folder below the cache home: set for every child.
DEFAULTS = {"TORCHINDUCTOR_CACHE_DIR": "inductor", "TRITON_CACHE_DIR": "triton"}
# And the temporary folder, where the user's is not one only they can write (/tmp):
# Inductor keeps its precompiled headers and an on-disk cache in
# TMPDIR/torchinductor_<user> whatever TORCHINDUCTOR_CACHE_DIR says (torch 2.14).
FOLDERS = {**DEFAULTS, "TMPDIR": "tmp"}
# Kept where the user set them, once checked; never set by bench.
USER_ONLY = ("JAX_COMPILATION_CACHE_DIR",)
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


def default_root(environ: Mapping[str, str]) -> Path:
    """The folder of bench's compiler caches: CACHE_HOME/bench/compile where it can be
    made, else this process's private temporary folder."""
    home = cache_home(environ)
    root = home / "bench" / "compile" if home is not None else None
    # A cache home others may write into (~/.cache 0775 under a umask of 002, as on
    # user-private-group systems) is not the user's mistake to be refused for: the
    # private temporary folder serves instead. A planted folder or link is refused.
    if root is not None and make(root) is None and problem_above(root) is None:
        return _own(root, "compiler cache", _REMOVE)
    return _own(_temporary(), "compiler cache", "set XDG_CACHE_HOME to a folder of your own")


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


def _own(folder: Path, name: str, todo: str) -> Path:
    """`folder`, made if missing, if it may hold a compiler's cache; else UsageError."""
    why = make(folder) or problem(folder)
    if why is None:  # every folder of its real path was checked: the child gets that one,
        return Path(os.path.realpath(folder))  # not a link above it someone could repoint
    raise UsageError(
        one_line(
            f"{name}: {folder} {why}; a compiler runs what it finds in its cache, so bench "
            f"keeps it where only you can write: {todo}"
        )
    )
