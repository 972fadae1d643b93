"""A point's statistics from its raw times (bench.result.derive): repeats that disagree
beyond the machine's own noise are said so, and verdicts on them cannot tell."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from bench.report import compare as cmp
from bench.report.table_notes import notes
from bench.result import io
from bench.verdict import CANNOT_TELL
from tests.conftest import DATA

TINY = io.load(DATA / "tiny-cpu.json")


def _with_steps(rows: tuple[tuple[float, ...], ...], started: str | None = None):
    point = dataclasses.replace(TINY.points[0], step_times_s=rows, warmup_times_s=())
    return dataclasses.replace(TINY, points=[point], started=started or TINY.started)


def test_repeats_100x_apart_are_said_to_disagree_on_the_run_table():
    """The busy 2-core machine: repeat 2's steps about 1.3 ms, the others about 115 ms;
    the table said 'ok' with 4,106 samples/s and nothing about the spread."""
    res = _with_steps(((0.115, 0.114, 0.116), (0.0013, 0.0012, 0.0014), (0.112, 0.118, 0.115)))
    why = res.points[0].repeats_disagree
    assert why is not None and why.startswith("repeats disagree: 139.1 to 1.231e+04")
    assert "repeat 2 fastest" in why
    assert why in (notes(res) or "")


def test_repeats_within_their_own_noise_agree():
    res = _with_steps(((0.115, 0.100, 0.130), (0.110, 0.125, 0.105), (0.112, 0.118, 0.121)))
    assert res.points[0].repeats_disagree is None


def test_a_comparison_with_disagreeing_repeats_cannot_tell():
    noisy = _with_steps(((0.115, 0.114, 0.116), (0.0013, 0.0012, 0.0014), (0.112, 0.118, 0.115)))
    calm = _with_steps(((0.100, 0.101, 0.099), (0.100, 0.102, 0.101), (0.099, 0.100, 0.101)),
                       started="2026-12-07T09:00:00+00:00")  # fmt: skip
    noisy = dataclasses.replace(noisy, label="noisy")
    calm = dataclasses.replace(calm, label="calm")
    comparison = cmp.compare([(Path("calm.json"), calm), (Path("noisy.json"), noisy)], "calm")
    cells = comparison.rows[0][1]
    judged = [c.verdict for c in cells if c.verdict is not None]
    assert judged and all(v.word == CANNOT_TELL for v in judged)
    assert "repeats disagree" in judged[0].sentence()
    assert any("repeats disagree" in line for line in comparison.noise_notes())
