"""`bench list`, `bench show FILE...`, `bench collect PATH...`: what bench can run, and
what it has saved."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text

from bench import registry
from bench.commands.options import require_extra
from bench.commands.running import console_for, print_line
from bench.config.run_config import PointConfig
from bench.report.table import notes, tables
from bench.util import files
from bench.util.errors import BenchError
from bench.util.text import plain


def register(sub: Any) -> None:
    sub.add_parser("list", help="workloads, frameworks and devices").set_defaults(func=cmd_list)
    show = sub.add_parser("show", help="print the tables of saved results")
    show.add_argument("files", nargs="+", help="result files or folders (searched recursively)")
    show.set_defaults(func=cmd_show)
    collect = sub.add_parser("collect", help="merge result files into one CSV and Markdown table")
    collect.add_argument("paths", nargs="+", help="result files or folders (searched recursively)")
    collect.add_argument(
        "-o",
        "--output",
        type=Path,
        default=Path("results/summary"),
        help="output prefix: PREFIX.csv and PREFIX.md (default results/summary)",
    )
    collect.set_defaults(func=cmd_collect)


def cmd_show(args: argparse.Namespace) -> int:
    from bench.report.collect import load_all

    console = console_for()
    # Folders are searched (oldest run first), as compare and report do.
    runs = sorted(load_all(args.files), key=lambda pr: (pr[1].started, str(pr[0])))
    for path, loaded in runs:
        if len(runs) > 1:
            print_line(console, str(path))
        shown = tables(loaded, console.width)
        for table in shown:
            console.print(table)
        if not shown:  # a run stopped before its first point: say so, not nothing
            print_line(console, f"{path}: {loaded.config.workload}, {loaded.status}: no point "
                       f"measured (started {loaded.started[:19]})")  # fmt: skip
        note = notes(loaded)
        if note:
            print_line(console, note)
    return 0


def cmd_collect(args: argparse.Namespace) -> int:
    require_extra("collect", "pandas", "tabulate")
    from bench.report import collect

    files.require_writable_dir(args.output.absolute().parent, "output")
    for path in collect.write(collect.load_all(args.paths), args.output):
        print(path)
    return 0


def _parameters(spec: Any, missing: registry.MissingExtra | None) -> str:
    """The workload's declared parameter count (tests/test_workloads.py checks it against
    the model PyTorch builds), else the count of that model built on the meta device, or
    why there is none. Declared first: building every model made `bench list` take 5 s."""
    if spec.parameter_count is not None:
        return f"{spec.parameter_count:,}"
    if "torch" not in spec.frameworks():
        return "n/a (no torch model)"
    if missing is not None:
        return f"n/a (needs {', '.join(missing.modules)})"
    try:
        counted = registry.framework("torch").count_parameters(
            spec, PointConfig(workload=spec.name)
        )
    except ImportError:
        return "n/a (no torch)"
    except BenchError:  # the model cannot be built here: the run says why, in one line
        return "n/a"
    return f"{counted:,}"


def cmd_list(args: argparse.Namespace) -> int:
    console = console_for()
    # A narrow terminal keeps what a user types and compares by; the prose needs room.
    wide = console.width >= 150
    every = ("workload", "task", "input (per sample)", "classes", "parameters",
             "default batch", "frameworks", "description")  # fmt: skip
    columns: tuple[str, ...] = every
    if not wide:
        columns = ("workload", "input (per sample)", "parameters", "frameworks")
    caption = None if wide else "task, classes, batch and description: a wider terminal"
    table = Table(title="workloads", title_justify="left", caption=caption,
                  caption_justify="left")  # fmt: skip
    for name in columns:
        right = name in ("classes", "parameters", "default batch")
        # The names users type and the figures are never cut or folded; the prose wraps.
        whole = name in ("workload", "classes", "parameters", "default batch")
        table.add_column(name, justify="right" if right else "left", no_wrap=whole,
                         ratio=1 if name in ("description", "frameworks") else None)  # fmt: skip
    for spec in registry.workloads().values():
        # A workload whose optional library is missing (nasnet-large: timm) is listed,
        # marked with the extra that brings it; it never stops the listing.
        needs = {f: registry.missing_extras(spec, f) for f in spec.frameworks()}
        cells = [f + (f" (needs: {m.install})" if m else "") for f, m in needs.items()]
        parameters = _parameters(spec, needs.get("torch"))
        shape = "x".join(map(str, spec.input_shape())) + (" tokens" if spec.takes_seq_len else "")
        row: dict[str, str | Text] = {
            "workload": spec.name,
            "task": spec.task,
            "input (per sample)": shape,
            "classes": f"{spec.num_classes:,}",
            "parameters": parameters,
            "default batch": str(spec.default_batch_size),
            "frameworks": plain(", ".join(cells)),
            "description": spec.description,
        }
        table.add_row(*(row[name] for name in columns))
    console.print(table)
    devices = Table(title="devices: available here, per framework", title_justify="left")
    devices.add_column("device")
    frameworks = [registry.framework(name) for name in registry.framework_names()]
    for framework in frameworks:  # five frameworks at 80 columns: long words fold, never cut
        devices.add_column(framework.name, overflow="fold")
    for platform in registry.platforms().values():
        devices.add_row(
            platform.name, *(plain(f.unavailable_reason(platform) or "yes") for f in frameworks)
        )
    console.print(devices)
    console.print("frameworks: " + ", ".join(registry.framework_names()))
    return 0
