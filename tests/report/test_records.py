"""A comparison's records: compare's long format (CSV, JSON) and the page's rows, each
figure declared once (bench.report.records.FIELDS)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.report import compare as cmp
from bench.report import records
from bench.report.words import Commands
from tests.report.test_compare import _llm_run


def test_compare_s_json_gives_the_mfu_the_child_recorded_where_the_catalogue_has_none():
    """The page and the LLM table took the peak the child recorded for its devices
    (details.mfu); compare's JSON and CSV took only the catalogue's, and said no MFU for
    an H200 in fp8 (the catalogue has no fp8 peak for it) where the page said 36.1%."""
    run = _llm_run("Accelerator the catalogue lacks", 2048, 1.0)
    comparison = cmp.compare([(Path("run.json"), run)], None)
    expected = 8 * 2048 * 6 * 1.2e9 / (8 * 989.4e12)  # 8 sequences a second, recorded peak
    [record] = records.records(comparison)
    assert record["mfu"] == pytest.approx(expected)
    [row] = records.points(comparison, Commands(), {})
    assert row["mfu"] == pytest.approx(expected)


def test_each_name_is_declared_once_in_each_vocabulary():
    for names in ([f.long for f in records.LONG], [f.page for f in records.PAGE]):
        assert len(names) == len(set(names)), names
