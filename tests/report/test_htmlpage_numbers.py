"""One number, one rounding, one direction: a figure of the report reads the same on the
page, in report.md and in bench compare; a slower ratio stays below 1 beside its
interval; counts count what they name; 'one run a side' only where both sides ran once."""

from __future__ import annotations

import random
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

from bench.report import compare as cmp
from bench.report import records
from tests.report.test_compare import A100, V100, machine, point
from tests.report.test_page import _data, _report

pytest.importorskip("altair")


@pytest.fixture(autouse=True)
def no_bundle(monkeypatch):
    from bench.report import views

    monkeypatch.setattr(views, "bundle", lambda: "/* vega bundle */")


def _slower():
    base = machine(V100, [point(64, [100, 101, 99])])
    slow = machine(A100, [point(64, [44.2, 44.0, 44.4])])
    return [(Path("base.json"), base), (Path("slow.json"), slow)]


def test_a_slower_ratio_reads_below_one_with_its_interval_and_turned_over_after():
    """'2.263x slower (95% CI 0.434x-0.449x)': the ratio turned over, its interval not,
    and three decimals where the table printed two."""
    html, md = _report(_slower(), "v100")
    [row] = [r for r in _data(html)["headline"] if r.get("rel")]
    assert row["rel_hi"] < 1 and row["sentence"] == "2.26x slower"
    assert "| 0.44x \\[0.43x–0.45x\\] | 2.26x slower |" in md
    assert '>0.44x [0.43x–0.45x]</td><td data-label="verdict">2.26x slower</td>' in html
    assert "95% CI" not in md
    json_record = [r for r in records.records(cmp.compare(_slower(), "v100")) if not r["baseline"]]
    assert json_record[0]["verdict_text"] == "0.44x [0.43x–0.45x], 2.26x slower"


def _js_fixed(value: float, digits: int) -> str:
    """What the page's script prints: toFixed / toPrecision round the exact binary value
    half up (ECMA-262), as Python's format does but for exact ties."""
    exact = Decimal(value)
    return str(exact.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


def test_the_page_rounds_a_figure_once_from_its_raw_value():
    """9.0949934 samples/s: report.md printed 9.09, the page 9.10 (the page embedded
    9.095, rounded to 5 digits, then rounded that to 3)."""
    from bench.report.htmlpage import compact

    raw = 9.094993470883823
    assert _js_fixed(compact(raw), 2) == f"{raw:.2f}" == "9.09"
    chance = random.Random(56)
    for _ in range(20_000):
        value = round(chance.uniform(1, 10), chance.choice((4, 5, 6))) + chance.choice(
            (0.0, 1e-9, -1e-9)
        )
        for digits in (1, 2, 3):
            assert _js_fixed(compact(value), digits) == _js_fixed(value, digits), value


def test_the_set_apart_note_counts_results_not_lines():
    """'1 result set apart' over one line saying '3 results ... set apart'."""
    loaded = _slower() + [
        (Path(f"other{i}.json"), machine(A100, [point(64, [300])], steps=50)) for i in range(3)
    ]
    html, _ = _report(loaded, "v100")
    assert "3 results set apart" in html and "1 result set apart" not in html


def test_one_run_a_side_only_where_both_sides_ran_once():
    """The baseline ran once and the other machine 4 times: no interval, but not 'one
    run a side' (the table said so)."""
    base = machine(V100, [point(64, [100])])
    other = machine(A100, [point(64, [119, 120, 121, 118])])
    html, md = _report([(Path("a.json"), base), (Path("b.json"), other)], "v100")
    data = _data(html)
    [row] = [r for r in data["points"] if r.get("rel")]
    [lead] = [r for r in data["headline"] if r.get("rel")]
    for text in (row["sentence"], lead["sentence"]):
        assert text == "no interval: one run of the baseline (4 of this machine)"
    assert "one run a side" not in html and "one run a side" not in md
    both_once = [(Path("a.json"), base), (Path("b.json"), machine(A100, [point(64, [120])]))]
    html, _ = _report(both_once, "v100")
    assert [r["sentence"] for r in _data(html)["points"] if r.get("rel")] == [
        "no interval: one run a side"
    ]
