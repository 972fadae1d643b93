"""Steps in history: runs ordered by the time they started, not by the text of it. Files
with other UTC offsets (a hand-made or converted file) fell out of order, and a real step
went unfound."""

import dataclasses
from datetime import UTC, datetime, timedelta, timezone

import pytest

from bench.report import compare as cmp
from bench.report import tidy
from bench.report.steps import dated_runs
from bench.result import moment
from tests.report.test_to_target import STEPPED, V100, _history

START = datetime(2026, 3, 1, tzinfo=UTC)


def _offsets(runs):
    """The runs an hour apart, every other one written in UTC+12 (its text 12 hours
    ahead of its UTC neighbours'): text order is not time order."""
    moved = []
    for i, (path, res) in enumerate(runs):
        when = START + timedelta(hours=i)
        zone = timezone(timedelta(hours=12)) if i % 2 else UTC
        moved.append((path, dataclasses.replace(res, started=when.astimezone(zone).isoformat())))
    return moved


def test_runs_are_ordered_by_their_time_whatever_their_offset():
    runs = _offsets(_history(V100, STEPPED))
    assert sorted(r.started for _, r in runs) != [r.started for _, r in runs]  # text order
    comparison = cmp.compare(runs, None)
    [(_, [cell])] = comparison.rows
    files = [file for _, file, _ in dated_runs(cell)]
    assert files == [str(path) for path, _ in runs]


def test_a_step_among_runs_of_other_offsets_is_found_where_it_was():
    runs = _offsets(_history(V100, STEPPED))
    [step] = cmp.compare(runs, None).steps[0]
    assert moment(step.after[0]) == START + timedelta(hours=7)  # the 8th run
    assert step.step.ratio == pytest.approx(1.2, rel=0.01)


def test_the_history_plots_each_run_at_its_time_in_utc():
    runs = _offsets(_history(V100, STEPPED))
    rows = tidy.tidy(cmp.compare(runs, None)).history
    assert [r["date"] for r in rows] == [
        (START + timedelta(hours=i)).strftime("%Y-%m-%dT%H:%M:%S") for i in range(len(runs))
    ]


@pytest.mark.parametrize(("text", "when"), [
    ("2026-03-01T12:00:00+12:00", START),
    ("2026-03-01T00:00:00", START),  # no offset: UTC, as bench writes it
    ("2026-03-01T00:00:00Z", START),
    ("not a time", datetime.min.replace(tzinfo=UTC)),
    ("", datetime.min.replace(tzinfo=UTC)),
    ("0001-01-01T00:00:00+05:00", datetime.min.replace(tzinfo=UTC)),
])  # fmt: skip
def test_a_started_text_is_the_moment_it_names(text, when):
    assert moment(text) == when
