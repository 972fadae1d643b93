"""Check a result document's fields against the tables of bench/result/schema.py.

Run on load after migrations: every field a reader uses, by type and range, so that a
malformed or hostile file fails as one line naming the field (points[3].step_times_s[0]),
never deep in a table, a chart or an hour of arithmetic.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from bench.config.bounds import MAX_ITEMS, Check
from bench.result import schema
from bench.result.schema import Field


class InvalidField(ValueError):
    """A field of a result document that does not hold what bench wrote there."""


def check_fields(data: dict[str, Any], fields: Iterable[Field], where: str) -> None:
    """Raise InvalidField for the first required field missing, else the first wrong."""
    fields = tuple(fields)
    for field in fields:
        if field.required and field.name not in data:
            raise InvalidField(f"{where}: missing field {field.name!r}")
    for field in fields:
        if field.check is None or field.name not in data:
            continue
        value = data[field.name]
        if not field.check(value):
            raise InvalidField(_wrong(f"{where}.{field.name}", value, field.check, field.expected))


def _wrong(name: str, value: Any, check: Check, expected: str) -> str:
    """'points[0].step_times_s[1]: expected ..., found ...': the first bad item of a
    list (a file may be long), else the value itself."""
    each = getattr(check, "each", None)
    if isinstance(value, list) and each is not None:
        most = getattr(check, "most", None) or MAX_ITEMS
        if len(value) > most:
            return f"{name}: expected at most {most:,} items, found {len(value):,}"
        i = next((i for i, item in enumerate(value) if not each(item)), None)
        if i is not None:
            return _wrong(f"{name}[{i}]", value[i], each, expected)
    fields: tuple[Field, ...] | None = getattr(check, "fields", None)
    if isinstance(value, dict) and fields is not None:  # a record (schema.record): its field
        try:
            check_fields(value, fields, name)
        except InvalidField as error:
            return str(error)
        rule = getattr(check, "rule", None)
        broken = rule(value) if rule is not None else None
        if broken is not None:
            return f"{name}.{broken}"
    return f"{name}: expected {expected}, found {brief(value)}"


def brief(value: Any) -> str:
    """At most 40 characters of the value, as JSON, without serialising all of it."""
    if isinstance(value, list | dict) and len(value) > 8:
        kind = "a list" if isinstance(value, list) else "an object"
        return f"{kind} of {len(value):,} items"
    text = json.dumps(value[:40] + "..." if isinstance(value, str) and len(value) > 40 else value)
    return text if len(text) <= 40 else text[:37] + "..."


def validate(data: Any) -> dict[str, Any]:
    """Check a document's layout (after migration); raises InvalidField naming the field."""
    if not isinstance(data, dict):
        raise InvalidField("not a JSON object")
    check_fields(data, schema.RESULT, "result")
    check_fields(data["config"], schema.CONFIG, "config")
    for i, point in enumerate(data["points"]):
        where = f"points[{i}]"
        check_fields(point, schema.POINT, where)
        for r, energy in enumerate(point.get("energy", [])):
            if energy is not None:
                check_fields(energy, schema.ENERGY, f"{where}.energy[{r}]")
    for r, tuned in enumerate((data.get("tune") or {}).get("rounds", [])):
        for i, point in enumerate(tuned["points"]):
            check_fields(point, schema.POINT, f"tune.rounds[{r}].points[{i}]")
    for i, search in enumerate(data.get("max_batch", [])):
        check_fields(search, schema.MAX_BATCH, f"max_batch[{i}]")
        for j, probe in enumerate(search.get("probes", [])):
            check_fields(probe, schema.PROBE, f"max_batch[{i}].probes[{j}]")
    environment = data.get("environment") or {}
    check_fields(environment, schema.ENVIRONMENT, "environment")
    for section, fields in schema.ENVIRONMENT_SECTIONS.items():
        check_fields(environment.get(section) or {}, fields, f"environment.{section}")
    if data.get("pricing") is not None:
        check_fields(data["pricing"], schema.PRICING, "pricing")
    return data
