"""Reading many result files (bench.report.collect.load_all)."""

from __future__ import annotations

import gc

import pytest

from bench import result
from bench.report.collect import load_all
from bench.util.errors import UsageError
from tests.report.test_compare import V100, machine, point


def test_reading_pauses_the_cycle_collector_and_gives_it_back_as_it_was(tmp_path, monkeypatch):
    """The collector is paused while files are read (its passes over thousands of
    results found nothing), and left as the caller had it: on, off, or after an error."""
    path = result.create(machine(V100, [point(64, [100, 101])]), tmp_path)
    seen = []
    reading = result.from_document

    def spy(*args, **kwargs):
        seen.append(gc.isenabled())
        return reading(*args, **kwargs)

    monkeypatch.setattr(result, "from_document", spy)
    monkeypatch.setattr("bench.result.checked.io.from_document", spy)
    assert gc.isenabled()
    assert len(load_all([tmp_path])) == 1
    assert seen == [False] and gc.isenabled()
    with pytest.raises(UsageError):
        load_all([tmp_path / "missing"])
    assert gc.isenabled()
    gc.disable()
    try:
        load_all([path])
        assert not gc.isenabled()  # the caller's choice stays
    finally:
        gc.enable()
