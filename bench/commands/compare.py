"""`bench compare PATHS` and `bench report PATHS [-o DIR]`: machines side by side,
normalised to a baseline, as tables (terminal, Markdown, CSV, JSON) or as a report with
charts. A column is a machine's hardware (and a run's --label); its runs at other times
pool. Without --baseline, the run labelled baseline or before, else the machine that
shares the most rows with the others (ties: the earliest), is the baseline, and the
first line on stderr says which and why; results set apart are one line per reason.
The report goes to -o, else to a folder `report` beside the results: the user's own, never
a link (bench.util.files.require_own_dir)."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

from rich.table import Table

from bench.commands.options import measure, require_extra
from bench.report.table import console
from bench.util import files
from bench.util.errors import UsageError
from bench.util.text import plain, visible


def _price(text: str) -> tuple[str, float]:
    """MACHINE=USD_PER_HOUR, the price by the rule of --price-per-hour (a result's
    pricing.usd_per_hour: positive, 1e-12 to 1e21), so no figure per dollar is negative,
    infinite or a price of 0 read as none."""
    selector, _, usd = text.rpartition("=")
    if not selector.strip():
        raise argparse.ArgumentTypeError(f"price: {text!r} is not MACHINE=USD_PER_HOUR")
    try:
        return selector, measure(usd)
    except argparse.ArgumentTypeError as error:
        raise argparse.ArgumentTypeError(f"price of {selector!r}: {error}") from None


def _add_comparison_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", help="result files or folders (searched recursively)")
    p.add_argument(
        "--baseline",
        help="the machine or run everything is relative to: part of its label or a file "
        "(default: the run labelled baseline or before, else the machine that shares the "
        "most rows with the others)",
    )
    p.add_argument(
        "--price",
        type=_price,
        action="append",
        default=[],
        metavar="MACHINE=USD",
        help="hourly price of a machine whose results carry none (repeatable)",
    )


# What the time-and-cost-to-train figures assume, unless told: bench report's defaults,
# and bench fleet collect's report.
TRAIN_EPOCHS = 90
TRAIN_TOKENS = 1e9


def register(sub: Any) -> None:
    compare = sub.add_parser("compare", help="compare machines, normalised to a baseline")
    _add_comparison_options(compare)
    compare.add_argument("--format", choices=("table", "markdown", "csv", "json"), default="table")
    compare.add_argument("-o", "--output", type=Path, help="write to this file instead of stdout")
    compare.set_defaults(func=cmd_compare)
    report = sub.add_parser("report", help="an HTML and Markdown report with charts")
    _add_comparison_options(report)
    report.add_argument(
        "-o",
        "--output",
        type=Path,
        help="folder for the report: report.html, report.md and the charts (default: "
        "a folder named report in the results' folder, e.g. results/report)",
    )
    report.add_argument(
        "--train-epochs",
        type=measure,
        default=TRAIN_EPOCHS,
        help="epochs for the time-and-cost-to-train figures of sample workloads (default "
        f"{TRAIN_EPOCHS})",
    )
    report.add_argument(
        "--train-tokens",
        type=measure,
        default=TRAIN_TOKENS,
        help="tokens for the time-and-cost-to-train figures of token workloads (LLMs), "
        f"where a run did not train to a target loss (default {TRAIN_TOKENS:,.0f})",
    )
    report.set_defaults(func=cmd_report)


def _comparison(args: argparse.Namespace):  # -> bench.report.compare.Comparison
    from bench.report import compare
    from bench.report.collect import load_all, warn

    unreadable: list[tuple[Path, str]] = []
    loaded = load_all(args.paths, unreadable)
    comparison = compare.compare(loaded, args.baseline, dict(args.price), unreadable)
    if comparison.baseline_note:  # bench chose it: say which, first, on stderr
        print(visible(f"bench: {comparison.baseline_note}"), file=sys.stderr)
    for line in comparison.set_apart:  # on stderr: stdout may be the CSV or JSON itself
        warn(line)  # one line per reason, the files in the JSON
    return comparison


def json_lines(data: dict[str, Any]) -> str:
    """A JSON object whose lists of records are written one record a line: readable and
    diffable as an indented file is, written at C speed (json indents in Python) for a
    fleet's tens of thousands of records."""
    parts = []
    for key, value in data.items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            inner = ",\n  ".join(_dumps(v) for v in value)
            text = f"[\n  {inner}\n ]"
        else:
            text = _dumps(value)
        parts.append(f" {json.dumps(key)}: {text}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def _dumps(value: Any) -> str:
    """Standard JSON only: a figure that is not finite (no such number in JSON; jq and
    JavaScript refuse the file) is written null."""
    try:
        return json.dumps(value, allow_nan=False)
    except ValueError:
        return json.dumps(_finite(value), allow_nan=False)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def default_report_folder(paths: list[str]) -> Path:
    """Where a report goes without -o: `report` in the folder the results are in (the
    folder named, or a named file's folder; for several, the folder they share)."""
    folders = [Path(p) if Path(p).is_dir() else Path(p).parent for p in paths]
    try:
        shared = Path(os.path.commonpath([str(f.absolute()) for f in folders]))
    except ValueError:  # nothing shared
        return Path("report")
    here = Path.cwd()
    return (shared.relative_to(here) if shared.is_relative_to(here) else shared) / "report"


def cmd_compare(args: argparse.Namespace) -> int:
    from bench.report import grids

    if args.output and args.format == "table":  # it printed the table and wrote nothing
        raise UsageError(
            "-o writes --format markdown, csv or json (the table is for a terminal); "
            "add --format markdown for the same tables in a file"
        )
    if args.output:
        files.require_writable_file(args.output, "output")
    comparison = _comparison(args)
    text = {
        "csv": lambda: grids.to_csv(comparison),
        "markdown": lambda: grids.to_markdown(comparison),
        "json": lambda: json_lines(grids.as_dict(comparison)),
    }.get(args.format)
    if text is not None:
        if args.output:
            files.replace(args.output, text())
        else:
            print(text(), end="")
        return 0
    terminal = console()
    several = len(comparison.machines) > 1  # one machine has no ratios: its own figures
    ratios = grids.grid(comparison) if several else ([], [])
    tables = (
        (f"baseline: {comparison.baseline.label}", ratios),
        (grids.THROUGHPUT_CAPTION.lower(), grids.throughput_grid(comparison)),
        (grids.LLM_CAPTION, grids.llm_grid(comparison)),
        (grids.MOE_CAPTION, grids.moe_grid(comparison)),
        (grids.ACCURACY_CAPTION, grids.accuracy_grid(comparison)),
        (grids.LOSS_CAPTION, grids.loss_grid(comparison)),
        (grids.REAL_DATA_CAPTION, grids.real_data_grid(comparison)),
        (grids.STEPS_CAPTION, grids.steps_grid(comparison)),
        ("largest batch that trains", grids.max_batch_grid(comparison)),
    )  # fmt: skip
    for caption, (headers, body) in tables:
        headers, body = grids.without_empty_columns(headers, body)
        if body:
            table = Table(title=plain(caption), title_justify="left")
            for header in headers:
                table.add_column(plain(header))
            for row in body:
                table.add_row(*map(plain, row))
            terminal.print(table)
    if comparison.steps[1]:  # numpy missing: said, where a history could have stepped
        terminal.print(plain(f"bench: {comparison.steps[1]}"), highlight=False)
    if several:
        terminal.print(plain(grids.legend()), highlight=False)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    require_extra("report", "altair", "vl_convert")
    from bench.report import page, vega

    output = args.output if args.output is not None else default_report_folder(args.paths)
    files.require_own_dir(output, "output")  # never a link or another user's folder
    # They load V8, and the first makes the page's script, while the results are read.
    with vega.Renderers(bundle=True) as renderers:
        comparison = _comparison(args)
        written = page.write_report(
            comparison, output, args.train_epochs, args.train_tokens, renderers
        )
    for path in written:
        print(path)  # report.html last
    return 0
