"""The field table of bench/result/schema.py, the dataclasses and the fixtures agree.

A field is declared once in the table (its check, the version that added it, what older
files hold); the validator and the migrations are derived from it. The dataclasses
must hold the same names, and each schema fixture tests/data/result-vN.json must show
each field from the version that added it on.
"""

from __future__ import annotations

import dataclasses
import json
import re
import typing
from pathlib import Path
from typing import Any

import pytest

from bench import result
from bench.config.run_config import RunConfig
from bench.result import schema
from bench.result.schema import UNSET, Field
from tests.conftest import DATA
from tests.report.test_compare import machine
from tests.result.test_drift import noisy_point


def _version(path: Path) -> int:
    return int(re.match(r"result-v(\d+)", path.name).group(1))  # type: ignore[union-attr]


FIXTURES = sorted(DATA.glob("result-v*.json"), key=_version)


def _names(table: tuple[Field, ...]) -> set[str]:
    return {f.name for f in table}


def _fields(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def _objects(doc: dict[str, Any], where: str) -> list[dict[str, Any]]:
    if where == "result":
        return [doc]
    if where == "config":
        return [doc["config"]]
    return doc.get(where, [])


@pytest.mark.parametrize(
    ("cls", "table"),
    [
        (result.Point, schema.POINT),
        (result.MaxBatch, schema.MAX_BATCH),
        (result.Probe, schema.PROBE),
        (result.Result, schema.RESULT),
        (RunConfig, schema.CONFIG),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_a_dataclass_holds_exactly_the_fields_its_table_declares(cls, table):
    assert _fields(cls) == _names(table), (
        f"{cls.__name__} and its table in bench/result/schema.py differ: "
        f"only in the class {sorted(_fields(cls) - _names(table))}, "
        f"only in the table {sorted(_names(table) - _fields(cls))}"
    )


def test_every_field_was_added_in_a_version_this_bench_writes():
    for where, table in schema.VERSIONED.items():
        for field in table:
            assert 1 <= field.since <= result.SCHEMA_VERSION, f"{where}.{field.name}"
            if field.since == 1:
                assert field.older is UNSET, f"{where}.{field.name}: no file is older than 1"


@pytest.mark.parametrize("where", sorted(schema.VERSIONED))
def test_a_field_appears_in_the_fixture_of_the_version_that_added_it_and_in_no_older(where):
    """A field added without a new version and its fixture fails here."""
    seen: dict[str, int] = {}  # field -> the first fixture version holding it
    for path in FIXTURES:
        doc = json.loads(path.read_text())
        for item in _objects(doc, where):
            for name in item:
                seen.setdefault(name, _version(path))
    for field in schema.VERSIONED[where]:
        assert field.name in seen, f"{where}.{field.name}: in no fixture"
        assert seen[field.name] == field.since, (
            f"{where}.{field.name} is declared since version {field.since} but first appears "
            f"in result-v{seen[field.name]}.json"
        )


def _sample_document() -> dict[str, Any]:
    search = result.MaxBatch("fp32", largest_ok=8, first_failing=16, status="done")
    return json.loads(result.dumps(machine("A", [noisy_point(64, 0.1)], max_batch=[search])))


@pytest.mark.parametrize("where", sorted(schema.VERSIONED))
def test_the_newest_fixture_holds_exactly_what_bench_writes_now(where):
    """A field or derived figure added, renamed or removed without a new schema version
    and its fixture fails here (the newest fixture holding such an object)."""
    written = _objects(_sample_document(), where)[0]
    newest = next(p for p in reversed(FIXTURES) if _objects(json.loads(p.read_text()), where))
    stored = _objects(json.loads(newest.read_text()), where)[0]
    assert set(stored) == set(written), (
        f"{where}: what bench writes differs from {newest.name}: bump SCHEMA_VERSION, "
        "declare the field in bench/result/schema.py and add the fixture"
    )


def test_an_older_file_gains_each_field_with_its_declared_older_value(tmp_path):
    doc = json.loads((DATA / "result-v1.json").read_text())
    doc["max_batch"] = [{"precision": "fp32", "status": "done", "probes": []}]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc))
    loaded = result.load(path)
    for where, table in schema.VERSIONED.items():
        for field in table:
            if field.since > 1 and field.older is not UNSET:
                value = {"result": loaded, "config": loaded.config}.get(where)
                value = value or (loaded.points[0] if where == "points" else loaded.max_batch[0])
                found = getattr(value, field.name)
                found = list(found) if isinstance(found, tuple) else found
                assert found == field.older, f"{where}.{field.name}"


def test_a_config_field_may_be_null_exactly_where_run_config_holds_none():
    """A file that loads makes a RunConfig that `bench rerun` can run: null where
    RunConfig takes no None (steps, nnodes) is refused on load, not deep in a rerun."""
    hints = typing.get_type_hints(RunConfig)
    for field in schema.CONFIG:
        if field.check is not None:
            takes_none = type(None) in typing.get_args(hints[field.name])
            assert field.check(None) == takes_none, (
                f"config.{field.name}: the table {'takes' if field.check(None) else 'refuses'}"
                f" null, RunConfig's type is {hints[field.name]}"
            )
