"""The report's one chart stack: each view a function of bench/report/views/, drawn on the
page by vega-embed and beside it (PNG and SVG) by vl-convert from the same spec."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from bench.report import compare as cmp
from tests.report.test_compare import V100, machine, point
from tests.report.test_page import _results

pytest.importorskip("altair")
pytest.importorskip("vl_convert")

VIEW = '''
"""Each machine's throughput as a dot: a view a user added."""

from bench.report.tidy import Tidy
from bench.report.views import View, view
from bench.report.views.marks import altair, as_spec


@view(1000)  # after every view of bench
def dots(t: Tidy) -> View | None:
    alt = altair()
    chart = alt.Chart(alt.NamedData("points")).mark_point().encode(
        x=alt.X("tp:Q", title="samples/s"), y=alt.Y("machine:N", title=None)
    )
    return View("dots", "Dots of throughput", "A dot per point.", "points", as_spec(chart))
'''


def test_a_view_added_as_one_module_is_on_the_page_and_beside_it(tmp_path, monkeypatch):
    """The recipe: one function declared @view(place) in a module of bench/report/views/;
    nothing else names it. Here the package's path gains a folder holding one such module."""
    from bench.report import page, views

    monkeypatch.setattr(views, "bundle", lambda: "/* vega bundle */")
    (tmp_path / "views").mkdir()
    (tmp_path / "views" / "dots.py").write_text(textwrap.dedent(VIEW))
    monkeypatch.setattr(views, "__path__", [*views.__path__, str(tmp_path / "views")])
    monkeypatch.delitem(sys.modules, "bench.report.views.dots", raising=False)
    written = page.write_report(cmp.compare(_results(), "v100"), tmp_path / "r")
    html = (tmp_path / "r" / "report.html").read_text()
    sections = html.split('<section class="view" id="view-')[1:]
    assert sections[-1].startswith('dots"><h2>Dots of throughput</h2>')  # last: PLACE 1000
    assert {tmp_path / "r" / "dots.png", tmp_path / "r" / "dots.svg"} <= set(written)
    assert "Dots of throughput" in (tmp_path / "r" / "dots.svg").read_text()
    assert (tmp_path / "r" / "dots.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "![dots](dots.png)" in (tmp_path / "r" / "report.md").read_text()
    assert '<a href="dots.svg">' in html


def test_the_views_are_found_in_their_places_and_each_module_stays_small():
    from bench.report import views

    found = views.makers()
    places = [maker.place for maker in found]
    assert places == sorted(places) and len(set(places)) == len(places)
    assert found[0].name == "bench.report.views.speed.relative"
    assert len(found) == 19
    for module in {sys.modules[maker.make.__module__] for maker in found}:
        assert module.__file__ is not None
        assert len(Path(module.__file__).read_text().splitlines()) < 500, module.__name__


def test_a_figure_never_grows_past_what_a_png_holds():
    """A ladder of 1,300 rungs was a chart 70,000 pixels tall; a PNG renderer refuses
    65,536. The figure draws the rows the page draws (and says how many), and its PNG is
    drawn finer where the chart is longer than MOST_PIXELS."""
    from bench.report import page, tidy, vega, views

    run = machine(V100, [point(1, [100, 101])])
    run.ladder = [{"rung": f"rung {i}", "point": {"batch_size": 1, "precision": "fp32",
                   "memory_format": "contiguous"}, "kept": i % 2 == 0, "why": ""}
                  for i in range(1300)]  # fmt: skip
    t = tidy.tidy(cmp.compare([(Path("many.json"), run)], None))
    [ladder] = [f for f in page.figures(t, views.views(t)) if f.name == "ladder"]
    assert "Drawing the first 400 of 1,300 rows." in ladder.spec["title"]["subtitle"]
    assert _png_height(vega.render(ladder.spec)[1]) < 2**16
    # A chart longer than MOST_PIXELS: its PNG drawn finer, its SVG whole.
    tall = {"data": {"values": [{"n": n} for n in range(1200)]}, "mark": "bar",
            "encoding": {"y": {"field": "n", "type": "nominal"}, "x": {"field": "n",
                         "type": "quantitative"}}, "height": {"step": 14}}  # fmt: skip
    svg, png = vega.render(tall)
    assert 'height="' in svg and 1200 * 14 * vega.SCALE > vega.MOST_PIXELS
    assert vega.MOST_PIXELS * 0.9 < _png_height(png) <= vega.MOST_PIXELS


def _png_height(png: bytes) -> int:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(png[20:24], "big")  # the IHDR: width, then height


def test_every_view_is_a_valid_vega_lite_spec():
    """The report builds its specs unchecked (Altair's check took a second of every
    report); here each view bench makes from its own example results and test data is
    checked against Vega-Lite's schema, which a wrong encoding fails."""
    from altair.vegalite.v6.schema import core
    from jsonschema import ValidationError

    from bench.report import tidy, views
    from bench.report.collect import load_all

    root = Path(__file__).resolve().parents[2]
    checked = set()
    for paths in ([root / "docs" / "results"], [root / "tests" / "data"]):
        t = tidy.tidy(cmp.compare(load_all(paths, []), None))
        for view in views.views(t):
            core.TopLevelSpec.validate(view.spec)
            checked.add(view.id)
    assert len(checked) >= 17, checked  # all but the scaling and accuracy views at least
    wrong = {**views.views(t)[0].spec, "mark": {"type": "no such mark"}}
    with pytest.raises(ValidationError):
        core.TopLevelSpec.validate(wrong)


def test_renderers_draw_in_children_and_say_in_one_line_what_they_could_not():
    """The figures are drawn by child processes while the page is written: what comes
    back equals a drawing in this process; a spec vl-convert refuses and a child that
    died are each one line naming the figure, and no child outlives the block."""
    from bench.report import vega
    from bench.util.errors import BenchError

    bar = {"data": {"values": [{"a": 1, "b": 2}]}, "mark": "bar",
           "encoding": {"x": {"field": "a", "type": "quantitative"}}}  # fmt: skip
    with vega.Renderers(2) as renderers:
        children = list(renderers._children)
        drawn = renderers.start([("bar", bar), ("bar2", {**bar, "mark": "point"})]).result()
        assert drawn["bar"] == vega.render(bar) and set(drawn) == {"bar", "bar2"}
        with pytest.raises(BenchError, match=r"^bench report: could not draw the figure bad: "):
            renderers.start([("bad", {**bar, "mark": "no such mark"})]).result()
    assert all(child.poll() is not None for child in children)
    with vega.Renderers(1) as renderers:
        renderers._children[0].kill()
        with pytest.raises(BenchError, match=r"figure bar: its renderer ended \(exit status -9\)"):
            renderers.start([("bar", bar)]).result()


def test_a_renderer_that_answers_nonsense_is_one_line_not_a_traceback():
    import io

    from bench.report import vega
    from bench.util.errors import BenchError

    class Child:
        stdin, stdout = io.StringIO(), io.StringIO("vl-convert says hello\n")

    assert vega._ask(Child(), "{}") == {"error": "its renderer answered nonsense"}  # type: ignore[arg-type]
    Child.stdout = io.StringIO('["not an answer"]\n')
    assert vega._ask(Child(), "{}") == {"error": "its renderer answered nonsense"}  # type: ignore[arg-type]
    # An answer without its figures, or with a PNG that is not base64: one line too.
    for line in ('{"svg": "<svg/>"}\n', '{"svg": "<svg/>", "png": "not base64!"}\n'):
        Child.stdout = io.StringIO(line)
        drawing = vega.Drawing([Child()], _jobs(("bar", "{}")))  # type: ignore[list-item]
        with pytest.raises(BenchError, match=r"^bench report: could not draw the figure bar: "):
            drawing.result()
    with pytest.raises(BenchError, match="no renderer drew the figure bar"):
        vega.Drawing([], _jobs(("bar", "{}"))).result()


def test_the_page_s_script_is_asked_of_the_first_renderer_and_a_bad_answer_is_one_line():
    import io

    from bench.report import vega
    from bench.util.errors import BenchError

    class Child:
        stdin, stdout = io.StringIO(), io.StringIO('{"bundle": "/* vega */"}\n')

        def wait(self) -> int:
            return -9

    renderers = vega.Renderers(0, bundle=True)
    renderers._children, renderers._asked = [Child()], True  # type: ignore[list-item]
    assert renderers.bundle() == "/* vega */" and renderers.bundle() == "/* vega */"
    for line in ('{"svg": "<svg/>"}\n', "", '{"error": "Error: no V8"}\n'):
        Child.stdout = io.StringIO(line)
        renderers._bundle, renderers._asked = None, True
        with pytest.raises(BenchError, match=r"^bench report: could not make the page's script"):
            renderers.bundle()


def _jobs(*jobs: tuple[str, str]):
    import queue

    found: queue.Queue[tuple[str, str]] = queue.Queue()
    for job in jobs:
        found.put(job)
    return found


def test_renderers_left_by_an_error_are_killed_not_waited_for():
    """Bad input found while the renderers still load V8: bench report said so a second
    later (it waited for them); they are killed at once."""
    import time

    from bench.report import vega

    started = time.monotonic()
    with pytest.raises(ValueError), vega.Renderers(2) as renderers:
        children = list(renderers._children)
        raise ValueError("bad input")
    assert all(child.returncode == -9 for child in children)
    assert time.monotonic() - started < 5
