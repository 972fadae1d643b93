"""Like with like: the report's first answer compares each machine with the baseline on
a configuration both ran (the same workload, batch, precision, memory format, compiler,
setup and framework version family), as MLPerf's closed division keeps hardware apart
from tuning. Each machine's best (tuned) configuration is the second view, the ways it
differs from the baseline's best named in its row: 'H200 1.25x faster' compared the
H200's tuned best (inductor:reduce-overhead, fused SGD) with the H100's plain inductor,
where on the one configuration both ran the ratio is 1.19x.

Where a machine shares no configuration with the baseline the row says so and which
command would make one.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from bench.report.compare import Cell, Comparison
from bench.report.rows import RowKey
from bench.report.words import config_label, efficiency, verdict_words
from bench.result import Result

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
