"""One process per point: `python -m bench.child.worker`, with a pipe back to the parent.

The parent waits on the child (a blocking wait, no busy loop on a core the child could
use), reads progress from the pipe, and turns a child that died without reporting into
a status: out of memory only with evidence, an error otherwise.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable
from typing import IO, Any

from bench import oomkill
from bench.config import PointConfig
from bench.ranks import TOKEN_ENV
from bench.runtime import ChildRuntime

Response = dict[str, Any]
Progress = Callable[[str, int, int], None]


def read_protocol(
    stream: Iterable[str],
    on_progress: Progress,
    on_response: Callable[[Response], None],
    on_ready: Callable[[], None] = lambda: None,
) -> None:
    """The worker's line protocol (bench.child.worker.ParentPipe): 'progress PHASE DONE TOTAL'
    lines, a rank's 'ready' once it is set up, then one 'response JSON' line. Shared by the
    pipe and the ranks' sockets."""
    for line in stream:
        kind, _, rest = line.partition(" ")
        if kind == "response":
            on_response(json.loads(rest))
        elif kind == "ready\n":
            on_ready()
        elif kind == "progress":
            phase, done, total = rest.split()
            on_progress(phase, int(done), int(total))


class _ChildPipe(threading.Thread):
    """Reads the child's protocol pipe: progress lines, then one response line."""

    def __init__(self, fd: int, on_progress: Progress) -> None:
        super().__init__(daemon=True)
        self.fd, self.on_progress = fd, on_progress
        self.response: Response | None = None

    def run(self) -> None:
        with os.fdopen(self.fd) as stream:
            read_protocol(stream, self.on_progress, self._respond)

    def _respond(self, response: Response) -> None:
        self.response = response


class _OutputTail(threading.Thread):
    """Drains the child's stdout and stderr (so it never blocks) and keeps the end."""

    def __init__(self, stream: IO[str], lines: int = 15) -> None:
        super().__init__(daemon=True)
        self.stream = stream
        self.lines: collections.deque[str] = collections.deque(maxlen=lines)

    def run(self) -> None:
        for line in self.stream:
            self.lines.append(line.rstrip())

    def text(self) -> str:
        return "\n".join(self.lines)


def spawn_worker(
    point: PointConfig,
    task: str,
    on_progress: Progress,
    timeout_s: float | None = None,
    runtime: ChildRuntime | None = None,
) -> Response:
    """Run `python -m bench.child.worker` for one point and return its response; `runtime`:
    its environment and command prefix (bench.runtime), else the parent's."""
    runtime = runtime or ChildRuntime(dict(os.environ))
    # Several machines' shared secret: a process of one point alone never needs it.
    env = {name: value for name, value in runtime.env.items() if name != TOKEN_ENV}
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
    pipe, output = _ChildPipe(read_fd, on_progress), _OutputTail(child.stdout)  # type: ignore[arg-type]
    pipe.start()
    output.start()
    oom_kills = oomkill.count()
    try:
        # The request is one line; stdin then stays open as the child's lifeline (it
        # exits when it reads end-of-file). A child that died at start-up closed it.
        with contextlib.suppress(BrokenPipeError):
            child.stdin.write(json.dumps({"point": point.to_dict(), "task": task}) + "\n")  # type: ignore[union-attr]
            child.stdin.flush()  # type: ignore[union-attr]
        code = child.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
        return {"status": "error", "error": f"timed out after {timeout_s:g} s"}
    except BaseException:  # Ctrl-C, SIGTERM: stop the child before giving up the point
        child.kill()
        child.wait()
        raise
    finally:
        with contextlib.suppress(OSError):
            child.stdin.close()  # type: ignore[union-attr]
        pipe.join(timeout=5)
        output.join(timeout=5)
    if pipe.response is not None:
        return pipe.response
    killer = oomkill.evidence(oom_kills, oomkill.count()) if code == -signal.SIGKILL else None
    return classify_crash(code, output.text(), point.memory_limit_bytes, killer)


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
    bench.oomkill), or a crash under --memory-limit. A SIGKILL alone is not evidence:
    `docker stop`, `kill -9` and pre-emption send it too."""
    name = signal.Signals(-code).name if code < 0 else None
    if code == -signal.SIGKILL and oom_killer:
        return {"status": "oom", "error": "the child was killed by the kernel's "
                f"out-of-memory killer (SIGKILL; {oom_killer})"}  # fmt: skip
    # Also a child that ran out under the cap while reporting (a MemoryError on its
    # way out, seen here at 600 MiB on a busy machine).
    if memory_limit and (
        (code < 0 and -code in _CRASH_SIGNALS) or any(w in output for w in DYING_WORDS)
    ):
        return {"status": "oom", "error": f"the child died ({name or f'status {code}'}) under "
                f"--memory-limit {memory_limit} B: an allocation failed outside PyTorch's "
                "allocator"}  # fmt: skip
    reason = f"killed by {name}" if name else f"exited with status {code}"
    if code == -signal.SIGKILL:
        reason += (
            " (no kernel OOM-kill counter rose, or none can be read here: "
            "not counted as out of memory)"
        )
    return {"status": "error", "error": f"the child {reason} without a result:\n{output}"}
