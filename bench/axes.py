"""The sweep axes: the run options that sweep (bench.options_table declares them, with
what a run sweeps over, a tuple on RunConfig; what one point takes, a field of
PointConfig; the option that sets it; and the values allowed where they are fixed: a
framework's memory formats and compilers, a workload's batch sizes are checked where
they are known), in the sweep's order (options_table.SWEEP_ORDER, slowest-varying
first). The config, the max-batch search, settle, drift and the result schema read
them from here.
"""

from __future__ import annotations

from bench.options_table import (
    ALLOCATORS,
    CHECKPOINTING_MODES,
    MEMORY_FORMATS,
    NUMA_MODES,
    OPENMP_RUNTIMES,
    PRECISIONS,
    RUN_OPTIONS,
    SWEEP_ORDER,
    RunOption,
)

__all__ = [
    "ALLOCATORS",
    "AXES",
    "CHECKPOINTING_MODES",
    "MEMORY_FORMATS",
    "NAMES",
    "NUMA_MODES",
    "OPENMP_RUNTIMES",
    "POINT_AXES",
    "PRECISIONS",
    "RUNTIME",
    "Axis",
]

Axis = RunOption  # an axis is a run option that sweeps: .many, .one, .flag, .allowed, ...


def in_sweep_order(options: tuple[RunOption, ...], order: tuple[str, ...]) -> tuple[Axis, ...]:
    """The options that sweep, in `order` (their RunConfig fields); one missing from it,
    or named twice, is refused here, at import, not left out of every sweep."""
    swept = {o.many: o for o in options if o.sweeps}
    if set(order) != set(swept) or len(order) != len(swept):
        raise ValueError(
            f"options_table.SWEEP_ORDER must name each sweep axis once: {sorted(swept)}, "
            f"not {list(order)}"
        )
    return tuple(swept[name] for name in order)


AXES = in_sweep_order(RUN_OPTIONS, SWEEP_ORDER)
NAMES = tuple(axis.many for axis in AXES)
RUNTIME = tuple(axis for axis in AXES if axis.runtime)
# What tells one point of a result from another, the device count aside: the same names
# in a Point, a PointConfig and a PointConfig's dict (a ladder rung); as the options list
# them.
POINT_AXES = tuple(o.one for o in RUN_OPTIONS if o.sweeps and o.point_axis)
