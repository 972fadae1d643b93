"""A coverage view (which machine ran which configurations, how many the baseline ran
too) and a machines table (accelerator, driver, CUDA or ROCm, framework versions, power
limit, image) whose every value, from a result file, is bounded text."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tests.report.test_compare import A100, V100, machine, point
from tests.report.test_page import _data, _report

pytest.importorskip("altair")


@pytest.fixture(autouse=True)
def no_bundle(monkeypatch):
    from bench.report import views

    monkeypatch.setattr(views, "bundle", lambda: "/* vega bundle */")


def _env(res, **accelerator):
    env = {
        **res.environment,
        "accelerator": {**res.environment["accelerator"], **accelerator},
        "framework": {"name": "torch", "torch": "2.11.0+cu130"},
        "cpu": {"model": "AMD EPYC 9R14", "logical_cores": 16},
    }
    return dataclasses.replace(res, environment=env)


def _runs(**hostile):
    base = _env(machine(V100, [point(64, [100, 101]), point(128, [110, 111])]),
                driver_version="580.159.04", cuda_runtime="13.0",
                nvml={"power_limit_w": [300.0]})  # fmt: skip
    other = _env(machine(A100, [point(64, [200, 201]), point(256, [300, 301])]), **hostile)
    return [(Path("a.json"), base), (Path("b.json"), other)]


def test_the_page_says_which_machine_ran_which_configurations():
    """An H100 and an H200 sharing 1 of 28 configurations, and nothing said so."""
    html, md = _report(_runs(), "v100")
    rows = {r["machine"]: r for r in _data(html)["coverage"]}
    assert rows[A100]["ran_text"] == "2 of 3" and rows[A100]["shared_text"] == "1 of 2"
    assert rows[A100]["configs"] == "bs 64 fp32; bs 256 fp32"
    assert rows[V100]["shared_text"] == "the baseline"
    assert "## Who ran what" in md and "<section id='coverage'>" in html


def test_the_machines_table_names_driver_runtime_framework_and_power_limit():
    html, md = _report(_runs(driver_version="570.1", cuda_runtime="12.8"), "v100")
    rows = {r["machine"]: r for r in _data(html)["inventory"]}
    assert rows[V100] == {
        "machine": V100, "accelerator": V100, "driver": "580.159.04", "runtime": "CUDA 13.0",
        "frameworks": "torch 2.11.0+cu130", "power_limit": "300 W", "image": "none",
        "cpu": "AMD EPYC 9R14, 16 cores", "results": 1, "machine_index": 0,
    }  # fmt: skip
    assert rows[A100]["driver"] == "570.1" and "## The machines" in md


def test_a_result_files_values_in_the_machines_table_are_bounded_text():
    html, _ = _report(
        _runs(
            driver_version={"x": "</script>"},  # not text: left out
            cuda_runtime="9" * 10_000,  # cut
            nvml={"power_limit_w": [float(w) for w in range(100)] + [True, "700"]},
        ),
        "v100",
    )
    row = next(r for r in _data(html)["inventory"] if r["machine"] == A100)
    assert row["driver"] == "" and len(row["runtime"]) <= 90
    assert row["power_limit"] == "0 W, 1 W, 2 W, 3 W and 12 more"  # 16 read, 4 shown
