"""Rich tables of a result: its measured points, and every table of it in order (the
searches', the Runners' and the targets' tables are bench.report.run_tables's), with what
the tables cannot hold in lines under them: why points failed, which stayed noisy, how
multi-device points scaled, why energy is missing."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from bench.config import sweep
from bench.report.run_tables import (
    accuracy_table,
    ladder_rows,
    ladder_table,
    loss_table,
    max_batch_table,
    option_header,
    takes_images,
    title,
    to_target_table,
    tune_table,
)
from bench.result import Point, Result, point_axes
from bench.util.text import plain
from bench.util.units import format_bytes, human

# Each table's name stays importable here, where bench's commands and the page read it.
__all__ = [
    "accuracy_table", "console", "energy_note", "ladder_rows", "ladder_table", "loss_table",
    "max_batch_table", "notes", "points_table", "scaling_notes", "tables", "takes_images",
    "title", "to_target_table", "tune_table",
]  # fmt: skip

_STATUS_STYLE = {"ok": "green", "oom": "yellow", "error": "red"}


def _ms(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds * 1e3:,.1f}"


def console(stderr: bool = False) -> Console:
    """Where tables go. Off a terminal (docker logs, CI, a pipe) rich would wrap them at
    80 columns: there, a log-friendly width."""
    probe = Console(stderr=stderr)
    return probe if probe.is_terminal else Console(stderr=stderr, width=160)


# Columns a narrow terminal drops first (the rest always stay): details before figures.
_DROP_ORDER = (
    "step p95\n(ms)",
    "throughput\n(pixels/s)",
    "per device\n(tokens/s)",
    "throughput\n(tokens/s)",
    "model\nTFLOP/s",
    "MFU",
    "mean\npower (W)",
    "peak\nmemory",
    "step median\n(ms)",
    "epoch 2..N\nmean (s)",
    "95% CI\n(samples/s)",
)


def _width(header: str, cells: list[str]) -> int:
    """Characters a column takes in a rich table: its widest line, padding, a border."""
    return max(len(line) for text in (header, *cells) for line in text.split("\n")) + 3


def points_table(result: Result, width: int | None = None) -> Table:
    """The measured points; at a `width` too narrow for every column, the least
    important are left out and named under the table (nothing is cut mid-number)."""
    points = result.points
    price = (result.pricing or {}).get("usd_per_hour")
    columns: dict[str, list[str]] = {}

    def column(header: str, cells: list[str], when: bool = True) -> None:
        if when:
            columns[header] = cells

    def ci(p: Point) -> str:
        tp = p.throughput
        if tp and tp.ci95_low is not None and tp.ci95_high is not None:
            return f"{tp.ci95_low:,.1f}–{tp.ci95_high:,.1f}"
        return "– (1 run)" if tp else ""

    efficiency = result.scaling_efficiencies()
    energy = [p.energy_summary for p in points]
    column("devices", [str(p.devices) for p in points], any(p.devices > 1 for p in points))
    column("batch", [str(p.batch_size) for p in points])
    column("precision", [p.precision for p in points])
    layouts = takes_images(result) and any(p.memory_format != "contiguous" for p in points)
    column("memory format", [p.memory_format for p in points], layouts)
    column("compile", [p.compile or "none" for p in points], any(p.compile for p in points))
    for option in sweep.ROW_OPTIONS:  # every other lever a point set, named by its option
        values = [sweep.setting(option, result.config, p) for p in points]
        column(option_header(option), [str(v) if v is not None else "none" for v in values],
               any(not option.neutral(v) for v in values))  # fmt: skip
    column("status", [p.status for p in points])  # why it failed: a note under the table
    column("throughput\n(samples/s)", [f"{p.throughput.value:,.1f}" if p.throughput else ""
                                        for p in points])  # fmt: skip
    column("95% CI\n(samples/s)", [ci(p) for p in points])
    per_unit = [p.unit_throughput for p in points]
    units = {u[1] for u in per_unit if u}
    header = f"throughput\n({', '.join(sorted(units))})"
    column(header, [human(u[0]) if u else "" for u in per_unit], bool(units))
    # LLM figures are quoted per GPU (torchtitan's TPS/GPU): beside the global one.
    per_device = [p.unit_throughput_per_device for p in points]
    several = any(p.unit_throughput and p.devices_trained > 1 for p in points)
    column(f"per device\n({', '.join(sorted(units))})",
           [human(u[0]) if u else "" for u in per_device], several)  # fmt: skip
    column("scaling\nefficiency", [f"{e:.0%}" if e is not None else "" for e in efficiency],
           any(e is not None for e in efficiency))  # fmt: skip
    steps = [p.step_time for p in points]
    column("step median\n(ms)", [_ms(t.median) if t else "" for t in steps])
    column("step p95\n(ms)", [_ms(t.p95) if t else "" for t in steps])
    epochs = [p.epoch_time for p in points]
    column("epoch 2..N\nmean (s)", [f"{e.mean:,.3f}" if e else "" for e in epochs],
           any(p.epoch_times_s for p in points))  # fmt: skip
    column("peak\nmemory", [format_bytes(p.peak_memory) if p.measured else "" for p in points])
    column("model\nTFLOP/s", [
        f"{f / 1e12:,.3f}" if (f := p.achieved_flops) is not None else ("n/a" if p.measured else "")
        for p in points
    ])  # fmt: skip
    # The child's peak of the devices that trained, else --peak-tflops (all devices) for
    # a workload that records MFU (formula FLOPs) where the catalogue knows no peak.
    given = result.peak_tflops * 1e12 if result.peak_tflops else None
    utilisation = [
        p.mfu if p.mfu is not None or not given or "mfu" not in p.details
        else (f / given if (f := p.achieved_flops) is not None else None)
        for p in points
    ]  # fmt: skip
    column("MFU", [f"{m:.1%}" if m is not None else "" for m in utilisation],
           any(m is not None for m in utilisation))  # fmt: skip
    with_energy = any(energy)
    column("mean\npower (W)", [f"{e.mean_power_w:,.1f}" if e else "" for e in energy], with_energy)
    column("energy\n(J/sample)", [f"{e.per_sample_j:,.3g}" if e else "" for e in energy],
           with_energy)  # fmt: skip
    if price:
        column(f"samples/USD\n(at ${price:g}/h)", [
            f"{p.throughput.value * 3600 / price:,.0f}" if p.throughput else "" for p in points
        ])  # fmt: skip

    left_out = []
    for header in _DROP_ORDER:
        if width is None or sum(_width(h, c) for h, c in columns.items()) + 1 <= width:
            break
        if header in columns:
            del columns[header]
            left_out.append(header.replace("\n", " "))
    caption = (
        f"left out at this width: {', '.join(left_out)} (all in the JSON; a wider terminal "
        "shows them)"
        if left_out
        else None
    )
    table = Table(
        title=plain(title(result)), title_justify="left",
        caption=plain(caption) if caption else None, caption_justify="left",
    )  # fmt: skip
    text_columns = ("precision", "memory format", "compile", "status",
                    *(option_header(o) for o in sweep.ROW_OPTIONS))  # fmt: skip
    for header in columns:  # a header may hold a file's unit: text, never markup
        table.add_column(plain(header), justify="left" if header in text_columns else "right")
    for i, p in enumerate(points):
        row = [plain(cells[i]) for cells in columns.values()]
        if "status" in columns:
            row[list(columns).index("status")] = plain(p.status, _STATUS_STYLE.get(p.status, ""))
        table.add_row(*row)
    return table


def is_rung(point: Point, config: dict) -> bool:
    return point_axes(point) == point_axes(config)


def tables(result: Result, width: int | None = None) -> list[Table]:
    found = []
    if result.ladder:
        found.append(ladder_table(result))
    if result.tune:
        found.append(tune_table(result))
    if result.points:
        found.append(points_table(result, width))
    if any(point.accuracy for point in result.points):
        found.append(accuracy_table(result))
    if any(point.to_loss for point in result.points):
        found.append(loss_table(result))
    scored = to_target_table(result)
    if scored is not None:
        found.append(scored)
    if result.max_batch:
        found.append(max_batch_table(result))
    return found


# What a result's tables cannot hold, in lines under them: why points failed, which
# stayed noisy, how multi-device points scaled, why energy is missing.


def notes(result: Result) -> str | None:
    """What the table's cells cannot hold: why each failed point failed (first line of
    its error), which points stayed noisier than asked, which waited for their data (the
    input-bound share, bench.result.derive.INPUT_BOUND_SHARE), why energy is missing, and
    any point whose power reading is suspect."""
    images = takes_images(result)
    failures = [
        f"{p.label_for(images)}: {p.status}: {p.error_line[:200]}"
        for p in result.points
        if p.status != "ok"
    ]
    noisy = [f"{p.label_for(images)}: noisy: {p.noise}" for p in result.points if p.noise]
    noisy += [f"{p.label_for(images)}: {why}" for p in result.points
              if (why := p.repeats_disagree)]  # fmt: skip
    noisy += [
        f"{p.label_for(images)}: busy machine: {p.busy_note}" for p in result.points if p.busy_note
    ]
    fed = [f"{p.label_for(images)}: {why}" for p in result.points if (why := p.input_bound_note)]
    unbound = [
        f"{p.label_for(images)}: NUMA binding asked for, not applied: {why}"
        for p in result.points
        if (why := (p.runtime or {}).get("numa_reason"))
    ]
    differ = (result.environment or {}).get("nodes_differ")
    machines = [f"the machines of this run differ in: {', '.join(differ)}"] if differ else []
    stopped = (result.tune or {}).get("stopped")
    tune = [f"tune stopped early: {stopped}"] if stopped else []
    lines = [*failures, *noisy, *fed, *unbound, *scaling_notes(result), *machines, *tune,
             *empty_curves(result), energy_note(result) or ""]  # fmt: skip
    return "\n".join(line for line in lines if line) or None


def empty_curves(result: Result) -> list[str]:
    """A point that trained to a validation loss but whose loss records hold no
    evaluation has no row in the loss and to-target tables: a line says so, rather than
    the tables leaving it out without a word."""
    images = takes_images(result)
    return [
        f"{p.label_for(images)}: trained to a validation loss, but its loss curves hold no "
        "evaluation: left out of the loss tables"
        for p in result.points
        if p.status == "ok" and any(r is not None for r in p.loss) and p.to_loss is None
    ]


def scaling_notes(result: Result) -> list[str]:
    """Whether each multi-device point beat its one-device point, and its slowest rank."""
    images, lines = takes_images(result), []
    for p, efficiency in zip(result.points, result.scaling_efficiencies(), strict=True):
        label = p.label_for(images)
        if efficiency is not None:
            speedup = efficiency * p.devices
            verdict = "faster than" if speedup > 1 else "no faster than"
            lines.append(
                f"{label}: {speedup:.2f}x the one-device point ({verdict} one device; "
                f"scaling efficiency {efficiency:.0%})"
            )
        slowest = [r for r in p.ranks if r]
        if slowest and len(slowest[0].get("mean_step_s") or []) > 1:
            means = [m for m in slowest[0]["mean_step_s"] if m]
            if means and max(means) > 1.05 * min(means):
                lines.append(
                    f"{label}: rank {slowest[0]['slowest_rank']} was the slowest, mean step "
                    f"{max(means) * 1e3:,.1f} ms vs {min(means) * 1e3:,.1f} ms on the fastest"
                )
    return lines


def energy_note(result: Result) -> str | None:
    """Why energy is missing, once per result rather than in every row; and every
    point whose mean power lies outside what its device can draw."""
    reasons = {p.energy_unavailable for p in result.points if p.measured and not p.energy_summary}
    reasons.discard(None)
    missing = "; ".join(sorted(r for r in reasons if r))
    notes = [f"energy: not measured ({missing})"] if reasons else []
    for p in result.points:
        energy = p.energy_summary
        if energy and energy.power_check not in (None, "ok"):
            notes.append(
                f"energy of {p.label_for(takes_images(result))} is suspect: {energy.power_check}"
            )
    return "\n".join(notes) or None
