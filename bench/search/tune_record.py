"""What a tune record may hold (the result's `tune`: its rounds, their probes, the time
spent and why the search stopped), each field with a type and a range
(bench.config.bounds), checked before --resume or a rerun reads a number of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.config.bounds import (
    HUGE,
    MAX_INT,
    TEN_YEARS_S,
    TUNE_BUDGET,
    an_object,
    flag,
    list_of,
    number,
    optional,
    text,
    whole,
)
from bench.result import ResultError
from bench.result.schema import Field
from bench.result.validate import InvalidField, check_fields
from bench.util.text import visible

MAX_SECONDS = TEN_YEARS_S  # a probe's wall or cap: no tune runs longer
MAX_ROUNDS = 64  # rounds of one search: a grid of 3**62 configurations needs fewer

_SECONDS = number(0, MAX_SECONDS)
_SECONDS_TEXT = f"seconds from 0 to {MAX_SECONDS:.0f} (ten years)"


def _skip(v: Any) -> bool:
    return isinstance(v, dict) and text(v.get("label")) and text(v.get("why"))


def _coverage(v: Any) -> bool:
    return (
        isinstance(v, dict) and len(v) <= 16 and all(text(k) and whole(0)(n) for k, n in v.items())
    )


def record_fields(grid: int) -> tuple[Field, ...]:
    """What a tune record may hold, for a grid of `grid` configurations: what --resume
    reads of an interrupted file (spent_s, each round's walls_s) and the rest bench
    writes there, each with a type and a range (bench.config.bounds)."""
    return (
        Field("budget_s", TUNE_BUDGET, TUNE_BUDGET.words),  # as --budget takes it
        Field("eta", whole(2, 100), "a whole number from 2 to 100"),
        Field("seed", whole(0, MAX_INT), "a whole number from 0"),
        Field(
            "rounds",
            list_of(an_object, MAX_ROUNDS),
            f"a list of rounds, at most {MAX_ROUNDS}",
            required=True,
        ),
        Field("stopped", optional(text), "null or text"),
        Field("spent_s", _SECONDS, _SECONDS_TEXT),
        Field(
            "skipped",
            list_of(_skip, grid * MAX_ROUNDS),
            f"a list of {{label, why}} (text), at most {grid * MAX_ROUNDS:,}",
        ),
        Field("ranked", flag, "true or false"),
        Field("not_ranked", optional(text), "null or text"),
        Field("coverage", optional(_coverage), "null or {name: a count from 0}"),
        Field("needed_s", optional(number(0, HUGE)), "null or seconds from 0"),
    )


def round_fields(grid: int, probes: int) -> tuple[Field, ...]:
    """What one round's record may hold: its `probes` points (at most one per
    configuration of the grid) and one wall time and cap for each."""
    count = "a whole number from 1"
    return (
        Field(
            "round", whole(1, MAX_ROUNDS), f"a whole number from 1 to {MAX_ROUNDS}", required=True
        ),
        Field("steps", whole(1), count, required=True),
        Field("warmup_steps", whole(0), "a whole number from 0"),
        Field("repeats", whole(1), count),
        Field("of", whole(0, grid), f"a whole number from 0 to the grid's {grid}"),
        Field(
            "points",
            list_of(an_object, grid),
            "a list of points, one per configuration at most",
            required=True,
        ),
        # Not in an older bench's file: its probes' wall times are estimated from steps
        Field("walls_s", list_of(_SECONDS, probes), f"a list of {_SECONDS_TEXT}, one per point"),
        Field("caps_s", list_of(_SECONDS, probes), f"a list of {_SECONDS_TEXT}, one per point"),
        Field("batch_ups", list_of(text, grid), "a list of labels (text)"),
    )


def check_record(tune: dict[str, Any], grid: int) -> None:
    """InvalidField naming the first field of an interrupted tune record (someone may
    have edited or sent it) that is not what bench writes there, before any arithmetic:
    a wall time of text was a TypeError deep in the search, a spent_s of "inf" read as
    infinite seconds spent, one of -1e300 as a budget that never runs out."""
    check_fields(tune, record_fields(grid), "tune")
    for r, record in enumerate(tune["rounds"]):
        probes = len(record["points"]) if isinstance(record.get("points"), list) else 0
        check_fields(record, round_fields(grid, probes), f"tune.rounds[{r}]")


def check_file_record(tune: dict[str, Any], config: Any, path: Path) -> None:
    """check_record of a file's tune record (a resume's, a rerun's): ResultError, one
    line naming the file and the field."""
    try:
        check_record(tune, len(list(config.points())))
    except InvalidField as error:
        raise ResultError(visible(f"{path}: invalid tune record ({error})")) from None
