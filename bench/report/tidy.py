"""The report's one tidy table: every measured point a row (machine, configuration,
figures, interval, verdict, the bench command that made it), and the few small tables
derived from it that the page leads with (each machine's best configuration per
workload, the geometric mean over workloads) or draws beside it (history, ladders,
accuracy curves, largest batches).

Aggregated: a row per cell of the comparison (a point's repeats and steps folded into
its estimate), never per step, so that 10,000 result files make a page of kilobytes
per machine. Text from result files is made visible here (control characters as
\\xNN); the page escapes it again for HTML and for the JSON it embeds.
"""

from __future__ import annotations

import math
import shlex
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.changepoint import Step
from bench.report import inventory
from bench.report.colours import machine_colours
from bench.report.compare import (
    Cell,
    Comparison,
    Machine,
    sequence_length,
)
from bench.report.like import differences, families, like_with_like
from bench.report.moe import Experts
from bench.report.table import ladder_rows
from bench.report.words import config_label, efficiency, verdict_words
from bench.result import Point, Result
from bench.stats import ratio_interval
from bench.text import visible
from bench.verdict import Verdict, judge

NO_COMMAND = "not recorded in the result (bench rerun FILE runs its config again)"


@dataclass
class Tidy:
    """What the page embeds: lists of flat records (None fields left out)."""

    points: list[dict[str, Any]] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)  # a point's "cmd" indexes this
    headline: list[dict[str, Any]] = field(default_factory=list)
    like: list[dict[str, Any]] = field(default_factory=list)  # bench.report.like
    coverage: list[dict[str, Any]] = field(default_factory=list)  # bench.report.inventory
    inventory: list[dict[str, Any]] = field(default_factory=list)  # a row per machine
    geomean: list[dict[str, Any]] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)
    history_note: str = ""  # what the history leaves out, if anything
    ladder: list[dict[str, Any]] = field(default_factory=list)
    curves: list[dict[str, Any]] = field(default_factory=list)
    loss_curves: list[dict[str, Any]] = field(default_factory=list)
    loss_note: str = ""  # what the loss curves leave out, if anything
    max_batch: list[dict[str, Any]] = field(default_factory=list)
    # Every machine of the page, in its order, and its colour on every chart.
    machines: list[str] = field(default_factory=list)
    colours: dict[str, str] = field(default_factory=dict)  # bench.report.colours

    def as_data(self) -> dict[str, Any]:
        return {
            name: getattr(self, name)
            for name in self.__dataclass_fields__
            if name not in ("machines", "colours")
        }


def command_text(res: Result, path: Path) -> str:
    """The command line that made a result, as a shell would take it back."""
    if not res.command:
        return visible(f"{NO_COMMAND.replace('FILE', shlex.quote(path.name))}")
    return visible(shlex.join(str(part) for part in res.command))


def _clean(record: dict[str, Any]) -> dict[str, Any]:
    """No None, no NaN or infinity (JSON has none); text made visible."""
    out = {}
    for name, value in record.items():
        if value is None or (isinstance(value, float) and not math.isfinite(value)):
            continue
        out[name] = visible(value) if isinstance(value, str) else value
    return out


class _Commands:
    """Each distinct command once: thousands of points share a few hundred commands."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self._index: dict[str, int] = {}

    def index(self, text: str) -> int:
        if text not in self._index:
            self._index[text] = len(self.texts)
            self.texts.append(text)
        return self._index[text]


def _latest_run(cell: Cell) -> tuple[Path, Result, Point] | None:
    """The run a cell's figures and command come from: the latest that trained (a cell
    pools the repeats of every run of its configuration on its machine)."""
    source = cell.source
    for path, res, p in reversed(cell.runs):
        if source is not None and (path, res) == source:
            return path, res, p
    return None


def _point_record(
    key: tuple[Any, ...],
    cell: Cell,
    machine: Machine,
    base: Machine,
    run: tuple[Path, Result],
    base_repeats: int = 0,
) -> dict[str, Any]:
    p = cell.point
    path, res = run
    if p is None:
        return {}
    tp = cell.throughput
    energy = p.energy_summary if tp else None
    per_device = p.unit_throughput_per_device if tp else None
    total = p.unit_throughput if tp else None
    epoch = p.epoch_time if tp else None
    reached = p.to_accuracy if tp else None
    price = machine.price_per_hour
    workload, batch, precision, fmt, compiler, setup = key
    record = {
        "machine": machine.label,
        "framework": ", ".join(cell.frameworks) or res.config.framework,
        "runs": len(cell.runs),
        "baseline": machine is base,
        "workload": workload,
        "config": config_label(key),
        "batch": batch,
        "precision": precision,
        "format": fmt,
        "compile": compiler,
        "setup": setup or None,
        "devices": p.devices_trained,
        "checkpointing": p.activation_checkpointing,
        "status": p.status,
        "error": p.error_line if p.status != "ok" else None,
        "tp": tp.value if tp else None,
        "tp_lo": tp.ci95_low if tp else None,
        "tp_hi": tp.ci95_high if tp else None,
        "n": tp.n if tp else None,
        "rel": cell.relative if machine is not base else None,
        "rel_lo": cell.relative_ci95[0] if cell.relative_ci95 else None,
        "rel_hi": cell.relative_ci95[1] if cell.relative_ci95 else None,
        "mark": cell.mark or None,
        "verdict": cell.verdict.word if cell.verdict else None,
        "sentence": verdict_words(cell.relative, cell.verdict, (tp.n if tp else 0, base_repeats))
        if cell.relative is not None and machine is not base
        else None,
        "date": res.started[:19] or None,
        "file": path.name,
        "epoch_s": epoch.mean if epoch else None,
        "energy_epoch_j": energy.per_epoch_j if energy else None,
        "energy_sample_j": energy.per_sample_j if energy else None,
        "spj": energy.samples_per_joule if energy else None,
        "usd_h": price,
        "usd_per_m": price / (tp.value * 3600) * 1e6 if price and tp else None,
        "unit_tp": total[0] if total else None,
        "unit": total[1] if total else None,
        "unit_per_device": per_device[0] if per_device else None,
        "usd_per_m_units": price / (total[0] * 3600) * 1e6 if price and total else None,
        "mfu": p.mfu if p.mfu is not None else cell.mfu,
        "peak_mem": p.peak_memory,
        "seq_len": sequence_length(res),
        "top1": reached.best_top1 if reached else None,
        "tta_s": reached.time_to_target_s if reached else None,
        "cta_usd": reached.cost_to_target(price) if reached else None,
        "epochs_to_target": reached.epochs_to_target if reached else None,
        **_experts_fields(Experts.of(p) if tp else None),
    }
    return _clean(record)


def _experts_fields(experts: Experts | None) -> dict[str, Any]:
    """A mixture of experts' figures (bench.report.moe): `experts` marks its rows (the
    MoE view's), `a2a` the all-to-all's share of the step (0 where there is none)."""
    if experts is None:
        return {}
    words = (experts.all_to_all_text(), experts.balance_text(), experts.dropped_text())
    return {
        "experts": experts.experts,
        "expert_parallel": experts.expert_parallel,
        "a2a": experts.all_to_all_share if experts.exchanged else 0.0,
        "balance": experts.balance,
        "dropped_share": experts.dropped_share,
        "matmuls": experts.matmuls,
        "experts_text": " · ".join(words),
    }


def _efficiencies(comparison: Comparison) -> dict[int, float | None]:
    """Scaling efficiency (throughput over N times one device's, of the run's own
    one-device point) by the identity of a run's point."""
    found: dict[int, float | None] = {}
    results = {id(res): res for _, cells in comparison.rows for c in cells for _, res, _ in c.runs}
    for res in results.values():
        if any(p.devices > 1 for p in res.points):  # one device: 1 by definition
            efficiency = [
                1.0 if p.devices == 1 else e
                for p, e in zip(res.points, res.scaling_efficiencies(), strict=True)
            ]
            found.update(zip(map(id, res.points), efficiency, strict=True))
    return found


def points(
    comparison: Comparison, commands: _Commands, ids: dict[tuple[str, tuple[Any, ...]], int]
) -> list[dict[str, Any]]:
    """One record per cell that holds a point; `ids` gets each (machine, row key)'s id."""
    efficiency = _efficiencies(comparison)
    rows: list[dict[str, Any]] = []
    at = comparison.machines.index(comparison.baseline)
    for key, cells in comparison.rows:
        base_tp = cells[at].throughput
        for machine, cell in zip(comparison.machines, cells, strict=True):
            run = _latest_run(cell)
            if cell.point is None or run is None:
                continue
            path, res, own = run
            record = _point_record(
                key, cell, machine, comparison.baseline, (path, res), base_tp.n if base_tp else 0
            )
            record["cmd"] = commands.index(command_text(res, path))
            if efficiency.get(id(own)) is not None:
                record["scaling"] = efficiency[id(own)]
            record["id"] = ids[(machine.label, key)] = len(rows)
            rows.append(record)
    return rows


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
    points may differ in tokens a sample), its 95% interval and bench.verdict's words
    (compare's rule: the interval's centre in log space is the ratio judged)."""
    own, other = _in_own_unit(point), _in_own_unit(base)
    if own is None or other is None:  # _best keeps points that trained only
        return math.nan, None, None
    (value, repeats), (base_value, base_repeats) = own, other
    ci = ratio_interval(repeats, base_repeats)
    if ci is None:
        return value / base_value, None, None
    n = min(len(repeats), len(base_repeats))
    return value / base_value, ci, judge(math.sqrt(ci[0] * ci[1]), ci, n)


def _best(
    comparison: Comparison, precision: str | None
) -> dict[tuple[str, str], tuple[tuple[Any, ...], Cell]]:
    """Each machine's fastest configuration of each workload, of one precision where one
    is given: by the workload's own unit where it has one (a decoder's tokens/s: a
    sample of 8,192 tokens is four of 2,048), else by samples/s."""
    best: dict[tuple[str, str], tuple[tuple[Any, ...], Cell]] = {}
    speed: dict[tuple[str, str], float] = {}
    for key, cells in comparison.rows:
        if precision is not None and key[2] != precision:
            continue
        for machine, cell in zip(comparison.machines, cells, strict=True):
            rate = _rate(cell)
            at = (key[0], machine.label)
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
    point_ids: dict[tuple[str, tuple[Any, ...]], int],
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
            "precision": key[2],
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
        rows.append(_clean(record))
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
        out.append(_clean(record))
    return out


HISTORY_ROWS = 3000  # the most history rows the page embeds
DAILY_AFTER = 60  # a series with more runs than this is embedded as one row a day


def history(comparison: Comparison, commands: _Commands) -> tuple[list[dict[str, Any]], str]:
    """Every run pooled into a cell, where the cell's runs were measured at two times or
    more: one configuration of one machine over time (a run's start is its date), and a
    line saying what was left out. A series of many runs is one row a day (the mean of
    that day's runs, the band from the lowest to the highest bound); at most
    HISTORY_ROWS rows, the baseline's series first, then those measured on most days."""
    found: list[tuple[tuple[bool, int], list[dict[str, Any]]]] = []
    stepped = {(s.machine, s.key, s.after[1], s.after[0]): s.step for s in comparison.steps[0]}
    for key, cells in comparison.rows:
        for machine, cell in zip(comparison.machines, cells, strict=True):
            runs = [
                (path, res, tp)
                for path, res, p in cell.runs
                if res.started and (tp := p.throughput if p.status == "ok" else None)
            ]
            if len({res.started[:19] for _, res, _ in runs}) < 2:
                continue
            base = {
                "machine": machine.label,
                "workload": key[0],
                "config": config_label(key),
                "precision": key[2],
            }
            series = [
                {
                    **base,
                    "framework": res.config.framework,
                    "date": res.started[:19],
                    "tp": tp.value,
                    "tp_lo": tp.ci95_low,
                    "tp_hi": tp.ci95_high,
                    "runs": 1,
                    "cmd": commands.index(command_text(res, path)),
                    "file": path.name,
                    **_step_fields(stepped.get((machine.label, key, str(path), res.started))),
                }
                for path, res, tp in runs
            ]
            if len(series) > DAILY_AFTER:
                series = _daily(series)
            days = len({r["date"][:10] for r in series})
            found.append(((machine is not comparison.baseline, -days), series))
    rows: list[dict[str, Any]] = []
    found.sort(key=lambda f: f[0])
    kept = 0
    for _, series in found:
        if rows and len(rows) + len(series) > HISTORY_ROWS:
            break
        rows += [_clean(r) for r in series]
        kept += 1
    note = ""
    if kept < len(found):
        note = (
            f"The {kept} of {len(found)} histories measured on the most days (the "
            "baseline's first); bench compare --format json holds every run's figures."
        )
    return rows, note


def _step_fields(step: Step | None) -> dict[str, Any]:
    """The first run after a step (bench.report.steps) carries it: the history view
    draws a rule there, its words in the tooltip."""
    if step is None:
        return {}
    return {"step": step.sentence(), "step_ratio": step.ratio}


_STEP = ("step", "step_ratio")  # a history row's step (_step_fields)


def _daily(series: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row a day: the mean of the day's runs, the band from the lowest to the
    highest bound among them, the latest run's command and file, and a step that began
    that day."""
    days: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in series:
        days[r["date"][:10]].append(r)
    out = []
    for day, runs in sorted(days.items()):
        lows = [r["tp_lo"] for r in runs if r["tp_lo"] is not None]
        highs = [r["tp_hi"] for r in runs if r["tp_hi"] is not None]
        row: dict[str, Any] = {k: v for k, v in runs[-1].items() if k not in _STEP}
        stepped = next((r for r in runs if "step" in r), None)
        if stepped is not None:
            row.update((k, stepped[k]) for k in _STEP)
        row.update(
            date=f"{day}T12:00:00",
            tp=sum(r["tp"] for r in runs) / len(runs),
            tp_lo=min(lows, default=None),
            tp_hi=max(highs, default=None),
            runs=len(runs),
        )
        out.append(row)
    return out


def ladders(comparison: Comparison) -> list[dict[str, Any]]:
    """bench ladder's rungs: each one's throughput over the baseline rung."""
    rows = []
    for m in comparison.machines:
        for _, res in m.results:
            for step, (rung, tp, speedup) in enumerate(ladder_rows(res)):
                rows.append(
                    _clean(
                        {
                            "machine": m.label,
                            "workload": res.config.workload,
                            "step": step,
                            "rung": f"{step}. {rung.get('rung')}",
                            "speedup": speedup,
                            "tp": tp.value if tp else None,
                            "kept": bool(rung.get("kept")),
                            "why": rung.get("why") if isinstance(rung.get("why"), str) else None,
                        }
                    )
                )
    return rows


def curves(comparison: Comparison) -> list[dict[str, Any]]:
    """Top-1 after each epoch of points trained to accuracy (the first repeat)."""
    rows = []
    for key, cells in comparison.rows:
        for machine, cell in zip(comparison.machines, cells, strict=True):
            reached = cell.point.to_accuracy if cell.point else None
            if reached is None:
                continue
            for epoch, top1 in enumerate(reached.curve, start=1):
                rows.append(
                    _clean(
                        {
                            "machine": machine.label,
                            "workload": key[0],
                            "config": config_label(key),
                            "precision": key[2],
                            "epoch": epoch,
                            "top1": top1,
                            "target": reached.target,
                        }
                    )
                )
    return rows


LOSS_POINTS = 200  # evaluations of one loss curve the page embeds at most
LOSS_ROWS = 3000  # loss-curve rows the page embeds at most


def thinned(losses: list[float], most: int, keep: tuple[int, ...] = ()) -> list[int]:
    """Which of a curve's evaluations the page draws: every one of a curve of `most` or
    fewer; of a longer one, its first, its last, those in `keep` and, in each of the
    stretches of equal length between, the lowest and the highest loss (a spike or a
    divergence stays drawn: a loss that is not a number counts as the highest). A
    300,000-evaluation curve made a 59 MB page that drew its first 400."""
    n = len(losses)
    if n <= most:
        return list(range(n))
    chosen = {0, n - 1, *(i for i in keep if 0 <= i < n)}
    stretches = max(1, (most - len(chosen)) // 2)

    def height(i: int) -> float:
        return losses[i] if math.isfinite(losses[i]) else math.inf

    for s in range(stretches):
        span = range(s * n // stretches, (s + 1) * n // stretches)
        chosen.update((min(span, key=height), max(span, key=height)))
    return sorted(chosen)


def loss_curves(comparison: Comparison) -> list[dict[str, Any]]:
    """Validation loss at each evaluation of points trained to a target loss (the first
    repeat), against tokens trained and wall seconds (training plus evaluation)."""
    return _loss_curves(comparison)[0]


def _loss_curves(comparison: Comparison) -> tuple[list[dict[str, Any]], str]:
    """The loss curves' rows, each curve thinned to LOSS_POINTS evaluations and the
    whole to LOSS_ROWS rows (the first curves), and a line saying what was left out."""
    rows: list[dict[str, Any]] = []
    curves = drawn = thinned_curves = 0
    for key, cells in comparison.rows:
        for machine, cell in zip(comparison.machines, cells, strict=True):
            reached = cell.point.to_loss if cell.point else None
            if reached is None or not reached.curve:
                continue
            curves += 1
            if drawn < curves - 1:  # the page is full: the curves after it left out
                continue
            losses = [float(entry["loss"]) for entry in reached.curve]
            first = next((i for i, loss in enumerate(losses) if loss <= reached.target), None)
            kept = thinned(losses, LOSS_POINTS, () if first is None else (first,))
            if len(rows) + len(kept) > LOSS_ROWS:
                continue
            drawn += 1
            thinned_curves += len(kept) < len(losses)
            base = {
                "machine": machine.label,
                "workload": key[0],
                "config": config_label(key),
                "precision": key[2],
                "target": reached.target,
            }
            for i in kept:
                entry = reached.curve[i]
                row = {**base, "tokens": entry["tokens"], "wall_s": entry["wall_s"]}
                rows.append(_clean({**row, "loss": entry["loss"], "evaluation": i + 1}))
    notes = []
    if thinned_curves:
        notes.append(
            f"A curve of more than {LOSS_POINTS:,} evaluations is drawn from at most "
            f"{LOSS_POINTS:,} of them: its first, its last, the first at the target and "
            "each stretch's lowest and highest loss."
        )
    if drawn < curves:
        notes.append(
            f"The first {drawn} of {curves} curves; bench compare --format json holds "
            "every point's figures to the target."
        )
    return rows, " ".join(notes)


def max_batches(comparison: Comparison) -> list[dict[str, Any]]:
    """Each machine's largest batch per search; `limit` where the search stopped before
    its answer (at its limit, or interrupted), with `at_least` saying so in words."""
    rows = []
    for key, searches in comparison.max_batch:
        for machine, search in zip(comparison.machines, searches, strict=True):
            if search is None:
                continue
            largest = search.largest_ok or search.trained_so_far or 0
            interrupted = search.status == "running" and bool(search.trained_so_far)
            # '>=N': the search reached its limit, or stopped before its answer
            limit = (search.largest_ok is not None and not search.first_failing) or interrupted
            rows.append(
                _clean(
                    {
                        "machine": machine.label,
                        "workload": key[0],
                        "precision": key[1],
                        "search": key[4] or "largest batch",
                        "largest": largest,
                        "first_failing": search.first_failing,
                        "display": search.display,
                        "limit": limit,
                        # '' where it found its answer: the chart writes each row's
                        "at_least": f"at least {largest}" + (" so far" if interrupted else "")
                        if limit
                        else "",
                    }
                )
            )
    return rows


def tidy(comparison: Comparison) -> Tidy:
    commands = _Commands()
    ids: dict[tuple[str, tuple[Any, ...]], int] = {}
    rows = points(comparison, commands, ids)
    machines = [m.label for m in comparison.machines]
    precisions = sorted({key[2] for key, _ in comparison.rows})
    scopes = [None, *precisions] if len(precisions) > 1 else [None]
    lead = [row for scope in scopes for row in headline(comparison, ids, scope)]
    point_command = {at: rows[i]["cmd"] for at, i in ids.items()}
    like = like_with_like(comparison, commands.texts, point_command)
    means = [
        row
        for scope in scopes
        for row in geometric_mean([r for r in lead if r["scope"] == (scope or "all")], machines)
    ]
    past, past_note = history(comparison, commands)
    loss_rows, loss_note = _loss_curves(comparison)
    made = Tidy(
        points=rows,
        commands=commands.texts,
        headline=lead,
        like=like,
        coverage=inventory.coverage(comparison),
        inventory=inventory.machines_table(comparison),
        geomean=means,
        history=past,
        history_note=past_note,
        ladder=ladders(comparison),
        curves=curves(comparison),
        loss_curves=loss_rows,
        loss_note=loss_note,
        max_batch=max_batches(comparison),
        machines=machines,
        colours=comparison.colours or machine_colours(machines),
    )
    _number_machines(made)
    return made


def _number_machines(t: Tidy) -> None:
    """Each row's machine as a number too (`machine_index`, its place in the page's
    order): charts order bars by it, never by the name, which Vega reads as an object's
    key (a machine named 'toString' stopped every bar chart). The page's script numbers
    them again in the order its legends take."""
    index = {label: i for i, label in enumerate(t.machines)}
    for rows in t.as_data().values():
        for row in rows if isinstance(rows, list) else ():
            if isinstance(row, dict) and "machine" in row:
                row["machine_index"] = index.get(row["machine"], len(index))
