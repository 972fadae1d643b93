"""Byte sizes as users write them ("16GiB", "512MB", "1e9") and as tables show them."""

import re

from bench.errors import UsageError

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
