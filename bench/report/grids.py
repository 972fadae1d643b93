"""The comparison's tables, each a function of a Comparison (bench.report.compare):
the wide grid of ratios to the baseline, the absolute throughput with its interval,
the LLM figures, the mixtures of experts', time to a target top-1 or loss, the largest
batch; and the same
comparison as markdown, CSV and the JSON of `bench compare --format json`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench.report import real_data, records
from bench.report.compare import ROW_KEYS, Cell, Comparison, Machine
from bench.report.moe import FORMULA, Experts
from bench.report.rows import RowKey
from bench.report.to_target import of as to_target
from bench.result import Point
from bench.util.text import csv_cell, markdown
from bench.util.units import format_bytes, human


def legend() -> str:
    return (
        "Throughput relative to the baseline (= 1.00). '*': out of memory (or nothing fits); "
        "'~': the ratio's 95% confidence interval holds 1, the difference may not be real; "
        "'?': a single run, no interval to test (use --repeats)."
    )


def as_dict(comparison: Comparison) -> dict[str, Any]:
    labels = [m.label for m in comparison.machines]
    return {
        "kind": "bench-comparison",  # so that folder scans skip it (bench.report.collect)
        "baseline": comparison.baseline.label,
        "baseline_note": comparison.baseline_note,
        "set_apart": [group.to_dict() for group in comparison.set_apart_groups],
        "machines": [
            {
                "label": m.label,
                "usd_per_hour": m.price_per_hour,
                "price_source": m.price_source,
                "hardware": m.hardware,
                "run_label": m.run_label,
                "files": [str(p) for p, _ in m.results],
            }
            for m in comparison.machines
        ],
        "legend": legend(),
        "points": records.records(comparison),
        "history": records.history_records(comparison),
        "steps": [step.record() for step in comparison.steps[0]],
        "steps_note": comparison.steps[1],
        "real_data": [row.record() for row in comparison.real_data],
        "max_batch": [
            {
                **dict(
                    zip(
                        ("workload", "precision", "memory_format", "compile", "search"),
                        (*key[:4], key[4] or "largest batch"),
                        strict=True,
                    )
                ),
                **{label: s.display if s else None for label, s in zip(labels, found, strict=True)},
            }
            for key, found in comparison.max_batch
        ],
    }


def _with_setup(comparison: Comparison) -> bool:
    """Whether any row has a setup (a device count of a sweep, runtime axes): a column."""
    return any(key.setup for key, _ in comparison.rows)


def _axes_headers(with_setup: bool) -> list[str]:
    setup = ["setup"] if with_setup else []
    return ["workload", "batch", "precision", "format", "compile", *setup]


def _axes_cells(key: RowKey, with_setup: bool) -> list[str]:
    workload, batch, precision, fmt, compiler, setup = key
    cells = [workload, str(batch), precision, fmt, compiler or "none"]
    return [*cells, setup or "default"] if with_setup else cells


def grid(comparison: Comparison) -> tuple[list[str], list[list[str]]]:
    """Headers and cells of the wide table: rows x machines, then ratio columns (those of
    energy and cost only where some cell has one, for machines with measured points)."""
    others = [
        m
        for i, m in enumerate(comparison.machines)
        if m is not comparison.baseline and any(row[i].point for _, row in comparison.rows)
    ]
    cells = [c for _, row in comparison.rows for c in row]
    ratios = [
        (what, attr)
        for what, attr in (("samples/J", "energy_ratio"), ("samples/$", "cost_ratio"))
        if any(getattr(c, attr) is not None for c in cells)
    ]
    with_setup = _with_setup(comparison)
    headers = _axes_headers(with_setup)
    headers += [
        f"{m.label}{' (baseline)' if m is comparison.baseline else ''}" for m in comparison.machines
    ]
    headers += [f"{what} vs baseline: {m.label}" for what, _ in ratios for m in others]
    body = []
    for key, row_cells in comparison.rows:
        row = _axes_cells(key, with_setup)
        row += [cell.text for cell in row_cells]
        by_machine = dict(zip((m.label for m in comparison.machines), row_cells, strict=True))
        row += [_ratio_text(by_machine[m.label], attr) for _, attr in ratios for m in others]
        body.append(row)
    return headers, body


def throughput_grid(comparison: Comparison) -> tuple[list[str], list[list[str]]]:
    """The absolute figures beside the ratios: mean samples/s (global) [95% interval]."""
    with_setup = _with_setup(comparison)
    headers = _axes_headers(with_setup)
    headers += [m.label for m in comparison.machines]
    body = []
    for key, cells in comparison.rows:
        row = _axes_cells(key, with_setup)
        for cell in cells:
            tp = cell.throughput
            if tp is None:
                row.append(cell.text)
            elif tp.ci95_low is None or tp.ci95_high is None:
                row.append(f"{human(tp.value)} (one run)")
            else:
                row.append(f"{human(tp.value)} [{human(tp.ci95_low)}–{human(tp.ci95_high)}]")
        body.append(row)
    return headers, body


# The throughput table's caption: the figure is the repeats' geometric mean, the interval
# around it (bench.stats.estimate.Estimate).
THROUGHPUT_CAPTION = "Throughput (samples/s, global): geometric mean of repeats [95% interval]"
LLM_CAPTION = (
    "LLM training: tokens/s per device, MFU, peak memory per device (and USD per million "
    "tokens where priced)"
)


def _llm_cell(cell: Cell, machine: Machine) -> str:
    point = cell.point
    per_device = point.unit_throughput_per_device if point and point.status == "ok" else None
    if point is None or per_device is None:
        return cell.text
    parts = [f"{human(per_device[0])} {per_device[1]}"]
    mfu = cell.mfu  # the peak the child recorded, else the catalogue's (rows.cell_of)
    parts.append(f"MFU {mfu:.1%}" if mfu is not None else "MFU n/a")
    if point.peak_memory is not None:
        parts.append(format_bytes(point.peak_memory))
    total = point.unit_throughput
    if machine.price_per_hour and total:
        parts.append(f"${machine.price_per_hour / (total[0] * 3600) * 1e6:,.3g}/M tokens")
    return " · ".join(parts)


def _rows_of(
    comparison: Comparison, shows: Callable[[Point], Any], text: Callable[[Cell, Machine], str]
) -> tuple[list[str], list[list[str]]]:
    """A table of the rows where some machine's point `shows` something: a cell each
    machine, `text` of it."""
    with_setup = _with_setup(comparison)
    headers = _axes_headers(with_setup) + [m.label for m in comparison.machines]
    body = []
    for key, cells in comparison.rows:
        if any(c.point and shows(c.point) for c in cells):
            row = _axes_cells(key, with_setup)
            row += [text(c, m) for m, c in zip(comparison.machines, cells, strict=True)]
            body.append(row)
    return headers, body


def llm_grid(comparison: Comparison) -> tuple[list[str], list[list[str]]]:
    """The figures LLM training is chosen by, per machine: the rows whose workload
    counts its FLOPs by formula in tokens (bench/result/mfu.py: the decoders)."""
    return _rows_of(comparison, lambda p: "mfu" in p.details and _in_tokens(p), _llm_cell)


MOE_CAPTION = (
    "Mixtures of experts: tokens/s per device, MFU of the active parameters "
    f"({FORMULA}, torchtitan's), the all-to-all's share of the step, the load "
    "balance (tokens per expert, max over mean; 1: even), dropped token assignments"
)


def _moe_cell(cell: Cell, machine: Machine) -> str:
    point = cell.point
    experts = Experts.of(point) if point is not None and point.status == "ok" else None
    per_device = point.unit_throughput_per_device if point is not None else None
    if point is None or experts is None or per_device is None:
        return cell.text
    mfu = cell.mfu  # the peak the child recorded, else the catalogue's (rows.cell_of)
    return " · ".join(
        (
            f"{human(per_device[0])} {per_device[1]}",
            f"MFU (active) {mfu:.1%}" if mfu is not None else "MFU (active) n/a",
            experts.all_to_all_text(),
            experts.balance_text(),
            experts.dropped_text(),
        )
    )


def moe_grid(comparison: Comparison) -> tuple[list[str], list[list[str]]]:
    """The figures a mixture of experts is judged by, per machine: the rows where some
    machine's point records its experts (bench.report.moe); none for dense models."""
    return _rows_of(comparison, lambda p: Experts.of(p) is not None, _moe_cell)


def _in_tokens(point: Point) -> bool:
    unit = point.unit_throughput
    return unit is not None and unit[1] == "tokens/s"


def _accuracy_cell(cell: Cell, machine: Machine) -> str:
    reached = cell.point.to_accuracy if cell.point else None
    if reached is None:
        return cell.text
    parts = [f"best {reached.best_top1:.1%}"]
    if reached.time_to_target_s is not None:
        parts.insert(0, f"{reached.time_to_target_s:,.1f} s")
        cost = reached.cost_to_target(machine.price_per_hour)
        if cost is not None:
            parts.insert(1, f"${cost:,.2f}")
    elif reached.target is not None:
        parts.insert(0, "not reached")
    runs = to_target(cell.point)
    return " · ".join([*parts, *(runs.summary(machine.price_per_hour) if runs else [])])


def accuracy_grid(comparison: Comparison) -> tuple[list[str], list[list[str]]]:
    """Training to a target on real data: per machine, time (and cost, where priced) to
    the target and the best top-1, as the TPUv2 vs V100 comparison reported them."""
    return _rows_of(comparison, lambda p: p.to_accuracy, _accuracy_cell)


LOSS_CAPTION = (
    "time and cost to the target validation loss (training plus evaluation), or the best "
    "loss where it was not reached; over several runs, MLPerf's score of their times"
)
ACCURACY_CAPTION = (
    "time and cost to the target top-1, best top-1; over several runs, MLPerf's score of "
    "their times"
)


def _loss_text(reached: Any, price_per_hour: float | None) -> str:
    if not reached.reached:
        return (
            f"not reached ({reached.target:g}) · best {reached.best_loss:.3f} at "
            f"{human(reached.best_at_tokens)} tokens"
        )
    parts = [f"{reached.time_to_target_s:,.1f} s", f"{human(reached.tokens_to_target)} tokens"]
    cost = reached.cost_to_target(price_per_hour)
    if cost is not None:
        parts.insert(1, f"${human(cost)}")
    if reached.eval_share is not None:
        parts.append(f"evaluation {reached.eval_share:.0%}")
    if reached.reached < reached.repeats:
        parts.append(f"{reached.reached} of {reached.repeats} repeats reached it")
    return f"to {reached.target:g}: " + " · ".join(parts)


def _loss_cell(cell: Cell, machine: Machine) -> str:
    reached = cell.point.to_loss if cell.point else None
    if reached is None:
        return cell.text
    runs = to_target(cell.point)
    more = runs.summary(machine.price_per_hour) if runs else []
    return " · ".join([_loss_text(reached, machine.price_per_hour), *more])


def loss_grid(comparison: Comparison) -> tuple[list[str], list[list[str]]]:
    """Training a decoder to a validation loss: per machine, time, cost and tokens to
    the target, as MLPerf's LLM benchmark and the GPT-2 speedrun report them."""
    return _rows_of(comparison, lambda p: p.to_loss, _loss_cell)


REAL_DATA_CAPTION = real_data.CAPTION


def real_data_grid(comparison: Comparison) -> tuple[list[str], list[list[str]]]:
    """Each machine's configurations on real data beside the same on synthetic data
    (bench.report.real_data): the rates, their ratio and the wait for data."""
    return real_data.grid(comparison.real_data)


STEPS_CAPTION = (
    "steps in history: where a configuration measured on many dates changed level "
    "(binary segmentation over its runs, a permutation test at 1%; none where it is noise)"
)


def steps_grid(comparison: Comparison) -> tuple[list[str], list[list[str]]]:
    """Each step of a machine's configuration over the dates it ran: the first run after
    it, and the step with its interval (bench.report.steps)."""
    headers = ["machine", "workload", "configuration", "from the run of", "step"]
    body = [
        [step.machine, str(step.key[0]), step.config, step.after[0][:19], step.step.sentence()]
        for step in comparison.steps[0]
    ]
    return headers, body


def max_batch_grid(comparison: Comparison) -> tuple[list[str], list[list[str]]]:
    headers = [
        "workload",
        "precision",
        "format",
        "compile",
        *(m.label for m in comparison.machines),
    ]
    body = [
        [
            f"{key[0]} ({key[4]})" if key[4] else key[0],
            key[1],
            key[2],
            key[3] or "none",
            *(s.display if s else "" for s in searches),
        ]
        for key, searches in comparison.max_batch
    ]
    return headers, body


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _ratio_text(cell: Cell, attr: str) -> str:
    """A ratio column's cell: the energy-efficiency ratio with its 95% interval over the
    repeats where both sides have two or more (the M2 Max vs V100 study's figure)."""
    text = _fmt(getattr(cell, attr))
    interval = cell.energy_ratio_ci95 if attr == "energy_ratio" else None
    return f"{text} [{interval[0]:.2f}-{interval[1]:.2f}]" if interval else text


def without_empty_columns(
    headers: list[str], body: list[list[str]]
) -> tuple[list[str], list[list[str]]]:
    """The grid less the columns no row has a cell in (a machine column of a result
    that holds searches alone, in a grid of measured points); the first always stays."""
    keep = [i for i in range(len(headers)) if i == 0 or any(str(r[i]).strip() for r in body)]
    return [headers[i] for i in keep], [[row[i] for i in keep] for row in body]


def markdown_table(headers: list[str], body: list[list[str]]) -> str:
    headers, body = without_empty_columns(headers, body)

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(markdown(c) for c in cells) + " |"

    return "\n".join([line(headers), line(["---"] * len(headers)), *(line(r) for r in body)])


def to_markdown(comparison: Comparison) -> str:
    parts = [
        f"Baseline: **{markdown(comparison.baseline.label)}**. {markdown(legend())}",
        markdown_table(*grid(comparison)),
        THROUGHPUT_CAPTION,
        markdown_table(*throughput_grid(comparison)),
    ]
    llm = llm_grid(comparison)
    if llm[1]:
        parts += [f"{LLM_CAPTION}:", markdown_table(*llm)]
    experts = moe_grid(comparison)
    if experts[1]:
        parts += [f"{MOE_CAPTION}:", markdown_table(*experts)]
    accuracy = accuracy_grid(comparison)
    if accuracy[1]:
        parts += [f"{ACCURACY_CAPTION[0].upper()}{ACCURACY_CAPTION[1:]}:",
                  markdown_table(*accuracy)]  # fmt: skip
    loss = loss_grid(comparison)
    if loss[1]:
        parts += [f"{LOSS_CAPTION[0].upper()}{LOSS_CAPTION[1:]}:", markdown_table(*loss)]
    fed = real_data_grid(comparison)
    if fed[1]:
        parts += [f"{REAL_DATA_CAPTION[0].upper()}{REAL_DATA_CAPTION[1:]}:", markdown_table(*fed)]
    steps = steps_grid(comparison)
    if steps[1]:
        parts += [f"{STEPS_CAPTION[0].upper()}{STEPS_CAPTION[1:]}:", markdown_table(*steps)]
    if comparison.steps[1]:
        parts.append(markdown(comparison.steps[1][0].upper() + comparison.steps[1][1:] + "."))
    if comparison.max_batch:
        parts += [
            "Largest batch that trains ('*': not even the smallest):",
            markdown_table(*max_batch_grid(comparison)),
        ]
    return "\n\n".join(parts) + "\n"


def to_csv(comparison: Comparison) -> str:
    import csv
    import io

    cells = [{k: csv_cell(v) for k, v in r.items()} for r in records.records(comparison)]
    # Every record's columns, in order of first use: only points trained to a target
    # accuracy have those columns, and the first record may not be one of them.
    columns = dict.fromkeys(key for record in cells for key in record) or dict.fromkeys(ROW_KEYS)
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=list(columns))
    writer.writeheader()
    writer.writerows(cells)
    return text.getvalue()
