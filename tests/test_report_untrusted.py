"""bench report's page keeps drawing whatever a valid result holds (issue 57): a
diverged run's NaN validation loss, machines named like JavaScript's own properties
(toString, __proto__, ...), a 300,000-evaluation loss curve, a baseline with no
verdict, numbers of 21 zeros; and a part of the page that fails anyway says so on the
page while the others draw.

The fast tier checks the data and the specs, and runs the page's script in Node where
it is installed (a stand-in DOM: the texts and rows it hands each chart); the full tier
opens the pages in Debian's chromium, as tests/test_report_browser.py does."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import shutil
from pathlib import Path

import pytest

from bench import integrity, result
from bench.report import compare as cmp

from .test_compare import machine, point

pytest.importorskip("matplotlib")
pytest.importorskip("altair")

FIXTURE = Path(__file__).parent / "data" / "result-v12.json"  # a run to a target loss
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
