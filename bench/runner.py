"""The parent process: runs a sweep point by point, each in a fresh child.

The parent never imports a framework or touches a device. It waits on the child
(a blocking wait, no busy loop on a core the child could use), reads progress from a
pipe, and saves the result file after every point so nothing finished is lost when a
later point fails or the run is interrupted.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, Protocol

from bench import files, oomkill, provenance, registry, result
from bench.config import PointConfig, RunConfig
from bench.errors import BenchError
from bench.result import MaxBatch, Point, Probe, Result

Response = dict[str, Any]
# spawn(point, task, on_progress) -> response; task is "measure" or "count_flops".
Spawn = Callable[[PointConfig, str, Callable[[str, int, int], None]], Response]


class Reporter(Protocol):
    """What the runner tells the user; bench.report.live draws it with rich."""

    def start(self, label: str, total_steps: int) -> None: ...
    def progress(self, phase: str, done: int, total: int) -> None: ...
    def finish(self, label: str, status: str, summary: str) -> None: ...


class SilentReporter:
    def start(self, label: str, total_steps: int) -> None: ...
    def progress(self, phase: str, done: int, total: int) -> None: ...
    def finish(self, label: str, status: str, summary: str) -> None: ...


class _ChildPipe(threading.Thread):
    """Reads the child's protocol pipe: progress lines, then one response line."""

    def __init__(self, fd: int, on_progress: Callable[[str, int, int], None]) -> None:
        super().__init__(daemon=True)
        self.fd, self.on_progress = fd, on_progress
        self.response: Response | None = None

    def run(self) -> None:
        with os.fdopen(self.fd) as stream:
            for line in stream:
                kind, _, rest = line.partition(" ")
                if kind == "response":
                    self.response = json.loads(rest)
                elif kind == "progress":
                    phase, done, total = rest.split()
                    self.on_progress(phase, int(done), int(total))


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
    on_progress: Callable[[str, int, int], None],
    timeout_s: float | None = None,
) -> Response:
    """Run `python -m bench.worker` for one point and return its response."""
    read_fd, write_fd = os.pipe()
    child = subprocess.Popen(
        [sys.executable, "-m", "bench.worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        pass_fds=(write_fd,),
        env={**os.environ, "BENCH_REPORT_FD": str(write_fd), "BENCH_PARENT_PID": str(os.getpid())},
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
    if memory_limit and ((code < 0 and -code in _CRASH_SIGNALS) or "bad_alloc" in output):
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


def search_max_batch(
    fits: Callable[[int], str], limit: int, start: int = 1, step: int = 1
) -> tuple[int | None, int | None]:
    """Largest batch for which fits() says 'ok', and the first that does not.

    From `start`, doubles until a batch fails (or, when `start` fails, halves until one
    fits), then bisects between the last success and the first failure: O(log n)
    probes. Above `step` it probes multiples of `step` and stops once the two are
    `step` apart (a useful resolution: 1,536 and 1,544, not one sample); below it, it
    bisects to the exact batch. fits() returns 'ok' or 'oom'; it raises to stop the
    search. Returns (largest_ok, first_failing); largest_ok is None when even batch 1
    fails, first_failing is None when `limit` was reached without failing.
    """
    batch = max(1, min(start, limit))
    if fits(batch) == "ok":
        low = batch
        while True:
            if batch >= limit:
                return low, None
            batch = min(batch * 2, limit)
            if fits(batch) != "ok":
                high = batch
                break
            low = batch
    else:
        high = batch
        while True:
            if batch == 1:
                return None, 1
            batch //= 2
            if fits(batch) == "ok":
                low = batch
                break
            high = batch
    while high - low > (step if low >= step else 1):
        middle = (low + high) // 2
        rounded = middle - middle % step
        if low >= step and rounded > low:
            middle = rounded
        if fits(middle) == "ok":
            low = middle
        else:
            high = middle
    return low, high


class _ProbeFailed(Exception):
    """A probe failed for a reason other than memory: the search cannot go on."""


class Runner:
    def __init__(
        self,
        config: RunConfig,
        output_dir: Path,
        *,
        reporter: Reporter | None = None,
        spawn: Spawn | None = None,
        command: list[str] | None = None,
    ) -> None:
        self.config = config
        self.output_dir = Path(output_dir)
        self.reporter = reporter or SilentReporter()
        self.spawn = spawn or (lambda p, t, cb: spawn_worker(p, t, cb, config.timeout_s))
        argv = sys.argv if command is None else command
        self.result = Result(config=config, command=[provenance.redact(arg) for arg in argv])
        self.path: Path | None = None
        self.save_error: OSError | None = None
        self._flops: dict[tuple[Any, ...], float | None] = {}

    def run(self) -> Result:
        """Measure everything; the file at self.path is complete after every point.

        A save that fails (a full disk) keeps the measured points in memory and is tried
        again after the next point and at the end; `save_error` says if the last failed."""
        files.require_writable_dir(self.output_dir, "output-dir")
        try:
            self.path = result.create(self.result, self.output_dir)
        except OSError as error:
            raise BenchError(
                f"output-dir: cannot write a result file in {self.output_dir} "
                f"({error.strerror}); nothing was measured"
            ) from None
        try:
            if self.config.find_max_batch:
                self._find_max_batch()
            else:
                for point in self.config.points():
                    self.result.points.append(self._measure(point))
                    self._save()
            self.result.status = "complete"
        except KeyboardInterrupt:
            self.result.status = "interrupted"
            raise
        finally:
            self.result.finished = result.now_iso()
            if self.result.environment is None:
                # No child reported one (all crashed early): at least the host.
                self.result.environment = provenance.collect()
            self._save()
        return self.result

    def _save(self) -> None:
        if self.path is None:  # only before run() created the file
            return
        try:
            result.update(self.result, self.path)
            self.save_error = None
        except OSError as error:  # the previous complete file is still in place
            self.save_error = error

    def _spawn(self, point: PointConfig, task: str = "measure") -> Response:
        response = self.spawn(point, task, self.reporter.progress)
        if self.result.environment is None and response.get("environment"):
            self.result.environment = {**response["environment"], "command": self.result.command}
        return response

    def _flops_per_sample(self, point: PointConfig) -> float | None:
        """Counted once per workload and input shape, in a child of its own (None if
        that child fails: the measurement itself does not depend on it)."""
        key = (point.workload, point.framework, point.seq_len)
        if key not in self._flops:
            self.reporter.start(f"counting FLOPs of {point.workload}", 1)
            # Maybe another framework's child (the reference count): its environment
            # is not this run's, so it does not go through _spawn.
            counted = registry.framework(point.framework).flops_point(point)
            response = self.spawn(counted, "count_flops", self.reporter.progress)
            self._flops[key] = response.get("flops_per_sample")
        return self._flops[key]

    def _measure(self, point: PointConfig) -> Point:
        """All repeats of one point: a fixed count, or automatic until the spread is small."""
        config = self.config
        axes = {
            "batch_size": point.batch_size,
            "precision": point.precision,
            "memory_format": point.memory_format,
            "compile": point.compile,
        }
        label = Point(**axes).label  # type: ignore[arg-type]
        flops = self._flops_per_sample(point)
        wanted = config.repeats or config.max_repeats
        responses: list[Response] = []
        measured = Point(**axes)  # type: ignore[arg-type]
        while len(responses) < wanted:
            self.reporter.start(
                f"{label} (repeat {len(responses) + 1})", point.warmup_steps + point.measured_steps
            )
            responses.append(self._spawn(point))
            measured = Point.from_responses(axes, responses, flops)
            if measured.status != "ok":
                break
            if config.repeats is None and len(responses) >= config.min_repeats:
                rsd = measured.throughput_rsd
                if rsd is not None and rsd <= config.target_rsd:
                    break
        rsd = measured.throughput_rsd
        if config.repeats is None and rsd is not None and rsd > config.target_rsd:
            measured = dataclasses.replace(
                measured,
                noise=f"--repeats auto stopped at {len(responses)} repeats with a spread of "
                f"{rsd:.1%}, above its {config.target_rsd:.1%} target",
            )
        tp = measured.throughput
        summary = f"{tp.value:,.1f} {tp.unit}" if tp else measured.error_line
        self.reporter.finish(label, measured.status, summary)
        return measured

    def _find_max_batch(self) -> None:
        config = self.config
        for precision in config.precisions:
            for fmt in config.memory_formats:
                for compiler in config.compilers:
                    search = MaxBatch(
                        precision=precision,
                        memory_format=fmt,
                        compile=compiler,
                        resolution=config.max_batch_step,
                    )
                    self.result.max_batch.append(search)

                    def fits(batch: int, search: MaxBatch = search) -> str:
                        probe = config.probe(
                            batch, search.precision, search.memory_format, search.compile
                        )
                        self.reporter.start(f"max batch {search.label}: probe {batch}", probe.steps)
                        response = self._spawn(probe)
                        peak = response.get("peak_memory_bytes")
                        search.probes.append(
                            Probe(batch, response["status"], response.get("error"), peak)
                        )
                        self._save()
                        if response["status"] == "error":
                            raise _ProbeFailed(response.get("error") or "unknown error")
                        return response["status"]

                    try:
                        search.largest_ok, search.first_failing = search_max_batch(
                            fits,
                            config.max_batch_limit,
                            start=max(
                                registry.workload(config.workload).min_batch_size,
                                config.max_batch_start or 1,
                            ),
                            step=config.max_batch_step,
                        )
                        search.status = "done"
                    except _ProbeFailed as error:
                        search.status, search.error = "error", str(error)
                    self.reporter.finish(f"max batch {search.label}", search.status, search.display)
                    self._save()
