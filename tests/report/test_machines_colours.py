"""Each machine one colour on every chart and figure, from its identity: dealt by place
(and past ten machines again per chart) one colour was three machines on one page."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from bench.report import compare as cmp
from bench.report.machines import PALETTE, machine_colours
from tests.report.test_compare import machine, point

pytest.importorskip("altair")


def test_a_machines_colour_is_its_own_whatever_the_order_or_the_others():
    names = [f"GPU {i:02d}" for i in range(20)]
    colours = machine_colours(names)
    assert len(set(colours.values())) == 20 == len(PALETTE)  # no two share one
    assert machine_colours(list(reversed(names))) == colours
    # Alone, or beside a machine that wants another colour, a machine has its own.
    alone = machine_colours(["NVIDIA H200"])["NVIDIA H200"]
    others = [n for n in names if machine_colours([n])[n] != alone]
    assert machine_colours(["NVIDIA H200", others[0]])["NVIDIA H200"] == alone


def _fleet(n):
    runs = []
    for i in range(n):
        res = machine(f"GPU {i:02d}", [point(64, [100 + i, 101 + i])])
        runs.append((Path(f"{i}.json"), dataclasses.replace(res)))
    return runs


def test_every_view_and_figure_draws_a_machine_in_the_pages_colour(monkeypatch):
    """The page's colours by machine, passed to every view and to report.md's figures:
    the static figures took matplotlib's cycle, by their own order; now they are the
    views' own specs, their legends naming the machines each draws."""
    from bench.report import page, tidy, views

    monkeypatch.setattr(views, "bundle", lambda: "")
    comparison = cmp.compare(_fleet(15), "GPU 00")
    t = tidy.tidy(comparison)
    assert t.colours == comparison.colours == machine_colours([f"GPU {i:02d}" for i in range(15)])
    for view in views.views(t):
        for scale in _colour_scales(view.spec):
            for name, colour in zip(scale["domain"], scale["range"], strict=True):
                assert t.colours[name] == colour, view.id
    shown = views.views(t)
    made = page.figures(t, shown)
    assert [f.name for f in made] == [v.figure or v.id for v in shown]
    for figure in made:
        drawn = {r["machine"] for r in next(iter(figure.spec["datasets"].values()))}
        for scale in _colour_scales(figure.spec):
            assert set(scale["domain"]) == drawn, figure.name  # its legend: what it draws
            for name, colour in zip(scale["domain"], scale["range"], strict=True):
                assert t.colours[name] == colour, figure.name


def _colour_scales(spec):
    if isinstance(spec, list):
        for item in spec:
            yield from _colour_scales(item)
    elif isinstance(spec, dict):
        colour = spec.get("color")
        if isinstance(colour, dict) and colour.get("field") == "machine" and "scale" in colour:
            yield colour["scale"]
        for value in spec.values():
            yield from _colour_scales(value)
