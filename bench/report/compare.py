"""Compare machines: throughput normalised to a baseline (as the 2020 GPU comparison
does), '*' where a point ran out of memory, energy efficiency (the M2 Max vs V100 CIFAR
study) and cost (the TPUv2 vs V100 comparison, the Xeon CPU study) as ratios too.

A column is a machine: its hardware (accelerator model and count, or CPU model and the
cores bench could use, and the instance type where known), read from each result's
provenance, and the run's --label when it has one (a label is the user's A/B intent:
"before" and "after" stay two columns). Its runs at other times are facets of it: the
repeats of one configuration in one software stack (framework and image) and on one
device count pool into one cell, each run's own figures kept for a history
(bench.report.records.history_records). The framework, image or device count is part of a row
(setup) where one machine ran a row's configuration in several: two stacks, or one
process and N ranks (throughput is global), are two measurements (bench.report.rows).
Its columns are bench.report.machines's, its rows and cells bench.report.rows's; its
records (CSV, JSON, the page's rows) bench.report.records's. Results whose configs
differ from the baseline's in anything that changes what is measured are set apart,
one line per reason with a count, their files listed in the JSON.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import registry
from bench.report.machines import (
    BASELINE_LABELS,
    NAME_CHARS,
    NAMED_AT_MOST,
    Machine,
    default_baseline,
    image_name,
    machine_colours,
    machine_columns,
    machine_names,
    select,
    select_priced,
)
from bench.report.real_data import RealBesideSynthetic, pairs
from bench.report.rows import (
    ROW_KEYS,
    Cell,
    Figures,
    RowKey,
    Run,
    cell_of,
    ok_throughput,
    pool,
    row_key,
    row_runs,
    sequence_length,
)
from bench.report.set_apart import SetApart, copies, set_apart
from bench.report.set_apart import unreadable as unreadable_files
from bench.report.steps import HistoryStep, history_steps
from bench.result import MaxBatch, Point, Result, catalog
from bench.util.errors import UsageError
from bench.util.text import visible

# What this module has always given: the row, the cell and their pooling live apart.
__all__ = [
    "BASELINE_LABELS", "NAMED_AT_MOST", "NAME_CHARS", "ROW_KEYS", "Cell", "Comparison",
    "Machine", "Run", "compare", "default_baseline", "image_name", "machine_names",
    "ok_throughput", "pool", "row_key", "searched", "sequence_length", "training_cost",
]  # fmt: skip


@dataclass
class Comparison:
    machines: list[Machine]
    baseline: Machine
    rows: list[tuple[RowKey, list[Cell]]]
    max_batch: list[tuple[tuple[Any, ...], list[MaxBatch | None]]]
    set_apart: list[str] = field(default_factory=list)  # one line per reason (a group)
    # Which baseline bench chose, and why, when none was named (None: named, or one column).
    baseline_note: str | None = None
    set_apart_groups: list[SetApart] = field(default_factory=list)  # the files, by reason
    # Each machine's colour on every chart and figure (bench.report.machines), made from
    # every machine compared: a figure of fewer machines keeps the page's colours.
    colours: dict[str, str] = field(default_factory=dict)
    # Each machine's configurations on real data beside the same on synthetic data
    # (bench.report.real_data), from every result read, those set apart too.
    real_data: list[RealBesideSynthetic] = field(default_factory=list)

    @functools.cached_property
    def steps(self) -> tuple[list[HistoryStep], str | None]:
        """Where a machine's configuration measured on many dates stepped
        (bench.report.steps), found once; and a line where they could not be looked for."""
        return history_steps(self.rows, self.machines)

    @property
    def set_apart_count(self) -> int:
        return sum(len(group.files) for group in self.set_apart_groups)

    @property
    def title(self) -> str:
        """'2 machines', or '27 results from 3 machines' where a machine has several
        (repeated runs, other --labels or memory caps): it counted columns as runs."""
        hosts = {m.hardware or m.label for m in self.machines}
        results = sum(len(m.results) for m in self.machines)
        machines = f"{len(hosts)} {'machine' if len(hosts) == 1 else 'machines'}"
        return machines if results == len(hosts) else f"{results} results from {machines}"

    def noise_notes(self) -> list[str]:
        """Figures less sure than they look: a busy machine, automatic repeats that
        missed their target; one line per cell."""
        lines = []
        for key, cells in self.rows:
            row = f"{key.workload} batch {key.batch_size} {key.precision}"
            for machine, cell in zip(self.machines, cells, strict=True):
                point = cell.point
                if point is not None and point.busy_note:
                    lines.append(
                        visible(f"{machine.label}, {row}: busy machine: {point.busy_note}")
                    )
                if point is not None and point.noise:
                    lines.append(visible(f"{machine.label}, {row}: noisy: {point.noise}"))
                if point is not None and (why := point.repeats_disagree):
                    lines.append(visible(f"{machine.label}, {row}: {why}"))
        return lines


def compare(
    loaded: list[tuple[Path, Result]],
    baseline: str | None,
    prices: dict[str, float] | None = None,
    unreadable: list[tuple[Path, str]] | None = None,
) -> Comparison:
    """Group results by machine and line their points up by row key, the repeats of
    a machine's runs of one configuration pooled. Without a baseline named,
    default_baseline chooses one and says so (baseline_note). `unreadable`: files
    found that are no result (path, why), set apart in one group."""
    if not loaded:
        raise UsageError("nothing to compare")
    loaded, copied = copies(loaded)
    real_data = pairs(loaded)
    loaded, groups = set_apart(loaded, baseline)
    groups += copied
    groups = sorted([*groups, *unreadable_files(unreadable or [])],
                    key=lambda g: (-len(g.files), g.reason))  # fmt: skip
    machines = machine_columns(loaded)
    for machine in machines.values():
        for _, res in machine.results:
            if res.pricing and machine.price_per_hour is None:
                machine.price_per_hour = res.pricing["usd_per_hour"]
                machine.price_source = res.pricing.get("source")
            machine.peak_tflops = machine.peak_tflops or res.peak_tflops
    ordered = list(machines.values())
    for selector, usd in (prices or {}).items():
        for target in select_priced(ordered, selector):
            target.price_per_hour, target.price_source = usd, "given with --price"
    for machine in ordered:  # none given: bench's catalogue, where it knows the device
        if machine.price_per_hour is None:
            accelerator = (machine.environment or {}).get("accelerator") or {}
            found = catalog.accelerator_price(
                accelerator.get("accelerator"), accelerator.get("accelerator_count") or 0
            )
            if found is not None:
                machine.price_per_hour, machine.price_source = (
                    found["usd_per_hour"],
                    found["source"],
                )

    # Workload, then precision, format and compiler, then batch size numerically.
    by_row = row_runs(ordered)
    keys = sorted(by_row, key=lambda k: (k.workload, k.precision, k.memory_format,
                                         k.compile or "", k.setup, k.batch_size))  # fmt: skip
    # Each cell's pooled point and throughput, once: a pooled point's estimate is over
    # every repeat of its runs, and a row's baseline serves each of its cells.
    grid = [[Figures.of(runs) for runs in by_row[key]] for key in keys]
    note = None
    if baseline is not None:
        base = select(ordered, baseline)
    elif len(ordered) > 1:
        base, note = default_baseline(ordered, [[f.tp for f in row] for row in grid])
    else:
        base = ordered[0]
    at = ordered.index(base)
    rows = []
    for key, figures in zip(keys, grid, strict=True):
        cells = [
            cell_of(own, figures[at], machine, base, runs)
            for machine, own, runs in zip(ordered, figures, by_row[key], strict=True)
        ]
        rows.append((key, cells))

    searches: dict[tuple[Any, ...], dict[str, MaxBatch]] = defaultdict(dict)
    for machine in ordered:
        for _, res in machine.results:  # oldest first: a later search replaces an earlier
            for m in res.max_batch:
                search = (res.config.workload, m.precision, m.memory_format, m.compile)
                searches[(*search, searched(res, m))][machine.label] = m
    max_batch = [
        (key, [searches[key].get(m.label) for m in ordered]) for key in sorted(searches, key=str)
    ]
    return Comparison(ordered, base, rows, max_batch, [g.line for g in groups],
                      baseline_note=note, set_apart_groups=groups,
                      colours=machine_colours([m.label for m in ordered]),
                      real_data=real_data)  # fmt: skip


def training_cost(
    point: Point, workload: str, epochs: float, usd_per_hour: float | None
) -> dict[str, Any]:
    """Time and cost of `epochs` passes over the workload's dataset at this throughput."""
    tp = point.throughput
    samples = registry.workload(workload).epoch_samples * epochs
    hours = samples / tp.value / 3600 if tp else None
    return {
        "epochs": epochs, "samples": samples, "hours": hours,
        "usd": hours * usd_per_hour if hours is not None and usd_per_hour else None,
    }  # fmt: skip


def searched(result: Result, search: MaxBatch) -> str:
    """What a search looked for, where it was not the largest batch: a longest sequence
    at one batch size ('' for the largest batch: a row of its own either way)."""
    if search.axis != "seq_len":
        return ""
    return f"largest seq len at batch {result.config.batch_sizes[0]}"
