"""A comparison's columns: machines by their hardware, read from each result's
provenance (accelerators by model and count, or the CPU by model and the cores bench
could use, and the instance type where known), and a run's --label (or its memory
cap) on top: "before" and "after" stay two columns; which of them is the baseline (named
by a selector, or chosen with a line saying why); and each machine's colour.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.result import Result, moment
from bench.util.errors import UsageError
from bench.util.text import visible
from bench.util.units import format_bytes

# A product name that is a cloud instance type (AWS Nitro: 'm7i.2xlarge'), not a
# generic one ('Google Compute Engine', 'Virtual Machine', 'Standard PC (Q35 ...)').
_INSTANCE_TYPE = re.compile(r"[a-z][a-z0-9-]*\.[0-9]*[a-z]+[0-9]*")


LABEL_CHARS = 160


def _instance_type(env: dict[str, Any]) -> str | None:
    product = ((env.get("host") or {}).get("dmi") or {}).get("product_name")
    return product if isinstance(product, str) and _INSTANCE_TYPE.fullmatch(product) else None


def cpu_label(env: dict[str, Any]) -> str | None:
    """'AMD EPYC (2 cores)': the model and the cores bench could use, so two VMs of one
    generic model ('Intel(R) Xeon(R) Processor') are not the same machine."""
    cpu = env.get("cpu") or {}
    model = cpu.get("model")
    if not model:
        return None
    cores = cpu.get("affinity_cores") or cpu.get("logical_cores")
    if not isinstance(cores, int) or cores < 1:
        return model
    return f"{model} ({cores} core{'s' if cores > 1 else ''})"


def machine_label(res: Result) -> str:
    """The machine's hardware: its accelerators by model and count, or its CPU by model
    and usable cores and the instance type where known. Not its image, framework or
    date: those are facets of one machine's runs."""
    env = res.environment or {}
    accelerator = env.get("accelerator") or {}
    if accelerator.get("accelerator"):
        count = accelerator.get("accelerator_count") or 1
        label = (
            f"{count}x {accelerator['accelerator']}" if count > 1 else accelerator["accelerator"]
        )
    else:
        label = cpu_label(env) or res.config.device
        # VMs of one CPU model differ by size: the instance type where it is known.
        instance = (res.pricing or {}).get("instance") or _instance_type(env)
        if instance:
            label += f" · {instance}"
    # Control characters from a file never reach a terminal or chart; a name is cut where
    # no machine's is that long (a file's 32 MiB CPU name made a 437 MB page, in each row).
    label = visible(label)
    return label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…"


def image_name(res: Result) -> str | None:
    name = ((res.environment or {}).get("image") or {}).get("name")
    return visible(name) if isinstance(name, str) and name else None


@dataclass
class Machine:
    """One column: a machine (its hardware), or one --label of runs on it."""

    label: str
    results: list[tuple[Path, Result]] = field(default_factory=list)
    price_per_hour: float | None = None
    price_source: str | None = None
    peak_tflops: float | None = None
    hardware: str = ""  # machine_label of its results; `label` adds the run's --label
    run_label: str | None = None  # the runs' --label, None for unlabelled runs

    @property
    def environment(self) -> dict[str, Any] | None:
        return self.results[0][1].environment if self.results else None


def cap_label(res: Result) -> str | None:
    """'memory-limit 16GiB', as bench suite labels a card emulated with --memory-limit:
    the default column label of a capped run, so each cap is a column of its own."""
    cap = res.config.memory_limit_bytes
    if not cap:
        return None
    whole = cap % 2**30 == 0
    return f"memory-limit {cap // 2**30}GiB" if whole else f"memory-limit {format_bytes(cap)}"


def machine_columns(loaded: list[tuple[Path, Result]]) -> dict[str, Machine]:
    """Results grouped into columns: by machine (its hardware) and --label (a capped
    run without one: its cap). Runs of one machine at other times, in other images or
    frameworks share its column."""
    columns: dict[str, Machine] = {}
    for path, res in loaded:
        hardware = machine_label(res)
        run_label = visible(res.label) if res.label else cap_label(res)
        label = f"{hardware} · {run_label}" if run_label else hardware
        column = columns.get(label)
        if column is None:
            column = columns[label] = Machine(label, hardware=hardware, run_label=run_label)
        column.results.append((path, res))
    for column in columns.values():
        column.results.sort(key=lambda pr: moment(pr[1].started))
    return columns


# A comparison's baseline: the column a selector names (--baseline, --price), or, none
# named, the one bench chooses, with a line saying which and why.

# A refusal names at most this many machines, each cut to this many characters.
NAMED_AT_MOST, NAME_CHARS = 10, 80

# Run labels (--label) that name the reference of a before/after pair, first wins.
BASELINE_LABELS = ("baseline", "before")


def _short(text: str, chars: int = NAME_CHARS) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"


def machine_names(machines: list[Machine]) -> str:
    """'A; B; ... (and 90 more)': at most NAMED_AT_MOST labels, each of bounded length."""
    shown = "; ".join(_short(m.label) for m in machines[:NAMED_AT_MOST])
    more = len(machines) - NAMED_AT_MOST
    return shown + (f" (and {more} more)" if more > 0 else "")


def select(machines: list[Machine], selector: str, what: str = "baseline") -> Machine:
    """The one column a selector names: a whole label, else a part of one or a file."""
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


def select_priced(machines: list[Machine], selector: str) -> list[Machine]:
    """The columns a --price names: one machine, with the columns that are facets of it
    (its memory-capped emulations, which ran on it at its price). 'H200' matched 4
    machines where 3 were the H200 capped to 16, 24 and 80 GiB, and was refused."""
    wanted = selector.lower()
    found = [m for m in machines if m.label.lower() == wanted or wanted in m.label.lower()]
    hosts = {m.hardware for m in found if m.run_label is None or _is_cap(m)}
    if len(hosts) == 1 and all(m.hardware in hosts and (m.run_label is None or _is_cap(m))
                               for m in found):  # fmt: skip
        return found
    return [select(machines, selector, "price")]


def _is_cap(machine: Machine) -> bool:
    return any(cap_label(res) == machine.run_label for _, res in machine.results)


def _started(machine: Machine) -> str:
    return min((res.started for _, res in machine.results), key=moment)


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
            base = min(found, key=lambda m: moment(_started(m)))
            return base, f"baseline: {base.label} (the run labelled {wanted}; {hint})"
    shared = _shared_rows(machines, grid or [])
    most = max(pairs for _, pairs in shared.values())
    tied = [m for i, m in enumerate(machines) if shared[i][1] == most]
    base = min(tied, key=lambda m: moment(_started(m)))
    rows = shared[machines.index(base)][0]
    if most == 0:
        why = f"no machine shares a row with another; the earliest, started {_started(base)[:19]}"
    else:
        why = f"shares the most rows with the others, {rows} of {len(grid or [])}"
        if len(tied) > 1:
            why += f"; the earliest of {len(tied)} that do, started {_started(base)[:19]}"
    return base, f"baseline: {base.label} ({why}; {hint})"


# Each machine's colour, one for every chart of the page, report.md's figures and any
# later report of the same machines: a colour drawn from the machine's identity (its
# label), not from its place on a page. Colours dealt by place, and past ten machines
# dealt again per chart, made one colour the GH200 in one chart, an RTX 4090 in the cost
# chart and an L4 in the MFU chart.
#
# The assignment: each machine's preferred colour is a hash of its label (CRC-32: the
# same on every machine and Python, unlike hash()); machines are placed in the order of
# their hashes, each taking its preferred colour or the next free one, so that up to
# len(PALETTE) machines never share one. Past that, colours repeat (charts draw at most
# ten machines, and name them).

# Vega's tableau10, then ten more of distinct hue and lightness (category20b and d3's
# category10 pick): the first ten stay the colours pages used before.
PALETTE = [
    "#4c78a8", "#f58518", "#e45756", "#72b7b2", "#54a24b", "#eeca3b", "#b279a2",
    "#ff9da6", "#9d755d", "#bab0ac", "#393b79", "#637939", "#8c6d31", "#843c39",
    "#7b4173", "#17becf", "#bcbd22", "#e377c2", "#1f77b4", "#2ca02c",
]  # fmt: skip


def _hash(label: str) -> int:
    return zlib.crc32(label.encode("utf-8", "surrogatepass"))


def machine_colours(labels: list[str]) -> dict[str, str]:
    """{label: colour}: stable for a label whatever else the page holds, but where two
    labels want one colour (the later, by hash, takes the next free one)."""
    taken: set[int] = set()
    colours: dict[str, str] = {}
    for label in sorted(set(labels), key=lambda m: (_hash(m), m)):
        slot = _hash(label) % len(PALETTE)
        if len(taken) < len(PALETTE):
            while slot in taken:
                slot = (slot + 1) % len(PALETTE)
            taken.add(slot)
        colours[label] = PALETTE[slot]
    return colours
