"""What a value of a result file may be: checks of type and range, and the bounds.

Result files are shared between people: a malformed or hostile one must fail as one
line naming the file and the field, never as a traceback deep in a table or a chart,
and never as an hour of arithmetic. So every number a reader uses is checked to be
finite and of a magnitude whose sums, products and quotients stay finite, and every
list to be a list of bounded length whose items are checked in turn.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Check = Callable[[Any], bool]
MAX_DEPTH = 32  # bench writes at most ~6 levels; deeper is not a result
MAX_INT = 2**63 - 1  # anywhere in a file: what a signed 64-bit integer holds
MAX_WHOLE = 2**31 - 1  # batch sizes, devices, counts: as the command line takes them
# Batches a loader worker prepares ahead (--prefetch-factor): past any queue worth holding.
MAX_PREFETCH = 1024
MAX_WORKERS = 4096  # loader workers a config may ask for: more than any machine's CPUs
MAX_ITEMS = 10_000_000  # any one list (steps of every epoch of a long run fit)
# Any one string or key: bench writes names, commands and an error's last lines, none
# near this; longer text is no result, and tables lay text out in time that grows with
# its square (rich: a label of 16 MiB held `bench show` for 53 s).
MAX_TEXT = 256 * 1024
# Seconds, joules, watts, FLOPs, prices: a positive figure outside [TINY, HUGE] is no
# measurement, and the quotients of figures inside it stay far from overflow.
TINY, HUGE = 1e-12, 1e21


def text(v: Any) -> bool:
    return isinstance(v, str)


def flag(v: Any) -> bool:
    return isinstance(v, bool)  # not "yes", not 1


def number(low: float, high: float, *, zero: bool = False, whole: bool = False) -> Check:
    """A finite number in [low, high] (or 0 with `zero`; only an int with `whole`): the
    one check of every number a reader computes with."""

    def check(v: Any) -> bool:
        if isinstance(v, bool) or not isinstance(v, int if whole else int | float):
            return False
        return (zero and v == 0) or low <= v <= high  # NaN compares False

    check.span = (low, high, frozenset((int,) if whole else (int, float)))  # type: ignore[attr-defined]
    return check


def whole(low: int, high: int = MAX_WHOLE) -> Check:
    return number(low, high, whole=True)


positive = number(TINY, HUGE)  # seconds, joules, FLOPs, prices: measured, above zero
non_negative = number(TINY, HUGE, zero=True)
fraction = number(0, 1)  # top-1 accuracy
# A busy record's CPUs and window: only compared with thresholds and printed, never
# divided by, so any finite value from 0 up is safe, and the float rounding of a
# difference of CPU times (1e-16 CPUs where nothing else ran) is what bench writes.
busy_number = number(0, HUGE)
byte_count = whole(0, MAX_INT)


def number_or_nan(v: Any) -> bool:  # a loss may diverge to nan or inf, and that is data
    return isinstance(v, int | float) and not isinstance(v, bool)


def optional(check: Check) -> Check:
    def optional(v: Any) -> bool:
        return v is None or check(v)

    # what names the first bad part of a list or record (bench.result.validate)
    for part in ("each", "most", "fields", "rule"):
        setattr(optional, part, getattr(check, part, None))
    return optional


def list_of(check: Check, most: int = MAX_ITEMS) -> Check:
    """A list of at most `most` items, each passing `check` (kept as `.each`, so that an
    error can name the first bad item)."""

    span = getattr(check, "span", None)

    def list_of(v: Any) -> bool:
        if not isinstance(v, list) or len(v) > most:
            return False
        return (span is not None and _within(v, *span)) or all(check(x) for x in v)

    list_of.each = check  # type: ignore[attr-defined]
    list_of.most = most  # type: ignore[attr-defined]
    return list_of


def _within(items: list[Any], low: float, high: float, kinds: frozenset[type]) -> bool:
    """Whether every item is a number of `kinds` in [low, high], asked at C speed (a
    result's steps are most of its values): True only when sure; False leaves the
    answer to the item-by-item check (a NaN, a bool, a zero where zero is allowed)."""
    if not items or not set(map(type, items)) <= kinds:
        return False
    return low <= min(items) and max(items) <= high and math.isfinite(math.fsum(items))


def dict_of(check: Check) -> Check:
    return lambda v: isinstance(v, dict) and all(text(k) and check(x) for k, x in v.items())


def one_of(*allowed: str) -> Check:
    return lambda v: isinstance(v, str) and v in allowed


LABEL_MOST = 80  # a run's label, as --label takes it and a result holds it


def label(v: Any) -> bool:
    """A run's label: 1 to LABEL_MOST printable characters, not all blank (--label's rule,
    and the reader's: a label of 240 KB held `bench report` past 100 s)."""
    return isinstance(v, str) and 0 < len(v) <= LABEL_MOST and v.isprintable() and bool(v.strip())


def an_object(v: Any) -> bool:
    return isinstance(v, dict)


def axis_value(v: Any) -> bool:
    """A sweep axis's value: what a point is looked up by (hashable, printable)."""
    return v is None or text(v) or whole(0, MAX_INT)(v)


# What a stored field holds where files older than its version leave it out: nothing
# (the dataclass's default applies), unless the field says what (bench.result.schema).
UNSET: Any = object()

# A check and the words for what it allows, as the schema's and the options' tables
# name them.
TEXT_OR_NULL = (optional(text), "text or null")
COUNT = (optional(whole(0)), f"a whole number from 0 to {MAX_WHOLE}, or null")
NUMBER_OF = (whole(0), f"a whole number from 0 to {MAX_WHOLE}")  # RunConfig holds no None
NUMBER_TEXT = "a number from 1e-12 to 1e21, or null"
WHOLE_TEXT = f"a whole number from 1 to {MAX_WHOLE}"
LABEL_WORDS = f"1 to {LABEL_MOST} printable characters"


@dataclass(frozen=True)
class Bound:
    """One bound of a number a user types and a file then holds: the command line's type
    (bench.config.option_types.bounded), the config's check and the reader's field all ask this
    one, so nothing the command line takes is refused when read back, and nothing a file
    holds is a value the command line would refuse. A Check (it is called with a value)."""

    low: float
    high: float
    words: str  # what it allows, as a message says it: "seconds from 30 to ..."
    whole: bool = False

    def __call__(self, v: Any) -> bool:
        return number(self.low, self.high, whole=self.whole)(v)

    def refusal(self, name: str, value: Any) -> str:
        """'tune.budget_s: 1e-09 is not allowed (seconds from 30 to ...)'."""
        return f"{name}: {value!r} is not allowed ({self.words})"


TEN_YEARS_S = 10 * 365 * 24 * 3600.0  # no run, search or child of bench runs longer
# bench tune's --budget and a tune record's budget_s: under 30 s no probe's child fits
# (a probe's cap is at least a quarter of the budget, and a child's start-up alone
# takes seconds); over ten years is no budget.
TUNE_BUDGET = Bound(30.0, TEN_YEARS_S, "seconds from 30 to 315,360,000 (ten years)")
# --timeout and a config's timeout_s: a child that may run under a second can start no
# framework, so every point would time out.
TIMEOUT = Bound(1.0, TEN_YEARS_S, "seconds from 1 to 315,360,000 (ten years)")
