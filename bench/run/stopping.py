"""Stopping a run from outside: SIGTERM and SIGHUP end it as Ctrl-C does.

`docker stop`, Kubernetes, SkyPilot, `timeout` and a reclaimed spot instance send SIGTERM;
a closed terminal or ssh session sends SIGHUP. Each raises Interrupted in the main
thread, so the runner stops the point in progress, keeps every finished point and marks
the file `interrupted`. A handler is also what makes SIGTERM work when bench is PID 1 in
a container without --init: the kernel drops signals PID 1 has no handler for.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


class Interrupted(KeyboardInterrupt):
    """The run was stopped by a signal; exit status 128 + its number (130, 143, 129)."""

    def __init__(self, signum: int = signal.SIGINT) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


@contextlib.contextmanager
def handled(handler: Callable[[int, FrameType | None], Any]) -> Iterator[dict[int, Any]]:
    """Within the block SIGINT, SIGTERM and SIGHUP go to `handler`; the handlers in place
    before (yielded, by signal) are put back as it ends. Only in the main thread."""
    previous = {signum: signal.signal(signum, handler) for signum in SIGNALS}
    try:
        yield previous
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """Within the block the first SIGINT, SIGTERM or SIGHUP raises Interrupted; later
    ones are ignored, so that saving what was measured is not itself interrupted."""
    stopping = False

    def handler(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        if not stopping:
            stopping = True
            raise Interrupted(signum)

    with handled(handler):
        yield


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Within the block a stop signal waits, and is delivered as the block ends. Around
    starting a child inside the `try` that stops it: a signal that lands while the child
    starts then comes once the caller holds the child, never between (which left a child
    running after bench had exited). Off the main thread, where no handler can be set, the
    block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous: dict[int, Any] = {}
    try:
        with handled(lambda signum, frame: caught.append(signum)) as previous:
            yield
    finally:
        if caught:  # as if it came now: the handler in place before, or the default action
            signum, old = caught[0], previous[caught[0]]
            if callable(old):
                old(signum, None)
            elif old == signal.SIG_DFL:
                os.kill(os.getpid(), signum)
