"""A comparison's baseline: the column a selector names (--baseline, --price), or, none
named, the one bench chooses, with a line saying which and why."""

from __future__ import annotations

from typing import Any

from bench.report.machines import Machine, cap_label
from bench.result import moment
from bench.util.errors import UsageError
from bench.util.text import visible

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
