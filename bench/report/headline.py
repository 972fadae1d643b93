"""The page's lead: first like with like, each machine against the baseline on a
configuration both ran (the same workload, batch, precision, memory format, compiler,
setup and framework version family), as MLPerf's closed division keeps hardware apart
from tuning; then each machine's best configuration per workload (of one precision where
asked) with its ratio to the baseline's best, its interval and verdict, and how the two
differ; the geometric mean of those ratios over workloads; and the lead's tables in
words (best_table, like_table), which report.md and the page only format."""

from __future__ import annotations

import math
import re
import shlex
from collections import defaultdict
from typing import Any

from bench.report.compare import Comparison
from bench.report.rows import Cell, RowKey
from bench.report.words import clean, config_label, efficiency, interval, ratio, verdict_words
from bench.result import Point, Result
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


# Like with like: the report's first answer compares each machine with the baseline on
# a configuration both ran (the same workload, batch, precision, memory format, compiler,
# setup and framework version family), as MLPerf's closed division keeps hardware apart
# from tuning. Each machine's best (tuned) configuration is the second view, the ways it
# differs from the baseline's best named in its row: 'H200 1.25x faster' compared the
# H200's tuned best (inductor:reduce-overhead, fused SGD) with the H100's plain inductor,
# where on the one configuration both ran the ratio is 1.19x.
#
# Where a machine shares no configuration with the baseline the row says so and which
# command would make one.

_AXES = ("batch", "precision", "format", "compile", "setup")


def family(res: Result) -> str:
    """A run's framework and its major.minor version ('torch 2.11'): two minor versions
    of one framework are two software stacks, their patch releases one."""
    name = res.config.framework
    framework = (res.environment or {}).get("framework")
    version = framework.get(name) if isinstance(framework, dict) else None
    found = re.match(r"\d+\.\d+", version) if isinstance(version, str) else None
    return f"{name} {found.group()}" if found else name


def families(cell: Cell) -> frozenset[str]:
    return frozenset(family(res) for _, res, _ in cell.runs)


def differences(key: RowKey, base_key: RowKey) -> str:
    """How one configuration differs from the baseline's: 'compile inductor:reduce-
    overhead (baseline: inductor); setup optimize=fused (baseline: default)'."""
    named = []
    for axis, own, base in zip(_AXES, key[1:], base_key[1:], strict=True):
        if own != base:
            named.append(f"{axis} {own or 'none'} (baseline: {base or 'none'})")
    return "; ".join(named) or "the same configuration"


def like_with_like(
    comparison: Comparison, commands: list[str], point_command: dict[tuple[str, Any], int]
) -> list[dict[str, Any]]:
    """Per workload and machine other than the baseline: the configuration both ran in
    one framework version family where the baseline is fastest, with the ratio, its
    interval and verdict, and how many configurations the two share; else a row saying
    they share none and what to run. `point_command`: (machine, row key) -> an index
    into `commands`."""
    base = comparison.baseline
    at = comparison.machines.index(base)
    by_workload: dict[str, list[tuple[RowKey, list[Cell]]]] = {}
    for key, cells in comparison.rows:
        by_workload.setdefault(key.workload, []).append((key, cells))
    rows: list[dict[str, Any]] = []
    for workload, lines in by_workload.items():
        for i, machine in enumerate(comparison.machines):
            if machine is base:
                continue
            own = [(k, c[i]) for k, c in lines if c[i].throughput is not None]
            if not own:
                continue
            theirs = [(k, c[at]) for k, c in lines if c[at].throughput is not None]
            both = [
                (k, c[i], c[at])
                for k, c in lines
                if c[i].throughput is not None and c[at].throughput is not None
            ]
            # Of one framework version family where any is; else the same configuration
            # in another version, said in the row.
            shared = [s for s in both if families(s[1]) == families(s[2])] or both
            record: dict[str, Any] = {
                "workload": workload,
                "machine": machine.label,
                "framework": ", ".join(c.frameworks[0] for _, c in own[:1]) or None,
                "configs": len({k for k, _ in own} | {k for k, _ in theirs}),
                "shared": len(shared),
            }
            if not shared:
                record.update(_none_shared(machine.label, base.label, own, theirs, commands,
                                           point_command))  # fmt: skip
                rows.append(record)
                continue
            key, cell, base_cell = max(shared, key=lambda s: s[2].throughput.value)  # type: ignore[union-attr]
            tp, base_tp = cell.throughput, base_cell.throughput
            assert tp is not None and base_tp is not None and cell.relative is not None
            record.update(
                config=_config(key),
                precision=key.precision,
                tp=tp.value,
                tp_lo=tp.ci95_low,
                tp_hi=tp.ci95_high,
                base_tp=base_tp.value,
                base_lo=base_tp.ci95_low,
                base_hi=base_tp.ci95_high,
                rel=cell.relative,
                rel_lo=cell.relative_ci95[0] if cell.relative_ci95 else None,
                rel_hi=cell.relative_ci95[1] if cell.relative_ci95 else None,
                verdict=cell.verdict.word if cell.verdict else "one run",
                sentence=verdict_words(cell.relative, cell.verdict, (tp.n, base_tp.n)),
                cmd=point_command.get((machine.label, key)),
            )
            if cell.point is not None:
                record.update(efficiency(cell.point, machine))
            if families(cell) != families(base_cell):
                record["sentence"] += (
                    f"; in {', '.join(sorted(families(cell)))}, the baseline in "
                    f"{', '.join(sorted(families(base_cell)))}"
                )
            record["shared_text"] = f"{len(shared)} of {record['configs']}"
            rows.append(record)
    return rows


def _config(key: RowKey) -> str:
    return config_label(key)


def _without_output(command: str) -> str:
    """A recorded command to run elsewhere: its --output-dir was the other machine's folder
    (the result goes to ./results without it)."""
    try:
        words = shlex.split(command)
    except ValueError:  # not as shlex.join wrote it: shown as recorded
        return command
    kept: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word == "--output-dir":
            skip = True
        elif not word.startswith("--output-dir="):
            kept.append(word)
    return shlex.join(kept)


def _none_shared(
    label: str,
    base_label: str,
    own: list[tuple[RowKey, Cell]],
    theirs: list[tuple[RowKey, Cell]],
    commands: list[str],
    point_command: dict[tuple[str, Any], int],
) -> dict[str, Any]:
    """What to run where two machines share no configuration of a workload: the
    baseline's fastest configuration on this machine, or (where the baseline never ran
    the workload) this machine's fastest on the baseline."""
    if theirs:
        key, _ = max(theirs, key=lambda kc: kc[1].throughput.value)  # type: ignore[union-attr]
        where, who = "on this machine", base_label
    else:
        key, _ = max(own, key=lambda kc: kc[1].throughput.value)  # type: ignore[union-attr]
        where, who = "on the baseline", label
    index = point_command.get((who, key))
    command = _without_output(commands[index]) if index is not None else _config(key)
    why = "shares no configuration with the baseline" if theirs else "the baseline never ran it"
    return {
        "verdict": "none shared",
        "sentence": f"{why}: run {command} {where}",
        "shared_text": f"0 of {len({k for k, _ in own} | {k for k, _ in theirs})}",
    }
