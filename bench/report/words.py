"""Words and text the reports share: a ratio to the baseline in words, one way for the
page, report.md and compare's JSON; a configuration's label; and what the page embeds,
made JSON-safe (a record without None, NaN or infinity, its text made visible; each
distinct command once, rows holding its index).

The figure leads, rounded once from the raw ratio (bench.util.units.ratio_with_interval, as
the tables print it), with its interval in the same direction; the verdict follows. A
slower machine's ratio stays below 1 beside its interval ('0.442x [0.434x–0.449x], 2.26x
slower'), so the words and the table's 0.44x say one figure. Without an interval the
sentence says which side ran once: 'one run a side' only where both did.
"""

from __future__ import annotations

import math
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.result import Result
from bench.stats.verdict import Verdict
from bench.util import units
from bench.util.text import visible

if TYPE_CHECKING:  # types only: compare imports this module
    from bench.report.machines import Machine
    from bench.report.rows import RowKey
    from bench.result import Point


def ratio_sentence(
    ratio: float,
    interval: tuple[float, float] | None,
    verdict: Verdict | None,
    repeats: tuple[int, int] = (1, 1),
) -> str:
    """'0.442x [0.434x–0.449x], 2.26x slower'; '1.19x, no interval: one run of the
    baseline (4 of this machine)'. `repeats`: the values this side and the baseline's
    side hold (a ratio's interval needs two a side)."""
    if interval is None or verdict is None:
        return f"{units.ratio(ratio)}x, {verdict_words(ratio, None, repeats)}"
    return f"{units.ratio_with_interval(ratio, *interval)}, {verdict_words(ratio, verdict)}"


def verdict_words(ratio: float, verdict: Verdict | None, repeats: tuple[int, int] = (1, 1)) -> str:
    """The verdict after the figure, for a column beside the ratio's own: 'faster',
    '2.26x slower' (the ratio turned over, rounded once from the raw one: the verdict's
    own words, bench.stats.verdict), 'no interval: one run a side'."""
    if verdict is None:
        return f"no interval: {one_run(*repeats)}"
    return verdict.words(ratio, lambda value: f"{units.ratio(value)}x")


def interval(value: float, low: float | None, high: float | None) -> str:
    """'5,437 [5,402–5,471]': a throughput and its interval; '5,437 (one run)'."""
    if low is None or high is None:
        return f"{units.human(value)} (one run)"
    return f"{units.human(value)} [{units.human(low)}–{units.human(high)}]"


def ratio(row: dict[str, Any]) -> str:
    """A row's ratio to the baseline and its interval, as the tables print it; 'the
    baseline' for the baseline's own row."""
    if row.get("baseline"):
        return "the baseline"
    if "rel" not in row:
        return ""
    return units.ratio_with_interval(row["rel"], row.get("rel_lo"), row.get("rel_hi"))


def one_run(own: int, base: int) -> str:
    """Which side has a single value, so no interval: 'one run a side' only when both."""
    if own < 2 and base < 2:
        return "one run a side"
    if base < 2:
        return f"one run of the baseline ({own} of this machine)"
    return f"one run of this machine ({base} of the baseline)"


def config_label(key: RowKey) -> str:
    """'bs 256 bf16 channels_last inductor · 128 tokens': a row's axes in one line (the
    variant of a Point's own label is bench.result.variant_label)."""
    _, batch, precision, fmt, compiler, setup = key
    parts = [f"bs {batch}", str(precision)]
    if fmt not in ("contiguous", "n/a"):
        parts.append(str(fmt))
    if compiler:
        parts.append(str(compiler))
    text = " ".join(parts)
    return visible(f"{text} · {setup}" if setup else text)


def efficiency(point: Point, machine: Machine) -> dict[str, Any]:
    """What a figure buys: its workload's unit (tokens for a decoder, else samples) per
    dollar at the machine's price and per joule measured, and both in words, rounded
    once ('1.97 M samples/$ · 8.10 samples/J'; 'n/a' where no price or no energy)."""
    tp = point.throughput
    if tp is None:
        return {}
    unit = point.unit_throughput
    scale = unit[0] / tp.value if unit and tp.value else 1.0
    noun = unit[1].split("/")[0] if unit else "samples"
    price = machine.price_per_hour
    per_usd = tp.value * scale * 3600 / price if price else None
    energy = point.energy_summary
    per_j = energy.samples_per_joule * scale if energy and energy.samples_per_joule else None
    words = (
        f"{units.human(per_usd)} {noun}/$" if per_usd is not None else "n/a (no price)",
        f"{units.human(per_j)} {noun}/J" if per_j is not None else "n/a (no energy)",
    )
    return {"per_usd": per_usd, "per_j": per_j, "eff_text": " · ".join(words)}


# What the report page embeds, made JSON-safe: a record without None, NaN or
# infinity, its text made visible (control characters as \xNN); and each distinct
# command once, rows holding its index.

NO_COMMAND = "not recorded in the result (bench rerun FILE runs its config again)"


def command_text(res: Result, path: Path) -> str:
    """The command line that made a result, as a shell would take it back."""
    if not res.command:
        return visible(f"{NO_COMMAND.replace('FILE', shlex.quote(path.name))}")
    return visible(shlex.join(str(part) for part in res.command))


def clean(record: dict[str, Any]) -> dict[str, Any]:
    """No None, no NaN or infinity (JSON has none); text made visible."""
    out = {}
    for name, value in record.items():
        if value is None or (isinstance(value, float) and not math.isfinite(value)):
            continue
        out[name] = visible(value) if isinstance(value, str) else value
    return out


class Commands:
    """Each distinct command once: thousands of points share a few hundred commands."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self._index: dict[str, int] = {}

    def index(self, text: str) -> int:
        if text not in self._index:
            self._index[text] = len(self.texts)
            self.texts.append(text)
        return self._index[text]
