"""Which results a comparison sets apart: per workload, those measured unlike the
baseline's (or most of them) in a field that changes what a number means, grouped by
the fields that differ, each file with its details; and files that are no result.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.config import sweep
from bench.report.machines import machine_label
from bench.report.real_data import data_kind
from bench.result import Result
from bench.util.text import visible

# Config fields that must agree between results compared in one row: how a number was
# measured (the options declared compared=MATCH). The options declared compared=ROW are
# rows of their own, the key's are its places; the device is the machine itself.
MUST_MATCH = sweep.MUST_MATCH
# A max-batch search's probes run their own steps (RunConfig.probe_steps, no warm-up) at
# any --steps: only what they train on must agree, and the memory cap is what a memory
# ladder compares (each card a labelled column).
SEARCH_MUST_MATCH = ("data", "workers")


# Set apart, the JSON's words: the file and why, per group.
SET_APART_WHERE = "their files are listed under set_apart in bench compare --format json"


@dataclass
class SetApart:
    """Results left out for one reason: 'measured differently (steps)', or 'could not
    be read as results'; each file with its details (for the JSON)."""

    reason: str
    files: list[dict[str, Any]] = field(default_factory=list)
    noun: str = "results"
    single: str = ""  # the line for a group of one file: that file and why

    @property
    def line(self) -> str:
        if len(self.files) == 1 and self.single:
            return self.single
        return f"{len(self.files)} {self.noun} {self.reason}: set apart; {SET_APART_WHERE}"

    def to_dict(self) -> dict[str, Any]:
        return {"reason": self.reason, "count": len(self.files), "line": self.line,
                "files": self.files}  # fmt: skip


def _setting(res: Result, name: str) -> Any:
    """A config field as compared: a dataset by its kind, wherever each machine keeps it."""
    value = getattr(res.config, name)
    return data_kind(value) if name == "data" else value


def _measured_like(res: Result) -> tuple[Any, ...]:
    """What must agree: MUST_MATCH, or for a result of max-batch searches alone
    SEARCH_MUST_MATCH."""
    names = MUST_MATCH if res.points else SEARCH_MUST_MATCH
    return tuple(_setting(res, name) for name in names)


def _differs(res: Result, ref: Result) -> tuple[str, ...]:
    """The fields in which `res` was measured unlike `ref`: MUST_MATCH where both
    measured points, else SEARCH_MUST_MATCH."""
    names = MUST_MATCH if res.points and ref.points else SEARCH_MUST_MATCH
    return tuple(n for n in names if _setting(res, n) != _setting(ref, n))


def set_apart(
    loaded: list[tuple[Path, Result]], baseline: str | None
) -> tuple[list[tuple[Path, Result]], list[SetApart]]:
    """Per workload, keep the results measured like the baseline's (or like most of
    them, when the baseline has none of that workload): the reference is a way of
    measuring points where any result has points, and a search alone agrees with it
    in SEARCH_MUST_MATCH; the others grouped by which fields differ, each file with
    its details."""
    # A decoder trained to a target loss is its own measurement (its rows say so), not
    # one measured unlike the workload's throughput runs: each target is a group.
    by_workload: dict[tuple[str, float | None], list[tuple[Path, Result]]] = defaultdict(list)
    for path, res in loaded:
        by_workload[res.config.workload, res.config.train_to_loss].append((path, res))
    kept: list[tuple[Path, Result]] = []
    groups: dict[tuple[str, ...], SetApart] = {}
    for (workload, _), group in by_workload.items():
        ways = defaultdict(list)
        for path, res in [pr for pr in group if pr[1].points] or group:
            ways[_measured_like(res)].append((path, res))
        on_baseline = [
            way
            for way, members in ways.items()
            if baseline
            and any(baseline.lower() in machine_label(res).lower() for _, res in members)
        ]
        reference = (on_baseline or sorted(ways, key=lambda w: -len(ways[w])))[0]
        ref_path, ref = ways[reference][0]
        for path, res in group:
            names = _differs(res, ref)
            if not names:
                kept.append((path, res))
                continue
            differs = ", ".join(
                f"{name} {_setting(res, name)} (not {_setting(ref, name)})" for name in names
            )
            reason = f"measured differently ({', '.join(names)})"
            held = groups.setdefault(names, SetApart(visible(reason)))
            held.files.append({"file": visible(str(path)), "workload": visible(workload),
                               "differs": visible(differs),
                               "reference": visible(str(ref_path))})  # fmt: skip
            held.single = visible(
                f"set apart: {path} ({workload}) measured differently from {ref_path}: " + differs
            )
    return kept, list(groups.values())


def run_identity(res: Result) -> tuple[Any, ...]:
    """What a run measured, by which its copies are known whatever their file names: when
    it started, its label, its configuration, the machine and software it recorded, and
    every raw time (two runs never share them all; a file edited in any of them is another
    run, and is read as one)."""
    return (
        res.started, res.label, res.config, json.dumps(res.environment, sort_keys=True),
        tuple((p.step_times_s, p.warmup_times_s, p.epoch_times_s) for p in res.points),
        repr(res.max_batch), repr(res.ladder), repr(res.tune),
    )  # fmt: skip


def copies(
    loaded: list[tuple[Path, Result]],
) -> tuple[list[tuple[Path, Result]], list[SetApart]]:
    """Each run once: a file whose run another file already holds (a folder gathered from
    colleagues or a fleet holds one twice) is set apart, never pooled as a repeat of
    itself, which would narrow the interval as if it were new evidence."""
    first: dict[tuple[Any, ...], Path] = {}
    kept: list[tuple[Path, Result]] = []
    group = SetApart("are copies of a run another file holds (counted once)", noun="files")
    for path, res in loaded:
        original = first.setdefault(run_identity(res), path)
        if original is path:
            kept.append((path, res))
            continue
        group.files.append({"file": visible(str(path)), "copy_of": visible(str(original))})
        group.single = visible(f"counted once: {path} is a copy of {original}'s run")
    return kept, [group] if group.files else []


def unreadable(files: list[tuple[Path, str]]) -> list[SetApart]:
    """Files found in a folder that are no result bench can read: one group."""
    if not files:
        return []
    group = SetApart("could not be read as results", noun="files")
    group.files = [{"file": visible(str(path)), "error": visible(error)} for path, error in files]
    group.single = visible(f"set apart: {files[0][1]}")
    return [group]
