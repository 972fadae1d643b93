"""What a run option's text becomes: whole numbers, lists, sizes, token counts, numbers.

Each is argparse's `type` of an option in bench.config.options; a bad value raises
argparse.ArgumentTypeError, which argparse prints in one line after the option's name.
Below the config and the result schema that read the table (nothing of bench above
bench.util.units is imported here)."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from typing import Any

from bench.config.bounds import HUGE, MAX_WHOLE, TINY, Bound
from bench.util.errors import UsageError
from bench.util.units import parse_size

MAX_TOKENS = 10**15  # tokens a run trains on, at most: a quadrillion, past any training run
# A positive figure a result stores, at least and at most (TINY, HUGE), and whole numbers
# as C libraries and devices take them (MAX_WHOLE): what the result reader accepts, so no
# run is saved that cannot be read back. Whole numbers are written in ASCII digits only
# (Python's int() also takes '٣٢', '１６' and '1_000').
_WHOLE = re.compile(r"-?[0-9]+")


def list_of(convert: Callable[[str], Any], what: str, allowed: str) -> Callable[[str], tuple]:
    """'a,b' -> (convert('a'), convert('b')); a ValueError names the item and `allowed`."""

    def parse(text: str) -> tuple:
        values = []
        for item in text.split(","):
            try:
                values.append(convert(item.strip()))
            except ValueError:
                raise argparse.ArgumentTypeError(
                    f"{what}: {item.strip()!r} is not allowed; use {allowed}"
                ) from None
        return tuple(values)

    return parse


def strict_int(text: str) -> int:
    if not _WHOLE.fullmatch(text) or abs(int(text)) > MAX_WHOLE:
        raise ValueError(text)
    return int(text)


def whole(text: str) -> int:
    """An option's whole number; argparse names the option in front of the message."""
    try:
        return strict_int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not allowed; use a whole number in digits 0-9, at most {MAX_WHOLE}"
        ) from None


def one_length(text: str) -> int:
    """--seq-len: one length; a list (2048,8192) is refused saying how to sweep it."""
    if "," in text:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not allowed; one sequence length a run (the result's rows are "
            "per length): run bench once per length"
        )
    return whole(text)


def choice_list(what: str, choices: tuple[str, ...]) -> Callable[[str], tuple]:
    def convert(item: str) -> str:
        if item not in choices:
            raise ValueError
        return item

    return list_of(convert, what, "one or more of " + ", ".join(choices) + " (comma-separated)")


def one_of(what: str, choices: tuple[str, ...]) -> Callable[[str], str]:
    """One value of `choices`; another is one line naming them."""

    def convert(text: str) -> str:
        if text not in choices:
            raise argparse.ArgumentTypeError(
                f"{what}: {text!r} is not allowed; use one of {', '.join(choices)}"
            )
        return text

    return convert


def compilers(text: str) -> tuple[str | None, ...]:
    """'none,inductor' -> (None, 'inductor'): none and eager are no compiler."""
    return tuple(
        None if item.strip() in ("none", "eager") else item.strip() for item in text.split(",")
    )


def repeats(text: str) -> int | None:
    if text == "auto":
        return None
    try:
        return strict_int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"repeats: {text!r} is not allowed; use a positive whole number or auto"
        ) from None


def size(text: str) -> int:
    try:
        return parse_size(text, "memory-limit")
    except UsageError as error:  # argparse would replace a ValueError's message
        raise argparse.ArgumentTypeError(str(error)) from None


_COUNT = re.compile(r"([0-9]+(?:\.[0-9]+)?)([KMBT]?)")
_SCALE = {"": 1, "K": 10**3, "M": 10**6, "B": 10**9, "T": 10**12}


def tokens(text: str) -> int:
    """'10B' -> 10,000,000,000: a count of tokens with an optional K, M, B or T."""
    match = _COUNT.fullmatch(text.strip())
    value = int(float(match.group(1)) * _SCALE[match.group(2)]) if match else 0
    if not 0 < value <= MAX_TOKENS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not allowed; use a count of tokens with an optional K, M, B or T "
            f"(e.g. 10B), from 1 to 1T x 1000"
        )
    return value


def eval_every(text: str) -> tuple[int, str]:
    """'50M' (tokens) or '12288seq' (sequences): how often --train-to-loss evaluates."""
    if text.endswith("seq"):
        return tokens(text[:-3]), "sequences"
    return tokens(text), "tokens"


def device_count(text: str) -> int | str:
    return "all" if text == "all" else strict_int(text)


_NUMBER = re.compile(r"-?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?")


def number(text: str) -> float:
    """A finite decimal number in ASCII (no 'nan', 'inf', '1e400' or non-ASCII digits)."""
    value = float(text) if _NUMBER.fullmatch(text) else math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not allowed; use a finite number in digits 0-9 (e.g. 0.5 or 1e-3)"
        )
    return value


def measure(text: str) -> float:
    """A positive figure a result stores (seconds, a price, TFLOP/s): from 1e-12 to 1e21,
    what bench's result reader accepts (bench.config.bounds), so no run is saved into
    a file bench itself then refuses."""
    value = number(text)
    if not TINY <= value <= HUGE:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not allowed; use a positive number from 1e-12 to 1e21"
        )
    return value


def bounded(bound: Bound, read: Callable[[str], float] = number) -> Callable[[str], float]:
    """An option's number `read` from its text, then checked by `bound`: the rule of
    the file field that will hold it (bench.config.bounds.Bound), so what this takes a result
    file takes back."""

    def parse(text: str) -> float:
        value = read(text)
        if not bound(value):
            raise argparse.ArgumentTypeError(f"{text!r} is not allowed; use {bound.words}")
        return value

    return parse
