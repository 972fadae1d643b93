"""One process per point: `python -m bench.child.worker`, with a pipe back to the parent.

The parent waits on the child (a blocking wait, no busy loop on a core the child could
use), reads progress from the pipe, and turns a child that died without reporting into
a status: out of memory only with evidence, an error otherwise.

On Ctrl-C or SIGTERM a point training to a target loss is asked to stop (its child ends
the interval it is in, evaluates and answers with its curve: bench.child.measure
train_to_loss) and given ANSWER_GRACE_S to answer; what it answers comes back in
Stopped, for the runner to record before the run ends. A second signal, and any other
point, kill the child at once.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from types import FrameType
from typing import IO, Any

from bench.config.run_config import PointConfig
from bench.parallel.ranks import TOKEN_ENV
from bench.result.response import Response, read_answer
from bench.run import compiler_cache, oomkill, stopping
from bench.run.runtime import ChildRuntime

Progress = Callable[[str, int, int], None]
ANSWER_GRACE_S = 120.0  # after a stop, a point training to a target's time to answer


class Stopped(stopping.Interrupted):
    """The run was stopped (`signum`) while a point trained to a target, and the point's
    child answered with what it measured (`response`): the runner records the point
    (`point`, once made) before the run ends as interrupted."""

    def __init__(self, signum: int, response: Response) -> None:
        super().__init__(signum)
        self.response = response
        self.point: Any = None


def answers_a_stop(point: PointConfig, job: str) -> bool:
    """Whether the point's child, asked to stop, ends its training with what it measured
    (a decoder training to a target loss); any other is killed at once."""
    return job == "measure" and point.train_to_loss is not None


def grace_s(started: float, timeout_s: float | None) -> float:
    """ANSWER_GRACE_S, or the point's --timeout left if that is less."""
    if timeout_s is None:
        return ANSWER_GRACE_S
    return max(0.0, min(ANSWER_GRACE_S, timeout_s - (time.monotonic() - started)))


class _Again(Exception):
    """A second Ctrl-C, SIGTERM or SIGHUP while waiting for a stopped child's answer."""


def wait_for_answer(child: subprocess.Popen[str], grace: float) -> int | None:
    """Wait up to `grace` seconds for a child asked to stop to exit: its exit status, or
    None if it did not, or a second stop signal came (the caller then kills it)."""

    def again(signum: int, frame: FrameType | None) -> None:
        raise _Again

    main = threading.current_thread() is threading.main_thread()  # else: no handler to set
    try:
        with stopping.handled(again) if main else contextlib.nullcontext():
            return child.wait(timeout=grace)
    except (subprocess.TimeoutExpired, _Again):
        return None


def stopped(interrupt: KeyboardInterrupt, response: Response | None) -> KeyboardInterrupt:
    """What to raise once a stopped child is gone: Stopped with its answer if it trained
    (its loss record: the curve to the stop), else the interrupt itself."""
    if response is None or response.loss is None:
        return interrupt
    stop = Stopped(getattr(interrupt, "signum", signal.SIGINT), response)
    stop.__cause__ = interrupt
    return stop


def read_protocol(
    stream: Iterable[str],
    on_progress: Progress,
    on_response: Callable[[Response], None],
    on_ready: Callable[[], None] = lambda: None,
    on_died: Callable[[int], None] = lambda code: None,
) -> None:
    """The worker's line protocol (bench.child.worker.ParentPipe): 'progress PHASE DONE TOTAL'
    lines, a rank's 'ready' once it is set up, then one 'response JSON' line, read as a
    Response (bench.result.response.read_answer); a probing child's, one after each
    probe, or 'died CODE' for a probe's fork that ended without one. Shared by the pipe
    and the ranks' sockets."""
    for line in stream:
        kind, _, rest = line.partition(" ")
        if kind == "response":
            on_response(read_answer(json.loads(rest)))
        elif kind == "died":
            on_died(int(rest))
        elif kind == "ready\n":
            on_ready()
        elif kind == "progress":
            phase, done, total = rest.split()
            on_progress(phase, int(done), int(total))


class ChildPipe(threading.Thread):
    """Reads the child's protocol pipe: progress lines, then a response line (a probing
    child's: one per probe), each also put in `answers`, as is the exit status of a
    probe's fork that died without one; None there once the pipe ends (the child
    exited, or died)."""

    def __init__(self, fd: int, on_progress: Progress) -> None:
        super().__init__(daemon=True)
        self.fd, self.on_progress = fd, on_progress
        self.response: Response | None = None
        self.answers: queue.Queue[Response | int | None] = queue.Queue()

    def run(self) -> None:
        try:
            with os.fdopen(self.fd) as stream:
                read_protocol(stream, lambda *a: self.on_progress(*a), self._respond,
                              on_died=self.answers.put)  # fmt: skip
        finally:
            self.answers.put(None)

    def _respond(self, response: Response) -> None:
        self.response = response
        self.answers.put(response)


LINE_CHARS = 2000  # of each line of a child's output kept for its error


class OutputTail(threading.Thread):
    """Drains the child's stdout and stderr (so it never blocks) and keeps the end."""

    def __init__(self, stream: IO[str], lines: int = 15) -> None:
        super().__init__(daemon=True)
        self.stream = stream
        self.lines: collections.deque[str] = collections.deque(maxlen=lines)

    def run(self) -> None:
        for line in self.stream:  # a line's end: a result's text stays far below MAX_TEXT
            self.lines.append(line.rstrip()[-LINE_CHARS:])

    def text(self) -> str:
        return "\n".join(self.lines)


def start_worker(
    runtime: ChildRuntime | None, on_progress: Progress
) -> tuple[subprocess.Popen[str], ChildPipe, OutputTail]:
    """Start `python -m bench.child.worker` (its requests then go to its stdin, a line
    each), with the threads that read its protocol pipe and drain its output; `runtime`:
    its environment and command prefix (bench.run.runtime), else the parent's."""
    runtime = runtime or ChildRuntime(dict(os.environ))
    # Several machines' shared secret: a process of one point alone never needs it. Its
    # compilers' caches: in folders only the user can write (bench.run.compiler_cache).
    env = {
        name: value
        for name, value in compiler_cache.child_env(runtime.env).items()
        if name != TOKEN_ENV
    }
    read_fd, write_fd = os.pipe()
    child = subprocess.Popen(
        [*runtime.prefix, sys.executable, "-m", "bench.child.worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        pass_fds=(write_fd,),
        env={**env, "BENCH_REPORT_FD": str(write_fd), "BENCH_PARENT_PID": str(os.getpid())},
    )
    os.close(write_fd)
    pipe, output = ChildPipe(read_fd, on_progress), OutputTail(child.stdout)  # type: ignore[arg-type]
    pipe.start()
    output.start()
    return child, pipe, output


def ask(child: subprocess.Popen[str], point: PointConfig, job: str) -> None:
    """Send the child one request (a line). The child's stdin then stays open as its
    lifeline (it exits when it reads end-of-file). A child that died closed it."""
    with contextlib.suppress(BrokenPipeError):
        child.stdin.write(json.dumps({"point": point.to_dict(), "job": job}) + "\n")  # type: ignore[union-attr]
        child.stdin.flush()  # type: ignore[union-attr]


def timed_out(timeout_s: float | None) -> Response:
    return Response(status="error", error=f"timed out after {timeout_s:g} s")


def spawn_worker(
    point: PointConfig,
    job: str,
    on_progress: Progress,
    timeout_s: float | None = None,
    runtime: ChildRuntime | None = None,
) -> Response:
    """Run `python -m bench.child.worker` for one point and return its response; `runtime`:
    its environment and command prefix (bench.run.runtime), else the parent's."""
    oom_kills = oomkill.count()
    started, interrupt, child = time.monotonic(), None, None
    try:
        with stopping.deferred():  # a stop while it starts comes once `child` is set
            child, pipe, output = start_worker(runtime, on_progress)
        ask(child, point, job)
        code = child.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        child.kill()  # type: ignore[union-attr]
        child.wait()  # type: ignore[union-attr]
        return timed_out(timeout_s)
    except BaseException as stop:  # Ctrl-C, SIGTERM: stop the child before giving up the point
        if child is None:  # it never started
            raise
        if not (isinstance(stop, KeyboardInterrupt) and answers_a_stop(point, job)):
            child.kill()
            child.wait()
            raise
        interrupt = stop  # its SIGTERM handler ends the training with what it measured
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signal.SIGTERM)
        if wait_for_answer(child, grace_s(started, timeout_s)) is None:
            child.kill()
            child.wait()
    finally:
        if child is not None:
            with contextlib.suppress(OSError):
                child.stdin.close()  # type: ignore[union-attr]
            pipe.join(timeout=5)
            output.join(timeout=5)
    if interrupt is not None:
        raise stopped(interrupt, pipe.response)
    if pipe.response is not None:
        return pipe.response
    return died(code, output.text(), point, oom_kills)


def with_runtime(response: Response, child: ChildRuntime) -> Response:
    """The answer with the runtime its child was started with (bench.run.runtime)."""
    if not child.record:
        return response
    # What was applied, and what the child had loaded (its evidence).
    loaded = (response.environment or {}).get("runtime_libraries")
    record = {**child.record, "loaded": " ".join(loaded) if loaded else None}
    return dataclasses.replace(response, runtime=record)


def died(code: int, output: str, point: PointConfig, oom_kills: dict[str, int]) -> Response:
    """The answer for a child that ended (`code`) without one: classify_crash, with the
    kernel's OOM-kill counters compared to `oom_kills` (read as it started) on a SIGKILL."""
    killer = oomkill.evidence(oom_kills, oomkill.count()) if code == -signal.SIGKILL else None
    return classify_crash(code, output, point.memory_limit_bytes, killer)


# Signals of a native allocation failing where nothing checks it (seen here: SIGSEGV
# in a probe just over an RLIMIT_DATA cap) or of std::bad_alloc escaping (SIGABRT).
_CRASH_SIGNALS = (signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT)
# What a process that ran out under a cap leaves in its output as it dies: the C++
# exception's name, Python's, and libgomp's thread whose stack the cap could not map.
DYING_WORDS = ("bad_alloc", "MemoryError", "Thread creation failed")
# The same, or a crash signal, seen in a launcher's output (torchrun names a rank's signal).
CRASH_MARKS = (*(s.name for s in _CRASH_SIGNALS), *DYING_WORDS)


def classify_crash(
    code: int, output: str, memory_limit: int | None, oom_killer: str | None = None
) -> Response:
    """The response for a child that died without reporting. Out of memory only with
    evidence: a kernel OOM-kill counter that rose while it ran (`oom_killer`, from
    bench.run.oomkill), or a crash under --memory-limit. A SIGKILL alone is not evidence:
    `docker stop`, `kill -9` and pre-emption send it too."""
    name = signal.Signals(-code).name if code < 0 else None
    if code == -signal.SIGKILL and oom_killer:
        return Response(status="oom", error="the child was killed by the kernel's "
                        f"out-of-memory killer (SIGKILL; {oom_killer})")  # fmt: skip
    # Also a child that ran out under the cap while reporting (a MemoryError on its
    # way out, seen here at 600 MiB on a busy machine).
    if memory_limit and (
        (code < 0 and -code in _CRASH_SIGNALS) or any(w in output for w in DYING_WORDS)
    ):
        return Response(status="oom", error=f"the child died ({name or f'status {code}'}) "
                        f"under --memory-limit {memory_limit} B: an allocation failed outside "
                        "PyTorch's allocator")  # fmt: skip
    reason = f"killed by {name}" if name else f"exited with status {code}"
    if code == -signal.SIGKILL:
        reason += (
            " (no kernel OOM-kill counter rose, or none can be read here: "
            "not counted as out of memory)"
        )
    return Response(status="error", error=f"the child {reason} without a result:\n{output}")
