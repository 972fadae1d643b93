"""The child process: measures one point and reports one JSON response (what it
measures, and how: bench.child.measure).

    python -m bench.child.worker   < REQUEST    (BENCH_REPORT_FD=N: a pipe to the parent)

REQUEST is {"point": PointConfig as a dict, "job": "measure", "count_flops" or
"probe"}. On the pipe the child writes 'progress PHASE DONE TOTAL' lines, then one
'response JSON' line. Pipes, not files: bench needs no writable /tmp (read-only
containers). A probing child (job 'probe', bench.run.launchers.probing) measures its point
as 'measure' does, answers, frees what the probe held (also after an out-of-memory
error) and reads its next request, a line on stdin, until stdin ends; an error that
is not memory ends it.

As one of torchrun's ranks (bench.run.launchers.torchrun) the request comes in
BENCH_REQUEST and the same lines go over a loopback socket (BENCH_REPORT_ADDR), with
'ready' once the rank is set up (until then torchrun's SIGTERM ends it at once); every
rank trains its share of the global batch, and rank 0 gathers the others' figures (as
JSON, never a pickle). Right after its process group forms every rank proves that it
knows the point's secret (on several machines the run's BENCH_RDZV_TOKEN, taken out of
the environment at once; on one, the parent's token of this point), and stops with one
line when a peer cannot.

A fresh process per point (and per repeat) means an out-of-memory error or a crash
cannot poison the next point, and every point starts from the same state (a probing
child's answer is confirmed in one: bench.run.runner). Failures
come back as a status and message (with the traceback), never as a lost result.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import os
import queue
import signal
import socket
import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from bench import registry
from bench.child.measure import Progress, measure, no_progress
from bench.config.bounds import MAX_TEXT
from bench.config.run_config import PointConfig
from bench.frameworks.base import Session
from bench.parallel.ranks import TOKEN_ENV, Rank, Secret, current, hold, merge, share
from bench.platforms.base import Platform
from bench.result import mfu
from bench.result.response import Response
from bench.run import provenance
from bench.trackers.energy import open_sources
from bench.util.errors import BenchError

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
EXIT_ORPHANED = 128 + signal.SIGHUP  # as if the parent had hung up


class ParentPipe:
    """The line protocol to the parent: an inherited pipe, or a rank's socket."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def progress(self, phase: str, done: int, total: int) -> None:
        # If the parent stopped listening, measuring goes on regardless.
        with contextlib.suppress(OSError):
            self.stream.write(f"progress {phase} {done} {total}\n")

    def ready(self) -> None:
        """Set up: what ends this rank from now on is its own failure, or a stop."""
        with contextlib.suppress(OSError):
            self.stream.write("ready\n")
            self.stream.flush()

    def respond(self, response: Response) -> None:
        self.stream.write("response " + json.dumps(response.to_json()) + "\n")
        self.stream.flush()

    def died(self, code: int) -> None:
        """A probe's fork ended without its answer, with exit status `code`."""
        self.stream.write(f"died {code}\n")
        self.stream.flush()


# Under --memory-limit on a CPU: oneDNN reports a scratchpad it could not allocate as a
# primitive it could not create (seen at the cap's edge), and a thread whose stack the
# cap could not map fails with EAGAIN (gloo's, as a rank joins its process group).
_CAPPED_ALLOCATION_FAILURES = ("could not create a primitive", "Resource temporarily unavailable")


def run_point(
    request: dict[str, Any],
    progress: Progress = no_progress,
    rank: Rank | None = None,
    on_ready: Callable[[], None] = lambda: None,
    describe: bool = True,
) -> Response:
    """Everything the child does for one request, failures included. As a rank, each
    machine's local rank 0 speaks for the machine (provenance, power, energy) and rank
    0 answers for the point with every rank's figures. Every rank proves it knows the
    point's secret (bench.parallel.ranks.hold) as its group forms, and a rank that meets one that
    cannot stops before training. `on_ready`: called once the session is set up (as a
    rank: in its process group, proven), before anything is measured. `describe`: with
    the provenance (a probing child's first probe only: the parent keeps the first)."""
    answer = Response(status="error")
    framework = session = None
    speaks = rank is None or rank.leads_node
    try:
        point = PointConfig.from_dict(request["point"])
        platform = registry.platform(point.device)
        framework = registry.framework(point.framework)
        reason = framework.unavailable_reason(platform) or framework.precision_unsupported(
            platform, point.precision
        )
        if reason:
            raise BenchError(reason)
        progress("setup", 0, 1)
        # The machine as the run has it, read before the framework starts its threads:
        # GNU OpenMP bound close (OMP_PROC_BIND=CLOSE) pins this thread to one core.
        run_cores = provenance.affinity_cores()
        framework.configure(platform)
        if rank is not None:  # this rank's device, or its own CPU cores
            answer = replace(answer, binding=platform.bind_rank(rank.local_rank,
                                                                rank.local_world_size))  # fmt: skip
        # Imports the framework, without opening the device (the cap below must come
        # after the imports, which need memory of their own, and before the device opens):
        # on every rank, so that a rank that does not speak for its machine does not
        # import the framework under the cap and die of it without a word.
        if speaks and describe:
            answer = replace(answer, environment=provenance.collect(framework, platform, run_cores))
        else:
            framework.versions()
        if point.memory_limit_bytes:
            framework.limit_memory(platform, point.memory_limit_bytes)
        if request.get("job") != "count_flops" and speaks:
            # Before this child puts any work on the device: the floor for the check
            # that the measured mean power is plausible.
            answer = replace(answer, power_before=platform.power_readings() or None)
        session = framework.prepare(point, platform)  # a rank proves itself there
        on_ready()
        answer = replace(
            answer, parameters=session.parameters, devices=session.devices, details=session.details
        )
        if request.get("job") == "count_flops":
            # A child of its own: the measured process does only what training does.
            answer = replace(answer, flops_per_sample=session.count_flops())
        else:
            answer = _measured(answer, point, session, platform, rank, progress, speaks)
        answer = replace(answer, status="ok")
    except BenchError as error:
        answer = replace(answer, error=str(error))
    except Exception as error:
        # A MemoryError first: asking the framework may import, which the cap can fail.
        oom = isinstance(error, MemoryError) or (
            framework is not None and framework.is_out_of_memory(error)
        )
        capped = bool((request.get("point") or {}).get("memory_limit_bytes"))
        oom = oom or (capped and any(m in str(error) for m in _CAPPED_ALLOCATION_FAILURES))
        first_line = (str(error).strip().splitlines() or [""])[0][:500]
        answer = replace(
            answer,
            status="oom" if oom else "error",
            error=f"{type(error).__name__}: {first_line}",
            traceback=traceback.format_exc()[-MAX_TEXT:],
        )
    finally:
        if session is not None:
            session.close()
    return answer


def _measured(
    answer: Response,
    point: PointConfig,
    session: Session,
    platform: Platform,
    rank: Rank | None,
    progress: Progress,
    speaks: bool,
) -> Response:
    """`answer` with the point measured; as a rank, rank 0's with every rank's figures
    (bench.parallel.ranks.merge), another rank's with its own rank only."""
    sources, reason = open_sources(platform) if speaks else ([], "read by local rank 0")
    try:
        fields = measure(
            point, session, platform, progress=progress, energy_sources=(sources, reason)
        )
    finally:
        for source in sources:
            source.close()
    answer = answer.with_json(fields)
    # A workload's own account of its steps (mixtures of experts: tokens per expert,
    # dropped tokens, the all-to-all), summed over ranks by a collective every rank
    # joins, before they gather.
    moe = session.moe_report(list(answer.step_times_s))
    if moe is not None:
        answer = replace(answer, details={**answer.details, "moe": moe})
    if rank is not None:
        shares = session.gather(share(answer, rank, socket.gethostname()))
        if rank.rank != 0:
            return Response(status="ok", rank=rank.rank, devices=rank.world_size)
        answer = merge(shares, answer)
    # Rank 0's steps are the global pace.
    utilisation = mfu.record(
        point, list(answer.step_times_s), answer.environment, devices=session.devices
    )
    if utilisation is not None:
        answer = replace(answer, details={**answer.details, "mfu": utilisation})
    return answer


def serve_probes(request: dict[str, Any], parent: ParentPipe, requests: queue.Queue[str]) -> None:
    """A probing child: each request's probe measured and answered in turn, the next
    request read from `requests` (stdin's lines; its end ends the process:
    die_with_parent); an error that is not memory ends the probes (the parent's search
    stops there, as after a fresh child's). Where the platform forks each probe
    (Platform.probes_fork) this process imports the framework once and each probe runs
    in a fork of it (probe_in_fork); elsewhere in this process, what the last held freed
    between them (free_memory), an out-of-memory probe's included."""
    point = PointConfig.from_dict(request["point"])
    platform = registry.platform(point.device)
    if platform.probes_fork:  # imported here, before any fork; nothing run
        framework = registry.framework(point.framework)
        framework.configure(platform)
        framework.versions()
    first = True
    while True:
        if platform.probes_fork:
            status = probe_in_fork(request, parent, describe=first)
        else:
            response = run_point(request, parent.progress, describe=first)
            parent.respond(response)
            status = response.status
            if status != "error":
                free_memory(request)
        if status == "error":
            return
        first = False
        request = json.loads(requests.get())


_FORK_ANSWERED = {0: "ok", 2: "error"}  # a probe's fork: it answered (and how it went on)


def probe_in_fork(request: dict[str, Any], parent: ParentPipe, describe: bool) -> str:
    """One probe in a fork of this process: from the memory it had before any probe,
    as a fresh child's. The fork answers on the pipe; one that ends without an answer
    (a crash: an allocation under --memory-limit that failed outside the framework's
    allocator) is said with its exit status ('died CODE'), for the parent to judge as a
    fresh child's crash. 'error' where the probes end, else 'ok'."""
    pid = os.fork()
    if pid == 0:  # the fork: dies with this process, answers, and leaves at once
        code = 1
        try:
            _die_with_parent()
            response = run_point(request, parent.progress, describe=describe)
            parent.respond(response)
            code = 2 if response.status == "error" else 0
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    if code in _FORK_ANSWERED:
        return _FORK_ANSWERED[code]
    parent.died(code)
    return "ok"


def free_memory(request: dict[str, Any]) -> None:
    """What a finished probe held, freed: its session and tensors (garbage, cycles too),
    the allocator's cache (Platform.release_memory) and the peak counter, so that the
    next probe's peak is its own."""
    gc.collect()
    platform = registry.platform(PointConfig.from_dict(request["point"]).device)
    platform.release_memory()
    platform.reset_peak_memory()


def _die_with_parent() -> None:
    """Linux: SIGKILL from the kernel when the parent dies (PR_SET_PDEATHSIG; a fork
    does not inherit it)."""
    if sys.platform == "linux":
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def die_with_parent(parent_pid: int, requests: queue.Queue[str] | None = None) -> None:
    """Never outlive the parent, even one killed by SIGKILL. Linux: the kernel sends
    SIGKILL when the parent dies (PR_SET_PDEATHSIG). Everywhere: the parent holds our
    stdin open while it lives, so a thread blocked reading it sees end-of-file when the
    parent is gone, however it died (or, for a probing child, done with it). The lines
    the parent writes there meanwhile go to `requests` (a probing child's next probes)."""
    _die_with_parent()
    if os.getppid() != parent_pid:  # it died before the line above took effect
        os._exit(EXIT_ORPHANED)

    def watch() -> None:
        # The raw descriptor, not sys.stdin: a thread blocked inside sys.stdin holds its
        # lock, and forked DataLoader workers, which close sys.stdin, would wait forever.
        pending = b""
        while chunk := os.read(0, 4096):
            if requests is not None:
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    requests.put(line.decode())
        os._exit(EXIT_ORPHANED)  # end-of-file: the parent closed it, or died

    threading.Thread(target=watch, name="parent-lifeline", daemon=True).start()


class _Stopped(BaseException):
    """SIGTERM in a rank: not an error of its own (BaseException: passes `except Exception`)."""


def main_rank(address: str) -> int:
    """One of torchrun's ranks: the request from the environment, lines to a socket.
    A rank that fails exits non-zero, so torchrun stops the others at once (they would
    wait in a collective otherwise)."""
    rank = current()
    if rank is None:
        raise SystemExit("bench.child.worker: BENCH_REPORT_ADDR is set but torchrun's RANK is not")
    request = json.loads(os.environ["BENCH_REQUEST"])
    # Out of the environment at once: nothing this rank starts (input workers, a
    # compiler's) inherits the run's secret. On one machine the ranks prove they are this
    # point's with the parent's token instead (the store is this machine's loopback).
    token = os.environ.pop(TOKEN_ENV, None)
    report_token = os.environ.pop("BENCH_REPORT_TOKEN", "")
    several = int((request.get("point") or {}).get("nnodes") or 1) > 1
    hold(Secret(token, TOKEN_ENV) if several else Secret(report_token, "BENCH_REPORT_TOKEN"))
    die_with_parent(os.getppid())  # torchrun; the parent holds our stdin as a lifeline
    host, _, port = address.rpartition(":")
    connection = socket.create_connection((host, int(port)))
    # A line-buffered file on the socket's descriptor (socket.makefile has no line
    # buffering: a rank's hello would wait in its buffer).
    parent = ParentPipe(os.fdopen(connection.detach(), "w", buffering=1, encoding="utf-8"))
    parent.stream.write(f"hello {report_token} {rank.rank} {rank.local_rank}\n")

    def stopped(signum: int, frame: Any) -> None:
        raise _Stopped

    def ready() -> None:
        # torchrun stops the other ranks with SIGTERM when one fails: from here each
        # says so, and the parent can tell the rank that failed from the ones it stopped.
        signal.signal(signal.SIGTERM, stopped)
        parent.ready()

    # Until then SIGTERM ends the rank at once (its default): joining the process group
    # blocks in C++ holding the GIL (gloo connecting to a peer that is gone), where no
    # Python handler runs, and torchrun would wait 30 s before its SIGKILL. The parent
    # knows a rank that ends before it is ready was stopped in its set-up, or died there.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        response = run_point(
            request,
            parent.progress if rank.local_rank == 0 else no_progress,
            rank,
            on_ready=ready,
        )
    except _Stopped:
        stop = "stopped by torchrun (SIGTERM), after another rank ended"
        response = Response(status="error", stopped=True, error=stop)
    with contextlib.suppress(OSError):
        parent.respond(response)
    # Out now, past the interpreter's teardown: threads that torch.distributed leaves
    # behind can abort it there ('terminate called without an active exception', seen
    # in 2 of 6 two-rank runs in a container), which would fail a point already reported.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0 if response.ok else 1)


def main() -> int:
    address = os.environ.get("BENCH_REPORT_ADDR")
    if address:
        return main_rank(address)
    fd = os.environ.get("BENCH_REPORT_FD")
    if fd is None:  # run by hand: the request is all of stdin, the response goes to stdout
        print(json.dumps(run_point(json.loads(sys.stdin.read())).to_json()))
        return 0
    request = json.loads(sys.stdin.readline())
    requests: queue.Queue[str] = queue.Queue()
    probing = request.get("job") == "probe"
    die_with_parent(int(os.environ.get("BENCH_PARENT_PID", os.getppid())),
                    requests if probing else None)  # fmt: skip
    parent = ParentPipe(os.fdopen(int(fd), "w", buffering=1))
    if probing:
        serve_probes(request, parent, requests)
    else:
        parent.respond(run_point(request, parent.progress))
    return 0


if __name__ == "__main__":
    sys.exit(main())
