"""bench report's page keeps drawing whatever a valid result holds: a
diverged run's NaN validation loss, machines named like JavaScript's own properties
(toString, __proto__, ...), a 300,000-evaluation loss curve, a baseline with no
verdict, numbers of 21 zeros; and a part of the page that fails anyway says so on the
page while the others draw.

The fast tier checks the data and the specs, and runs the page's script in Node where
it is installed (a stand-in DOM: the texts and rows it hands each chart); the full tier
opens the pages in Debian's chromium, as tests/report/test_page_browser.py does."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from bench import result
from bench.report import compare as cmp
from bench.result import integrity
from tests.conftest import DATA
from tests.report.test_compare import A100, V100, machine, point

pytest.importorskip("altair")

FIXTURE = DATA / "result-v12.json"  # a run to a target loss
# Names Vega read as an object's own keys: every bar chart stopped ("Operator not
# defined"), and a line of '__proto__' was never drawn.
PROPERTY_NAMES = ["toString", "valueOf", "constructor", "hasOwnProperty", "__proto__"]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
NODE = shutil.which("node")
in_chromium = pytest.mark.skipif(
    not Path(CHROMIUM).exists(), reason="no chromium (apt-get install chromium)"
)


def _sealed(document: dict, path: Path) -> Path:
    document.pop(integrity.FIELD, None)
    path.write_text(json.dumps(integrity.seal(document)))
    return path


def diverged(folder: Path) -> tuple[Path, result.Result]:
    """A run to a loss whose second evaluation diverged (NaN), as a result file holds it
    (loaded and validated as bench report loads it)."""
    document = json.loads(FIXTURE.read_text())
    document["points"][0]["loss"][0]["curve"][1]["loss"] = math.nan
    path = _sealed(document, folder / "diverged.json")
    return path, result.load(path)


def beside(names: list[str], *, joules: float | None = None) -> list[tuple[Path, result.Result]]:
    """Machines measured at two batch sizes, priced (a result's accelerator names its
    machine: anyone's to write)."""
    runs = []
    for i, name in enumerate(names):
        tp = [99 + 100 * i, 100 + 100 * i, 101 + 100 * i]
        measured = [point(64, tp, joules=joules), point(128, [110, 111, 109])]
        runs.append((Path(f"m{i}.json"), machine(name, measured, price=3.0)))
    return runs


def long_curve(evaluations: int = 300_000) -> result.Result:
    """A valid run to a loss of 300,000 evaluations: a 59 MB page that took 13 s and
    830 MB to build. A spike two fifths in must stay drawn."""
    run = result.load(FIXTURE)
    curve = [
        {"step": i + 1, "tokens": 512 * (i + 1), "loss": 10.0 / (1 + i / 1000),
         "train_s": 0.01, "eval_s": 0.001}
        for i in range(evaluations)
    ]  # fmt: skip
    curve[evaluations * 2 // 5]["loss"] = 50.0
    record = {**run.points[0].loss[0], "curve": curve}
    return dataclasses.replace(run, points=[dataclasses.replace(run.points[0], loss=(record,))])


def _page(runs, baseline):
    from bench.report import page

    return page.texts(cmp.compare(runs, baseline))[1]


def _data(html: str) -> dict:
    found = re.search(r"<script type='application/json' id='bench-data'>(.*?)</script>", html, re.S)
    assert found, "no embedded data"
    return json.loads(found.group(1))


@pytest.fixture
def no_bundle(monkeypatch):
    """The 900 KB Vega bundle takes seconds to make: a marker stands in for it."""
    from bench.report import views

    monkeypatch.setattr(views, "bundle", lambda: "/* vega bundle */")


# --- the data and the specs (fast) -----------------------------------------------------


def test_a_300000_evaluation_curve_is_thinned_to_a_bounded_page(no_bundle):
    html = _page([(Path("long.json"), long_curve())], None)
    assert len(html) < 300_000  # was 59 MB (57 MB here, without the Vega bundle)
    data = _data(html)
    rows = data["loss_curves"]
    assert len(rows) <= 200
    evaluations = [r["evaluation"] for r in rows]
    assert evaluations[0] == 1 and evaluations[-1] == 300_000  # its first and its last
    assert 120_001 in evaluations  # the spike
    first_at_target = next(i for i in range(300_000) if 10.0 / (1 + i / 1000) <= 5.0) + 1
    assert first_at_target in evaluations
    assert "drawn from at most 200 of them" in html
    [view] = [v for v in data["views"] if v["id"] == "loss_tokens"]
    assert view["cap"] >= len(rows)  # each curve drawn whole, not its first 400 rows


def test_the_page_embeds_the_first_curves_that_fit_and_says_how_many():
    from bench.report import tidy

    curves = long_curve(1_000)
    runs = [(Path(f"{i}.json"), dataclasses.replace(curves, label=f"run {i}")) for i in range(20)]
    made = tidy.tidy(cmp.compare(runs, None))
    assert len(made.loss_curves) <= 3000  # was 20,000
    assert "The first 15 of 20 curves" in getattr(made, "loss_note", "")


def test_a_diverged_evaluation_stays_a_row_without_a_loss(tmp_path, no_bundle):
    from bench.report import tidy

    path, run = diverged(tmp_path)
    made = tidy.tidy(cmp.compare([*beside([V100, A100]), (path, run)], "v100"))
    curve = run.points[0].to_loss.curve
    assert len(made.loss_curves) == len(curve)
    assert "loss" not in made.loss_curves[1] and "loss" in made.loss_curves[2]
    assert "NaN" not in _data_text(_page([*beside([V100]), (path, run)], "v100"))


def test_machines_named_like_javascripts_own_properties_draw_every_chart(tmp_path):
    """Every view the page would draw, drawn by Vega (vl-convert's) with the page's
    data: a bar chart keyed its stack and side-by-side bars by the machine's name."""
    vl_convert = pytest.importorskip("vl_convert")
    from bench.report import tidy, views

    path, run = diverged(tmp_path)
    env = {**run.environment, "accelerator": {"accelerator": "__proto__", "accelerator_count": 1}}
    runs = [
        *beside(PROPERTY_NAMES, joules=1e-15),
        (path, dataclasses.replace(run, environment=env)),
    ]
    made = tidy.tidy(cmp.compare(runs, "toString"))
    drawn = views.views(made)
    assert {"throughput", "normalised", "relative", "vs_batch", "loss_tokens"} <= {
        v.id for v in drawn
    }
    for view in drawn:
        spec = {**view.spec, "datasets": {view.data: getattr(made, view.data)}}
        compiled = json.dumps(vl_convert.vegalite_to_vega(spec)["marks"])
        for name in PROPERTY_NAMES:  # never a name inside an expression
            assert f'\\"{name}\\"' not in compiled, (view.id, name)
        svg = vl_convert.vegalite_to_svg(spec)  # raised "Operator not defined"
        assert svg.count("<path") > 1, view.id


# --- the page's script, run in Node with a stand-in DOM (fast, where Node is) ------------

_DOM = r"""
const made = [];
function element(id, text) {
  const e = { id: id, children: [], dataset: {}, style: {}, hidden: false, value: "",
    textContent: text || "", appendChild(c) { this.children.push(c); return c; },
    append(...c) { this.children.push(...c); }, replaceChildren() { this.children = []; },
    addEventListener() {}, closest() { return element(); },
    querySelector(selector) { return element("", selector === "h2" ? this.id : ""); } };
  made.push(e);
  return e;
}
const byId = {};
globalThis.document = {
  body: { dataset: {} }, createElement: () => element(),
  getElementById: (id) => byId[id] || (byId[id] = element(id)),
};
document.getElementById("bench-data").textContent = require("fs").readFileSync(0, "utf8");
const drawn = {};
globalThis.vegaEmbed = async (node, spec) => {  // Vega failing on a chart marked so
  if (spec.description === "fails") throw new Error("Operator not defined: undefined");
  for (const [name, rows] of Object.entries(spec.datasets)) {
    drawn[name] = [...new Set([...(drawn[name] || []), ...rows])];  // every chart's rows
  }
  return { view: { finalize() {} } };
};
setTimeout(() => console.log(JSON.stringify({ ready: document.body.dataset.ready,
  failure: document.getElementById("failure").textContent, drawn: drawn,
  texts: made.map((e) => e.textContent).filter((t) => t) })), 200);
"""


def run_script(html: str) -> dict:
    """The page's script over the page's data in Node: whether it finished, what it said
    failed, the rows it handed each chart and every text it set."""
    from bench.report.htmlpage import page_script

    if NODE is None:
        pytest.skip("no node (apt-get install nodejs)")
    done = subprocess.run(
        [NODE, "-e", _DOM + page_script()], input=json.dumps(_data(html)), capture_output=True,
        text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_the_script_draws_a_diverged_loss_as_n_a_and_the_rest(tmp_path, no_bundle):
    path, run = diverged(tmp_path)
    out = run_script(_page([*beside([V100, A100]), (path, run)], "v100"))
    assert (out["ready"], out["failure"]) == ("1", "")  # was: toFixed of undefined, nothing
    loss = out["drawn"]["loss_curves"]
    assert loss[1]["loss_text"].startswith("n/a (target 5") and "loss" not in loss[1]
    assert re.match(r"\d\.\d{3} \(target 5", loss[2]["loss_text"])
    assert {r["machine"] for r in out["drawn"]["points"]} >= {V100, A100}


def test_the_baselines_tooltip_says_it_is_the_baseline(no_bundle):
    out = run_script(_page(beside([V100, A100]), "v100"))
    points = out["drawn"]["points"]
    base = [r for r in points if r["machine"] == V100]
    assert base and all(r["verdict_text"] == "the baseline" for r in base)  # 'undefined'
    assert all("undefined" not in json.dumps(r) for r in points)


def test_a_tiny_number_prints_in_three_digits_not_twenty_zeros(no_bundle):
    out = run_script(_page(beside([V100, A100], joules=1e-17), "v100"))
    points = out["drawn"]["points"]
    energy = {(r["energy_sample_j"], r["energy_text"]) for r in points if "energy_sample_j" in r}
    assert {text for _, text in energy} == {"1.56e-20 J"}  # was 0.0000000000000000000156 J
    assert all(text == f"{joules:.2e} J" for joules, text in energy)  # as Python writes it


def test_bars_side_by_side_follow_the_legends_order_by_number(no_bundle):
    """Bars are set side by side by a number, not by the machine's name (which Vega
    keyed objects by); the script numbers machines as its legends order them: the
    baseline, then the fastest."""
    out = run_script(_page(beside(PROPERTY_NAMES), "toString"))
    index = {r["machine"]: r["machine_index"] for r in out["drawn"]["points"]}
    fastest_first = ["toString", "__proto__", "hasOwnProperty", "constructor", "valueOf"]
    assert sorted(index, key=index.get) == fastest_first and index["toString"] == 0


def test_a_chart_that_fails_says_so_and_the_others_draw(tmp_path, no_bundle):
    """Vega failing on one chart (as on a machine named 'toString') took the page's
    script with it: every chart after it undrawn, the page said one line."""
    path, run = diverged(tmp_path)
    html = _page([*beside([V100, A100]), (path, run)], "v100")
    data = _data(html)
    [failing] = [v for v in data["views"] if v["id"] == "throughput"]
    failing["spec"]["description"] = "fails"
    out = run_script(html.replace(_data_text(html), json.dumps(data)))
    assert out["ready"] == "partial"
    assert out["failure"] == (
        "The page could not draw the chart 'view-throughput': Error: Operator not defined: "
        "undefined"
    )
    assert "Not drawn: Error: Operator not defined: undefined" in out["texts"]
    assert {"headline", "points", "loss_curves"} <= set(out["drawn"])  # the others drew


def _data_text(html: str) -> str:
    found = re.search(r"<script type='application/json' id='bench-data'>(.*?)</script>", html, re.S)
    assert found
    return found.group(1)


# --- in a real browser (full) -------------------------------------------------------------


@contextlib.contextmanager
def opened(page_path: Path, warnings: bool = False):
    """The page in chromium as a user opens it, ready; and every error it logged (with
    `warnings`, every console message but a plain log too)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="no playwright (pip install)")
    errors: list[str] = []
    counted = (lambda kind: kind != "log") if warnings else (lambda kind: kind == "error")
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            tab = chromium.new_page(viewport={"width": 1280, "height": 900})
            tab.on("console", lambda m: errors.append(m.text) if counted(m.type) else None)
            tab.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
            tab.goto(page_path.as_uri())
            tab.wait_for_function("document.body.dataset.ready", timeout=30_000)
            yield tab, errors
            tab.screenshot(path=str(page_path.with_suffix(".png")), full_page=True)
        finally:
            chromium.close()


def _written(runs, baseline, folder: Path) -> Path:
    pytest.importorskip("vl_convert")
    from bench.report import page

    page.write_report(cmp.compare(runs, baseline), folder)
    return folder / "report.html"


def _undrawn(tab) -> list[str]:
    """The views the page shows with no chart in them."""
    return tab.evaluate(
        "[...document.querySelectorAll('section.view')].filter((s) => !s.hidden && "
        "!s.querySelector('.chart svg')).map((s) => s.id)"
    )


@pytest.mark.full
@in_chromium
def test_in_chromium_a_diverged_loss_leaves_every_other_result_drawn(tmp_path):
    path, run = diverged(tmp_path)
    html = _written([*beside([V100, A100]), (path, run)], "v100", tmp_path / "report")
    with opened(html) as (tab, errors):
        assert tab.evaluate("document.body.dataset.ready") == "1", tab.inner_text("#failure")
        assert tab.inner_text("#failure") == ""
        assert _undrawn(tab) == []  # was: no chart, no table, no error shown
        assert tab.locator("#table-points tbody tr").count() == 5
        assert tab.locator("#table-headline tbody tr").count() == 3
        assert tab.locator("#view-loss_tokens .mark-line path").count() == 1
    assert not errors, errors
    assert html.with_suffix(".png").stat().st_size > 10_000


@pytest.mark.full
@in_chromium
def test_in_chromium_machines_named_like_javascripts_own_properties_draw_every_chart(tmp_path):
    run = result.load(FIXTURE)  # a run to a loss: a line of '__proto__' in its charts
    env = {**run.environment, "accelerator": {"accelerator": "__proto__", "accelerator_count": 1}}
    runs = [
        *beside(PROPERTY_NAMES, joules=1e-17),
        (FIXTURE, dataclasses.replace(run, environment=env)),
    ]
    earlier = dataclasses.replace(runs[0][1], started="2026-01-02T03:04:05+00:00")
    runs.append((Path("earlier.json"), earlier))  # toString's history: two dates
    html = _written(runs, "toString", tmp_path / "report")
    with opened(html) as (tab, errors):
        assert tab.evaluate("document.body.dataset.ready") == "1", tab.inner_text("#failure")
        assert _undrawn(tab) == []  # was: "The page could not draw: Operator not defined"
        ids = tab.evaluate("[...document.querySelectorAll('section.view')].map((s) => s.id)")
        assert {"view-throughput", "view-history", "view-loss_tokens", "view-energy"} <= set(ids)
        legend = tab.locator("#view-throughput .role-legend-label text").all_text_contents()
        assert sorted(legend) == sorted(PROPERTY_NAMES)
        assert tab.locator("#view-vs_batch .mark-line path").count() == 5  # '__proto__' drew none
        bars = tab.evaluate(
            "[...document.querySelectorAll('#view-throughput .mark-rect path')]"
            ".map((p) => p.getAttribute('aria-label')).join('\\n')"
        )
        assert "machine: toString;" in bars and "verdict: the baseline;" in bars
        assert "undefined" not in bars  # the baseline's verdict read 'undefined'
        energy = tab.evaluate(
            "[...document.querySelectorAll('#view-energy .mark-rect path')]"
            ".map((p) => p.getAttribute('aria-label')).join('\\n')"
        )
        assert "energy: 1.56e-20 J" in energy  # was 0.0000000000000000000156 J
    assert not errors, errors


@pytest.mark.full
@in_chromium
def test_in_chromium_a_chart_that_fails_says_so_and_the_others_draw(tmp_path):
    html = _written(beside([V100, A100]), "v100", tmp_path / "report")
    text = html.read_text()
    data = _data(text)
    [failing] = [v for v in data["views"] if v["id"] == "throughput"]
    failing["spec"] = {"mark": "no-such-mark"}  # Vega-Lite refuses it, as Vega refused names
    from bench.report.htmlpage import script_json

    html.write_text(text.replace(_data_text(text), script_json(data)))
    with opened(html) as (tab, errors):
        assert tab.evaluate("document.body.dataset.ready") == "partial"
        failure = tab.inner_text("#failure")
        assert failure.startswith(
            "The page could not draw the chart 'Throughput per configuration'"
        )
        assert tab.inner_text("#view-throughput .cap").startswith("Not drawn: ")
        assert _undrawn(tab) == ["view-throughput"]  # every other chart drew
        assert tab.locator("#table-points tbody tr").count() == 4
        tab.select_option("#filter-machine", A100)  # a filter draws it again: said once
        tab.wait_for_function("document.querySelectorAll('#table-points tbody tr').length == 2")
        assert tab.inner_text("#failure") == failure
    assert not [e for e in errors if e.startswith("uncaught")], errors
