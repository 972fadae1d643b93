"""Copies of one run in a folder (bench.report.set_apart.copies): counted once, said so,
never pooled as repeats of themselves (which narrowed 92.5 [86.7-98.5] to [91.5-93.4])."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

from bench.report import compare as cmp
from bench.result import io
from tests.conftest import DATA


def test_copies_of_one_run_are_counted_once_and_said(tmp_path):
    for i in range(6):
        shutil.copy(DATA / "tiny-cpu.json", tmp_path / f"copy-{i}.json")
    loaded = [(path, io.load(path)) for path in sorted(tmp_path.glob("*.json"))]
    alone = cmp.compare(loaded[:1], None)
    six = cmp.compare(loaded, None)
    (_, [cell]), (_, [cell_alone]) = six.rows[0], alone.rows[0]
    assert cell.point.throughput == cell_alone.point.throughput  # the same interval
    assert len(cell.runs) == 1
    [group] = [g for g in six.set_apart_groups if "copies" in g.reason]
    assert len(group.files) == 5 and "counted once" in group.line


def test_two_runs_of_one_configuration_still_pool():
    """Not a copy: another run (its own start and times) is another repeat."""
    one = io.load(DATA / "tiny-cpu.json")
    point = one.points[0]
    other = dataclasses.replace(
        one, started="2026-12-07T09:00:00+00:00",
        points=[dataclasses.replace(point, step_times_s=tuple(
            tuple(t * 1.01 for t in row) for row in point.step_times_s))],
    )  # fmt: skip
    both = cmp.compare([(Path("a.json"), one), (Path("b.json"), other)], None)
    (_, [cell]) = both.rows[0]
    assert len(cell.runs) == 2 and not both.set_apart
