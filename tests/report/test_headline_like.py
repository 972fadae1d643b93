"""Like with like first: the report's first table compares each machine with the baseline
on a configuration both ran; the tuned best is the second, labelled, its differences
from the baseline's best named; machines that share no configuration are told what to
run."""

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


def _with(res, command, torch="2.11.0"):
    env = {**res.environment, "framework": {"name": "torch", "torch": torch}}
    return dataclasses.replace(res, command=command, environment=env)


def test_the_first_table_compares_a_configuration_both_ran_not_each_ones_best():
    """The A100's best (bs 256, tuned) over the V100's best (bs 64) read 3.0x; on the
    configuration both ran (bs 64) it is 1.5x."""
    base = _with(machine(V100, [point(64, [199, 200, 201])]), ["bench", "resnet50"])
    other = _with(
        machine(A100, [point(64, [299, 300, 301]), point(256, [599, 600, 601])]),
        ["bench", "resnet50", "--batch-size", "64,256"],
    )
    html, md = _report([(Path("a.json"), base), (Path("b.json"), other)], "v100")
    data = _data(html)
    [like] = data["like"]
    assert like["config"] == "bs 64 fp32" and like["shared_text"] == "1 of 2"
    assert abs(like["rel"] - 1.5) < 1e-4 and like["sentence"] == "faster"
    [best] = [r for r in data["headline"] if r["scope"] == "all" and r.get("rel")]
    assert abs(best["rel"] - 3.0) < 1e-4 and best["differs"] == "batch 256 (baseline: 64)"
    assert html.index("Like with like") < html.index("best (tuned) configuration")
    assert md.index("## Like with like") < md.index("## Each machine's best (tuned)")
    assert "| bs 64 fp32 | 300 \\[298–302\\] | 200 \\[198–202\\] | 1.50x" in md


def test_machines_that_share_no_configuration_are_told_what_to_run():
    base = _with(machine(V100, [point(64, [200, 201])]), ["bench", "resnet50", "-b", "64"])
    other = _with(machine(A100, [point(128, [300, 301])]), ["bench", "resnet50", "-b", "128"])
    html, md = _report([(Path("a.json"), base), (Path("b.json"), other)], "v100")
    [like] = _data(html)["like"]
    assert like["verdict"] == "none shared" and "rel" not in like
    assert like["sentence"] == (
        "shares no configuration with the baseline: run bench resnet50 -b 64 on this machine"
    )
    assert "shares no configuration with the baseline" in md


def test_what_to_run_leaves_out_the_other_machines_output_folder():
    """It read 'run bench resnet50 -b 64 --output-dir /tmp/camp/res on this machine': a
    folder of the machine that ran it, not one this machine's user has."""
    command = ["bench", "resnet50", "-b", "64", "--output-dir", "/tmp/camp/res",
               "--output-dir=/x", "--label", "a b"]  # fmt: skip
    base = _with(machine(V100, [point(64, [200, 201])]), command)
    other = _with(machine(A100, [point(128, [300, 301])]), ["bench", "resnet50", "-b", "128"])
    html, _ = _report([(Path("a.json"), base), (Path("b.json"), other)], "v100")
    [like] = _data(html)["like"]
    assert like["sentence"] == (
        "shares no configuration with the baseline: run bench resnet50 -b 64 --label 'a b' on"
        " this machine"
    )


def test_another_framework_version_is_named_beside_the_ratio():
    """A CPU in torch 2.14 against GPUs in torch 2.11: nothing said so."""
    base = _with(machine(V100, [point(64, [200, 201])]), ["bench"], torch="2.11.0+cu130")
    other = _with(machine(A100, [point(64, [300, 301])]), ["bench"], torch="2.14.1")
    html, _ = _report([(Path("a.json"), base), (Path("b.json"), other)], "v100")
    [like] = _data(html)["like"]
    assert like["sentence"].endswith("; in torch 2.14, the baseline in torch 2.11")


def test_a_workload_the_baseline_never_ran_says_why_it_has_no_ratio():
    """LLM rows had blank ratio cells with no reason."""
    base = _with(machine(V100, [point(64, [200, 201])]), ["bench", "resnet50"])
    other = _with(machine(A100, [point(64, [300, 301])]), ["bench", "cnn-s"])
    other = dataclasses.replace(other, config=dataclasses.replace(other.config, workload="cnn-s"))
    html, _ = _report([(Path("a.json"), base), (Path("b.json"), other)], "v100")
    [row] = [r for r in _data(html)["headline"] if r["workload"] == "cnn-s"]
    assert row["sentence"] == "no ratio: the baseline ran no cnn-s configuration"
