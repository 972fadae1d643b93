"""The recipe "add a run option" (docs/contributing.md, docs/architecture.md's "Where to
add"), followed to the letter: a new sweep axis, --widget off,on, declared in a copy of
bench in the places the recipe names and nowhere else (its RunOption with how a result
stores it, the RunConfig and PointConfig fields, the schema's version, the stored
field). The parser, the config, the sweep, the result's point axes and schema entries,
tune's grid and a result file of the version before follow from them; left out of
PointConfig, it fails naming the field."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.result.schema import SCHEMA_VERSION
from tests.conftest import ROOT


def _targets(node: ast.stmt) -> list[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
    return [t.id for t in targets if isinstance(t, ast.Name)]


def _insert_after(source: str, find: str, text: str, *, in_class: str | None = None) -> str:
    """`text` (lines, indented as given) after the top-level assignment to `find`, or,
    with `in_class`, after that class's last field."""
    tree = ast.parse(source)
    if in_class is not None:
        cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == in_class)
        node: ast.stmt = [n for n in cls.body if isinstance(n, ast.AnnAssign)][-1]
    else:
        node = next(n for n in tree.body if find in _targets(n))
    lines = source.splitlines(keepends=True)
    return "".join([*lines[: node.end_lineno], text, *lines[node.end_lineno :]])


def _edit(path: Path, *edits: tuple[str, str, str | None]) -> None:
    source = path.read_text()
    for find, text, in_class in edits:
        source = _insert_after(source, find, text, in_class=in_class)
    path.write_text(source)


# The recipe's places, each with what the new option writes there.
NOW = SCHEMA_VERSION  # the recipe bumps it: the new fields are `since` the next one
OPTION = f"""
WIDGETS = ("off", "on")
RUN_OPTIONS = (*RUN_OPTIONS, RunOption(
    ("--widget",), "a widget: off (default), on; comma-separated for a sweep", "widgets",
    choice_list("widget", WIDGETS), default=("off",), sweep="widget", allowed=WIDGETS,
    off="off", one_value_in_search=True, tune=True,
    stored=Stored.one_of(WIDGETS, since={NOW + 1}, older="off"),
))
"""
RUN_FIELD = '    widgets: tuple[str, ...] = run_default("widgets")\n'
POINT_FIELD = '    widget: str = point_default("widget")\n'
SCHEMA = f"SCHEMA_VERSION = {NOW + 1}  # {NOW + 1}: points gain `widget`, configs `widgets`\n"

# What the copy is asked, in a process of its own (its bench, not this one's).
PROBE = """
import json, sys
from pathlib import Path
from bench.config import sweep
from bench.commands import tune
from bench.commands.options import UsageParser
from bench.commands.run_options import add_run_options, config_from_args, parse_run
from bench.config.run_config import RunConfig
from bench.result import POINT_AXES, io
parser = UsageParser(prog="bench run")
add_run_options(parser)
config = config_from_args(parse_run(["tiny", "--widget", "off,on", "--batch-size", "8"]))
old = io.load(Path(sys.argv[1]))
import dataclasses
from bench.report import compare, table
first = old.points[0]
two = dataclasses.replace(old, points=[dataclasses.replace(first, widget=w) for w in ("off", "on")])
rows = compare.compare([(Path("two.json"), two)], None).rows
print(json.dumps({
    "rows": sorted(key.setup for key, _ in rows),
    "columns": [str(c.header) for c in table.points_table(two).columns],
    "help": "--widget" in parser.format_help(),
    "widgets": list(config.widgets),
    "points": [p.widget for p in config.points()],
    "sweep_first": sweep.NAMES[0],
    "point_axis": "widget" in POINT_AXES,
    "grid": list(tune.default_axes(RunConfig(workload="tiny"), set()).get("widgets", ())),
    "old_config": list(old.config.widgets),
    "old_points": sorted({p.widget for p in old.points}),
}))
"""


def _copy_with_the_recipe(tmp_path: Path, *, point_field: bool = True) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "bench", copy / "bench", ignore=shutil.ignore_patterns("__pycache__"))
    bench = copy / "bench"
    _edit(bench / "config" / "options.py", ("RUN_OPTIONS", OPTION, None))
    _edit(bench / "config" / "run_config.py", ("", RUN_FIELD, "RunConfig"),
          *((("", POINT_FIELD, "PointConfig"),) if point_field else ()))  # fmt: skip
    _edit(bench / "result" / "schema.py", ("SCHEMA_VERSION", SCHEMA, None))
    _edit(bench / "result" / "measured.py", ("", POINT_FIELD, "Measured"))
    return copy


def _ask(copy: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(copy), "BENCH_DEVICE": "cpu"}
    fixture = ROOT / "tests" / "data" / f"result-v{NOW}.json"  # the version before
    return subprocess.run([sys.executable, "-c", PROBE, str(fixture)], cwd=copy, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip


@pytest.fixture(scope="module")
def followed(tmp_path_factory: pytest.TempPathFactory) -> dict:
    done = _ask(_copy_with_the_recipe(tmp_path_factory.mktemp("recipe")))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_parser_and_the_config_follow_from_one_declaration(followed):
    assert followed["help"]
    assert followed["widgets"] == ["off", "on"]
    assert followed["points"] == ["off", "on"]  # not in SWEEP_ORDER: it varies slowest


def test_the_sweep_the_result_and_tune_follow(followed):
    assert followed["sweep_first"] == "widgets"  # no place in SWEEP_ORDER: slowest
    assert followed["point_axis"]
    assert followed["grid"] == ["off", "on"]  # tune tries every value it allows


def test_two_values_of_the_new_option_are_two_rows_in_compare_and_in_the_runs_table(followed):
    """Two points that differ only in the new option are two measurements: compare keeps
    them apart (its row key is built from the option table, the value named by its
    flag) and the run's table shows the option as a column, with no edit elsewhere."""
    assert len(followed["rows"]) == 2
    assert any("widget=on" in setup for setup in followed["rows"])
    assert "widget" in followed["columns"]


def test_a_file_of_the_version_before_loads_with_the_fields_older_value(followed):
    assert followed["old_config"] == ["off"] and followed["old_points"] == ["off"]


def test_the_recipe_without_the_point_field_fails_naming_it(tmp_path):
    done = _ask(_copy_with_the_recipe(tmp_path, point_field=False))
    assert done.returncode != 0 and "widget" in done.stderr.splitlines()[-1]
