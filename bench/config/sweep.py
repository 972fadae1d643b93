"""The sweep axes: the run options that sweep (bench.config.options declares them, with
what a run sweeps over, a tuple on RunConfig; what one point takes, a field of
PointConfig; the option that sets it; and the values allowed where they are fixed: a
framework's memory formats and compilers, a workload's batch sizes are checked where
they are known), in the sweep's order (options.SWEEP_ORDER, slowest-varying
first). The config, the max-batch search, settle, drift and the result schema read
them from here.
"""

from __future__ import annotations

import functools
from typing import Any

from bench.config.option import MATCH, ROW, RunOption
from bench.config.options import (
    ALLOCATORS,
    CHECKPOINTING_MODES,
    MEMORY_FORMATS,
    NUMA_MODES,
    OPENMP_RUNTIMES,
    PRECISIONS,
    RUN_OPTIONS,
    SWEEP_ORDER,
)

__all__ = [
    "ALLOCATORS",
    "AXES",
    "CHECKPOINTING_MODES",
    "FEEDS",
    "MEMORY_FORMATS",
    "MUST_MATCH",
    "NAMES",
    "NUMA_MODES",
    "OPENMP_RUNTIMES",
    "POINT_AXES",
    "PRECISIONS",
    "ROW_OPTIONS",
    "RUNTIME",
    "Axis",
    "setting",
    "settings",
]

Axis = RunOption  # an axis is a run option that sweeps: .many, .one, .flag, .allowed, ...


def in_sweep_order(options: tuple[RunOption, ...], order: tuple[str, ...]) -> tuple[Axis, ...]:
    """The options that sweep: those `order` does not name first (slowest-varying: a new
    axis needs no place there), as declared, then `order`'s (their RunConfig fields). A
    name in `order` that is no sweep axis, or named twice, is refused here, at import."""
    swept = {o.many: o for o in options if o.sweeps}
    if not set(order) <= set(swept) or len(set(order)) != len(order):
        raise ValueError(
            f"options.SWEEP_ORDER names each sweep axis at most once, of "
            f"{sorted(swept)}; not {list(order)}"
        )
    return (*(o for name, o in swept.items() if name not in order),
            *(swept[name] for name in order))  # fmt: skip


AXES = in_sweep_order(RUN_OPTIONS, SWEEP_ORDER)
NAMES = tuple(axis.many for axis in AXES)
RUNTIME = tuple(axis for axis in AXES if axis.runtime)
# What tells one point of a result from another, the device count aside: the same names
# in a Point, a PointConfig and a PointConfig's dict (a ladder rung); as the options list
# them.
POINT_AXES = tuple(o.one for o in RUN_OPTIONS if o.sweeps and o.point_axis)

# How a comparison treats each option (RunOption.compared): the options it keeps apart by
# name, a row for each value, beyond its key's own places; the config fields in which
# results must agree to be compared at all (bench.report.set_apart).
ROW_OPTIONS = tuple(o for o in RUN_OPTIONS if o.field is not None and o.compared == ROW)
MUST_MATCH = tuple(o.field for o in RUN_OPTIONS if o.field is not None and o.compared == MATCH)
# The input pipeline's options (RunOption.feeds): a run that set one pairs with its twin on
# synthetic data (bench.report.real_data).
FEEDS = tuple(o for o in RUN_OPTIONS if o.field is not None and o.feeds)


def setting(option: RunOption, config: Any, point: Any) -> Any:
    """An option's value at one point: the point's own for a sweep axis, else its run's."""
    return getattr(point, option.one) if option.sweeps else getattr(config, option.field or "")


def settings(config: Any, point: Any, feeds: bool = True) -> tuple[str, ...]:
    """('loss=chunked', 'threads=2'): each ROW option a point was measured with, unless at
    its neutral value, named by its flag. Two points that differ here are two
    measurements: a comparison's row, a run's table and a report keep them apart.
    feeds=False: without the input pipeline's (RunOption.feeds), as its twin on
    synthetic data would be named."""
    own = tuple(getattr(point, o.one) for o in _SWEPT_ROW)  # all a point adds to its config
    try:
        return _settings(config, own, feeds)
    except TypeError:  # a config that cannot be a key (not a frozen RunConfig)
        return _named(config, own, feeds)


# The ROW options a point holds its own value of (a sweep axis).
_SWEPT_ROW = tuple(o for o in ROW_OPTIONS if o.sweeps)


@functools.lru_cache(maxsize=4096)
def _settings(config: Any, own: tuple[Any, ...], feeds: bool) -> tuple[str, ...]:
    """settings, once per config and point axes: a fleet's results share a few dozen
    configs, and a report asks for each of its points' rows more than once."""
    return _named(config, own, feeds)


def _named(config: Any, own: tuple[Any, ...], feeds: bool) -> tuple[str, ...]:
    """The ROW options' flags at their values, a sweep axis's value from `own` (in
    _SWEPT_ROW's order, which is ROW_OPTIONS')."""
    points = iter(own)
    values = [next(points) if o.sweeps else getattr(config, o.field or "") for o in ROW_OPTIONS]
    return tuple(
        o.shown(value)
        for o, value in zip(ROW_OPTIONS, values, strict=True)
        if (feeds or not o.feeds) and not o.neutral(value)
    )
