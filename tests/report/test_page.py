"""bench report's page without a browser: the first screen's answer (best configuration
per workload, intervals, verdicts in words, a geometric mean), the views drawn only
where the results hold their data, the tidy table's commands, and untrusted text kept
inert in the HTML and in the JSON the page embeds. The browser test is
tests/report/test_page_browser.py."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path

import pytest

from bench.report import compare as cmp
from tests.report.test_compare import A100, V100, machine, point

pytest.importorskip("altair")

HOSTILE = "</script><img src=x onerror=alert(1)>{{7*7}}\"'\u2028\u2029\x1b[31m&amp;"


@pytest.fixture(autouse=True)
def no_bundle(monkeypatch):
    """The 900 KB Vega bundle takes seconds to make: a marker stands in for it here (the
    browser test inlines the real one)."""
    from bench.report import views

    monkeypatch.setattr(views, "bundle", lambda: "/* vega bundle */")


def _results(*, repeats=True):
    three = [99, 100, 101] if repeats else [100]
    a = machine(V100, [point(64, three, joules=1280), point(128, [110, 111, 109])], price=3.06)
    b = machine(A100, [point(64, [299, 300, 301] if repeats else [300]), point(128, [112])])
    a = dataclasses.replace(a, command=["bench", "resnet50", "--batch-size", "64,128"])
    return [(Path("a.json"), a), (Path("b.json"), b)]


def _report(loaded, baseline="v100"):
    """The page and report.md, without the figures beside it (bench.report.page)."""
    from bench.report import page

    md, html = page.texts(cmp.compare(loaded, baseline))
    return html, md


def _data(html):
    found = re.search(r"<script type='application/json' id='bench-data'>(.*?)</script>", html, re.S)
    assert found, "no embedded data"
    return json.loads(found.group(1))


def test_the_first_screen_gives_each_machines_best_with_intervals_and_verdicts():
    html, md = _report(_results())
    answer = html[html.index("<section id='answer'>") : html.index("</section>")]
    # A100's best (batch 64, 300/s) over V100's best (batch 128, 110/s): 2.73x.
    assert '>2.73x [2.66x–2.79x]</td><td data-label="verdict">faster</td>' in answer
    assert "300 [298–302]" in answer and "bs 64 fp32" in answer
    assert "the baseline" in answer
    assert "Geometric mean over workloads" in answer
    assert "| 2.73x \\[2.66x–2.79x\\] | faster |" in md and "best configuration" in md
    rows = [r for r in _data(html)["headline"] if r["scope"] == "all"]
    best = {r["machine"]: r for r in rows}
    assert best[A100]["verdict"] == "faster" and best[V100]["verdict"] == "baseline"
    low, high = best[A100]["rel_lo"], best[A100]["rel_hi"]
    assert low < 300 / 110 < high


def test_the_geometric_mean_combines_the_workloads_intervals_in_log_space():
    from bench.report import tidy

    rows = [
        {"scope": "all", "machine": "m", "rel": 2.0, "rel_lo": 1.8, "rel_hi": 2.2, "pairs": 3},
        {"scope": "all", "machine": "m", "rel": 0.5, "rel_lo": 0.4, "rel_hi": 0.6, "pairs": 5},
    ]
    (mean,) = tidy.geometric_mean(rows, ["m", "other"])
    assert mean["rel"] == pytest.approx(1.0)
    halves = [math.log(2.2 / 1.8) / 2, math.log(0.6 / 0.4) / 2]
    centre = (math.log(1.8 * 2.2) / 2 + math.log(0.4 * 0.6) / 2) / 2
    half = math.hypot(*halves) / 2
    assert mean["rel_lo"] == pytest.approx(math.exp(centre - half))
    assert mean["rel_hi"] == pytest.approx(math.exp(centre + half))
    assert mean["verdict"] == "cannot tell"
    one_run = [{**rows[0]}, {"scope": "all", "machine": "m", "rel": 0.5}]
    assert tidy.geometric_mean(one_run, ["m"])[0]["verdict"] == "no interval"


def test_a_precision_chosen_gives_each_machines_best_of_that_precision():
    a = machine(V100, [point(64, [100, 101, 99]), point(64, [400, 401, 399], precision="bf16")])
    b = machine(A100, [point(64, [300, 301, 299]), point(64, [500, 499, 501], precision="bf16")])
    html, _ = _report([(Path("a.json"), a), (Path("b.json"), b)])
    scoped = {(r["scope"], r["machine"]): r for r in _data(html)["headline"]}
    assert scoped[("all", A100)]["config"] == "bs 64 bf16"
    assert scoped[("fp32", A100)]["config"] == "bs 64 fp32"
    assert scoped[("fp32", A100)]["rel"] == pytest.approx(3.0, rel=1e-3)


def test_every_point_carries_the_command_that_made_it():
    html, _ = _report(_results())
    data = _data(html)
    commands = {r["machine"]: data["commands"][r["cmd"]] for r in data["points"]}
    assert commands[V100] == "bench resnet50 --batch-size 64,128"
    assert commands[A100].startswith("not recorded in the result (bench rerun b.json")
    assert all({"tp", "config", "workload", "date", "file"} <= set(r) for r in data["points"])


def test_the_page_is_one_file_that_fetches_nothing():
    html, _ = _report(_results())
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    assert "/* vega bundle */" in html  # inlined, not fetched
    assert not re.search(r"<(script|link|img|iframe)[^>]*\s(src|href)=", html)
    assert "data:image/png;base64" not in html  # the static figures are files beside it
    from bench.report import page

    _, linked = page.texts(cmp.compare(_results(), "v100"), made=["throughput"])
    assert '<a href="throughput.svg">' in linked  # ... linked for papers


def test_a_view_is_drawn_only_where_the_results_hold_its_data():
    html, _ = _report(_results())
    drawn = {v["id"] for v in _data(html)["views"]}
    assert {"relative", "throughput", "normalised", "energy", "usd_per_m"} <= drawn
    assert drawn.isdisjoint({"ladder", "accuracy", "tokens", "mfu", "scaling", "history"})
    assert "id='view-ladder'" not in html and 'id="view-ladder"' not in html
    # one machine at two batch sizes is a line over batch sizes
    assert "vs_batch" in drawn


def test_each_view_is_a_vega_lite_spec_of_named_data():
    html, _ = _report(_results())
    for view in _data(html)["views"]:
        spec = view["spec"]
        assert spec["data"] == {"name": view["data"]}, view["id"]
        assert "values" not in json.dumps(spec)  # the data travels once, beside the specs


@pytest.mark.parametrize(
    ("loaded", "sentence"),
    [
        (lambda: _results()[1:], "One machine: its own figures, nothing to set them against"),
        (
            lambda: [(Path("x.json"), machine(V100, [point(64, [], status="oom")]))],
            "No result holds a measured point: there is nothing to compare.",
        ),
    ],
    ids=["one-machine", "nothing-measured"],
)
def test_a_report_with_nothing_to_compare_says_so_in_a_sentence(loaded, sentence):
    html, _ = _report(loaded(), baseline=None)
    assert sentence in html


def test_untrusted_text_stays_inert_in_the_page_and_its_data():
    loaded = _results()
    path, res = loaded[1]
    env = {**res.environment, "accelerator": {"accelerator": f"GPU {HOSTILE}"}}
    hostile = dataclasses.replace(res, environment=env, label=HOSTILE,
                                  command=["bench", HOSTILE])  # fmt: skip
    html, md = _report([loaded[0], (path, hostile)])
    assert html.count("<script") == 3 and html.count("</script>") == 3
    assert "<img" not in html and "onerror=alert(1)>" not in html
    assert "\x1b" not in html
    block = html[html.index("id='bench-data'>") : html.index("</script>")]
    # JSON in a script: no '<' to close it, no raw U+2028/2029 (line ends to old JS)
    assert not re.search("[<>&\u2028\u2029]", block.split(">", 1)[1])
    data = _data(html)
    label = next(r["machine"] for r in data["points"] if "GPU" in r["machine"])
    assert "</script><img src=x onerror=alert(1)>{{7*7}}" in label  # read back unchanged
    assert "\\x1b[31m" in label  # the control character made visible, not raw
    assert any("</script>" in text for text in data["commands"])
    assert "&lt;/script&gt;&lt;img" in html  # in the first screen's tables: entities
    assert "<img" not in md


def test_the_static_figures_draw_the_baseline_and_the_fastest_machines_only():
    """A fleet's figures for papers: as the page's charts, 10 machines, not 100 bars a
    group (90 s to draw), and the figure says so under its title."""
    from bench.report import page, tidy, views

    loaded = [
        (Path(f"{n}.json"), machine(f"GPU {n:02d}", [point(64, [100 + n, 101 + n, 99 + n])]))
        for n in range(14)
    ]
    t = tidy.tidy(cmp.compare(loaded, "GPU 05"))
    made = {f.name: f for f in page.figures(t, views.views(t))}
    throughput = made["throughput"].spec
    labels = {r["machine"] for r in throughput["datasets"]["points"]}
    assert len(labels) == 10 and "GPU 05" in labels
    assert not labels & {"GPU 00", "GPU 01", "GPU 02", "GPU 03"}  # the slowest left out
    assert throughput["title"]["subtitle"][0] == (
        "Drawing 10 of 14 machines (the baseline, then the fastest by geometric mean)."
    )


def test_a_decoders_best_is_ranked_and_shown_in_tokens_per_second():
    # One 8,192-token sequence is four of 2,048: 6 samples/s at 8,192 tokens (49 k
    # tokens/s) beats 20 samples/s at 2,048 (41 k tokens/s), as LLM users count.
    from bench.config.run_config import RunConfig
    from bench.result import Result

    def run(seq_len, samples_per_s):
        p = dataclasses.replace(
            point(1, [samples_per_s]), details={"per_sample": {"count": seq_len, "unit": "tokens"}}
        )
        env = {"accelerator": {"accelerator": A100, "accelerator_count": 1}, "cpu": {}}
        config = RunConfig(workload="llama3-1b", seq_len=seq_len, steps=20)
        return Result(config=config, environment=env, points=[p])

    loaded = [(Path("short.json"), run(2048, 20.0)), (Path("long.json"), run(8192, 6.0))]
    html, md = _report(loaded, baseline=None)
    best = [r for r in _data(html)["headline"] if r["scope"] == "all"]
    assert len(best) == 1 and "8192 tokens" in best[0]["config"], best
    assert best[0]["unit"] == "tokens/s" and best[0]["unit_tp"] == pytest.approx(49_152)
    assert "49.2 k tokens/s" in md


def test_a_machine_keeps_its_colour_on_every_chart_whichever_machines_a_chart_holds():
    """Vega-Lite deals colours out per chart: with a machine missing from a chart (no
    energy counter, one machine trained to a target), the others changed colour from
    chart to chart. The page gives each machine one colour, and each chart's legend
    names only the machines it draws."""
    a = machine(V100, [point(64, [99, 100, 101], joules=1280)])
    b = machine(A100, [point(64, [299, 300, 301])])  # no energy: not on the energy chart
    html, _ = _report([(Path("a.json"), a), (Path("b.json"), b)])

    def colours(spec):
        found = {}
        for match in re.finditer(r'"color": ?(\{"field": ?"machine".*?\}\})', json.dumps(spec)):
            scale = json.loads(match.group(1))["scale"]
            found.update(zip(scale["domain"], scale["range"], strict=True))
        return found

    charts = {v["id"]: colours(v["spec"]) for v in _data(html)["views"]}
    assert set(charts["throughput"]) == {V100, A100}
    assert set(charts["energy"]) == {V100}  # the legend names only what it draws
    for chart in charts.values():
        for name, colour in chart.items():
            assert colour == charts["throughput"][name]
    assert charts["throughput"][V100] != charts["throughput"][A100]


def test_the_figures_for_papers_name_each_machine_once_and_draw_only_what_was_compared():
    """The relative figure's legend named six machines 18 times (once a panel), drew
    empty panels for workloads the baseline never ran, and labelled token models NHWC."""
    from bench.report import page, tidy, vega, views
    from tests.report.test_compare import _llm_run

    runs = [
        (Path("v.json"), machine(V100, [point(64, [100, 101]), point(128, [110, 111])])),
        (Path("a.json"), machine(A100, [point(64, [300, 301]), point(128, [310, 311])])),
        (Path("l.json"), _llm_run(A100, 2048, 1.0, devices=1, framework="jax")),  # A100 alone
    ]
    t = tidy.tidy(cmp.compare(runs, baseline=V100))
    made = {f.name: f for f in page.figures(t, views.views(t))}
    relative, _ = vega.render(made["relative_throughput"].spec)
    assert relative.count(f">{A100}<") == 1  # in the legend once; the baseline: the rule at 1
    assert ">resnet50<" in relative and "llama3-1b" not in relative
    throughput, _ = vega.render(made["throughput"].spec)
    assert ">llama3-1b<" in throughput and "tokens" in throughput
    assert "NHWC" not in throughput and "channels_last" not in throughput
