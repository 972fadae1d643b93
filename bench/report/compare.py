"""Compare machines: throughput normalised to a baseline (as the 2020 GPU comparison
does), '*' where a point ran out of memory, energy efficiency (the M2 Max vs V100 CIFAR
study) and cost (the TPUv2 vs V100 comparison, the Xeon CPU study) as ratios too.

A column is a machine: its hardware (accelerator model and count, or CPU model and the
cores bench could use, and the instance type where known), read from each result's
provenance, and the run's --label when it has one (a label is the user's A/B intent:
"before" and "after" stay two columns). Its runs at other times are facets of it: the
repeats of one configuration in one software stack (framework and image) pool into one
cell, each run's own figures kept for a history (Comparison.history_records). The
framework or image is part of a row (setup) where one machine ran a row's
configuration in several: two stacks are two measurements. Results whose configs
differ from the baseline's in anything that changes what is measured are set apart,
one line per reason with a count, their files listed in the JSON.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import shlex
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import catalog, registry, units
from bench.errors import UsageError
from bench.report.colours import machine_colours
from bench.report.machines import Machine, cap_label, image_name, machine_columns
from bench.report.moe import Experts
from bench.report.set_apart import SetApart, set_apart
from bench.report.set_apart import unreadable as unreadable_files
from bench.report.steps import HistoryStep, history_steps
from bench.report.to_target import of as to_target
from bench.report.words import ratio_sentence
from bench.result import MaxBatch, Point, Result
from bench.stats import Estimate, ratio_interval
from bench.text import visible
from bench.verdict import Verdict, judge

ROW_KEYS = ("workload", "batch_size", "precision", "memory_format", "compile", "setup")


def sequence_length(res: Result) -> int | None:
    """The tokens a sample held, for a workload that takes a sequence length (its
    default where the run gave none); None for others, or a workload this bench lacks."""
    try:
        spec = registry.workload(res.config.workload)
    except UsageError:
        return res.config.seq_len
    return spec.input_shape(res.config.seq_len)[0] if spec.takes_seq_len else None


def row_key(res: Result, p: Point) -> tuple[Any, ...]:
    """A row: the workload and a point's axes. `setup` holds the rest that tells a
    result's points apart: a decoder's target loss (a run to a loss is a row of its
    own, beside the same configuration's throughput runs), the sequence length of a
    workload that takes one, the
    device count where the result swept it (a machine's 8 GPUs and another's 4 stay
    one row when each just used all of its own), a mixture of experts' expert
    parallelism where its experts were split over ranks (two splits are two
    measurements), and the whole-model optimisation (ipex) and the allocator / OpenMP /
    NUMA axes where set."""
    swept = len(set(res.config.devices)) > 1
    length = sequence_length(res)
    tokens = f"{length} tokens" if length else ""
    devices = f"{p.devices} device{'s' if p.devices > 1 else ''}" if swept else ""
    split = res.config.expert_parallel
    experts = f"expert parallel {split}" if split > 1 else ""
    optimize = f"optimize={p.optimize}" if p.optimize else ""
    ac = f"ac={p.activation_checkpointing}" if p.activation_checkpointing != "none" else ""
    target = res.config.train_to_loss
    to_loss = f"to loss {target:g}" if target is not None else ""
    parts = (tokens, devices, experts, optimize, ac, p.runtime_label, to_loss)
    setup = " · ".join(part for part in parts if part)
    # A memory format is an image tensor's layout; token inputs have none, so a decoder
    # trained in PyTorch (recorded contiguous) and in JAX (NHWC) shares its rows.
    layout = p.memory_format if length is None else "n/a"
    return (res.config.workload, p.batch_size, p.precision, layout, p.compile, setup)


def ok_throughput(point: Point | None) -> Estimate | None:
    """A point's throughput where it trained; a failed point has none to compare."""
    return point.throughput if point is not None and point.status == "ok" else None


# One run's point in a cell: the file, its result and the point it measured.
Run = tuple[Path, Result, Point]

# A point's fields that hold one entry per repeat, with what a run that did not record
# the field holds for each of its repeats when runs pool (bench.result.point.Point).
_PER_REPEAT: dict[str, Any] = {
    "warmup_times_s": (), "step_times_s": (), "epoch_times_s": (), "peak_memory_bytes": None,
    "loss_first": None, "loss_last": None, "energy": None, "power_before": None, "ranks": None,
    "busy": None, "input_wait_s": (), "accuracy": None, "loss": None,
}  # fmt: skip


def pool(points: list[Point]) -> Point:
    """One point of the repeats of several runs of one configuration (oldest first):
    the runs that trained, each repeat's values kept beside its own; the latest run's
    other fields. No run trained: the latest point (its out-of-memory or error)."""
    trained = [p for p in points if p.status == "ok" and p.measured]
    if len(trained) < 2:
        return trained[0] if trained else points[-1]
    changes: dict[str, Any] = {}
    for name, filler in _PER_REPEAT.items():
        if not any(getattr(p, name) for p in trained):
            continue
        merged: list[Any] = []
        for p in trained:
            own, repeats = tuple(getattr(p, name) or ())[: len(p.step_times_s)], len(p.step_times_s)
            merged += [*own, *(filler,) * (repeats - len(own))]
        changes[name] = tuple(merged)
    notes = dict.fromkeys(p.noise for p in trained if p.noise)
    changes["noise"] = "; ".join(notes) or None
    return dataclasses.replace(trained[-1], **changes)


@dataclass
class Cell:
    """One machine's figures for one row: its runs of that configuration, pooled."""

    point: Point | None
    relative: float | None = None  # throughput / the baseline's
    relative_ci95: tuple[float, float] | None = None  # of `relative` (stats.ratio_interval)
    mark: str = ""  # "~": the ratio's 95% interval holds 1; "?": a single run, untestable
    verdict: Verdict | None = None  # bench.verdict's words on `relative` and its interval
    energy_ratio: float | None = None  # samples per joule / the baseline's
    cost_ratio: float | None = None  # samples per dollar / the baseline's
    samples_per_dollar: float | None = None
    mfu: float | None = None
    # Every run of this configuration on this machine, oldest first; `point` pools
    # the repeats of those that trained.
    runs: list[Run] = field(default_factory=list)
    _throughput: Estimate | str | None = field(default="unset", repr=False, compare=False)

    @property
    def throughput(self) -> Estimate | None:
        """ok_throughput of the point, computed once (a pooled point's over many repeats)."""
        if isinstance(self._throughput, str):
            self._throughput = ok_throughput(self.point)
        return self._throughput

    @property
    def source(self) -> tuple[Path, Result] | None:
        """The file and result of the latest run that trained (else the latest run)."""
        trained = [(path, res) for path, res, p in self.runs if p.status == "ok" and p.measured]
        latest = trained[-1] if trained else (self.runs[-1][:2] if self.runs else None)
        return latest

    @property
    def frameworks(self) -> list[str]:
        return sorted({res.config.framework for _, res, _ in self.runs})

    @property
    def images(self) -> list[str]:
        return sorted({name for _, res, _ in self.runs if (name := image_name(res))})

    @property
    def text(self) -> str:
        """What a table shows: the normalised value, '*' for out of memory."""
        if self.point is None:
            return ""
        if self.point.status == "oom":
            return "*"
        if self.point.status != "ok":
            return "error"
        if self.relative is None:
            return "n/a"
        return f"{units.ratio(self.relative)}{self.mark}"


def _command(res: Result) -> str | None:
    return visible(shlex.join(str(part) for part in res.command)) if res.command else None


@dataclass
class Comparison:
    machines: list[Machine]
    baseline: Machine
    rows: list[tuple[tuple[Any, ...], list[Cell]]]
    max_batch: list[tuple[tuple[Any, ...], list[MaxBatch | None]]]
    set_apart: list[str] = field(default_factory=list)  # one line per reason (a group)
    # Which baseline bench chose, and why, when none was named (None: named, or one column).
    baseline_note: str | None = None
    set_apart_groups: list[SetApart] = field(default_factory=list)  # the files, by reason
    # Each machine's colour on every chart and figure (bench.report.colours), made from
    # every machine compared: a figure of fewer machines keeps the page's colours.
    colours: dict[str, str] = field(default_factory=dict)

    @functools.cached_property
    def steps(self) -> tuple[list[HistoryStep], str | None]:
        """Where a machine's configuration measured on many dates stepped
        (bench.report.steps), found once; and a line where they could not be looked for."""
        return history_steps(self)

    @property
    def set_apart_count(self) -> int:
        return sum(len(group.files) for group in self.set_apart_groups)

    @property
    def title(self) -> str:
        """'2 machines', or '27 results from 3 machines' where a machine has several
        (repeated runs, other --labels or memory caps): it counted columns as runs."""
        hosts = {m.hardware or m.label for m in self.machines}
        results = sum(len(m.results) for m in self.machines)
        machines = f"{len(hosts)} {'machine' if len(hosts) == 1 else 'machines'}"
        return machines if results == len(hosts) else f"{results} results from {machines}"

    def noise_notes(self) -> list[str]:
        """Figures less sure than they look: a busy machine, automatic repeats that
        missed their target; one line per cell."""
        lines = []
        for key, cells in self.rows:
            row = f"{key[0]} batch {key[1]} {key[2]}"
            for machine, cell in zip(self.machines, cells, strict=True):
                point = cell.point
                if point is not None and point.busy_note:
                    lines.append(
                        visible(f"{machine.label}, {row}: busy machine: {point.busy_note}")
                    )
                if point is not None and point.noise:
                    lines.append(visible(f"{machine.label}, {row}: noisy: {point.noise}"))
        return lines

    def to_records(self) -> list[dict[str, Any]]:
        """Long format: one record per row and machine (for CSV and JSON). A cell's
        facets beside its figures: the frameworks and images of its runs, how many
        runs pooled and their repeats, the latest run's start and command."""
        records = []
        for key, cells in self.rows:
            for machine, cell in zip(self.machines, cells, strict=True):
                p = cell.point
                tp = cell.throughput
                energy = p.energy_summary if p else None
                source = cell.source
                records.append(
                    {
                        **dict(zip(ROW_KEYS, key, strict=True)),
                        "machine": machine.label,
                        "baseline": machine is self.baseline,
                        "status": p.status if p else None,
                        "throughput": tp.value if tp else None,
                        "throughput_unit": tp.unit if tp else None,
                        "ci95_low": tp.ci95_low if tp else None,
                        "ci95_high": tp.ci95_high if tp else None,
                        "relative_throughput": cell.relative,
                        "relative_ci95_low": cell.relative_ci95[0] if cell.relative_ci95 else None,
                        "relative_ci95_high": cell.relative_ci95[1] if cell.relative_ci95 else None,
                        "significance": cell.mark or None,
                        "verdict": cell.verdict.word if cell.verdict else None,
                        "verdict_text": ratio_sentence(
                            cell.relative, cell.relative_ci95, cell.verdict
                        )
                        if cell.verdict and cell.relative is not None
                        else None,
                        "samples_per_joule": energy.samples_per_joule if energy else None,
                        "energy_per_epoch_j": energy.per_epoch_j if energy else None,
                        "energy_ratio": cell.energy_ratio,
                        "samples_per_dollar": cell.samples_per_dollar,
                        "cost_ratio": cell.cost_ratio,
                        "usd_per_hour": machine.price_per_hour,
                        "mfu": cell.mfu,
                        "hardware": machine.hardware or machine.label,
                        "run_label": machine.run_label,
                        "framework": ", ".join(cell.frameworks) or None,
                        "image": ", ".join(cell.images) or None,
                        "runs": len(cell.runs) or None,
                        "repeats": tp.n if tp else None,
                        "started": source[1].started or None if source else None,
                        "command": _command(source[1]) if source else None,
                        **_to_accuracy_record(p, machine),
                        **_to_loss_record(p, machine),
                        **_moe_record(p),
                    }
                )
        return records

    def history_records(self) -> list[dict[str, Any]]:
        """Every run's own figures of every cell, oldest first: what pooled into each
        cell, for a history of one configuration of one machine (asv's view)."""
        records = []
        stepped = {(s.machine, s.key, s.after[1], s.after[0]): s for s in self.steps[0]}
        for key, cells in self.rows:
            axes = dict(zip(ROW_KEYS, key, strict=True))
            for machine, cell in zip(self.machines, cells, strict=True):
                for path, res, p in cell.runs:
                    tp = ok_throughput(p)
                    step = stepped.get((machine.label, key, str(path), res.started))
                    records.append(
                        {
                            **axes,
                            "machine": machine.label,
                            "file": str(path),
                            "started": res.started or None,
                            "framework": res.config.framework,
                            "image": image_name(res),
                            "status": p.status,
                            "throughput": tp.value if tp else None,
                            "ci95_low": tp.ci95_low if tp else None,
                            "ci95_high": tp.ci95_high if tp else None,
                            "repeats": tp.n if tp else 0,
                            # the first run after a step: the step, in words
                            "step": visible(step.step.sentence()) if step else None,
                        }
                    )
        return records


def _to_accuracy_record(point: Point | None, machine: Machine) -> dict[str, Any]:
    reached = point.to_accuracy if point else None
    if reached is None:
        return {}
    runs = to_target(point)
    return {
        **(runs.record(machine.price_per_hour) if runs else {}),
        "best_top1": reached.best_top1,
        "epochs_to_target": reached.epochs_to_target,
        "time_to_target_s": reached.time_to_target_s,
        "energy_to_target_j": reached.energy_to_target_j,
        "cost_to_target_usd": reached.cost_to_target(machine.price_per_hour),
        "input_wait_fraction": point.input_wait_fraction if point else None,
    }


def _moe_record(point: Point | None) -> dict[str, Any]:
    """A mixture of experts' figures (bench.report.moe); nothing for a dense model."""
    experts = Experts.of(point) if point is not None and point.status == "ok" else None
    if point is None or experts is None:
        return {}
    per_device = point.unit_throughput_per_device
    return {"tokens_per_s_per_device": per_device[0] if per_device else None, **experts.record()}


def _to_loss_record(point: Point | None, machine: Machine) -> dict[str, Any]:
    reached = point.to_loss if point else None
    if reached is None:
        return {}
    runs = to_target(point)
    return {
        **(runs.record(machine.price_per_hour) if runs else {}),
        "target_loss": reached.target,
        "reached_repeats": reached.reached,
        "best_loss": reached.best_loss,
        "tokens_to_target": reached.tokens_to_target,
        "time_to_target_s": reached.time_to_target_s,
        "eval_share_to_target": reached.eval_share,
        "energy_to_target_j": reached.energy_to_target_j,
        "cost_to_target_usd": reached.cost_to_target(machine.price_per_hour),
    }


# A refusal names at most this many machines, each cut to this many characters.
NAMED_AT_MOST, NAME_CHARS = 10, 80


def _short(text: str, chars: int = NAME_CHARS) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"


def machine_names(machines: list[Machine]) -> str:
    """'A; B; ... (and 90 more)': at most NAMED_AT_MOST labels, each of bounded length."""
    shown = "; ".join(_short(m.label) for m in machines[:NAMED_AT_MOST])
    more = len(machines) - NAMED_AT_MOST
    return shown + (f" (and {more} more)" if more > 0 else "")


def _select(machines: list[Machine], selector: str, what: str = "baseline") -> Machine:
    wanted = selector.lower()
    # A whole label wins over a part of one ("AMD EPYC" vs "AMD EPYC · before").
    found = [m for m in machines if m.label.lower() == wanted] or [
        m
        for m in machines
        if wanted in m.label.lower() or any(wanted == str(p).lower() for p, _ in m.results)
    ]
    if len(found) != 1:
        named = visible(_short(selector, 60))
        if found:
            raise UsageError(
                f"{what} {named!r} matches {len(found)} machines: {machine_names(found)}; "
                "name one by more of its label or by a file"
            )
        raise UsageError(
            f"{what} {named!r} matches no machine; machines: {machine_names(machines)}"
        )
    return found[0]


def _select_priced(machines: list[Machine], selector: str) -> list[Machine]:
    """The columns a --price names: one machine, with the columns that are facets of it
    (its memory-capped emulations, which ran on it at its price). 'H200' matched 4
    machines where 3 were the H200 capped to 16, 24 and 80 GiB, and was refused."""
    wanted = selector.lower()
    found = [m for m in machines if m.label.lower() == wanted or wanted in m.label.lower()]
    hosts = {m.hardware for m in found if m.run_label is None or _is_cap(m)}
    if len(hosts) == 1 and all(m.hardware in hosts and (m.run_label is None or _is_cap(m))
                               for m in found):  # fmt: skip
        return found
    return [_select(machines, selector, "price")]


def _is_cap(machine: Machine) -> bool:
    return any(cap_label(res) == machine.run_label for _, res in machine.results)


# Run labels (--label) that name the reference of a before/after pair, first wins.
BASELINE_LABELS = ("baseline", "before")


def _started(machine: Machine) -> str:
    return min(res.started for _, res in machine.results)


def _shared_rows(machines: list[Machine], grid: list[list[Any]]) -> dict[int, list[int]]:
    """Per column (by position): [rows it shares with another column, the other
    columns' points it lines up with], over the rows where it has a throughput."""
    shared = {i: [0, 0] for i in range(len(machines))}
    for throughputs in grid:
        have = [i for i, tp in enumerate(throughputs) if tp is not None]
        if len(have) < 2:
            continue
        for i in have:
            shared[i][0] += 1
            shared[i][1] += len(have) - 1
    return shared


def default_baseline(
    machines: list[Machine], grid: list[list[Any]] | None = None
) -> tuple[Machine, str]:
    """The baseline when none is named, and one line saying which and why: the run
    labelled `baseline` (else `before`); else the column that shares the most rows with
    the others (the most ratios a table can show; ties: the earliest). `grid`: each
    row's throughputs (None where a column has none), a column each."""
    hint = "name another with --baseline"
    for wanted in BASELINE_LABELS:
        found = [m for m in machines if any(
            (res.label or "").strip().lower() == wanted for _, res in m.results)]  # fmt: skip
        if found:
            base = min(found, key=_started)
            return base, f"baseline: {base.label} (the run labelled {wanted}; {hint})"
    shared = _shared_rows(machines, grid or [])
    most = max(pairs for _, pairs in shared.values())
    tied = [m for i, m in enumerate(machines) if shared[i][1] == most]
    base = min(tied, key=_started)
    rows = shared[machines.index(base)][0]
    if most == 0:
        why = f"no machine shares a row with another; the earliest, started {_started(base)[:19]}"
    else:
        why = f"shares the most rows with the others, {rows} of {len(grid or [])}"
        if len(tied) > 1:
            why += f"; the earliest of {len(tied)} that do, started {_started(base)[:19]}"
    return base, f"baseline: {base.label} ({why}; {hint})"


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _stack(res: Result) -> tuple[str, str]:
    """The software a run measured: its framework and its image ('native' outside one)."""
    return res.config.framework, image_name(res) or "native"


def _row_runs(ordered: list[Machine]) -> dict[tuple[Any, ...], list[list[Run]]]:
    """Each row's runs, a list per column (oldest first). A configuration one machine
    ran in several frameworks or images is a row per framework or image (its setup
    names which differ: 'jax', 'bench:xeon', 'native'), for every machine: two software
    stacks are two measurements, never pooled. Otherwise one row, whatever framework
    each machine used (a GPU in torch beside a TPU in JAX)."""
    found: dict[tuple[Any, ...], list[list[Run]]] = {}
    for i, machine in enumerate(ordered):
        for path, res in machine.results:
            for p in res.points:
                key = row_key(res, p)
                if key not in found:
                    found[key] = [[] for _ in ordered]
                found[key][i].append((path, res, p))
    rows: dict[tuple[Any, ...], list[list[Run]]] = {}
    for key, columns in found.items():
        if all(len({_stack(res) for _, res, _ in runs}) < 2 for runs in columns):
            rows[key] = columns
            continue
        stacks = {_stack(res) for runs in columns for _, res, _ in runs}
        differ = [len({stack[n] for stack in stacks}) > 1 for n in (0, 1)]
        for i, runs in enumerate(columns):
            for run in runs:
                named = [part for part, d in zip(_stack(run[1]), differ, strict=True) if d]
                split = (*key[:5], " · ".join(part for part in (key[5], *named) if part))
                if split not in rows:
                    rows[split] = [[] for _ in ordered]
                rows[split][i].append(run)
    return rows


def compare(
    loaded: list[tuple[Path, Result]],
    baseline: str | None,
    prices: dict[str, float] | None = None,
    unreadable: list[tuple[Path, str]] | None = None,
) -> Comparison:
    """Group results by machine and line their points up by row key, the repeats of
    a machine's runs of one configuration pooled. Without a baseline named,
    default_baseline chooses one and says so (baseline_note). `unreadable`: files
    found that are no result (path, why), set apart in one group."""
    if not loaded:
        raise UsageError("nothing to compare")
    loaded, groups = set_apart(loaded, baseline)
    groups = sorted([*groups, *unreadable_files(unreadable or [])],
                    key=lambda g: (-len(g.files), g.reason))  # fmt: skip
    machines = machine_columns(loaded)
    for machine in machines.values():
        for _, res in machine.results:
            if res.pricing and machine.price_per_hour is None:
                machine.price_per_hour = res.pricing["usd_per_hour"]
                machine.price_source = res.pricing.get("source")
            machine.peak_tflops = machine.peak_tflops or res.peak_tflops
    ordered = list(machines.values())
    for selector, usd in (prices or {}).items():
        for target in _select_priced(ordered, selector):
            target.price_per_hour, target.price_source = usd, "given with --price"
    for machine in ordered:  # none given: bench's catalogue, where it knows the device
        if machine.price_per_hour is None:
            accelerator = (machine.environment or {}).get("accelerator") or {}
            found = catalog.accelerator_price(
                accelerator.get("accelerator"), accelerator.get("accelerator_count") or 0
            )
            if found is not None:
                machine.price_per_hour, machine.price_source = (
                    found["usd_per_hour"],
                    found["source"],
                )

    # Workload, then precision, format and compiler, then batch size numerically.
    by_row = _row_runs(ordered)
    keys = sorted(by_row, key=lambda k: (k[0], k[2], k[3], k[4] or "", k[5], k[1]))
    # Each cell's pooled point and throughput, once: a pooled point's estimate is over
    # every repeat of its runs, and a row's baseline serves each of its cells.
    grid = [[_Figures.of(runs) for runs in by_row[key]] for key in keys]
    note = None
    if baseline is not None:
        base = _select(ordered, baseline)
    elif len(ordered) > 1:
        base, note = default_baseline(ordered, [[f.tp for f in row] for row in grid])
    else:
        base = ordered[0]
    at = ordered.index(base)
    rows = []
    for key, figures in zip(keys, grid, strict=True):
        cells = [
            _cell(own, figures[at], machine, base, runs)
            for machine, own, runs in zip(ordered, figures, by_row[key], strict=True)
        ]
        rows.append((key, cells))

    searches: dict[tuple[Any, ...], dict[str, MaxBatch]] = defaultdict(dict)
    for machine in ordered:
        for _, res in machine.results:  # oldest first: a later search replaces an earlier
            for m in res.max_batch:
                key = (res.config.workload, m.precision, m.memory_format, m.compile)
                searches[(*key, searched(res, m))][machine.label] = m
    max_batch = [
        (key, [searches[key].get(m.label) for m in ordered]) for key in sorted(searches, key=str)
    ]
    return Comparison(ordered, base, rows, max_batch, [g.line for g in groups],
                      baseline_note=note, set_apart_groups=groups,
                      colours=machine_colours([m.label for m in ordered]))  # fmt: skip


@dataclass
class _Figures:
    """A cell's pooled point and what its ratios need, computed once."""

    point: Point | None
    tp: Estimate | None = None
    values: list[float] = field(default_factory=list)  # each repeat's throughput
    _energy: Any = None
    _energy_done: bool = False

    @classmethod
    def of(cls, runs: list[Run]) -> _Figures:
        point = pool([p for _, _, p in runs]) if runs else None
        tp = ok_throughput(point)
        return cls(point, tp, point.repeat_throughputs() if tp and point else [])

    @property
    def energy(self) -> Any:  # EnergySummary | None, read only where a ratio needs it
        if not self._energy_done and self.point is not None:
            self._energy, self._energy_done = self.point.energy_summary, True
        return self._energy


def _per_dollar(tp: Estimate | None, machine: Machine) -> float | None:
    return tp.value * 3600 / machine.price_per_hour if tp and machine.price_per_hour else None


def _cell(
    own: _Figures, base_figures: _Figures, machine: Machine, base: Machine, runs: list[Run]
) -> Cell:
    point = own.point
    cell = Cell(point, runs=runs)
    cell._throughput = own.tp  # the property's value, computed once
    if point is None or point.status != "ok":
        return cell
    tp, base_tp = own.tp, base_figures.tp
    if tp and base_tp:
        cell.relative = tp.value / base_tp.value
        if machine is not base:
            ci = cell.relative_ci95 = ratio_interval(own.values, base_figures.values)
            cell.mark = "?" if ci is None else ("~" if ci[0] <= 1 <= ci[1] else "")
            if ci is not None:
                n = min(len(own.values), len(base_figures.values))
                cell.verdict = judge(math.sqrt(ci[0] * ci[1]), ci, n)
    energy = own.energy
    base_energy = base_figures.energy if energy else None
    if energy and base_energy:
        cell.energy_ratio = energy.samples_per_joule / base_energy.samples_per_joule
    cell.samples_per_dollar = _per_dollar(tp, machine)
    cell.cost_ratio = _ratio(cell.samples_per_dollar, _per_dollar(base_tp, base))
    achieved = point.achieved_flops
    peak, _ = catalog.peak_flops(machine.environment, point.precision, machine.peak_tflops)
    cell.mfu = achieved / peak if achieved is not None and peak else None
    return cell


def training_cost(
    point: Point, workload: str, epochs: float, usd_per_hour: float | None
) -> dict[str, Any]:
    """Time and cost of `epochs` passes over the workload's dataset at this throughput."""
    tp = point.throughput
    samples = registry.workload(workload).epoch_samples * epochs
    hours = samples / tp.value / 3600 if tp else None
    return {
        "epochs": epochs, "samples": samples, "hours": hours,
        "usd": hours * usd_per_hour if hours is not None and usd_per_hour else None,
    }  # fmt: skip


def searched(result: Result, search: MaxBatch) -> str:
    """What a search looked for, where it was not the largest batch: a longest sequence
    at one batch size ('' for the largest batch: a row of its own either way)."""
    if search.axis != "seq_len":
        return ""
    return f"largest seq len at batch {result.config.batch_sizes[0]}"
