"""Byte sizes as users write them ("16GiB", "512MB", "1e9") and as tables show them."""

import math
import re

from bench.util.errors import UsageError

_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
MAX_BYTES = 2**63 - 1  # what a signed 64-bit size holds (rlimits, allocator caps)
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([a-z]*)\s*$", re.IGNORECASE)


def parse_size(text: str, what: str = "size") -> int:
    """'16GiB' -> 17179869184. Raises UsageError naming `what` and the allowed forms."""
    match = _SIZE.match(text)
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _UNITS:
        raise UsageError(
            f"{what}: {text!r} is not a size; use a number with an optional unit "
            "B, KB, MB, GB, TB, KiB, MiB, GiB or TiB (e.g. 16GiB)"
        )
    number = float(match.group(1)) * _UNITS[unit]
    if not number < MAX_BYTES:  # also inf, from '1e400'
        raise UsageError(f"{what}: {text!r} is too large; at most {MAX_BYTES} B (8 EiB)")
    value = int(number)
    if value <= 0:
        raise UsageError(f"{what}: {text!r} must be larger than zero")
    return value


def format_bytes(value: float | None) -> str:
    if value is None:
        return "n/a"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(value) >= scale:
            return f"{value / scale:.2f} {unit}"
    return f"{value:.0f} B"


_PREFIXES = (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3))


def _three_digits(value: float) -> str:
    value = float(f"{value:.3g}")
    if abs(value) >= 100 or value == 0:
        return f"{value:,.0f}"
    return f"{value:.{2 - math.floor(math.log10(abs(value)))}f}"


def human(value: float | None, unit: str = "") -> str:
    """Numbers as people read them: '84.3 M samples/$', '5,437 samples/s', '0.0123 J'.
    Below 10 k every digit of the integer part is kept; from there on three significant
    digits and a prefix (k, M, G, T). Beyond the prefixes, below 0.0001 or from 1,000 T,
    three digits in scientific notation ('8.00e-21 J', as the report's page writes it),
    never twenty zeros."""
    if value is None or not math.isfinite(value):
        return "n/a"
    if value != 0 and (abs(value) < 1e-4 or abs(value) >= 999.5e12):
        return " ".join(part for part in (f"{value:.2e}", unit) if part)
    prefix = ""
    if abs(value) >= 9_995:
        value = float(f"{value:.3g}")
        for prefix, scale in _PREFIXES:  # noqa: B007 - the one found is used below
            if abs(value) >= scale:
                break
        text = _three_digits(value / scale)
    elif abs(value) >= 99.95:
        text = f"{value:,.0f}"
    else:
        text = _three_digits(value)
    return " ".join(part for part in (text, prefix, unit) if part)


def ratio(value: float, extra: int = 0) -> str:
    """A ratio as a table shows it: two decimals, or two significant digits below 0.1 (a
    CPU at 0.0036 of an H100 is not '0.00'); `extra` digits more where asked."""
    if value >= 0.1:
        return f"{value:.{2 + extra}f}"
    return f"{value:#.{2 + extra}g}"  # 0.0020 (JS toPrecision)


def ratio_with_interval(value: float, low: float | None, high: float | None) -> str:
    """'1.25x [1.21x–1.30x]', a digit more where two decimals would print the interval
    as a point ('1.100x [1.097x–1.103x]', not '1.10x [1.10x–1.10x]'); '(no interval)'."""
    if low is None or high is None:
        return f"{ratio(value)}x (no interval)"
    extra = 0
    while extra < 2 and ratio(low, extra) == ratio(high, extra):
        extra += 1
    return f"{ratio(value, extra)}x [{ratio(low, extra)}x–{ratio(high, extra)}x]"


def axis_tick(value: float) -> str:
    """An axis label: as `human`, without the zeros that only pad to three digits."""
    if abs(value) < 9_995:
        return f"{value:,g}"
    return re.sub(r"\.0+(?= )", "", human(value))
