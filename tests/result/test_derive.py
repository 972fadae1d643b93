"""A point's statistics from its raw times (bench.result.derive): repeats that disagree
beyond the machine's own noise are said so, and verdicts on them cannot tell."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from bench.report import compare as cmp
from bench.report.table import notes
from bench.result import io
from bench.stats.verdict import CANNOT_TELL
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


def _with_waits(rows: tuple[tuple[float, ...], ...], waits: tuple[tuple[float, ...], ...]):
    res = _with_steps(rows)
    point = dataclasses.replace(res.points[0], input_wait_s=waits)
    return dataclasses.replace(res, points=[point])


def test_the_input_bound_share_is_the_mean_of_the_repeats_shares_with_its_interval():
    """Repeats that waited 40%, 42% and 44% of their steps: 42% [37-47%], a t-interval
    with two degrees of freedom (4.303 * 0.02 / sqrt(3) = 0.0497)."""
    rows = ((0.1, 0.1), (0.1, 0.1), (0.1, 0.1))
    res = _with_waits(rows, ((0.04, 0.04), (0.042, 0.042), (0.044, 0.044)))
    share = res.points[0].input_wait_share
    assert share is not None and share.n == 3 and share.unit == "fraction"
    assert abs(share.value - 0.42) < 1e-9
    assert abs(share.ci95_low - (0.42 - 0.0497)) < 1e-3
    assert abs(share.ci95_high - (0.42 + 0.0497)) < 1e-3
    assert res.points[0].input_wait_fraction == share.value  # one estimator, not two
    note = "waited for data 42% [37-47%] of each step: the loader, not the device, sets this rate"
    assert res.points[0].input_bound_note == note
    assert note in (notes(res) or "")
    saved = io.dumps(res)
    assert '"input_wait_share": {' in saved and '"ci95_low": 0.37' in saved


def test_a_repeat_that_waited_longer_weighs_as_one_repeat_not_by_its_time():
    """Repeat 1's steps are 10x longer: pooling every wait over every step would give
    about 11%; the mean of the repeats' shares is (10% + 50%) / 2 = 30%."""
    res = _with_waits(((1.0, 1.0), (0.1, 0.1)), ((0.1, 0.1), (0.05, 0.05)))
    share = res.points[0].input_wait_share
    assert share is not None and abs(share.value - 0.30) < 1e-9


def test_a_fed_point_has_no_note_and_an_interval_that_stays_within_zero_and_one():
    res = _with_waits(((0.1, 0.1), (0.1, 0.1)), ((0.0, 0.0), (0.01, 0.01)))
    share = res.points[0].input_wait_share
    assert share is not None and share.value < 0.10 and share.ci95_low == 0.0
    assert res.points[0].input_bound_note is None
    assert "waited for data" not in (notes(res) or "")


def test_synthetic_data_has_no_input_bound_share():
    assert TINY.points[0].input_wait_share is None and TINY.points[0].input_bound_note is None
    one = _with_waits(((0.1, 0.1),), ((0.05, 0.05),))
    assert one.points[0].input_bound_note == (
        "waited for data 50% of each step: the loader, not the device, sets this rate"
    )
