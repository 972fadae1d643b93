"""Intel Extension for PyTorch (IPEX) for torch on the CPU: `--optimize ipex` applies
`ipex.optimize(model, optimizer, dtype=...)` and `--compile ipex` is IPEX's backend for
torch.compile (registered when the package is imported).

IPEX 2.8.0 (August 2025) is its last CPU release: the project is archived and each
release runs with one PyTorch minor version only, so it lives in the frozen
bench:xeon-ipex image (torch 2.8). What replaced it in current PyTorch: inductor's CPU
code generation (--compile inductor), bf16 on AMX through oneDNN (--precision bf16) and
run_cpu's launcher settings (--allocator, --openmp, --numa).

The parent only asks whether the package is installed and made for this torch (package
metadata, no import); the child imports it.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from typing import TYPE_CHECKING, Any

from bench.util.errors import UsageError

if TYPE_CHECKING:
    from bench.platforms.base import Platform

NAME = "ipex"
PACKAGE = "intel-extension-for-pytorch"
MODULE = "intel_extension_for_pytorch"
_INSTALL = (
    "use the bench:xeon-ipex image, or pip install intel-extension-for-pytorch==2.8.0 "
    "with torch 2.8 (its last CPU release)"
)


def _minor(version: str) -> str:
    return ".".join(version.split("+")[0].split(".")[:2])


def unavailable() -> str | None:
    """Why IPEX cannot run here (not installed, or made for another torch), or None."""
    if importlib.util.find_spec(MODULE) is None:
        return f"{PACKAGE} is not installed; {_INSTALL}"
    try:
        ipex, torch = importlib.metadata.version(PACKAGE), importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError as missing:
        return f"{missing.name} has no package metadata here; {_INSTALL}"
    if _minor(ipex) != _minor(torch):
        made_for = f"{PACKAGE} {ipex} runs with torch {_minor(ipex)}.*"
        return f"{made_for}, this is torch {torch}; {_INSTALL}"
    return None


def used_by(optimize: str | None, compile: str | None) -> bool:
    return NAME in (optimize, compile)


def runs_on(platform: Platform) -> bool:
    """IPEX's CPU build: PyTorch's cpu device."""
    return platform.torch_runs_ipex


def check_platform(platform: Platform, asked: tuple[str | None, ...]) -> None:
    """In every config: one line when IPEX is asked for (as a compiler or an
    optimisation) where it never runs."""
    if NAME in asked and not runs_on(platform):
        where = platform.name
        raise UsageError(f"ipex: runs on the cpu device only (its CPU build), not {where!r}")


def check(optimizations: tuple[str | None, ...], compilers: tuple[str | None, ...]) -> None:
    """In the parent, before any child: one line when a point needs IPEX and it cannot run."""
    asked = [f"--optimize {NAME}"] if NAME in optimizations else []
    asked += [f"--compile {NAME}"] if NAME in compilers else []
    reason = unavailable() if asked else None
    if reason:
        raise UsageError(f"{' and '.join(asked)}: {reason}")


def optimize(model: Any, optimizer: Any, dtype: Any, compiled: bool) -> tuple[Any, Any, dict]:
    """ipex.optimize for training: (model, optimizer, what was applied). Weight prepacking
    stays off under torch.compile, as IPEX documents for its TorchDynamo path."""
    import intel_extension_for_pytorch as ipex

    model, optimizer = ipex.optimize(
        model, optimizer=optimizer, dtype=dtype, weights_prepack=not compiled
    )
    applied = {"dtype": str(dtype), "weights_prepack": not compiled, "version": ipex.__version__}
    return model, optimizer, applied


def register_backend() -> None:
    """Importing IPEX registers its torch.compile backend 'ipex'."""
    import intel_extension_for_pytorch  # noqa: F401


def version() -> str | None:
    try:
        return importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return None
