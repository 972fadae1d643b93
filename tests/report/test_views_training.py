"""An honest max-batch view (a search stopped before its answer is 'at least N', drawn
open-ended, on integer ticks) and an LLM's time and cost to a number of tokens (or to
its target loss), never '90 epochs' of sequences whatever their length."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.report import compare as cmp
from bench.result import MaxBatch, Probe
from tests.report.test_compare import A100, H100, V100, _llm_run, machine, point
from tests.report.test_page import _report

pytest.importorskip("altair")


@pytest.fixture(autouse=True)
def no_bundle(monkeypatch):
    from bench.report import views

    monkeypatch.setattr(views, "bundle", lambda: "/* vega bundle */")


def _searches():
    stopped = MaxBatch("fp32", status="running", probes=[Probe(batch_size=136, status="ok")])
    capped = MaxBatch("fp32", largest_ok=2, first_failing=None, status="done")
    found = MaxBatch("fp32", largest_ok=200, first_failing=201, status="done")
    return [
        (Path("a.json"), machine(V100, [point(64, [100, 101])], max_batch=[found])),
        (Path("b.json"), machine(A100, [point(64, [200, 201])], max_batch=[capped])),
        (Path("c.json"), machine(H100, [point(64, [300, 301])], max_batch=[stopped])),
    ]


def test_a_search_stopped_before_its_answer_reads_at_least_n_and_draws_open_ended():
    """Searches stopped at '>= 2' and '>= 136 so far' were plain bars, so that a card
    seemed to fit batch 2 and no more; ticks read 0.5, 1.5."""
    from bench.report import tidy, views

    t = tidy.tidy(cmp.compare(_searches(), "v100"))
    rows = {r["machine"]: r for r in t.max_batch}
    assert rows[H100]["at_least"] == "at least 136 so far" and rows[H100]["limit"]
    assert rows[A100]["at_least"] == "at least 2" and rows[V100]["at_least"] == ""
    [view] = [v for v in views.views(t) if v.id == "max_batch"]
    text = json.dumps(view.spec)
    assert '"tickMinStep": 1' in text and '"format": "d"' in text
    assert '"strokeDash"' in text and "datum.limit" in text and '"field": "at_least"' in text
    assert "triangle-right" in text


def test_the_static_figure_says_at_least_n_of_a_search_stopped_before_its_answer():
    """The figure beside the page is the view's own spec: 'at least N' written on it."""
    from bench.report import page, tidy, vega, views

    t = tidy.tidy(cmp.compare(_searches(), "v100"))
    [figure] = [f for f in page.figures(t, views.views(t)) if f.name == "max_batch"]
    bars = figure.spec["spec"]["layer"][0]["encoding"]
    assert bars["stroke"]["scale"] == bars["color"]["scale"]  # the outline, the fill's colour
    svg, png = vega.render(figure.spec)
    assert ">at least 136 so far<" in svg and ">at least 2<" in svg
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_llm_trains_to_a_number_of_tokens_not_90_epochs_of_sequences():
    """llama3-1b at 8,192 tokens read 4x the hours of 2,048 tokens at the same tokens/s:
    an epoch is 100k sequences whatever their length."""
    runs = [
        (Path("a.json"), _llm_run(H100, 2048, 1.0)),
        (Path("b.json"), _llm_run(H100, 8192, 4.0)),
    ]
    _, md = _report(runs, None)
    assert "90 epochs" not in md
    table = md[md.index("## Time and cost to train on 1,000,000,000 tokens") :]
    table = table[: table.find("\n## ", 3)]
    lines = [line for line in table.splitlines() if line.startswith("| llama3-1b")]
    assert len(lines) == 2
    # 8 sequences a second of 2,048 tokens and 2 of 8,192: 16,384 tokens/s, each.
    hours = f"{1e9 / 16384 / 3600:.1f}"
    assert all(f"| 1,000,000,000 tokens | {hours} |" in line for line in lines), lines
    assert all("| contiguous | none |" not in line for line in lines)  # n/a: tokens


def test_a_sample_workloads_table_names_every_axis_of_its_rows():
    """The 90-epoch table dropped the memory format and compiler: two rows looked like
    one configuration with two answers."""
    _, md = _report(_searches(), "v100")
    table = md[md.index("## Time and cost to train 90 epochs") :]
    assert "| workload | batch | precision | format | compile | machine |" in table


def test_train_tokens_must_be_a_positive_number(tmp_path, capsys):
    from bench.cli import main

    assert main(["report", str(tmp_path), "--train-tokens", "-5"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--train-tokens" in err[0] and "positive" in err[0]
