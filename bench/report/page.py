"""`bench report`: a self-contained HTML page and a Markdown twin, with charts.

Charts (PNG and SVG, made with matplotlib) show what the published comparisons
showed: throughput relative to a baseline (the 2020 GPU comparison), throughput
against batch size (the Xeon CPU training study), energy per epoch and samples per
joule (the M2 Max vs V100 CIFAR study), samples per dollar (the TPUv2 vs V100
comparison, the Xeon study), and the largest batch per machine (the 2020 GPU
comparison). A chart whose data no result carries is left out,
and the report says so.
"""

from __future__ import annotations

import base64
import html
import io
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only; no display

import matplotlib.pyplot as plt

from bench import files
from bench.report.compare import (
    Cell,
    Comparison,
    grid,
    legend,
    markdown_table,
    max_batch_grid,
    training_cost,
)
from bench.report.text import markdown

Figure = Any  # matplotlib.figure.Figure


def _row_label(key: tuple[Any, ...]) -> str:
    _, batch, precision, fmt, compiler = key
    parts = [f"bs {batch}", precision]
    if fmt != "contiguous":
        parts.append("NHWC")
    if compiler:
        parts.append(compiler)
    return "\n".join([" ".join(parts[:2]), *parts[2:]])


def _by_workload(comparison: Comparison) -> dict[str, list[tuple[tuple[Any, ...], list[Cell]]]]:
    groups: dict[str, list[tuple[tuple[Any, ...], list[Cell]]]] = {}
    for key, cells in comparison.rows:
        groups.setdefault(key[0], []).append((key, cells))
    return groups


def _bars(
    comparison: Comparison,
    value: Callable[[Cell], float | None],
    ylabel: str,
    title: str,
    baseline_line: bool = False,
) -> Figure | None:
    """Grouped bars: one panel per workload, one group per row, one bar per machine."""
    groups = _by_workload(comparison)
    if not any(value(c) is not None for _, cells in comparison.rows for c in cells):
        return None
    machines = comparison.machines
    fig, axes = plt.subplots(len(groups), 1, figsize=(10, 3.6 * len(groups)), squeeze=False)
    width = 0.8 / len(machines)
    for ax, (workload, rows) in zip(axes[:, 0], groups.items(), strict=True):
        for m, machine in enumerate(machines):
            xs = [i + (m - (len(machines) - 1) / 2) * width for i in range(len(rows))]
            ys = [value(cells[m]) for _, cells in rows]
            bars = ax.bar(xs, [y or 0 for y in ys], width, label=machine.label)
            ax.bar_label(bars, [f"{y:.3g}" if y is not None else "" for y in ys], fontsize=7)
            for x, (_, cells) in zip(xs, rows, strict=True):
                if cells[m].text == "*":  # out of memory: the 2020 GPU comparison's star
                    ax.annotate("*", (x, 0), ha="center", va="bottom", fontsize=14)
        if baseline_line:
            ax.axhline(
                1.0,
                color="black",
                linewidth=1,
                linestyle="--",
                label=f"baseline: {comparison.baseline.label}",
            )
        ax.set_xticks(range(len(rows)), [_row_label(key) for key, _ in rows], fontsize=8)
        ax.set_title(f"{workload}: {title}")
        ax.set_ylabel(ylabel)
        ax.grid(axis="y", alpha=0.3)
    axes[0, 0].legend(fontsize=8, loc="best")
    fig.tight_layout()
    return fig


def _throughput_vs_batch(comparison: Comparison) -> Figure | None:
    series: dict[tuple[str, str], dict[str, list[tuple[int, float]]]] = {}
    for key, cells in comparison.rows:
        workload, batch, precision, fmt, compiler = key
        if fmt != "contiguous" or compiler:
            continue
        for machine, cell in zip(comparison.machines, cells, strict=True):
            tp = cell.point.throughput if cell.point and cell.point.status == "ok" else None
            if tp:
                series.setdefault((workload, precision), {}).setdefault(machine.label, []).append(
                    (batch, tp.value)
                )
    series = {k: v for k, v in series.items() if any(len(pts) > 1 for pts in v.values())}
    if not series:
        return None
    cols = min(2, len(series))
    rows = math.ceil(len(series) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6 * cols, 4 * rows), squeeze=False)
    for ax, ((workload, precision), machines) in zip(axes.flat, series.items(), strict=False):
        for label, points in machines.items():
            points.sort()
            ax.plot([b for b, _ in points], [t for _, t in points], marker="o", label=label)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("batch size (samples)")
        ax.set_ylabel("throughput (samples/s)")
        ax.set_title(f"{workload} {precision}: throughput vs batch size")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(series) :]:
        ax.axis("off")
    fig.tight_layout()
    return fig


def _max_batch(comparison: Comparison) -> Figure | None:
    if not comparison.max_batch:
        return None
    fig, ax = plt.subplots(figsize=(10, 4))
    width = 0.8 / len(comparison.machines)
    for m, machine in enumerate(comparison.machines):
        xs = [
            i + (m - (len(comparison.machines) - 1) / 2) * width
            for i in range(len(comparison.max_batch))
        ]
        found = [searches[m] for _, searches in comparison.max_batch]
        bars = ax.bar(
            xs, [s.largest_ok or 0 if s else 0 for s in found], width, label=machine.label
        )
        ax.bar_label(
            bars, [str(s.largest_ok) if s and s.largest_ok else "" for s in found], fontsize=8
        )
        for x, s in zip(xs, found, strict=True):
            if s and s.display == "*":
                ax.annotate("*", (x, 0), ha="center", va="bottom", fontsize=14)
    labels = [f"{k[0]}\n{k[1]}" for k, _ in comparison.max_batch]
    ax.set_xticks(range(len(labels)), labels, fontsize=8)
    ax.set_ylabel("largest batch that trains (samples)")
    ax.set_title("Largest batch per machine ('*': not even the smallest fits)")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def _energy_per_epoch_or_sample(cell: Cell) -> float | None:
    energy = cell.point.energy_summary if cell.point else None
    if energy is None:
        return None
    return energy.per_epoch_j if energy.per_epoch_j is not None else energy.per_sample_j


def charts(comparison: Comparison) -> dict[str, Figure | None]:
    def samples_per_joule(c: Cell) -> float | None:
        energy = c.point.energy_summary if c.point else None
        return energy.samples_per_joule if energy else None

    return {
        "relative_throughput": _bars(
            comparison, lambda c: c.relative, "throughput / baseline",
            "throughput relative to the baseline", baseline_line=True,
        ),
        "throughput_vs_batch": _throughput_vs_batch(comparison),
        "energy": _bars(
            comparison, _energy_per_epoch_or_sample, "energy (J per epoch, or J per sample)",
            "energy per epoch (epoch mode) or per sample",
        ),
        "samples_per_joule": _bars(
            comparison, samples_per_joule, "samples per joule (samples/J)", "energy efficiency"
        ),
        "samples_per_dollar": _bars(
            comparison, lambda c: c.samples_per_dollar, "samples per USD", "samples per dollar"
        ),
        "max_batch": _max_batch(comparison),
    }  # fmt: skip


def _training_rows(comparison: Comparison, epochs: float) -> tuple[list[str], list[list[str]]]:
    headers = ["workload", "batch", "precision", "machine", f"hours for {epochs:g} epochs", "USD"]
    body = []
    for key, cells in comparison.rows:
        for machine, cell in zip(comparison.machines, cells, strict=True):
            if cell.point and cell.point.status == "ok" and cell.point.throughput:
                cost = training_cost(cell.point, key[0], epochs, machine.price_per_hour)
                usd = f"{cost['usd']:,.2f}" if cost["usd"] is not None else "n/a (no price)"
                body.append(
                    [key[0], str(key[1]), key[2], machine.label, f"{cost['hours']:,.2f}", usd]
                )
    return headers, body


def _html_table(headers: list[str], body: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in body
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def write_report(comparison: Comparison, folder: Path, train_epochs: float = 90) -> list[Path]:
    """Charts (PNG, SVG), report.html (self-contained) and report.md in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    made, missing = {}, []
    # Labels come from result files: '$' stays a dollar, never TeX-like mathtext (text
    # is laid out when saved, so the setting spans the saving too).
    with matplotlib.rc_context({"text.parse_math": False}):
        for name, fig in charts(comparison).items():
            if fig is None:
                missing.append(name)
                continue
            for ext in ("png", "svg"):
                path = folder / f"{name}.{ext}"
                image = io.BytesIO()
                fig.savefig(image, format=ext, dpi=120)
                files.replace(path, image.getvalue())
                written.append(path)
            plt.close(fig)
            made[name] = folder / f"{name}.png"
    tables = [("Throughput relative to the baseline", grid(comparison))]
    if comparison.max_batch:
        tables.append(("Largest batch that trains", max_batch_grid(comparison)))
    tables.append(
        (
            f"Time and cost to train {train_epochs:g} epochs",
            _training_rows(comparison, train_epochs),
        )
    )
    notes = [line[0].upper() + line[1:] + "." for line in comparison.set_apart]
    if missing:
        notes.insert(0, f"Charts left out, no result carries their data: {', '.join(missing)}.")
    note = " ".join(notes)
    title = (
        f"bench report: {len(comparison.machines)} "
        f"{'machine' if len(comparison.machines) == 1 else 'machines'}, "
        f"baseline {comparison.baseline.label}"
    )

    md = [f"# {markdown(title)}", markdown(legend()), markdown(note)]
    md += [f"## {heading}\n\n{markdown_table(*table)}" for heading, table in tables]
    md += [f"![{name}]({path.name})" for name, path in made.items()]
    written.append(folder / "report.md")
    files.replace(written[-1], "\n\n".join(part for part in md if part) + "\n")

    images = "".join(
        f'<figure><img alt="{name}" src="data:image/png;base64,'
        f'{base64.b64encode(path.read_bytes()).decode()}"><figcaption>{name} '
        f'(<a href="{name}.svg">SVG</a>)</figcaption></figure>'
        for name, path in made.items()
    )
    body = "".join(f"<h2>{html.escape(h)}</h2>{_html_table(*t)}" for h, t in tables)
    page = (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>bench report</title>"
        "<style>body{font-family:sans-serif;max-width:1200px;margin:auto}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 6px}"
        "img{max-width:100%}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><p>{html.escape(legend())}</p><p>{html.escape(note)}</p>"
        f"{body}{images}</body></html>"
    )
    written.append(folder / "report.html")
    files.replace(written[-1], page)
    return written
