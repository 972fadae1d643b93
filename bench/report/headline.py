"""The page's lead: each machine's best configuration per workload (of one precision
where asked) with its ratio to the baseline's best, its interval and verdict, and how
the two differ; the geometric mean of those ratios over workloads; and the lead's tables
in words (best_table, like_table), which report.md and the page only format."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from bench.report.compare import Comparison
from bench.report.like import differences, families
from bench.report.rows import Cell, RowKey
from bench.report.words import clean, config_label, efficiency, interval, ratio, verdict_words
from bench.result import Point
from bench.stats.estimate import ratio_interval
from bench.stats.verdict import Verdict, judge
from bench.util.units import human


def _in_own_unit(point: Point) -> tuple[float, list[float]] | None:
    """A point's throughput and each repeat's, in its workload's unit where it has one
    (a decoder's tokens/s), else in samples/s."""
    tp = point.throughput
    if tp is None:
        return None
    unit = point.unit_throughput
    scale = unit[0] / tp.value if unit and tp.value else 1.0  # tokens a sample, say
    return tp.value * scale, [v * scale for v in point.repeat_throughputs()]


def _verdict(point: Point, base: Point) -> tuple[float, tuple[float, float] | None, Verdict | None]:
    """The ratio of two points' throughputs in their workload's unit (two decoders' best
    points may differ in tokens a sample), its 95% interval and bench.stats.verdict's words
    (compare's rule: the interval's centre in log space is the ratio judged)."""
    own, other = _in_own_unit(point), _in_own_unit(base)
    if own is None or other is None:  # _best keeps points that trained only
        return math.nan, None, None
    (value, repeats), (base_value, base_repeats) = own, other
    ci = ratio_interval(repeats, base_repeats)
    if ci is None:
        return value / base_value, None, None
    n = min(len(repeats), len(base_repeats))
    why = point.repeats_disagree or base.repeats_disagree
    return value / base_value, ci, judge(math.sqrt(ci[0] * ci[1]), ci, n, disagree=why)


def _best(
    comparison: Comparison, precision: str | None
) -> dict[tuple[str, str], tuple[RowKey, Cell]]:
    """Each machine's fastest configuration of each workload, of one precision where one
    is given: by the workload's own unit where it has one (a decoder's tokens/s: a
    sample of 8,192 tokens is four of 2,048), else by samples/s."""
    best: dict[tuple[str, str], tuple[RowKey, Cell]] = {}
    speed: dict[tuple[str, str], float] = {}
    for key, cells in comparison.rows:
        if precision is not None and key.precision != precision:
            continue
        for machine, cell in zip(comparison.machines, cells, strict=True):
            rate = _rate(cell)
            at = (key.workload, machine.label)
            if rate is not None and rate > speed.get(at, -1.0):
                best[at], speed[at] = (key, cell), rate
    return best


def _rate(cell: Cell) -> float | None:
    """What _best ranks by: the point's throughput in its workload's unit, or samples/s."""
    if cell.throughput is None:
        return None
    unit = cell.point.unit_throughput if cell.point is not None else None
    return unit[0] if unit else cell.throughput.value


def headline(
    comparison: Comparison,
    point_ids: dict[tuple[str, RowKey], int],
    precision: str | None = None,
) -> list[dict[str, Any]]:
    """Per workload and machine: its best configuration (of `precision`, where given),
    throughput with its interval, and the ratio to the baseline's best of that workload,
    with its interval and verdict."""
    best, base = _best(comparison, precision), comparison.baseline
    by_label = {m.label: m for m in comparison.machines}
    rows = []
    for (workload, label), (key, cell) in best.items():
        tp, point = cell.throughput, cell.point
        if tp is None or point is None:
            continue
        record: dict[str, Any] = {
            "scope": precision or "all",
            "workload": workload,
            "machine": label,
            "config": config_label(key),
            "precision": key.precision,
            "framework": ", ".join(cell.frameworks) or None,
            "baseline": label == base.label,
            "tp": tp.value,
            "tp_lo": tp.ci95_low,
            "tp_hi": tp.ci95_high,
            "n": tp.n,
            "point": point_ids.get((label, key)),
            **efficiency(point, by_label[label]),
        }
        if point.unit_throughput is not None:  # a decoder's tokens/s beside its samples/s
            record["unit_tp"], record["unit"] = point.unit_throughput
        base_best = best.get((workload, base.label))
        if label == base.label:
            record["verdict"] = "baseline"
        elif base_best is not None and base_best[1].point is not None:
            base_point = base_best[1].point
            ratio, ci, verdict = _verdict(point, base_point)
            record.update(rel=ratio, rel_lo=ci[0] if ci else None, rel_hi=ci[1] if ci else None)
            repeats = len(point.repeat_throughputs()), len(base_point.repeat_throughputs())
            record["verdict"] = verdict.word if verdict else "one run"
            record["pairs"] = verdict and min(repeats)
            record["sentence"] = verdict_words(ratio, verdict, repeats)
            differs = differences(key, base_best[0])
            if families(cell) != families(base_best[1]):
                differs += f"; {', '.join(sorted(families(cell)))} (baseline: " + (
                    f"{', '.join(sorted(families(base_best[1])))})"
                )
            record["differs"] = differs
        else:  # a blank ratio said nothing of why
            record["sentence"] = f"no ratio: the baseline ran no {workload} configuration" + (
                f" in {precision}" if precision else ""
            )
        rows.append(clean(record))
    rows.sort(key=lambda r: (r["workload"], not r["baseline"], -r["tp"]))
    return rows


def geometric_mean(
    headline_rows: list[dict[str, Any]], machines: list[str]
) -> list[dict[str, Any]]:
    """Per machine, the geometric mean over workloads of its best-to-baseline ratios.

    Its interval: each workload's ratio interval read as a normal interval in log
    space (centre and half-width), the workloads independent: the half-widths added in
    quadrature and divided by the count of workloads. A machine with any workload of
    one run has no interval, and says so."""
    by_machine: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in headline_rows:
        if "rel" in row:
            by_machine[row["machine"]].append(row)
    out = []
    for label in machines:
        rows = by_machine.get(label)
        if not rows:
            continue
        k = len(rows)
        ratio = math.exp(sum(math.log(r["rel"]) for r in rows) / k)
        record: dict[str, Any] = {
            "scope": rows[0]["scope"],
            "machine": label,
            "workloads": k,
            "rel": ratio,
        }
        if all("rel_lo" in r for r in rows):
            centre = sum(math.log(r["rel_lo"] * r["rel_hi"]) / 2 for r in rows) / k
            half = math.sqrt(sum((math.log(r["rel_hi"] / r["rel_lo"]) / 2) ** 2 for r in rows)) / k
            ci = (math.exp(centre - half), math.exp(centre + half))
            # judge wants the ratio inside its interval: the interval's own centre.
            verdict = judge(math.exp(centre), ci, min(r.get("pairs", 1) for r in rows))
            record.update(rel_lo=ci[0], rel_hi=ci[1], verdict=verdict.word)
            record["sentence"] = verdict_words(ratio, verdict)
        else:
            record["verdict"] = "no interval"
            record["sentence"] = "no interval: a workload of one run"
        out.append(clean(record))
    return out


LIKE_HEADERS = [
    "workload",
    "machine",
    "configuration both ran",
    "throughput (samples/s) [95% interval]",
    "the baseline's [95% interval]",
    "vs the baseline [95% interval]",
    "verdict",
    "per dollar · per joule",
    "configurations shared",
]
LIKE_NOTE = (
    "Each machine against the baseline on a configuration both ran (the same workload, "
    "batch, precision, format, compiler, setup and framework version family), the one "
    "where the baseline is fastest: hardware against hardware, as MLPerf's closed "
    "division. Each machine's best configuration, tuned, is the table after this one."
)
BEST_NOTE = (
    "Each machine's fastest configuration of each workload against the baseline's "
    "fastest: hardware and tuning together, as MLPerf's open division; the last column "
    "names how the two configurations differ."
)
BEST_HEADERS = [
    "workload",
    "machine",
    "best configuration",
    "throughput (samples/s) [95% interval]",
    "per dollar · per joule",
    "vs the baseline [95% interval]",
    "verdict",
    "differs from the baseline's best",
]


def best_table(
    headline_rows: list[dict[str, Any]], several: bool, markdown: bool = False
) -> tuple[list[str], list[list[str]]]:
    """The lead table, each machine's best configuration per workload (of every precision),
    as headers and cells of words; with one machine, nothing to be relative to. `markdown`:
    report.md's, whose headers say '[95%]' and whose throughput a decoder's tokens/s
    follows (the page's script adds those itself)."""
    headers = BEST_HEADERS if several else BEST_HEADERS[:5]
    if markdown:
        headers = [h.replace("[95% interval]", "[95%]") for h in headers]
    body = []
    for r in headline_rows:
        if r["scope"] != "all":
            continue
        tp = interval(r["tp"], r.get("tp_lo"), r.get("tp_hi"))
        if markdown and "unit_tp" in r:  # the figure LLM users quote, beside samples/s
            tp += f" · {human(r['unit_tp'])} {r['unit']}"
        line = [r["workload"], r["machine"], r["config"], tp, r.get("eff_text", "")]
        if several:
            line += [ratio(r), r.get("sentence", ""), r.get("differs", "")]
        body.append(line)
    return headers, body


def like_table(like_rows: list[dict[str, Any]]) -> list[list[str]]:
    """Like with like, each machine against the baseline on a configuration both ran, as
    cells of words under LIKE_HEADERS."""
    return [
        [
            r["workload"],
            r["machine"],
            r.get("config", ""),
            interval(r["tp"], r.get("tp_lo"), r.get("tp_hi")) if "tp" in r else "",
            interval(r["base_tp"], r.get("base_lo"), r.get("base_hi")) if "base_tp" in r else "",
            ratio(r),
            r.get("sentence", ""),
            r.get("eff_text", ""),
            r.get("shared_text", ""),
        ]
        for r in like_rows
    ]
