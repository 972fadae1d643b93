"""Finding bench's members: platforms (modules in bench/platforms/), frameworks (modules in
bench/frameworks/) and workloads (folders in bench/workloads/), by name; nothing is
registered by hand. Discovery imports only light modules (no deep-learning framework):
a workload's framework modules are read as source, and one that lacks a function its
framework's contract requires (bench.workloads.contract) is refused in one line.

This module imports no axis, not even for types, so the configs that check themselves
against the axes (bench.config.run_config*) and the axes' own base classes sit below it without a
circle; what it finds is typed `Any` here. bench.registry, in the axes' room, gives the
same lookups typed (Framework, Platform, WorkloadSpec) to everything above.
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
from typing import Any, NamedTuple

from bench.util.errors import BenchError, UsageError

# Modules in the axis packages that are shared code, not members.
_NOT_MEMBERS = {"base"}


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
def workloads() -> dict[str, Any]:
    """Every workload spec, by name, from the folders under bench/workloads/."""
    found: dict[str, Any] = {}
    for folder in _member_modules("bench.workloads", packages=True):
        package = f"bench.workloads.{folder}"
        module = importlib.import_module(package)
        specs = getattr(module, "WORKLOADS", None)
        if not specs:
            raise BenchError(f"{module.__file__}: defines no WORKLOADS (a tuple of WorkloadSpec)")
        for spec in specs:
            if spec.name in found:
                raise BenchError(f"workload {spec.name!r} is defined twice ({package})")
            # The spec is frozen; record where its implementations live.
            object.__setattr__(spec, "package", package)
            spec.check_implementations()  # a missing function: one line, before any run
            found[spec.name] = spec
    return found


def source_path(module: str) -> str:
    """Where `module`'s source is, found without importing it ('' when it has none)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return ""
    return spec.origin


class _Source(NamedTuple):
    """What discovery reads from a module's source without importing it."""

    imports: frozenset[str]  # top-level modules imported anywhere in it
    defined: frozenset[str] | None  # names bound at its top level; None: a star import


@functools.cache  # by path: a folder written anew (a test's) is read anew
def _read(path: str) -> _Source:
    tree = ast.parse(Path(path).read_text(), path)
    imports: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imports.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            imports.add(node.module.partition(".")[0])
    names = set(_bound(tree.body))
    defined = None if None in names else frozenset(n for n in names if n is not None)
    return _Source(frozenset(imports), defined)


def imports(module: str) -> frozenset[str]:
    """The top-level modules that `module`'s source imports, anywhere in it (also inside
    functions, where optional ones are imported), read without importing it."""
    path = source_path(module)
    return _read(path).imports if path else frozenset()


def _bound(statements: list[ast.stmt]) -> Iterable[str | None]:
    """The names `statements` bind at module level (None for a star import)."""
    for node in statements:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.name
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                yield from (n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                star = alias.name == "*"
                yield None if star else alias.asname or alias.name.partition(".")[0]
        elif isinstance(node, ast.If):  # bodies that run at import
            yield from _bound(node.body + node.orelse)
        elif isinstance(node, ast.With):
            yield from _bound(node.body)
        elif isinstance(node, ast.Try):
            handlers = [inner for handler in node.handlers for inner in handler.body]
            yield from _bound(node.body + node.orelse + node.finalbody + handlers)


def defined_names(module: str) -> frozenset[str] | None:
    """The names `module` defines at its top level (functions, classes, assignments,
    imports), read from its source without importing it; None where a star import
    makes them unknowable (or it has no source)."""
    path = source_path(module)
    return _read(path).defined if path else None


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


def workload(name: str) -> Any:
    _require_known("workload", name, workloads())
    return workloads()[name]


def framework_names() -> list[str]:
    return list(_framework_names())


@functools.cache  # asked for every point a result file holds: scan the folder once
def _framework_names() -> tuple[str, ...]:
    return _member_modules("bench.frameworks", packages=False)


def framework(name: str) -> Any:
    _require_known("framework", name, framework_names())
    return importlib.import_module(f"bench.frameworks.{name}").FRAMEWORK


@functools.cache
def platforms() -> dict[str, Any]:
    """Every platform, by name, from the modules in bench/platforms/."""
    found = {}
    for module in _member_modules("bench.platforms", packages=False):
        platform = importlib.import_module(f"bench.platforms.{module}").PLATFORM
        found[platform.name] = platform
    return found


def platform(name: str) -> Any:
    _require_known("device", name, platforms(), also="auto, ")
    return platforms()[name]
