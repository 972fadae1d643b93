"""Bring a result document of an older schema version up to the current one.

Step N -> N+1 gives every object the fields schema.py declares `since` N+1 with an
`older` value (fields without one stay absent: the dataclass's default applies), then
runs the hand-written transformation of that step, if any (a rename, a restructuring:
18 -> 19 and 19 -> 20, the input pipeline's levers become sweep axes). Migrations run
before validation, so they may meet any malformed shape; load turns what they raise
into one line.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from bench.result.schema import SCHEMA_VERSION, UNSET, VERSIONED

Document = dict[str, Any]


def _to_sweep(*moved: tuple[str, str, Any]) -> Callable[[Document], Document]:
    """A step where a config's one value of each (one, many, default) becomes the list
    `many` (a sweep axis), and every point reads the config's value, which every point of
    the run was measured with. A value of the wrong kind is kept as it is, for
    validation to name."""

    def step(data: Document) -> Document:
        config = data.get("config")
        if not isinstance(config, dict):
            return data
        for one, many, default in moved:
            value = config.pop(one, default)
            config.setdefault(many, [value])
            for point in _objects(data, "points"):
                point.setdefault(one, value)
        return data

    return step


# version -> what turns a document of that version into the next, besides the defaults.
TRANSFORMS: dict[int, Callable[[Document], Document]] = {
    # 18 -> 19: the loader's workers and prefetch depth.
    18: _to_sweep(("num_workers", "workers", 0), ("prefetch_factor", "prefetch_factors", None)),
    # 19 -> 20: the batch's dtype and its pinned memory.
    19: _to_sweep(("input_dtype", "input_dtypes", "float32"), ("pin_memory", "pin_memories", None)),
}


def _objects(data: Document, where: str) -> Any:
    """The objects of a document a table describes: the document, its config, each
    point (load checked they are objects), each max-batch search. Anything else is
    left as it is, for validation to name."""
    if where == "result":
        return [data]
    if where == "config":
        return [data["config"]] if isinstance(data.get("config"), dict) else []
    items = data.get(where)
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []


def _fill_defaults(version: int) -> Callable[[Document], Document]:
    """Step `version` -> `version` + 1: the new fields' values for older files."""
    added = {
        where: [f for f in table if f.since == version + 1 and f.older is not UNSET]
        for where, table in VERSIONED.items()
    }

    def step(data: Document) -> Document:
        for where, fields in added.items():
            if fields:
                for item in _objects(data, where):
                    for field in fields:
                        item.setdefault(field.name, copy.deepcopy(field.older))
        data = {**data, "schema_version": version + 1}
        transform = TRANSFORMS.get(version)
        return transform(data) if transform else data

    return step


# version -> function upgrading a document of that version to the next one.
MIGRATIONS: dict[int, Callable[[Document], Document]] = {
    version: _fill_defaults(version) for version in range(1, SCHEMA_VERSION)
}


def migrate(data: Document, version: int) -> Document:
    """A document of `version` brought to SCHEMA_VERSION."""
    while version < SCHEMA_VERSION:
        data = MIGRATIONS[version](data)
        version += 1
    return data
