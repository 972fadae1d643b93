"""The tables of a run's searches and Runners: the largest batch (or sequence) that
trains, bench ladder's rungs and bench tune's rounds."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from bench import registry
from bench.report.headings import takes_images, title
from bench.result import MaxBatch, Point, Result, point_axes
from bench.stats.estimate import Estimate
from bench.util.text import plain
from bench.util.units import format_bytes, human


def max_batch_table(result: Result) -> Table:
    """The searches of a run: the largest batch that trains, or (--find-max-seq-len) the
    longest sequence that trains at the config's one batch size."""
    config = result.config
    by_length = any(s.axis == "seq_len" for s in result.max_batch)
    what = "sequence length" if by_length else "batch"
    at = f" at batch {config.batch_sizes[0]}" if by_length else ""
    name = f"largest {what} that trains{at}"
    table = Table(title=plain(f"{title(result)} · {name}"), title_justify="left")
    images = takes_images(result)  # a token workload's searches have no memory format
    for column in ("precision", "memory format", "compile") if images else ("precision", "compile"):
        table.add_column(column)
    table.add_column("largest seq len" if by_length else "largest batch", justify="right")
    table.add_column("first failing", justify="right")
    table.add_column("peak memory\nat largest", justify="right")
    table.add_column("probes", justify="right")
    table.add_column("note")
    for search in result.max_batch:
        length = search.axis == "seq_len"
        at_largest = next(
            (p.peak_memory_bytes for p in search.probes
             if (p.seq_len if length else p.batch_size) == search.largest_ok),
            None,
        )  # fmt: skip
        note = search.error or ""
        if search.status == "done" and search.largest_ok is None:
            smallest = "sequence length 1" if length else "batch 1"
            note = search.error or f"even {smallest} does not fit"  # the floor says why
        elif search.status == "done" and search.first_failing is None:
            longest = registry.workload(config.workload).max_seq_len
            limit = f"{config.workload}'s longest, {longest}" if length else config.max_batch_limit
            note = f"reached the search limit ({limit})"
        elif (
            search.largest_ok
            and search.first_failing
            and search.first_failing - search.largest_ok > 1
        ):
            steps = f"steps of {search.resolution}"
            if length and search.largest_ok < search.resolution:
                steps = f"halvings below {search.resolution}"
            note = f"searched in {steps}: the largest lies in between"
        row = [
            search.precision,
            *([search.memory_format] if images else []),
            search.compile or "none",
            search.display,
            str(search.first_failing or ""),
            format_bytes(at_largest) if at_largest else "",
            _probes(search),
            note,
        ]
        table.add_row(*map(plain, row))
    return table


def _probes(search: MaxBatch) -> str:
    """'7 in 71 s': how many probes, and their time where every probe's is known
    (schema 16 on); the count alone before."""
    known = [p.seconds for p in search.probes if p.seconds is not None]
    if not known or len(known) < len(search.probes):
        return str(len(search.probes))
    return f"{len(known)} in {sum(known):.0f} s"


def ladder_rows(result: Result) -> list[tuple[dict[str, Any], Estimate | None, float | None]]:
    """Each rung of bench ladder with its throughput (None: skipped, or failed) and its
    speed over the baseline rung; the table and the report's chart read these."""
    rows: list[tuple[dict[str, Any], Estimate | None, float | None]] = []
    base = None
    points: dict[tuple[Any, ...], Point] = {}  # the first point of each config, by its axes
    for p in result.points:
        points.setdefault(point_axes(p), p)
    for rung in result.ladder:
        point = points.get(point_axes(rung["point"]))
        tp = point.throughput if point and rung["kept"] is not None else None
        base = base or tp
        rows.append((rung, tp, tp.value / base.value if tp and base else None))
    return rows


def _rate(value: float) -> str:
    """A rung's rate: whole above a thousand (434,142 tokens/s), else two decimals."""
    return f"{value:,.0f}" if value >= 1000 else f"{value:,.2f}"


def ladder_table(result: Result) -> Table:
    """bench ladder: each rung, its throughput, its speed over the baseline (the Xeon CPU
    training study's table), whether it was kept and why."""
    price = (result.pricing or {}).get("usd_per_hour")
    # In the workload's own unit where it has one (a decoder's tokens/s, the figure LLM
    # training is quoted in): every rung trains the same sequence length.
    scale, unit = 1.0, "samples"
    natural = next((u for p in result.points if (u := p.unit_throughput)), None)
    first = next((p.throughput for p in result.points if p.throughput), None)
    if natural and first and first.value:
        scale, unit = natural[0] / first.value, natural[1].removesuffix("/s")
    caption = None
    if result.status != "complete":
        caption = (f"{result.status}: the rungs after the last one shown were not measured; "
                   "the same command with --resume FILE goes on")  # fmt: skip
    table = Table(title=plain("ladder: each change on top of the best so far"),
                  title_justify="left", caption=caption, caption_justify="left")  # fmt: skip
    for header in ("rung", f"{unit}/s", "95% CI", "x baseline", "kept", "why"):
        table.add_column(header, justify="left" if header in ("rung", "kept", "why") else "right")
    if price:
        table.add_column(f"{unit}/$", justify="right")
    for rung, tp, speedup in ladder_rows(result):
        low, high = (tp.ci95_low, tp.ci95_high) if tp else (None, None)
        cells = [
            rung["rung"],
            _rate(tp.value * scale) if tp else "",
            f"{_rate(low * scale)}–{_rate(high * scale)}"
            if low is not None and high is not None
            else "",
            f"{speedup:.2f}" if speedup is not None else "",
            {True: "yes", False: "no", None: "–"}[rung["kept"]],
            rung["why"],
        ]
        if price:
            cells.append(human(tp.value * scale * 3600 / price) if tp else "")
        table.add_row(*map(plain, cells))
    return table


def tune_table(result: Result) -> Table:
    """bench tune: each round of successive halving, what it probed and its best."""
    table = Table(title=plain("tune: successive halving, the best third of each round goes on"),
                  title_justify="left")  # fmt: skip
    for header in ("round", "steps", "runs", "probed", "ok", "best", "samples/s"):
        table.add_column(header, justify="left" if header == "best" else "right")
    images = takes_images(result)
    for record in (result.tune or {}).get("rounds", []):
        points = [Point.from_json(p) for p in record["points"]]
        ok = [p for p in points if p.throughput]
        best = max(ok, key=lambda p: p.throughput.value, default=None)  # type: ignore[union-attr]
        named = best.label_for(images) if best else ""
        cells = [record["round"], record["steps"], record.get("repeats", 1),
                 f"{len(points)} of {record.get('of', len(points))}", len(ok),
                 named, f"{best.throughput.value:,.1f}" if best else ""]  # type: ignore[union-attr]  # fmt: skip
        table.add_row(*(plain(str(c)) for c in cells))
    return table
