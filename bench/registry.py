"""Name -> implementation registries, filled by discovering modules and folders.

Nothing is registered by hand: a platform is a module in bench/platforms/, a framework
a module in bench/frameworks/, a workload a folder in bench/workloads/. Discovery
imports only light modules (no deep-learning framework is imported here).
"""

from __future__ import annotations

import difflib
import functools
import importlib
import pkgutil
from collections.abc import Iterable
from typing import TYPE_CHECKING

from bench.errors import UsageError

if TYPE_CHECKING:
    from bench.frameworks.base import Framework
    from bench.platforms.base import Platform
    from bench.workloads.base import WorkloadSpec

# Modules in the axis packages that are shared code, not members.
_NOT_MEMBERS = {"base"}


def _member_modules(package: str, *, packages: bool) -> list[str]:
    pkg = importlib.import_module(package)
    return sorted(
        info.name
        for info in pkgutil.iter_modules(pkg.__path__)
        if info.ispkg == packages
        and not info.name.startswith("_")
        and info.name not in _NOT_MEMBERS
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
