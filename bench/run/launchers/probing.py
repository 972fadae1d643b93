"""A probing child: one `python -m bench.child.worker` that trains a search's probes in
turn (job 'probe'), so that only its first pays the process's start (the framework's
import, a GPU's context, cuDNN's autotuning of what the next probe shares).

The runner's search sends one probe at a time (`probe`) and decides the next from its
answer: the search's rule stays the runner's alone. Each answer comes back as it is
made, so a child killed or crashed later loses none. A child that dies answers that
probe as a fresh child's crash would (bench.run.launchers.process.classify_crash), and
`alive` turns false: the next probe starts another. Where the platform forks each probe
(the CPU: Platform.probes_fork) a fork that dies is judged so too, and the child lives
on. An answer that is an error other than memory ends the child (the search stops
there). A timeout or Ctrl-C kills it.
"""

from __future__ import annotations

import contextlib
import os
import queue
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

from bench.config.run_config import PointConfig
from bench.result.response import Response
from bench.run import oomkill, runtime, stopping
from bench.run.launchers import process

Progress = Callable[[str, int, int], None]
CLOSE_GRACE_S = 5.0  # a child whose stdin closed exits at once; killed if it has not by then


@dataclass(frozen=True)
class _Started:
    child: subprocess.Popen[str]
    pipe: process.ChildPipe
    output: process.OutputTail
    runtime: runtime.ChildRuntime


class ProbingChild:
    """One child for many probes of one search (one process, one rank: torchrun's ranks
    and frameworks that cannot free a probe's memory in their process get a fresh child
    per probe, bench.run.runner). `answered`: how many probes it has answered; `alive`:
    false once it has ended (then the next probe needs another)."""

    def __init__(self, timeout_s: float | None = None) -> None:
        self.timeout_s = timeout_s
        self.answered = 0
        self.alive = True
        self._started: _Started | None = None
        self._progress: Progress = lambda phase, done, total: None

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs."""
        return self._started.child.pid if self._started is not None else None

    def probe(self, point: PointConfig, on_progress: Progress) -> Response:
        """Train `point` (a probe) in this child, the first starting it: its answer."""
        if not self.alive:
            raise RuntimeError("this probing child has ended; start another")
        self._progress = on_progress
        oom_kills = oomkill.count()
        try:
            if self._started is None:
                with stopping.deferred():  # a stop while it starts comes once it is held
                    self._started = self._start(point)
            started = self._started
            process.ask(started.child, point, "probe")
            answer = started.pipe.answers.get(timeout=self.timeout_s)
        except queue.Empty:
            self.close(kill=True)
            return process.timed_out(self.timeout_s)
        except BaseException:  # Ctrl-C, SIGTERM: a probe is not asked to stop, but killed
            self.close(kill=True)
            raise
        if answer is None:  # its pipe ended without an answer: the child died
            code = started.child.wait()
            self.close()
            return process.died(code, started.output.text(), point, oom_kills)
        if isinstance(answer, int):  # the probe's fork died (its exit status): judged so
            died = process.died(answer, started.output.text(), point, oom_kills)
            return process.with_runtime(died, started.runtime)
        self.answered += 1
        if answer.status == "error":  # the child ends after an error that is not memory
            self.close()
        return process.with_runtime(answer, started.runtime)

    def _start(self, point: PointConfig) -> _Started:
        child_runtime = runtime.child_runtime(
            point.allocator, point.openmp, point.numa, dict(os.environ)
        )
        child, pipe, output = process.start_worker(child_runtime, lambda *a: self._progress(*a))
        return _Started(child, pipe, output, child_runtime)

    def close(self, kill: bool = False) -> None:
        """End the child: its stdin closed (it exits, as a child whose parent is gone),
        killed if it lingers (or at once: `kill`)."""
        self.alive = False
        started, self._started = self._started, None
        if started is None:
            return
        if kill:
            started.child.kill()
        with contextlib.suppress(OSError):
            started.child.stdin.close()  # type: ignore[union-attr]
        try:
            started.child.wait(timeout=CLOSE_GRACE_S)
        except subprocess.TimeoutExpired:
            started.child.kill()
            started.child.wait()
        started.pipe.join(timeout=5)
        started.output.join(timeout=5)
