"""The report's one tidy table: every measured point a row (machine, configuration,
figures, interval, verdict, the bench command that made it), and the few small tables
derived from it that the page leads with (each machine's best configuration per
workload, the geometric mean over workloads) or draws beside it (history, ladders,
accuracy and loss curves, largest batches, what each machine ran with which software).

Aggregated: a row per cell of the comparison (a point's repeats and steps folded into
its estimate), never per step, so that 10,000 result files make a page of kilobytes
per machine. Text from result files is made visible here (control characters as
\\xNN); the page escapes it again for HTML and for the JSON it embeds."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from bench.report.compare import Comparison, Machine
from bench.report.headline import geometric_mean, headline, like_with_like
from bench.report.history import DAILY_AFTER, HISTORY_ROWS, history
from bench.report.machines import machine_colours
from bench.report.records import points
from bench.report.rows import RowKey
from bench.report.run_tables import ladder_rows
from bench.report.words import NO_COMMAND, Commands, clean, command_text, config_label
from bench.util.text import visible

# Its parts live apart (the rows, the headline, the history, the curves); each name
# the page and its views read stays importable here.
__all__ = [
    "DAILY_AFTER", "HISTORY_ROWS", "LOSS_POINTS", "LOSS_ROWS", "NO_COMMAND", "Tidy",
    "command_text", "curves", "geometric_mean", "headline", "history", "ladders",
    "loss_curves", "max_batches", "points", "thinned", "tidy",
]  # fmt: skip


@dataclass
class Tidy:
    """What the page embeds: lists of flat records (None fields left out)."""

    points: list[dict[str, Any]] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)  # a point's "cmd" indexes this
    headline: list[dict[str, Any]] = field(default_factory=list)
    like: list[dict[str, Any]] = field(default_factory=list)  # bench.report.headline
    coverage: list[dict[str, Any]] = field(default_factory=list)  # bench.report.tidy
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
    colours: dict[str, str] = field(default_factory=dict)  # bench.report.machines

    def as_data(self) -> dict[str, Any]:
        return {
            name: getattr(self, name)
            for name in self.__dataclass_fields__
            if name not in ("machines", "colours")
        }


def ladders(comparison: Comparison) -> list[dict[str, Any]]:
    """bench ladder's rungs: each one's throughput over the baseline rung."""
    rows = []
    for m in comparison.machines:
        for _, res in m.results:
            for step, (rung, tp, speedup) in enumerate(ladder_rows(res)):
                rows.append(
                    clean(
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
                clean(
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
    commands = Commands()
    ids: dict[tuple[str, RowKey], int] = {}
    rows = points(comparison, commands, ids)
    machines = [m.label for m in comparison.machines]
    precisions = sorted({key.precision for key, _ in comparison.rows})
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
    loss_rows, loss_note = loss_curves_noted(comparison)
    made = Tidy(
        points=rows,
        commands=commands.texts,
        headline=lead,
        like=like,
        coverage=coverage(comparison),
        inventory=machines_table(comparison),
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


# The curves the page draws: top-1 after each epoch of points trained to an
# accuracy, and the validation loss of points trained to a loss, a long curve thinned.


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
                    clean(
                        {
                            "machine": machine.label,
                            "workload": key.workload,
                            "config": config_label(key),
                            "precision": key.precision,
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
    return loss_curves_noted(comparison)[0]


def loss_curves_noted(comparison: Comparison) -> tuple[list[dict[str, Any]], str]:
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
                "workload": key.workload,
                "config": config_label(key),
                "precision": key.precision,
                "target": reached.target,
            }
            for i in kept:
                entry = reached.curve[i]
                row = {**base, "tokens": entry["tokens"], "wall_s": entry["wall_s"]}
                rows.append(clean({**row, "loss": entry["loss"], "evaluation": i + 1}))
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


# What the report compared: each machine's software and settings (accelerator, driver,
# CUDA or ROCm, framework versions, power limit, image), and which machine ran which
# configurations of each workload. Without them an H100 and an H200 sharing 1 of 28
# configurations, or a CPU in torch 2.14 beside GPUs in 2.11, read as like with like.
#
# Every value comes from a result file: any JSON type, any length. A value is shown only
# where it is text or a number, made visible, cut to CHARS characters, and a field lists
# at most DISTINCT distinct values ('and 3 more').

CHARS, DISTINCT, NAMES = 80, 4, 6


def _text(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    text = visible(str(value))
    return text if len(text) <= CHARS else text[: CHARS - 1] + "…"


def _listed(values: list[Any]) -> str:
    """Distinct values in order of first sight, at most DISTINCT of them."""
    seen = list(dict.fromkeys(t for v in values if (t := _text(v)) is not None))
    more = len(seen) - DISTINCT
    return ", ".join(seen[:DISTINCT]) + (f" and {more} more" if more > 0 else "")


def _section(env: Any, name: str) -> dict[str, Any]:
    found = env.get(name) if isinstance(env, dict) else None
    return found if isinstance(found, dict) else {}


def _flat(value: Any) -> list[Any]:
    return list(value[:16]) if isinstance(value, list) else [value]


def machine_record(machine: Machine) -> dict[str, Any]:
    """One row of the machines table, from every result of the machine."""
    envs = [res.environment for _, res in machine.results]
    accelerators, drivers, runtimes, frameworks, power, images, cpus = ([] for _ in range(7))
    for env in envs:
        acc, fw = _section(env, "accelerator"), _section(env, "framework")
        name, count = acc.get("accelerator"), acc.get("accelerator_count")
        if _text(name) and isinstance(count, int) and not isinstance(count, bool):
            accelerators.append(f"{_text(name)} x {count}" if count > 1 else _text(name))
        drivers.append(acc.get("driver_version"))
        # The runtime the accelerator ran (a CPU's torch build names a CUDA it never used).
        keys = ("cuda_runtime", "torch_cuda", "torch_hip", "rocm") if name else ()
        for key in keys:
            if _text(acc.get(key) or fw.get(key)):
                runtime = "ROCm" if key in ("torch_hip", "rocm") else "CUDA"
                runtimes.append(f"{runtime} {_text(acc.get(key) or fw.get(key))}")
                break
        framework = _text(fw.get("name"))
        if framework:
            version = _text(fw.get(framework))
            frameworks.append(f"{framework} {version}" if version else framework)
        nvml = _section(acc, "nvml")
        power += [f"{w:g} W" for w in _flat(nvml.get("power_limit_w")) if _number(w)]
        images.append(_image(env))
        cpu = _section(env, "cpu")
        cores = cpu.get("affinity_cores") or cpu.get("logical_cores")
        if _text(cpu.get("model")):
            cpus.append(
                f"{_text(cpu.get('model'))}" + (f", {cores} cores" if _number(cores) else "")
            )
    return {
        "machine": machine.label,
        "accelerator": _listed(accelerators) or "none (CPU)",
        "driver": _listed(drivers),
        "runtime": _listed(runtimes),
        "frameworks": _listed(frameworks),
        "power_limit": _listed(power),
        "image": _listed(images) or "none",
        "cpu": _listed(cpus),
        "results": len(machine.results),
    }


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == value


def _image(env: Any) -> str | None:
    image = env.get("image") if isinstance(env, dict) else None
    if isinstance(image, dict):
        return _text(image.get("name") or image.get("reference") or image.get("digest"))
    return _text(image)


def machines_table(comparison: Comparison) -> list[dict[str, Any]]:
    return [machine_record(m) for m in comparison.machines]


def coverage(comparison: Comparison) -> list[dict[str, Any]]:
    """Per workload and machine: how many of the workload's configurations it ran, how
    many of them the baseline ran too, and which (the first NAMES)."""
    base = comparison.machines.index(comparison.baseline)
    total: dict[str, int] = {}
    ran: dict[tuple[str, int], list[tuple[str, bool]]] = {}
    for key, cells in comparison.rows:
        total[key.workload] = total.get(key.workload, 0) + 1
        for i, cell in enumerate(cells):
            if cell.point is not None:
                ran.setdefault((key.workload, i), []).append(
                    (config_label(key), cells[base].point is not None)
                )
    rows = []
    for (workload, i), configs in sorted(ran.items()):
        shared = sum(both for _, both in configs)
        names = [name for name, _ in configs]
        more = len(names) - NAMES
        rows.append(
            {
                "workload": workload,
                "machine": comparison.machines[i].label,
                "ran": len(configs),
                "of": total[workload],
                "ran_text": f"{len(configs)} of {total[workload]}",
                "shared": shared if i != base else None,
                "shared_text": "the baseline" if i == base else f"{shared} of {len(configs)}",
                "configs": "; ".join(names[:NAMES]) + (f"; and {more} more" if more > 0 else ""),
            }
        )
    return rows
