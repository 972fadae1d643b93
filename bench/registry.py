"""Name -> platform, framework and workload, typed: what bench.config.discovery finds (by module
and folder; nothing registered by hand), for everything above the axes. The configs and
the axes' base classes, below, ask bench.config.discovery itself (untyped), so no import runs in
a circle.

Also the one table of optional modules and the extra of bench that brings each, with
`require` (pandas' import_optional_dependency): a missing one is one line naming the
extra, so a bare install lists and runs all that it can. A
workload's own optional modules (timm for nasnet-large) are the ones its implementation
imports, read from its source without importing it (`missing_extras`).
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

from bench.config import discovery
from bench.util.errors import UsageError

if TYPE_CHECKING:
    from bench.frameworks.base import Framework
    from bench.platforms.base import Platform
    from bench.workloads.base import WorkloadSpec

# Optional module (as imported) -> the extra of bench that brings it: pyproject.toml's
# [project.optional-dependencies] (tests/test_cli.py checks that the two agree).
EXTRAS = {
    "torch": "torch", "torchvision": "torch",
    "tensorflow": "tensorflow", "keras": "tensorflow",
    "jax": "jax", "flax": "jax", "optax": "jax",
    "mlx": "mlx",
    "pandas": "report", "tabulate": "report", "scipy": "report",
    "altair": "report", "vl_convert": "report",
    "timm": "zoo",
    "torchao": "float8",
    "zeus": "energy", "pynvml": "energy", "zeus_apple_silicon": "apple",
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


def workloads() -> dict[str, WorkloadSpec]:
    """Every workload spec, by name, from the folders under bench/workloads/."""
    return discovery.workloads()


def workload(name: str) -> WorkloadSpec:
    return discovery.workload(name)


def framework_names() -> list[str]:
    return discovery.framework_names()


def framework(name: str) -> Framework:
    return discovery.framework(name)


def platforms() -> dict[str, Platform]:
    """Every platform, by name, from the modules in bench/platforms/."""
    return discovery.platforms()


def platform(name: str) -> Platform:
    return discovery.platform(name)


def optional_modules(spec: WorkloadSpec, framework: str) -> list[str]:
    """The optional modules the workload imports in `framework` beyond the framework
    itself (nasnet-large in torch: timm), installed or not."""
    imported = discovery.imports(f"{spec.package}.{framework}")
    return sorted(name for name in imported if EXTRAS.get(name) not in (None, framework))


def missing_extras(spec: WorkloadSpec, framework: str) -> MissingExtra | None:
    """What the workload needs in `framework` beyond the framework itself and is not
    installed (nasnet-large in torch: timm, from bench[zoo]); None when nothing is."""
    needed = [name for name in optional_modules(spec, framework) if not _installed(name)]
    return MissingExtra(f"{spec.name} ({framework})", needed) if needed else None


def require_installed(workload_name: str, framework: str) -> None:
    """Before a run: the workload's own optional modules in this framework are here
    (one line naming the extra, exit 2), rather than a failed point from the child."""
    missing = missing_extras(workload(workload_name), framework)
    if missing is not None:
        raise missing
