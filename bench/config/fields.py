"""One field's checks, shared by the config's checks (bench.config.checks and beside it):
a whole number in its range, one of a list, and a run's or a point's values of a sweep
axis. Each raises UsageError naming the field, the bad value and what is allowed.

The checks take a RunConfig or a PointConfig (bench.config.run_config), which import them: typed
`Config` (Any) here, so that no import runs back up to the dataclasses.
"""

from __future__ import annotations

from typing import Any

from bench.util.errors import UsageError

Config = Any  # a RunConfig or a PointConfig (bench.config.run_config)


def positive(
    name: str, value: int | None, *, zero_ok: bool = False, most: int | None = None
) -> None:
    if value is None:
        return
    low = 0 if zero_ok else 1
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        allowed = "zero or a positive whole number" if zero_ok else "a positive whole number"
        raise UsageError(f"{name}: {value!r} is not allowed; use {allowed}")
    if most is not None and value > most:
        raise UsageError(f"{name}: {value!r} is not allowed; use at most {most}")


def choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise UsageError(f"{name}: {value!r} is not allowed; choose from: {', '.join(allowed)}")


def values(cfg: Config, many: str, one: str) -> tuple[Any, ...]:
    """A run's values of a sweep axis (its RunConfig field `many`, a tuple), or a point's
    one value (its PointConfig field `one`): the checks below read both alike."""
    return tuple(getattr(cfg, many)) if cfg.sweeps else (getattr(cfg, one),)
