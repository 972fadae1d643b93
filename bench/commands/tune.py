"""`bench tune WORKLOAD [--budget 20m] [RUN OPTIONS]`: the fastest configuration of a grid
within a time budget, by successive halving with probes sized in seconds (bench.search.tune). The
grid is the run options' sweep axes; an axis not given takes every value that applies here
(batch 32 to 256, the device's reduced precisions, both memory formats, the framework's
compiler, the compile modes and optimisations its platform's ladder climbs (on a CUDA GPU
CUDA graphs and the fused optimizer), on a CPU the allocators and OpenMP runtimes
installed, and IPEX where it is, and on data a loader feeds the loader's workers, its
prefetch depth where --num-workers is given, pinned memory where a batch is copied to a
GPU, and on a dataset of images the batch as uint8 and, where the device has a decoder,
the JPEGs decoded there). One result file: the finalists are its
points, every probe is in its `tune` record. It ends with the grid's coverage and, when at least two
configurations were measured to the end, their ranking with intervals and the winner as
a command; else why it could not rank, what budget would let it, and no command."""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.commands.options import (
    add_resume,
    option_names,
    own_options,
    tune_budget,
    workload_and_run_options,
)
from bench.config.sweep import ALLOCATORS, OPENMP_RUNTIMES
from bench.util.errors import UsageError


def register(sub: Any) -> None:
    p = sub.add_parser(
        "tune", help="find the fastest configuration within a time budget (successive halving)"
    )
    p.add_argument("--budget", type=tune_budget, default=20 * 60.0,
                   help="soft time budget, e.g. 20m (default), 90s, 1.5h; 30s or more")  # fmt: skip
    add_resume(p, "bench tune")
    workload_and_run_options(
        p,
        "bench run options: sweep axes narrow the grid (--batch-size 64,128 ...); "
        "--steps and --repeats (default 3) are the finalists' measurement",
    )
    p.set_defaults(func=cmd_tune)


def default_axes(config: Any, given: set[str]) -> dict[str, Any]:
    """The values of every axis tune searches (bench.config.options's `tune`) that the user
    did not give, that apply on this device."""
    from bench import registry
    from bench.config.options import RUN_OPTIONS, flags_of

    here = _Here(
        config,
        registry.framework(config.framework),
        registry.platform(config.device),
        _ladder_levers(config),
    )
    axes: dict[str, Any] = {}
    for option in RUN_OPTIONS:
        if option.tune and option.field and not given & set(flags_of(option.field)):
            grid = GRID.get(option.field, lambda _here, o=option: o.allowed)
            values = grid(here)
            if values is not None:
                axes[option.field] = values
    return axes


@dataclass(frozen=True)
class _Here:
    """What an axis's values in the grid depend on."""

    config: Any
    framework: Any
    platform: Any
    levers: dict[str, list[Any]]  # the platform's ladder's compile modes and optimisations


def _batch_sizes(here: _Here) -> tuple[int, ...]:
    from bench import registry
    from bench.search.tune import DEFAULT_BATCHES

    low = registry.workload(here.config.workload).min_batch_size
    return tuple(b for b in DEFAULT_BATCHES if b >= low)


def _precisions(here: _Here) -> tuple[str, ...]:
    reduced = here.platform.tune_precisions
    return ("fp32", *(p for p in reduced if p in here.platform.precisions))


def _compilers(here: _Here) -> tuple[str | None, ...] | None:
    default = here.framework.default_compiler
    if not default:
        return None
    return (None, default, *(c for c in here.levers.get("compile", ()) if c != default))


def _optimizations(here: _Here) -> tuple[str | None, ...] | None:
    if not here.framework.optimizations:
        return None
    from bench import registry

    spec = registry.workload(here.config.workload)
    usable = here.framework.usable_optimizations(here.platform)
    offered = (*usable, *(o for o in here.levers.get("optimize", ()) if o not in usable))
    return (None, *(o for o in offered if not here.framework.unused_optimization(spec, o)))


def _installed(axis: str, values: tuple[str, ...]) -> tuple[str, ...]:
    from bench.run import runtime

    installed = []
    for value in values:
        try:
            runtime.library(axis, value)
            installed.append(value)
        except UsageError:
            pass
    return tuple(installed)


def _allocators(here: _Here) -> tuple[str, ...] | None:
    if not here.platform.tunes_host_runtimes:
        return None
    return _installed("allocator", ALLOCATORS)


def _openmps(here: _Here) -> tuple[str, ...] | None:
    if not here.platform.tunes_host_runtimes or here.config.framework != "torch":
        return None
    return _installed("openmp", OPENMP_RUNTIMES)


def _workers(here: _Here) -> tuple[int, ...] | None:
    """On data a loader feeds: none (in the training process) and the ladder's counts."""
    from bench.search.ladder import fed_by_a_loader, loader_workers

    point = next(iter(here.config.points()))
    return (0, *loader_workers()) if fed_by_a_loader(point) else None


def _prefetch_factors(here: _Here) -> tuple[int | None, ...] | None:
    """PyTorch's depth and the ladder's, where every worker count given has workers
    (the depth needs them: --num-workers 2 --prefetch-factor searched, not the workers)."""
    from bench.search.ladder import PREFETCH, fed_by_a_loader

    point = next(iter(here.config.points()))
    given = here.config.workers
    if not (fed_by_a_loader(point) and all(given) and here.framework.prefetches_batches):
        return None
    return (None, PREFETCH)


def _feed_lever(field: str, off: Any, on: Any) -> Callable[[_Here], tuple[Any, ...] | None]:
    """An input pipeline lever's values in the grid: as it is and the ladder's rung, where
    the ladder would try that rung here (bench.search.ladder.not_applicable: data a loader
    feeds, the framework, the platform: --input-dtype uint8 and --decode device on a
    dataset of images, --pin-memory where a batch is copied to a GPU, the decode where
    the device has a decoder and torchvision drives it)."""

    def values(here: _Here) -> tuple[Any, ...] | None:
        from bench.search.ladder import not_applicable

        point = next(iter(here.config.points()))
        return None if not_applicable(point, {field: on}) else (off, on)

    return values


def _pin_memories(here: _Here) -> tuple[str | None, ...] | None:
    """The platform's choice and the other one, where a batch is copied to a GPU."""
    pins = "off" if here.platform.torch_pins_host_memory else "on"
    return _feed_lever("pin_memory", None, pins)(here)


# The axes tune searches (bench.config.options's `tune`) whose values depend on the
# machine, the workload or the framework: their values here, or None where the axis does
# not apply (the run's value stands). Any other such axis tries every value it allows.
GRID: dict[str, Callable[[_Here], tuple[Any, ...] | None]] = {
    "batch_sizes": _batch_sizes,
    "precisions": _precisions,
    "memory_formats": lambda here: here.framework.memory_formats,
    "compilers": _compilers,
    "optimizations": _optimizations,
    "allocators": _allocators,
    "openmps": _openmps,
    "workers": _workers,
    "prefetch_factors": _prefetch_factors,
    "input_dtypes": _feed_lever("input_dtype", "float32", "uint8"),
    "pin_memories": _pin_memories,
    "decodes": _feed_lever("decode", "cpu", "device"),
}


def _ladder_levers(config: Any) -> dict[str, list[Any]]:
    """The compile modes and optimisations the platform's ladder climbs (on a CUDA GPU
    its CUDA graphs, inductor:reduce-overhead, and the fused optimizer), where this
    framework and machine can run them (bench.search.ladder.not_applicable): tune searches the
    same levers."""
    import dataclasses

    from bench import registry
    from bench.search.ladder import not_applicable

    point = dataclasses.replace(next(iter(config.points())), compile=None, optimize=None)
    levers: dict[str, list[Any]] = {}
    for _, change in registry.platform(config.device).ladder_rungs(
        registry.framework(config.framework).default_compiler
    ):
        for axis in ("compile", "optimize"):
            value = change.get(axis)
            if value and len(change) == 1 and not_applicable(point, change) is None:
                levers.setdefault(axis, []).append(value)
    return levers


def cmd_tune(args: argparse.Namespace) -> int:
    import dataclasses

    from bench.commands import run_options, running
    from bench.config.options import flags_of
    from bench.search.tune import TuneRunner
    from bench.util.text import plain

    known, options = own_options("bench tune", args, "--budget", "--resume")
    given = set(option_names(options))
    for field in ("find_max_batch", "epochs"):
        for flag in given & set(flags_of(field)):  # --max-epochs too
            raise UsageError(f"{flag}: not with bench tune, which measures steps; use bench run")
    parsed = run_options.parse_run([args.workload, *options])
    if "--repeats" not in given:
        parsed.repeats = 3  # the finalists' intervals
    config = run_options.config_from_args(parsed)
    config = dataclasses.replace(config, **default_axes(config, given))
    console = running.console_for(parsed)
    grid = len(list(config.points()))
    running.print_line(console, f"tune: {grid} configurations, budget {known.budget:.0f} s")
    runner = functools.partial(TuneRunner, budget_s=known.budget)
    code, outcome, _ = running.run_and_print(config, parsed, known.resume, runner_class=runner)
    if outcome is not None and outcome.tune is not None and outcome.status == "complete":
        for line in conclusion(outcome):
            console.print(plain(line), highlight=False)
    return code


def conclusion(outcome: Any) -> list[str]:
    """What the search covered, then its ranking with intervals and the winner as a
    command; or, when it could not rank two configurations, why, and no command."""
    from bench.report.table import takes_images
    from bench.run.cost import format_seconds
    from bench.search.tune import command_line

    tune = outcome.tune
    lines = []
    coverage = tune.get("coverage")
    if coverage:  # older results have none
        lines.append(
            f"coverage: {coverage['measured']} of the {coverage['grid']} configurations "
            f"measured, {coverage['failed']} failed, {coverage['left_out']} left out, "
            f"{coverage['not_reached']} not reached; {format_seconds(tune['spent_s'])} of a "
            f"{format_seconds(tune['budget_s'])} budget"
        )
    lines += [f"  left out: {s['label']}: {s['why']}" for s in tune.get("skipped", [])]
    ranked = tune.get("ranked", len(outcome.points) > 1)
    images = takes_images(outcome)
    if not ranked or len(outcome.points) < 2:
        why = tune.get("not_ranked") or "fewer than two configurations were measured to the end"
        lines.append(f"not ranked: {why}; no configuration is recommended")
        return lines
    lines.append("ranking (the final round; 95% intervals over its repeats):")
    for place, point in enumerate(outcome.points, 1):
        tp = point.throughput
        spread = f" [{tp.ci95_low:,.1f}–{tp.ci95_high:,.1f}]" if tp.ci95_low is not None else ""
        lines.append(f"  {place}. {point.label_for(images)}: {tp.value:,.1f}{spread} {tp.unit}")
    best, second = outcome.points[:2]
    lines.append(f"best: {best.label_for(images)}: {versus_runner_up(best, second, images)}")
    lines.append(f"  {command_line(best, outcome.config)}")
    return lines


def versus_runner_up(best: Any, second: Any, images: bool = True) -> str:
    """The winner against the runner-up in bench's words (bench.stats.verdict): '1.09x faster
    (95% CI 1.07x to 1.11x) than the runner-up', 'cannot tell ...'."""
    import math

    from bench.stats.estimate import ratio_interval
    from bench.stats.verdict import judge

    ratio = best.throughput.value / second.throughput.value
    a, b = best.repeat_throughputs(), second.repeat_throughputs()
    interval = ratio_interval(a, b)
    if interval is None:
        return f"{ratio:.2f}x the runner-up (one run a side: untested)"  # no interval
    said = judge(math.sqrt(interval[0] * interval[1]), interval, min(len(a), len(b))).sentence()
    return f"against the runner-up ({second.label_for(images)}): {said}"
