"""Name -> implementation registries, filled by discovering modules and folders.

Nothing is registered by hand: a platform is a module in bench/platforms/, a framework
a module in bench/frameworks/, a workload a folder in bench/workloads/. Discovery
imports only light modules (no deep-learning framework is imported here).

Also the one table of optional modules and the extra of bench that brings each, with
`require` (pandas' import_optional_dependency): a missing one is one line naming the
extra, so a bare install lists and runs all that it can. A
workload's own optional modules (timm for nasnet-large) are the ones its implementation
imports, read from its source without importing it (`missing_extras`).
"""

from __future__ import annotations

import ast
import difflib
import functools
import importlib
import importlib.util
import pkgutil
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from bench.errors import UsageError

if TYPE_CHECKING:
    from bench.frameworks.base import Framework
    from bench.platforms.base import Platform
    from bench.workloads.base import WorkloadSpec

# Modules in the axis packages that are shared code, not members.
_NOT_MEMBERS = {"base"}

# Optional module (as imported) -> the extra of bench that brings it: pyproject.toml's
# [project.optional-dependencies] (tests/test_cli.py checks that the two agree).
EXTRAS = {
    "torch": "torch", "torchvision": "torch",
    "tensorflow": "tensorflow", "keras": "tensorflow",
    "jax": "jax", "flax": "jax", "optax": "jax",
    "pandas": "report", "tabulate": "report", "scipy": "report",
    "altair": "report", "vl_convert": "report",
    "timm": "zoo",
    "torchao": "float8",
    "zeus": "energy", "pynvml": "energy",
    "sky": "fleet", "yaml": "fleet",
}  # fmt: skip


class MissingExtra(UsageError):
    """An optional module is not installed: one line naming the extra that brings it."""

    def __init__(self, what: str, modules: list[str]) -> None:
        self.modules = modules
        self.extras = sorted({EXTRAS[m] for m in modules if m in EXTRAS})
        super().__init__(f"{what} needs {', '.join(modules)}: {self.install}")

    @property
    def install(self) -> str:
        """'pip install 'bench[report]'': what brings the missing modules."""
        others = [m for m in self.modules if m not in EXTRAS]  # no extra brings them
        return "pip install " + " ".join(
            ([f"'bench[{','.join(self.extras)}]'"] if self.extras else []) + others
        )


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken or half-removed install
        return False


def require(what: str, *modules: str) -> None:
    """Raise MissingExtra ('bench diff needs scipy: pip install 'bench[report]'') unless
    every module is installed; imports nothing. `modules` are keys of EXTRAS."""
    missing = [m for m in modules if not _installed(m)]
    if missing:
        raise MissingExtra(what, missing)


def _member_modules(package: str, *, packages: bool) -> tuple[str, ...]:
    pkg = importlib.import_module(package)
    return tuple(
        sorted(
            info.name
            for info in pkgutil.iter_modules(pkg.__path__)
            if info.ispkg == packages
            and not info.name.startswith("_")
            and info.name not in _NOT_MEMBERS
        )
    )


@functools.cache
def workloads() -> dict[str, WorkloadSpec]:
    """Every workload spec, by name, from the folders under bench/workloads/."""
    found: dict[str, WorkloadSpec] = {}
    for folder in _member_modules("bench.workloads", packages=True):
        package = f"bench.workloads.{folder}"
        module = importlib.import_module(package)
        for spec in getattr(module, "WORKLOADS", ()):
            if spec.name in found:
                raise RuntimeError(f"workload {spec.name!r} is defined twice ({package})")
            # The spec is frozen; record where its implementations live.
            object.__setattr__(spec, "package", package)
            found[spec.name] = spec
    return found


@functools.cache
def _imports(module: str) -> frozenset[str]:
    """The top-level modules that `module`'s source imports, anywhere in it (also inside
    functions, where optional ones are imported), read without importing it."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return frozenset()
    found: set[str] = set()
    for node in ast.walk(ast.parse(Path(spec.origin).read_text(), spec.origin)):
        if isinstance(node, ast.Import):
            found.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.partition(".")[0])
    return frozenset(found)


def missing_extras(spec: WorkloadSpec, framework: str) -> MissingExtra | None:
    """What the workload needs in `framework` beyond the framework itself and is not
    installed (nasnet-large in torch: timm, from bench[zoo]); None when nothing is."""
    needed = sorted(
        name
        for name in _imports(f"{spec.package}.{framework}")
        if EXTRAS.get(name) not in (None, framework) and not _installed(name)
    )
    return MissingExtra(f"{spec.name} ({framework})", needed) if needed else None


def require_installed(workload_name: str, framework: str) -> None:
    """Before a run: the workload's own optional modules in this framework are here
    (one line naming the extra, exit 2), rather than a failed point from the child."""
    missing = missing_extras(workload(workload_name), framework)
    if missing is not None:
        raise missing


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """' (did you mean 'resnet50'?)' for a near miss, else ''."""
    close = difflib.get_close_matches(name.lower(), list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _require_known(kind: str, name: str, known: Iterable[str], also: str = "") -> None:
    known = list(known)
    if name not in known:
        raise UsageError(
            f"unknown {kind} {name!r}{did_you_mean(name, known)}; "
            f"choose from: {also}{', '.join(known)}"
        )


def workload(name: str) -> WorkloadSpec:
    _require_known("workload", name, workloads())
    return workloads()[name]


def framework_names() -> list[str]:
    return list(_framework_names())


@functools.cache  # asked for every point a result file holds: scan the folder once
def _framework_names() -> tuple[str, ...]:
    return _member_modules("bench.frameworks", packages=False)


def framework(name: str) -> Framework:
    _require_known("framework", name, framework_names())
    return importlib.import_module(f"bench.frameworks.{name}").FRAMEWORK


@functools.cache
def platforms() -> dict[str, Platform]:
    """Every platform, by name, from the modules in bench/platforms/."""
    found = {}
    for module in _member_modules("bench.platforms", packages=False):
        platform = importlib.import_module(f"bench.platforms.{module}").PLATFORM
        found[platform.name] = platform
    return found


def platform(name: str) -> Platform:
    _require_known("device", name, platforms(), also="auto, ")
    return platforms()[name]
