"""Cost and energy at a glance: a price from the run, from --price MACHINE=USD (a machine
and its memory-capped emulations, never refused for matching them) or from bench's
catalogue by accelerator (labelled, with its source and date); samples per dollar and
per joule in the first tables; the cost chart keeps the cheapest machines."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from bench.report import compare as cmp
from bench.result import MaxBatch
from bench.util.errors import UsageError
from tests.report.test_compare import A100, H100, machine, point
from tests.report.test_page import _data, _report

pytest.importorskip("altair")

H200 = "NVIDIA H200"


@pytest.fixture(autouse=True)
def no_bundle(monkeypatch):
    from bench.report import views

    monkeypatch.setattr(views, "bundle", lambda: "/* vega bundle */")


def _capped(res, gib):
    """The card emulated with --memory-limit, as bench suite's memory ladder runs it: a
    largest-batch search under the cap."""
    search = MaxBatch("fp32", largest_ok=8 * gib, first_failing=8 * gib + 1, status="done")
    config = dataclasses.replace(res.config, memory_limit_bytes=gib * 2**30)
    return dataclasses.replace(res, config=config, points=[], max_batch=[search])


def _h200_and_its_emulations():
    h200 = machine(H200, [point(64, [300, 301])])
    h100 = machine(H100, [point(64, [200, 201])])
    runs = [(Path("h100.json"), h100), (Path("h200.json"), h200)]
    runs += [(Path(f"h200-{g}.json"), _capped(h200, g)) for g in (16, 24, 80)]
    return runs


def test_a_price_names_a_machine_and_its_memory_capped_emulations_share_it():
    """--price H200=3.79 was refused: 'matches 4 machines' (the 16, 24 and 80 GiB caps)."""
    comparison = cmp.compare(_h200_and_its_emulations(), "h100", {"H200": 3.79})
    prices = {m.label: (m.price_per_hour, m.price_source) for m in comparison.machines}
    assert {k: v for k, v in prices.items() if "H200" in k} == {
        label: (3.79, "given with --price")
        for label in (H200, *(f"{H200} · memory-limit {g}GiB" for g in (16, 24, 80)))
    }


def test_a_price_that_names_two_machines_is_still_refused_in_one_line():
    runs = [(Path("a.json"), machine(A100, [point(64, [1, 2])])),
            (Path("b.json"), machine("NVIDIA A100-SXM4-80GB", [point(64, [1, 2])]))]  # fmt: skip
    with pytest.raises(UsageError, match="price 'A100' matches 2 machines"):
        cmp.compare(runs, None, {"A100": 3.0})


def test_a_machine_without_a_price_takes_the_catalogues_labelled_with_source_and_date():
    comparison = cmp.compare(_h200_and_its_emulations(), "h100")
    h100 = next(m for m in comparison.machines if m.label == H100)
    assert h100.price_per_hour == pytest.approx(98.32 / 8)  # p5.48xlarge's 8 GPUs
    assert h100.price_source.startswith("bench's price catalogue, read 2024-09: p5.48xlarge")
    h200 = next(m for m in comparison.machines if m.label == H200)
    assert h200.price_per_hour is None  # not in the catalogue: nothing estimated
    _, md = _report(_h200_and_its_emulations(), "h100")
    assert "- NVIDIA H100 80GB HBM3: $12.29/h, bench's price catalogue, read 2024-09" in md


def test_the_first_tables_carry_samples_per_dollar_and_per_joule():
    base = machine(H100, [point(64, [200, 201], joules=1000)])
    other = machine(A100, [point(64, [100, 101], joules=1000)], price=4.0)
    html, md = _report([(Path("a.json"), base), (Path("b.json"), other)], "h100")
    data = _data(html)
    [like] = data["like"]
    # ~100.5 samples/s (all samples over all seconds) x 3600 s / $4 a dollar
    assert like["per_usd"] == pytest.approx(100.5 * 3600 / 4.0, rel=1e-3)
    assert like["eff_text"] == "90.4 k samples/$ · 0.640 samples/J"
    best = {r["machine"]: r for r in data["headline"] if r["scope"] == "all"}
    assert "samples/J" in best[H100]["eff_text"] and "per dollar · per joule" in md


def test_the_cost_chart_keeps_the_cheapest_machines():
    from bench.report import views
    from bench.report.tidy import tidy

    runs = [
        (Path(f"{i}.json"), machine(f"GPU {i:02d}", [point(64, [100 + i, 101 + i])], price=1 + i))
        for i in range(12)
    ]
    t = tidy(cmp.compare(runs, "GPU 00"))
    [cost] = [v for v in views.views(t) if v.id == "usd_per_m"]
    assert cost.rank_by == "usd_per_m"
    html, _ = _report(runs, "GPU 00")
    assert '"rank_by":"usd_per_m"' in html
    assert "cheapest, by their lowest figure here" in html  # the script's note
