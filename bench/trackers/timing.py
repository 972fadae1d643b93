"""Device time of single steps, two ways, both reading a clock only once the device
has finished the work being timed.

StepTimer: synchronise the device, read the host clock, around every step. Works on
  every framework; costs the device a short idle gap per step while the host launches
  the next one.
RankTimer: as StepTimer, for one rank of several on a device without timing events
  (CPU ranks over gloo): the ranks meet (a barrier) only at the window's two ends;
  inside it each step is timed on this rank's clock after its own device finished,
  as a training loop's collectives keep the ranks in step. A barrier around every
  step would add its own cost to each (8-12% of a small model's step on two CPU ranks,
  measured against a bare FSDP2 loop).
CompletionTimer: keep the next step queued before waiting for the current one's result,
  and read the host clock as each result is ready; the times between consecutive
  completions are the steps, and they add up to the window from an idle device. The
  device never waits for the host to launch a step, as in a plain loop. Used where a
  step's result is ready only once the whole step is (JAX: one XLA computation).
EventTimer: record a device event after every step and synchronise once, at the end
  of the window; the times between consecutive events are the steps. The host never
  waits inside the window, so it runs ahead exactly as a plain training loop does.
  Used where the framework has timing events (PyTorch on CUDA and ROCm).

Each keeps the first and the last step's result (the losses the point reports), or
every one where asked (an epoch's mean loss): a training loop drops each step's loss
as the next begins, and a timer that held them all would measure another program.
On a CPU, fifty held 4-byte losses slowed an 8 ms step by 3-5% (each pins a chunk
between the steps' temporaries, so the heap cannot shrink and grow back as a plain
loop's does).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any, Protocol


class DeviceEvent(Protocol):
    def record(self) -> None: ...

    def elapsed_time(self, end: Any) -> float: ...  # milliseconds, as torch.cuda.Event


class Results(list):
    """fn's results over a window: every one (`keep_all`), else the first and the last
    (the one before the last is let go as each new one arrives)."""

    def __init__(self, keep_all: bool) -> None:
        super().__init__()
        self.keep_all = keep_all

    def add(self, result: Any) -> None:
        if self.keep_all or len(self) < 2:
            self.append(result)
        else:
            self[-1] = result


class StepTimer:
    """Times calls on the device. The clock is injectable so tests can use a fake one."""

    kind = "host_clock_after_sync"

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

    def steps(
        self, fn: Callable[[], Any], count: int, after: Callable[[int], None],
        keep_all: bool = False,
    ) -> tuple[list[float], list[Any]]:  # fmt: skip
        """Seconds of each of `count` calls of fn, and their results (the first and the
        last, or all: Results); after(i) runs between clock reads, outside every timed
        interval."""
        times, results = [], Results(keep_all)
        for i in range(count):
            seconds, result = self.time(fn)
            times.append(seconds)
            results.add(result)
            del result  # held only by `results`, if it keeps it
            after(i)
        return times, results


class RankTimer(StepTimer):
    """Steps of one rank: every rank's work finished at the window's start and end
    (`synchronize`, a barrier), this rank's device alone around each step inside it
    (`local_synchronize`). The window is the same on every rank; a step's time is this
    rank's, waits for the others' collectives included."""

    kind = "host_clock_per_rank"

    def __init__(
        self, synchronize: Callable[[], None], local_synchronize: Callable[[], None],
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:  # fmt: skip
        super().__init__(synchronize, clock)
        self.local_synchronize = local_synchronize

    def steps(
        self, fn: Callable[[], Any], count: int, after: Callable[[int], None],
        keep_all: bool = False,
    ) -> tuple[list[float], list[Any]]:  # fmt: skip
        self.synchronize()  # every rank starts the window together
        times, results = [], Results(keep_all)
        for i in range(count):
            self.local_synchronize()
            start = self.clock()
            results.add(fn())
            self.local_synchronize()
            times.append(self.clock() - start)
            after(i)
        self.synchronize()  # and ends it together: nothing of the window is left running
        return times, results


class CompletionTimer(StepTimer):
    """Steps timed at their completions, the next one already queued: their sum is the
    whole window, from an idle device to the last step done."""

    kind = "host_clock_at_completion"

    def __init__(
        self, synchronize: Callable[[], None], wait: Callable[[Any], None],
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:  # fmt: skip
        super().__init__(synchronize, clock)
        self.wait = wait  # returns once a step's result (and so the whole step) is ready

    def steps(
        self, fn: Callable[[], Any], count: int, after: Callable[[int], None],
        keep_all: bool = False,
    ) -> tuple[list[float], list[Any]]:  # fmt: skip
        times, results = [], Results(keep_all)
        last = self.now()  # the window starts on an idle device
        pending = fn() if count else None
        for i in range(count):
            queued = fn() if i + 1 < count else None  # the device's next work, first
            self.wait(pending)
            done = self.clock()
            times.append(done - last)
            last = done
            results.add(pending)
            pending = queued
            del queued
            after(i)  # runs while the device works on the queued step
        self.synchronize()  # nothing of the window is left running
        return times, results


class EventTimer(StepTimer):
    """Steps timed by device events, back to back: their sum is the whole window."""

    kind = "device_events"

    def __init__(
        self, synchronize: Callable[[], None], new_event: Callable[[], DeviceEvent],
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:  # fmt: skip
        super().__init__(synchronize, clock)
        self.new_event = new_event

    def _mark(self) -> DeviceEvent:
        event = self.new_event()
        event.record()
        return event

    def steps(
        self, fn: Callable[[], Any], count: int, after: Callable[[int], None],
        keep_all: bool = False,
    ) -> tuple[list[float], list[Any]]:  # fmt: skip
        self.synchronize()  # the window starts on an idle device
        marks, results = [self._mark()], Results(keep_all)
        for i in range(count):
            results.add(fn())
            marks.append(self._mark())
            after(i)  # runs while the device works; the next event follows on the device
        self.synchronize()  # every event has happened: their times can be read
        return [a.elapsed_time(b) / 1e3 for a, b in itertools.pairwise(marks)], results
