"""Every fixture re-saves, and every crafted field is refused, as recorded.

tests/data/resaved.json holds the text bench writes for each schema fixture after
loading it (migrations, validation, derived figures, checksum); tests/data/refusals.json
holds what load says of each fixture with one field deleted or replaced by a value of
the wrong type or range. Both were recorded before bench/result.py became a package,
so that moving its parts cannot change what a file loads to or why one is refused.

Regenerate after a deliberate change (a new field changes every re-saved file):
BENCH_GOLDEN=write python -m pytest tests/result/test_io_golden.py
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench import result
from tests.conftest import DATA

FIXTURES = sorted(DATA.glob("result-v*.json"))
RESAVED = DATA / "resaved.json"
REFUSALS = DATA / "refusals.json"
WRITE = os.environ.get("BENCH_GOLDEN") == "write"
# Each replaces a field's value: wrong types, out-of-range and boundary numbers.
VALUES: tuple[Any, ...] = (None, "text", -1, 0, 1.5, 1e22, True, [], {}, [None], [["x"]], [-1])
# The newest fixture crafted field by field with every value; the others (migrated
# through the steps of their versions) with deletion and two values, to keep it fast.
FULL = (f"result-v{result.SCHEMA_VERSION}.json",)
SHORT = (None, "text")
PYTHON_ERROR = re.compile(r"\b(?:[A-Z][a-z]+)+Error: ")


def _resaved(path: Path) -> str:
    return result.dumps(result.load(path))


def _places(doc: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, object) for each object of a document whose fields load reads."""
    yield "", doc
    if isinstance(doc.get("config"), dict):
        yield "config", doc["config"]
    for i, point in enumerate(doc.get("points", [])[:1]):
        yield f"points[{i}]", point
        for r, energy in enumerate(point.get("energy") or []):
            if isinstance(energy, dict):
                yield f"points[{i}].energy[{r}]", energy
                break
    for i, search in enumerate(doc.get("max_batch", [])[:1]):
        yield f"max_batch[{i}]", search
        for j, probe in enumerate(search.get("probes", [])[:1]):
            yield f"max_batch[{i}].probes[{j}]", probe
    environment = doc.get("environment") or {}
    yield "environment", environment
    for section in ("accelerator", "cpu", "host", "image"):  # the sections readers use
        if isinstance(environment.get(section), dict):
            yield f"environment.{section}", environment[section]
    if isinstance(doc.get("pricing"), dict):
        yield "pricing", doc["pricing"]


def _cases(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(case id, crafted document): each field deleted, then set to each value."""
    doc = json.loads(path.read_text())
    values = VALUES if path.name in FULL else SHORT
    for where, place in list(_places(doc)):
        for key in list(place):
            if key in ("schema_version", "integrity"):
                continue
            for value in ("<deleted>", *values):
                crafted = copy.deepcopy(doc)
                target = _find(crafted, where)
                if value == "<deleted>":
                    del target[key]
                else:
                    target[key] = value
                yield f"{path.name} {where}.{key} = {json.dumps(value)}", crafted


def _find(doc: dict[str, Any], where: str) -> dict[str, Any]:
    target: Any = doc
    for part in where.replace("[", ".").replace("]", "").split("."):
        if part:
            target = target[int(part)] if part.isdigit() else target[part]
    return target


def _verdicts(tmp: Path) -> dict[str, str]:
    found = {}
    crafted = tmp / "crafted.json"
    for path in FIXTURES:
        for case, doc in _cases(path):
            crafted.write_text(json.dumps(doc))
            try:
                result.load(crafted)
                found[case] = "loads"
            except result.ResultError as error:
                found[case] = str(error).replace(str(crafted), "FILE")
    return found


def test_every_fixture_re_saves_to_the_recorded_text():
    resaved = {path.name: _resaved(path) for path in FIXTURES}
    if WRITE:
        RESAVED.write_text(json.dumps(resaved, indent=1, sort_keys=True) + "\n")
    recorded = json.loads(RESAVED.read_text())
    assert sorted(recorded) == sorted(resaved), "a fixture has no recorded re-saved text"
    for name, text in resaved.items():
        assert text == recorded[name], f"{name} re-saves differently than recorded"


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory) -> dict[str, str]:
    """What load says of every crafted case (computed once: about 5,000 loads)."""
    return _verdicts(tmp_path_factory.mktemp("crafted"))


def test_a_crafted_field_is_refused_with_the_recorded_message(verdicts):
    if WRITE:
        REFUSALS.write_text(json.dumps(verdicts, indent=1, sort_keys=True) + "\n")
    recorded = json.loads(REFUSALS.read_text())
    assert sorted(recorded) == sorted(verdicts), "the crafted cases differ from the recorded"
    changed = {case: (recorded[case], found) for case, found in verdicts.items()
               if recorded[case] != found}  # fmt: skip
    assert not changed, f"{len(changed)} verdicts changed, e.g. {next(iter(changed.items()))}"


def test_no_crafted_field_is_refused_in_python_s_words(verdicts):
    """Each refusal names the field and what it may hold, never an exception met on the
    way ("TypeError: '<' not supported between instances of 'int' and 'NoneType')."""
    python = {case: said for case, said in verdicts.items() if PYTHON_ERROR.search(said)}
    example = next(iter(python.items()), None)
    assert not python, f"{len(python)} refusals in Python's words, e.g. {example}"
