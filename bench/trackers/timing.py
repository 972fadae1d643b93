"""Device time of single steps: synchronise the device, then read the clock."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


class StepTimer:
    """Times calls on the device. The clock is injectable so tests can use a fake one."""

    def __init__(
        self, synchronize: Callable[[], None], clock: Callable[[], float] = time.perf_counter
    ):
        self.synchronize = synchronize
        self.clock = clock

    def now(self) -> float:
        """The clock, read only once all queued device work has finished."""
        self.synchronize()
        return self.clock()

    def time(self, fn: Callable[[], Any]) -> tuple[float, Any]:
        """(seconds, result) of fn, from an idle device to an idle device."""
        start = self.now()
        result = fn()
        return self.now() - start, result
