"""The child's answer for one point: what bench.child.worker writes on its pipe and the
parent reads back, declared once, as one type on both sides.

The child builds a Response and writes `to_json()` (the fields not at their default);
the parent reads the line with `from_json()`, which refuses anything else in one line
naming the field: an unknown key, a missing status, a wrong type, a number out of bounds.
A field a result file keeps per repeat (step_times_s, energy, busy, ...) is checked with
that file's own check of one repeat (bench/result/schema.py POINT), so an answer the
parent takes is one its result file loads; the rest with the checks of checks.py.
"""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass, field
from typing import Any, Self, cast

from bench.config.bounds import (
    MAX_TEXT,
    Check,
    an_object,
    flag,
    list_of,
    one_of,
    optional,
    positive,
    whole,
)
from bench.result import schema
from bench.result.schema import STATUSES
from bench.result.validate import InvalidField, check_fields
from bench.util.errors import BenchError

_POINT = {f.name: f for f in schema.POINT}


def _check(check: Check, expected: str) -> dict[str, Any]:
    """A field's metadata: its check, and what the check allows (FIELDS)."""
    return {"check": check, "expected": expected}


def _as_point(name: str) -> dict[str, Any]:
    """A field the Point takes from the first answer as it is: the file's own check."""
    return _check(cast(Check, _POINT[name].check), _POINT[name].expected)


def _one_repeat(name: str, expected: str | None = None) -> dict[str, Any]:
    """A field the file keeps one per repeat: the check of one item of its list
    (checks.list_of keeps it as `each`); `expected`: what one allows, where the file's
    words do not say it of one (its 'lists of seconds' are one repeat's 'a list')."""
    each = cast(Check, _POINT[name].check.each)  # type: ignore[union-attr]
    return _check(each, expected or _POINT[name].expected.replace("lists of", "a list of"))


def _text(v: Any) -> bool:
    return isinstance(v, str) and len(v) <= MAX_TEXT


_TEXT = _check(optional(_text), f"text of at most {MAX_TEXT:,} characters, or null")
_OBJECT = _check(optional(an_object), "an object or null")
_SECONDS = "a list of seconds from 1e-12 to 1e21"
_NUMBER = "a number or null"


class InvalidResponse(BenchError):
    """A child's answer that is not one bench's child writes."""


@dataclass(frozen=True)
class Response:
    """One child's answer (one process, or rank 0 for its ranks), failures included. Lists
    are per step of this repeat; records (energy, busy, accuracy, loss, ranks) are as the
    result file keeps them per repeat (bench/result/point.py Point)."""

    status: str = field(metadata=_check(one_of(*STATUSES), "one of " + ", ".join(STATUSES)))
    error: str | None = field(default=None, metadata=_TEXT)
    traceback: str | None = field(default=None, metadata=_TEXT)
    # A rank torchrun stopped (SIGTERM) after another ended: not the cause.
    stopped: bool = field(default=False, metadata=_check(flag, "true or false"))
    # A rank other than 0 answers for itself only (rank 0 holds the point's figures).
    rank: int | None = field(default=None, metadata=_check(optional(whole(0)), "a rank or null"))
    devices: int = field(default=1, metadata=_as_point("devices"))
    binding: dict[str, Any] | None = field(default=None, metadata=_OBJECT)  # a rank's CPUs, device
    # bench.result.provenance
    environment: dict[str, Any] | None = field(default=None, metadata=_OBJECT)
    power_before: dict[str, Any] | None = field(
        default=None, metadata=_one_repeat("power_before", "{device: {draw_w, limit_w}} or null")
    )
    parameters: int | None = field(default=None, metadata=_as_point("parameters"))
    details: dict[str, Any] = field(default_factory=dict, metadata=_as_point("details"))
    flops_per_sample: float | None = field(default=None, metadata=_as_point("flops_per_sample"))
    warmup_times_s: tuple[float, ...] = field(default=(), metadata=_one_repeat("warmup_times_s"))
    step_times_s: tuple[float, ...] = field(default=(), metadata=_one_repeat("step_times_s"))
    epoch_times_s: tuple[float, ...] | None = field(
        default=None, metadata=_check(optional(list_of(positive)), _SECONDS + ", or null")
    )
    peak_memory_bytes: int | None = field(
        default=None, metadata=_one_repeat("peak_memory_bytes", "a byte count or null")
    )
    memory_kind: str | None = field(default=None, metadata=_TEXT)
    memory_unavailable: str | None = field(default=None, metadata=_TEXT)
    loss_first: float | None = field(default=None, metadata=_one_repeat("loss_first", _NUMBER))
    loss_last: float | None = field(default=None, metadata=_one_repeat("loss_last", _NUMBER))
    energy: dict[str, Any] | None = field(default=None, metadata=_OBJECT)  # schema.ENERGY's fields
    energy_unavailable: str | None = field(default=None, metadata=_TEXT)
    busy: dict[str, Any] | None = field(
        default=None, metadata=_one_repeat("busy", "a busy-machine record or null")
    )
    ranks: dict[str, Any] | None = field(
        default=None, metadata=_one_repeat("ranks", "a rank record or null")
    )
    input_wait_s: tuple[float, ...] = field(default=(), metadata=_one_repeat("input_wait_s"))
    synthetic_step_times_s: tuple[float, ...] = field(
        default=(), metadata=_as_point("synthetic_step_times_s")
    )
    accuracy: dict[str, Any] | None = field(
        default=None,
        metadata=_one_repeat("accuracy", "{metric, target, epochs: [{epoch, top1, ...}]} or null"),
    )
    loss: dict[str, Any] | None = field(
        default=None,
        metadata=_one_repeat("loss", "{target, curve: [{step, tokens, loss, ...}]} or null"),
    )
    # What the launcher applied (bench.run.runtime), never the child: the Point's `runtime`.
    runtime: dict[str, Any] | None = field(default=None, metadata=_as_point("runtime"))

    def __post_init__(self) -> None:
        """Every field checked (FIELDS), its energy window too (schema.ENERGY), whoever
        made it: the child as it answers, the parent as it reads."""
        data = {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}
        try:
            check_fields(data, FIELDS, "response")
            if self.energy is not None:
                check_fields(self.energy, schema.ENERGY, "response.energy")
        except InvalidField as error:
            raise InvalidResponse(str(error)) from None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_json(self) -> dict[str, Any]:
        """The answer as the pipe carries it: the fields not at their default."""
        return {
            f.name: _plain(value)
            for f in dataclasses.fields(self)
            if (value := getattr(self, f.name)) != _default(f)
        }

    @classmethod
    def from_json(cls, data: Any) -> Self:
        """The answer a child wrote, checked: InvalidResponse, one line naming the field,
        for anything a child of this bench does not write."""
        if not isinstance(data, dict):
            raise InvalidResponse(f"response: expected a JSON object, found {type(data).__name__}")
        names = [f.name for f in dataclasses.fields(cls)]
        unknown = next((key for key in data if key not in names), None)
        if unknown is not None:
            near = difflib.get_close_matches(str(unknown), names, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise InvalidResponse(f"response: unknown field {str(unknown)[:80]!r}{hint}")
        if "status" not in data:
            raise InvalidResponse("response: missing field 'status'")
        return cls(**_typed(data))

    def with_json(self, fields: dict[str, Any]) -> Self:
        """This answer with `fields` as JSON holds them (lists), checked: a child's
        trackers report dicts of the answer's fields (bench.child.measure.measure)."""
        return dataclasses.replace(self, **_typed(fields))


def read_answer(data: Any) -> Response:
    """The answer a child wrote (its JSON), as a Response; one no child of this bench
    writes is the point's error in one line, never a silent None (the launchers read
    every line so, and the runner a stand-in's answer)."""
    try:
        return Response.from_json(data)
    except InvalidResponse as refused:
        return Response(status="error", error=f"bench refused the child's answer: {refused}")


def _typed(data: dict[str, Any]) -> dict[str, Any]:
    """Lists of numbers as the answer holds them, tuples (checked as lists, by
    __post_init__)."""
    return {k: tuple(v) if k in _TUPLES and isinstance(v, list) else v for k, v in data.items()}


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return f.default


# The answer's fields as a table, the checks of from_json (bench.result.validate).
FIELDS = tuple(
    schema.Field(f.name, f.metadata["check"], f.metadata["expected"])
    for f in dataclasses.fields(Response)
)
_TUPLES = {f.name for f in dataclasses.fields(Response) if str(f.type).startswith("tuple")}
