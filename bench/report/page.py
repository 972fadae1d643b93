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

import dataclasses
import html
import io
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only; no display

import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter, MaxNLocator

from bench import files, registry
from bench.report import htmlpage, tidy, views, words
from bench.report.compare import Cell, Comparison, training_cost
from bench.report.grids import (
    ACCURACY_CAPTION,
    LLM_CAPTION,
    LOSS_CAPTION,
    MOE_CAPTION,
    STEPS_CAPTION,
    accuracy_grid,
    grid,
    legend,
    llm_grid,
    loss_grid,
    markdown_table,
    max_batch_grid,
    moe_grid,
    steps_grid,
    throughput_grid,
)
from bench.report.table import ladder_rows
from bench.result import MaxBatch
from bench.text import markdown, visible
from bench.units import axis_tick, human

Figure = Any  # matplotlib.figure.Figure

DPI = 120
# A chart's height, at most: 12,000 pixels at DPI (a PNG renderer refuses 65,536, and
# the page embeds every PNG). Panels, and the bars of a panel, beyond what fits are left
# out, and the chart says how many it shows; the tables beside it hold them all.
MAX_CHART_INCHES = 100.0
MAX_GROUPS = 48  # groups of bars (rows, rungs, searches) in one panel


def _fit(count: int, each: float, fixed: float = 0.0) -> int:
    """How many of `count` panels of `each` inches fit in MAX_CHART_INCHES with `fixed`
    inches of titles and legends (at least one)."""
    return max(1, min(count, int((MAX_CHART_INCHES - fixed) // each)))


def _shown(shown: int, total: int, what: str) -> list[str]:
    """The note a chart carries when it left some out."""
    return [f"the first {shown} of {total} {what} (the tables hold all)"] if shown < total else []


def _row_label(key: tuple[Any, ...]) -> str:
    _, batch, precision, fmt, compiler, setup = key
    parts = [f"bs {batch}", _legend(precision, 20)]
    if fmt == "channels_last":  # a token model has none ('n/a'): not NHWC
        parts.append("NHWC")
    if compiler:
        parts.append(_legend(compiler, 20))
    if setup:
        parts.append(_legend(setup, 40))
    return "\n".join([" ".join(parts[:2]), *parts[2:]])


def _figure_legend(fig: Figure) -> None:
    """One legend over the figure, each machine once (every panel draws its bars)."""
    handles: dict[str, Any] = {}
    for ax in fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    if handles:
        fig.legend(list(handles.values()), list(handles), loc="outside upper center",
                   ncols=min(len(handles), 3), fontsize=8)  # fmt: skip


def _legend(label: str, limit: int = 70) -> str:
    """Text from a file in a chart (a machine's label in a legend, a rung's name): long
    ones cut, so that the text never squeezes the chart away (the tables keep it whole),
    control characters made visible."""
    label = label if len(label) <= limit else label[: limit - 1] + "…"
    return visible(label)


def _finite(value: float | None) -> float | None:
    """A bar's height: None (no bar) for what is not a finite number (samples per joule
    of a window that read 0 J is infinite)."""
    return value if value is not None and math.isfinite(value) else None


def _html(text: str) -> str:
    """Text for the page: HTML's specials as entities, control characters visible."""
    return html.escape(visible(text))


def _by_workload(comparison: Comparison) -> dict[str, list[tuple[tuple[Any, ...], list[Cell]]]]:
    groups: dict[str, list[tuple[tuple[Any, ...], list[Cell]]]] = {}
    for key, cells in comparison.rows:
        groups.setdefault(key[0], []).append((key, cells))
    return groups


def _errors(values: list[float | None], intervals: list[tuple[float, float] | None]) -> Any:
    """matplotlib's asymmetric yerr; NaN (no bar drawn) where there is no interval. Never
    below 0, which matplotlib refuses: the interval of a throughput is the geometric
    mean's, and for repeats without spread it lies a rounding error beside the mean."""
    low, high = [], []
    for y, ci in zip(values, intervals, strict=True):
        ok = y is not None and ci is not None
        low.append(max(0.0, y - ci[0]) if ok else math.nan)  # type: ignore[operator,index]
        high.append(max(0.0, ci[1] - y) if ok else math.nan)  # type: ignore[operator,index]
    return [low, high]


_NOT_SIGNIFICANT = "hatched: not significantly different from the baseline ('~')"


def _bars(
    comparison: Comparison,
    value: Callable[[Cell], float | None],
    ylabel: str,
    title: str,
    *,
    interval: Callable[[Cell], tuple[float, float] | None] = lambda c: None,
    significance: bool = False,
) -> Figure | None:
    """Grouped bars: one panel per workload, one group per row, one bar per machine.
    Error bars where `interval` gives a 95% interval; with `significance`, the bars of
    the baseline's ratio (a dashed line at 1) carry the table's marks and a difference
    that may not be real is hatched and pale."""

    def drawn(c: Cell) -> bool:  # a bar, or the star of a point out of memory
        return value(c) is not None or c.text == "*"

    # Only rows, workloads and machines with something to draw: a panel of empty groups
    # (a workload the baseline never ran) or a legend entry without a bar says nothing.
    others = [m is not comparison.baseline or not significance for m in comparison.machines]

    def compared(cells: list[Cell]) -> bool:  # a ratio chart: a machine beside the baseline
        return any(drawn(c) and other for c, other in zip(cells, others, strict=True))

    groups = {
        workload: kept
        for workload, rows in _by_workload(comparison).items()
        if (kept := [row for row in rows if compared(row[1])])
    }
    if not groups:
        return None
    columns = [
        m for m in range(len(comparison.machines))
        if any(drawn(row[1][m]) for rows in groups.values() for row in rows)
    ]  # fmt: skip
    machines = [comparison.machines[m] for m in columns]
    groups = {w: [(key, [cells[m] for m in columns]) for key, cells in rows]
              for w, rows in groups.items()}  # fmt: skip
    panels = _fit(len(groups), 3.4, 1.2)
    left_out = _shown(panels, len(groups), "workloads")
    shown = {w: rows for w, rows in list(groups.items())[:panels]}
    if any(len(rows) > MAX_GROUPS for rows in shown.values()):
        left_out += [f"at most {MAX_GROUPS} rows per workload (the tables hold all)"]
    fig, axes = plt.subplots(
        panels, 1, figsize=(10, 1.2 + 3.4 * panels), squeeze=False, layout="constrained"
    )
    width = 0.8 / len(machines)
    for ax, (workload, all_rows) in zip(axes[:, 0], shown.items(), strict=True):
        rows = all_rows[:MAX_GROUPS]
        for m, machine in enumerate(machines):
            xs = [i + (m - (len(machines) - 1) / 2) * width for i in range(len(rows))]
            cells = [row_cells[m] for _, row_cells in rows]
            ys = [_finite(value(c)) for c in cells]
            bars = ax.bar(
                xs,
                [y or 0 for y in ys],
                width,
                yerr=_errors(ys, [interval(c) for c in cells]),
                capsize=3,
                error_kw={"elinewidth": 1},
                label=_legend(machine.label),
                color=comparison.colours.get(machine.label),
            )
            marks = [c.mark if significance else "" for c in cells]
            for bar, mark in zip(bars, marks, strict=True):
                if mark == "~":
                    bar.set_alpha(0.45)
                    bar.set_hatch("//")
            ax.bar_label(
                bars,
                [f"{human(y)}{k}" if y is not None else "" for y, k in zip(ys, marks, strict=True)],
                fontsize=7,
                padding=2,
            )
            for x, c in zip(xs, cells, strict=True):
                if c.text == "*":  # out of memory: the 2020 GPU comparison's star
                    ax.annotate("*", (x, 0), ha="center", va="bottom", fontsize=14)
        if significance:
            ax.axhline(1.0, color="black", linewidth=1, linestyle="--")
        ax.set_xticks(range(len(rows)), [_row_label(key) for key, _ in rows], fontsize=8)
        ax.set_title(_legend(f"{workload}: {title}", 90))
        ax.set_ylabel(ylabel)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: axis_tick(y)))
        ax.grid(axis="y", alpha=0.3)
    notes = (
        ["error bars: 95% intervals"]
        if any(interval(c) for _, cells in comparison.rows for c in cells)
        else []
    )
    if significance:
        notes += [f"dashed: the baseline, {_legend(comparison.baseline.label)}",
                  _NOT_SIGNIFICANT, "'?': one run, no interval"]  # fmt: skip
    notes += left_out
    _figure_legend(fig)
    if notes:
        fig.supxlabel("; ".join(notes), fontsize=7)
    return fig


def _throughput_interval(cell: Cell) -> tuple[float, float] | None:
    tp = cell.throughput
    if tp is None or tp.ci95_low is None or tp.ci95_high is None:
        return None
    return tp.ci95_low, tp.ci95_high


def _throughput(cell: Cell) -> float | None:
    tp = cell.throughput
    return tp.value if tp else None


def _throughput_vs_batch(comparison: Comparison) -> Figure | None:
    series: dict[tuple[str, str], dict[str, list[tuple[int, float, float, float]]]] = {}
    for key, cells in comparison.rows:  # a line per configuration but its batch, as the page's
        workload, batch = key[:2]
        variant = words.variant_label(key)
        for machine, cell in zip(comparison.machines, cells, strict=True):
            tp = cell.throughput
            if tp:
                low, high = _throughput_interval(cell) or (tp.value, tp.value)
                series.setdefault((workload, variant), {}).setdefault(machine.label, []).append(
                    (batch, tp.value, low, high)
                )
    series = {k: v for k, v in series.items() if any(len(pts) > 1 for pts in v.values())}
    if not series:
        return None
    cols = min(2, len(series))
    rows = _fit(math.ceil(len(series) / cols), 4)
    left_out = _shown(min(len(series), rows * cols), len(series), "configurations")
    series = dict(list(series.items())[: rows * cols])
    fig, axes = plt.subplots(
        rows, cols, figsize=(6 * cols, 4 * rows), squeeze=False, layout="constrained"
    )
    for ax, ((workload, variant), machines) in zip(axes.flat, series.items(), strict=False):
        for label, points in machines.items():
            points.sort()
            batches = [b for b, *_ in points]
            (line,) = ax.plot(
                batches,
                [t for _, t, _, _ in points],
                marker="o",
                label=_legend(label),
                color=comparison.colours.get(label),
            )
            ax.fill_between(
                batches,
                [low for *_, low, _ in points],
                [high for *_, high in points],
                color=line.get_color(),
                alpha=0.2,
                linewidth=0,
            )
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: axis_tick(y)))
        ax.set_xlabel("batch size (samples)")
        ax.set_ylabel("throughput (samples/s)")
        ax.set_title(_legend(f"{workload} {variant}: throughput vs batch size", 90))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(series) :]:
        ax.axis("off")
    fig.supxlabel("; ".join(["shaded: 95% intervals", *left_out]), fontsize=7)
    return fig


def _max_batch(comparison: Comparison) -> Figure | None:
    if not comparison.max_batch:
        return None
    searched = comparison.max_batch[:MAX_GROUPS]
    fig, ax = plt.subplots(figsize=(10, 4.4), layout="constrained")
    width = 0.8 / len(comparison.machines)
    for m, machine in enumerate(comparison.machines):
        xs = [i + (m - (len(comparison.machines) - 1) / 2) * width for i in range(len(searched))]
        found = [searches[m] for _, searches in searched]
        heights = [(s.largest_ok or s.trained_so_far or 0) if s else 0 for s in found]
        colour = comparison.colours.get(machine.label)
        bars = ax.bar(xs, heights, width, label=_legend(machine.label), color=colour)
        for bar, s in zip(bars, found, strict=True):
            if s and _open_ended(s):  # stopped at its limit, or before its answer
                bar.set_hatch("..")
                bar.set_alpha(0.45)
                bar.set_linestyle("--")
        ax.bar_label(bars, [_max_batch_text(s) for s in found], fontsize=8)
        for x, s in zip(xs, found, strict=True):
            if s and s.display == "*":
                ax.annotate("*", (x, 0), ha="center", va="bottom", fontsize=14)
    labels = [_legend("\n".join(filter(None, (k[0], k[1], k[4]))), 40) for k, _ in searched]
    ax.set_xticks(range(len(labels)), labels, fontsize=8)
    lengths = any(k[4] for k, _ in searched)  # a longest sequence (tokens) among them
    ax.set_ylabel("largest batch (samples) or sequence (tokens)" if lengths else
                  "largest batch that trains (samples)")  # fmt: skip
    ax.set_title("Largest batch per machine")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # a batch has no half
    ax.grid(axis="y", alpha=0.3)
    _figure_legend(fig)
    notes = [
        "'*': not even the smallest batch fits; '≥N', pale and dotted: the search stopped at "
        "its limit, or before its answer ('so far'), with N still training; 'N–M': the "
        "largest batch lies in that range (the search's resolution)",
        *_shown(len(searched), len(comparison.max_batch), "searches"),
    ]
    fig.supxlabel("; ".join(notes), fontsize=7)
    return fig


def _open_ended(search: MaxBatch) -> bool:
    """A search that stopped before its answer: at its limit, or interrupted."""
    if search.status == "running":
        return bool(search.trained_so_far)
    return bool(search.largest_ok) and not search.first_failing


def _max_batch_text(search: MaxBatch | None) -> str:
    if search is not None and search.status == "running" and search.trained_so_far:
        return f"≥{search.trained_so_far} so far"
    if search is None or not search.largest_ok:
        return ""
    if not search.first_failing:
        return f"≥{search.largest_ok}"
    if search.first_failing - search.largest_ok > 1:  # found to the search's resolution
        return f"{search.largest_ok}–{search.first_failing - 1}"
    return str(search.largest_ok)


def _ladder(comparison: Comparison) -> Figure | None:
    """bench ladder's climb (the Xeon CPU study's table as bars): each rung's throughput
    over the baseline rung, kept changes solid, the others pale and hatched."""
    climbs = [
        (machine.label, res) for machine in comparison.machines
        for _, res in machine.results if res.ladder
    ]  # fmt: skip
    if not climbs:
        return None
    longest = max(len(res.ladder) for _, res in climbs)
    rows = min(longest, MAX_GROUPS)
    panels = _fit(len(climbs), 0.45 * rows, 1.5)
    left_out = [*_shown(panels, len(climbs), "ladders"), *_shown(rows, longest, "rungs")]
    climbs = climbs[:panels]
    fig, axes = plt.subplots(panels, 1, figsize=(10, 1.5 + 0.45 * rows * panels),
                             squeeze=False, layout="constrained")  # fmt: skip
    for ax, (label, res) in zip(axes[:, 0], climbs, strict=True):
        names, values, kept = [], [], []
        for rung, tp, speedup in ladder_rows(res)[:rows]:
            names.append(rung["rung"] if tp else f"{rung['rung']} (skipped)")
            values.append(speedup or 0.0)
            kept.append(bool(rung["kept"]))
        bars = ax.barh(range(len(names)), values, color="tab:blue")
        for bar, keep in zip(bars, kept, strict=True):
            if not keep:
                bar.set_alpha(0.4)
                bar.set_hatch("//")
        ax.bar_label(bars, [f"{v:.2f}x" if v else "" for v in values], fontsize=7, padding=2)
        ax.set_yticks(range(len(names)), [_legend(n, 40) for n in names], fontsize=8)
        ax.invert_yaxis()
        ax.axvline(1.0, color="black", linewidth=1, linestyle="--")
        start = res.ladder[0]["point"]
        ax.set_xlabel(f"throughput / the baseline rung (batch {start.get('batch_size')}, fp32)")
        ax.set_title(_legend(f"{res.config.workload} on {label}: the ladder", 90))
        ax.grid(axis="x", alpha=0.3)
    notes = ["solid: kept (faster beyond noise than the best so far); hatched: left out",
             *left_out]  # fmt: skip
    fig.supxlabel("; ".join(notes), fontsize=7)
    return fig


def _accuracy_curves(comparison: Comparison) -> Figure | None:
    """Top-1 on the validation split after each epoch, one line per machine, one panel
    per point trained on a dataset; the target as a dashed line."""
    rows = [(key, cells) for key, cells in comparison.rows
            if any(c.point and c.point.to_accuracy for c in cells)]  # fmt: skip
    if not rows:
        return None
    panels = _fit(len(rows), 3.2)
    left_out = _shown(panels, len(rows), "points trained to accuracy")
    rows = rows[:panels]
    fig, axes = plt.subplots(panels, 1, figsize=(8, 3.2 * panels), squeeze=False,
                             layout="constrained")  # fmt: skip
    for ax, (key, cells) in zip(axes[:, 0], rows, strict=True):
        target = None
        for machine, cell in zip(comparison.machines, cells, strict=True):
            reached = cell.point.to_accuracy if cell.point else None
            if reached is None:
                continue
            target = reached.target
            epochs = range(1, len(reached.curve) + 1)
            ax.plot(epochs, [100 * v for v in reached.curve], marker="o",
                    label=_legend(machine.label),
                    color=comparison.colours.get(machine.label))  # fmt: skip
        if target is not None:
            ax.axhline(100 * target, color="black", linewidth=1, linestyle="--")
        ax.set_xlabel("epoch")
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.set_ylabel("top-1 (%)")
        ax.set_title(_legend(_row_label(key), 90))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    if left_out:
        fig.supxlabel("; ".join(left_out), fontsize=7)
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

    several = len(comparison.machines) > 1
    return {
        "throughput": _bars(
            comparison, _throughput, "throughput (samples/s)", "throughput (samples/s, global)",
            interval=_throughput_interval,
        ),
        # One machine has nothing to be relative to: its absolute figures say it all.
        "relative_throughput": _bars(
            comparison, lambda c: c.relative, "throughput / baseline",
            "throughput relative to the baseline",
            interval=lambda c: c.relative_ci95, significance=True,
        ) if several else None,
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
        "ladder": _ladder(comparison),
        "accuracy": _accuracy_curves(comparison),
    }  # fmt: skip


# Tokens the time-and-cost table trains a token workload on, by default (bench report
# --train-tokens): an LLM's epoch is a count of sequences whatever their length.
TRAIN_TOKENS = 1e9


def _training_rows(comparison: Comparison, epochs: float) -> tuple[list[str], list[list[str]]]:
    """Hours and dollars for `epochs` passes over each sample workload's dataset: every
    axis of a row shown (without the memory format and compiler two rows read as one
    configuration with two answers). Token workloads are _token_rows': an LLM's epoch
    is a count of sequences whatever their length."""
    setup = ["setup"] if any(key[5] for key, _ in comparison.rows) else []
    headers = ["workload", "batch", "precision", "format", "compile", *setup, "machine",
               f"hours for {epochs:g} epochs", "USD"]  # fmt: skip
    body = []
    for key, cells in comparison.rows:
        for machine, cell in zip(comparison.machines, cells, strict=True):
            if cell.point and cell.throughput and not _in_tokens(cell):
                cost = training_cost(cell.point, key[0], epochs, machine.price_per_hour)
                usd = human(cost["usd"]) if cost["usd"] is not None else "n/a (no price)"
                body.append([*_axes(key, setup), machine.label, human(cost["hours"]), usd])
    return headers, body


def _in_tokens(cell: Cell) -> bool:
    unit = cell.point.unit_throughput if cell.point else None
    return unit is not None and unit[1].startswith("tokens")


def _axes(key: tuple[Any, ...], setup: list[str]) -> list[str]:
    workload, batch, precision, fmt, compiler, extra = key
    return [workload, str(batch), precision, fmt, compiler or "none",
            *([extra or "default"] if setup else [])]  # fmt: skip


def _token_rows(comparison: Comparison, tokens: float) -> tuple[list[str], list[list[str]]]:
    """Hours and dollars to train on `tokens` tokens at each token workload's tokens/s,
    or to its target loss where the point was trained to one (its measured time)."""
    setup = ["setup"] if any(key[5] for key, _ in comparison.rows) else []
    headers = ["workload", "batch", "precision", "format", "compile", *setup, "machine",
               "tokens/s", "to", "hours", "USD"]  # fmt: skip
    body = []
    for key, cells in comparison.rows:
        for machine, cell in zip(comparison.machines, cells, strict=True):
            if not (cell.point and cell.throughput and _in_tokens(cell)):
                continue
            rate = cell.point.unit_throughput
            assert rate is not None
            reached = cell.point.to_loss
            if reached is not None and reached.time_to_target_s is not None:
                to, hours = f"loss {reached.target:g}", reached.time_to_target_s / 3600
            else:
                to, hours = f"{tokens:,.0f} tokens", tokens / rate[0] / 3600
            price = machine.price_per_hour
            usd = human(hours * price) if price else "n/a (no price)"
            body.append([*_axes(key, setup), machine.label, human(rate[0]), to,
                         human(hours), usd])  # fmt: skip
    return headers, body


def _html_table(headers: list[str], body: list[list[str]]) -> str:
    head = "".join(f"<th>{_html(h)}</th>" for h in headers)
    rows = "".join("<tr>" + "".join(f"<td>{_html(c)}</td>" for c in r) + "</tr>" for r in body)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def price_lines(comparison: Comparison) -> list[str]:
    """Each priced machine's hourly price and its source: the run's, --price, or bench's
    catalogue (labelled as such, with the date it was read)."""
    return [
        visible(f"{m.label}: ${m.price_per_hour:.4g}/h, {m.price_source or 'source not recorded'}")
        for m in comparison.machines
        if m.price_per_hour
    ]


def _headline_markdown(t: tidy.Tidy, several: bool) -> str:
    """The page's first tables in Markdown: like with like (a configuration both ran),
    then each machine's best configuration per workload."""
    rows = [r for r in t.headline if r["scope"] == "all"]
    if not rows:
        return "No result holds a measured point: there is nothing to compare."
    headers = ["workload", "machine", "best configuration", "throughput (samples/s) [95%]"]
    headers += ["per dollar · per joule"]
    headers += ["vs the baseline [95%]", "verdict", "differs from the baseline's best"] * several
    body = []
    for r in rows:
        tp = htmlpage.interval(r["tp"], r.get("tp_lo"), r.get("tp_hi"))
        if "unit_tp" in r:  # the figure LLM users quote, beside samples/s
            tp += f" · {human(r['unit_tp'])} {r['unit']}"
        line = [r["workload"], r["machine"], r["config"], tp, r.get("eff_text", "")]
        extra = [htmlpage.ratio(r), r.get("sentence", ""), r.get("differs", "")]
        body.append(line + extra * several)
    best = "## Each machine's best (tuned) configuration per workload\n\n" + markdown(
        htmlpage.BEST_NOTE
    )
    best += f"\n\n{markdown_table(headers, body)}"
    if not several:
        return best
    like = [
        [
            r["workload"],
            r["machine"],
            r.get("config", ""),
            htmlpage.interval(r["tp"], r.get("tp_lo"), r.get("tp_hi")) if "tp" in r else "",
            htmlpage.interval(r["base_tp"], r.get("base_lo"), r.get("base_hi"))
            if "base_tp" in r
            else "",
            htmlpage.ratio(r),
            r.get("sentence", ""),
            r.get("eff_text", ""),
            r.get("shared_text", ""),
        ]
        for r in t.like
    ]
    first = "## Like with like: on a configuration both ran\n\n" + markdown(htmlpage.LIKE_NOTE)
    return f"{first}\n\n{markdown_table(htmlpage.LIKE_HEADERS, like)}\n\n{best}"


FIGURE_MACHINES = 12  # machines a static figure draws at most (as the page's charts)


def figure_machines(comparison: Comparison, t: tidy.Tidy) -> tuple[Comparison, str]:
    """What the static figures draw: at most FIGURE_MACHINES machines, the baseline and
    then the fastest by geometric mean (a bar chart of 100 machines is no figure for a
    paper, and took 90 s to draw), with a line saying so."""
    machines = comparison.machines
    if len(machines) <= FIGURE_MACHINES:
        return comparison, ""
    means = {r["machine"]: r["rel"] for r in t.geomean if r["scope"] == "all"}
    order = sorted(
        range(len(machines)),
        key=lambda i: (machines[i] is not comparison.baseline, -means.get(machines[i].label, 0)),
    )
    keep = sorted(order[:FIGURE_MACHINES])
    rows = [(key, [cells[i] for i in keep]) for key, cells in comparison.rows]
    rows = [(key, cells) for key, cells in rows if any(c.point for c in cells)]
    searches = [(key, [found[i] for i in keep]) for key, found in comparison.max_batch]
    drawn = dataclasses.replace(
        comparison,
        machines=[machines[i] for i in keep],
        rows=rows,
        max_batch=[(key, found) for key, found in searches if any(found)],
    )
    return drawn, (
        f"{FIGURE_MACHINES} of {len(machines)} machines: the baseline, then the fastest by "
        "geometric mean (report.html and report.md hold all)"
    )


def write_report(
    comparison: Comparison,
    folder: Path,
    train_epochs: float = 90,
    train_tokens: float = TRAIN_TOKENS,
) -> list[Path]:
    """Charts (PNG, SVG), report.html (self-contained) and report.md in `folder`."""
    registry.require("bench report", "altair", "vl_convert")  # one line, not a traceback
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    made, missing = [], []
    t = tidy.tidy(comparison)
    drawn, fewer = figure_machines(comparison, t)
    # Labels come from result files: '$' stays a dollar, never TeX-like mathtext (text
    # is laid out when saved, so the setting spans the saving too).
    with matplotlib.rc_context({"text.parse_math": False}):
        for name, fig in charts(drawn).items():
            if fig is None:
                missing.append(name)
                continue
            if fewer:
                fig.suptitle(fewer, fontsize=8)
            for ext in ("png", "svg"):
                path = folder / f"{name}.{ext}"
                image = io.BytesIO()
                fig.savefig(image, format=ext, dpi=DPI)
                files.replace(path, image.getvalue())
                written.append(path)
            made.append(name)
            plt.close(fig)
    md, page = texts(comparison, made, missing, train_epochs, t, train_tokens)
    written.append(folder / "report.md")
    files.replace(written[-1], md)
    written.append(folder / "report.html")
    files.replace(written[-1], page)
    return written


def texts(
    comparison: Comparison,
    made: list[str] = [],  # noqa: B006 - read only
    missing: list[str] = [],  # noqa: B006
    train_epochs: float = 90,
    made_tidy: tidy.Tidy | None = None,
    train_tokens: float | None = None,
) -> tuple[str, str]:
    """report.md and report.html, beside the figures `made` (and those `missing`: no
    result carries their data)."""
    several = len(comparison.machines) > 1
    tables = [("Throughput (samples/s, global): mean [95% interval]", throughput_grid(comparison))]
    if several:
        tables.insert(0, ("Throughput relative to the baseline", grid(comparison)))
    llm = llm_grid(comparison)
    if llm[1]:
        tables.append((LLM_CAPTION, llm))
    experts = moe_grid(comparison)
    if experts[1]:
        tables.append((MOE_CAPTION, experts))
    if comparison.max_batch:
        tables.append(("Largest batch that trains", max_batch_grid(comparison)))
    accuracy = accuracy_grid(comparison)
    if accuracy[1]:
        tables.append((ACCURACY_CAPTION[0].upper() + ACCURACY_CAPTION[1:], accuracy))
    to_loss = loss_grid(comparison)
    if to_loss[1]:
        tables.append((LOSS_CAPTION[0].upper() + LOSS_CAPTION[1:], to_loss))
    steps = steps_grid(comparison)
    if steps[1]:
        tables.append((STEPS_CAPTION[0].upper() + STEPS_CAPTION[1:], steps))
    epochs = _training_rows(comparison, train_epochs)
    if epochs[1]:
        tables.append((f"Time and cost to train {train_epochs:g} epochs", epochs))
    train_tokens = TRAIN_TOKENS if train_tokens is None else train_tokens
    in_tokens = _token_rows(comparison, train_tokens)
    if in_tokens[1]:
        tables.append(
            (
                f"Time and cost to train on {train_tokens:,.0f} tokens (or to the target loss "
                "where a run trained to one), token workloads",
                in_tokens,
            )
        )
    notes = [line[0].upper() + line[1:] + "." for line in comparison.set_apart]
    missing = [name for name in missing if several or name != "relative_throughput"]
    if not accuracy[1]:  # no result trained on a dataset: nothing was asked of this chart
        missing = [name for name in missing if name != "accuracy"]
    if missing:
        notes.insert(0, f"Charts left out, no result carries their data: {', '.join(missing)}.")
    title = f"bench report: {comparison.title}" + (
        f", baseline {comparison.baseline.label}" if several else f": {comparison.baseline.label}"
    )
    lead = legend() if several else "Absolute figures of one machine."
    noise = comparison.noise_notes()
    t = made_tidy or tidy.tidy(comparison)

    note = " ".join(notes)
    noise_md = "\n".join(f"- {markdown(line)}" for line in noise)
    md = [f"# {markdown(title)}", markdown(lead), markdown(note)]
    md.append(_headline_markdown(t, several))
    if noise:
        md.append(f"Less sure than they look:\n\n{noise_md}")
    if price_lines(comparison):
        md.append("Prices (USD per hour):\n\n" + "\n".join(
            f"- {markdown(line)}" for line in price_lines(comparison)))  # fmt: skip
    md += [f"## {heading}\n\n{markdown_table(*table)}" for heading, table in tables]
    if t.inventory:
        cover = [[r["workload"], r["machine"], r["ran_text"], r["shared_text"], r["configs"]]
                 for r in t.coverage]  # fmt: skip
        machines = [[str(r.get(k, "")) for k in htmlpage.INVENTORY_KEYS] for r in t.inventory]
        md.append("## Who ran what\n\n" + markdown_table(htmlpage.COVERAGE_HEADERS, cover))
        md.append("## The machines\n\n"
                  + markdown_table(htmlpage.INVENTORY_HEADERS, machines))  # fmt: skip
    md += [f"![{name}]({name}.png)" for name in made]

    page_notes: list[tuple[str, list[str]]] = []
    if missing:
        page_notes.append((f"Figures left out, no result carries their data: "
                           f"{', '.join(missing)}.", []))  # fmt: skip
    if comparison.set_apart:
        count = comparison.set_apart_count  # files, not the lines that group them
        page_notes.append((f"{count} result{'s' if count > 1 else ''} set apart (measured "
                           "differently from the run each line names):",
                           comparison.set_apart))  # fmt: skip
    priced = price_lines(comparison)
    if priced:
        page_notes.append((f"Prices of {len(priced)} machine{'s' if len(priced) > 1 else ''} "
                           "(USD per hour, and where each comes from):", priced))  # fmt: skip
    if noise:
        page_notes.append((f"{len(noise)} figure{'s' if len(noise) > 1 else ''} less sure "
                           "than they look:", noise))  # fmt: skip
    if len(comparison.machines) <= FIGURE_MACHINES:
        wide = "".join(f"<h3>{_html(h)}</h3>{_html_table(*table)}" for h, table in tables)
    else:  # a column per machine: report.md holds them
        wide = "<p>report.md holds these tables: a column per machine.</p>"
    page = htmlpage.page(comparison, t, views.views(t), title=title, lead=lead,
                         notes=page_notes, figures=made, tables=wide)  # fmt: skip
    return "\n\n".join(part for part in md if part) + "\n", page
