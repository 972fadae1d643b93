"""Several ranks per point through torchrun (torch.distributed.run).

The parent starts torchrun (`python -m torch.distributed.run ... -m bench.child.worker`)
as the point's child: one rank per local device (--nproc-per-node), on one machine or
on several (--nnodes, --node-rank, --rdzv-endpoint: torchrun's own flags and its
static rendezvous, so node rank 0 holds global rank 0). On one machine nothing of the
point listens beyond loopback: torchrun runs as this module, whose stores listen on
127.0.0.1 only (torchrun's own bind every interface, --local-addr notwithstanding), and
gloo's and NCCL's sockets use `lo`. torchrun forks the ranks and closes every other
descriptor, so the ranks report over a loopback socket instead of the one-process pipe:
each connects, proves it was started by this parent (a random token in its
environment; a connection that does not, in HELLO_MAX bytes and HELLO_TIMEOUT_S, is
dropped without a word, and at most a few wait at once), then writes the same line
protocol. Rank 0 gathers every rank's figures and sends the point's response; the
others send their status only. Right after their process group forms, before any model
or parameter broadcast, the ranks prove to each other that they know the point's
secret (bench.parallel.ranks.authenticate): on one machine the parent's token, on several the
run's shared secret (BENCH_RDZV_TOKEN, set by the user on every machine and passed to
the ranks in their environment only).

A point fails the way its worst rank failed: out of memory on any rank makes it 'oom';
a rank that ended without reporting (killed, crashed) while measuring is named;
otherwise the first rank's error. The ranks torchrun stopped (SIGTERM) after one failed
say so, or, still setting up (joining the group), end at once without a word: neither
is taken for the cause. Nothing outlives the point: the parent holds the ranks' stdin as their
lifeline, each rank dies with torchrun (PR_SET_PDEATHSIG), and a timeout or Ctrl-C
stops torchrun, which stops its ranks. A point training to a target loss is stopped
gently instead: SIGINT to each rank, which ends its training after the next evaluation
and answers with the curve (bench.run.launchers.process.Stopped).
"""

from __future__ import annotations

import contextlib
import hmac
import io
import json
import os
import re
import secrets
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from bench.config.run_config import PointConfig
from bench.parallel.ranks import TOKEN_ENV, rdzv_token
from bench.result.response import Response, read_answer
from bench.run import compiler_cache, oomkill, stopping
from bench.run.launchers import process
from bench.run.launchers.process import CRASH_MARKS, OutputTail, read_protocol
from bench.run.runtime import ChildRuntime

Progress = Callable[[str, int, int], None]
STOP_GRACE_S = 10  # after SIGTERM, torchrun's time to stop its ranks before SIGKILL


def command(point: PointConfig) -> list[str]:
    """The torchrun command line of a point: its own flags. On one machine it runs as
    this module (torchrun whose stores listen on loopback only: `_serve_on_loopback`),
    with its c10d rendezvous at 127.0.0.1 on a port the store takes itself (0: no race
    for a free port), named by address (the host name does not resolve in a container
    without network, docker --network none; 'localhost' may resolve to ::1)."""
    if point.nnodes == 1:
        return [
            sys.executable, "-m", "bench.run.launchers.torchrun",
            f"--nproc-per-node={point.devices or 1}", "--nnodes=1", "--rdzv-backend=c10d",
            "--rdzv-endpoint=127.0.0.1:0", "--local-addr=127.0.0.1",
            "--max-restarts=0", "-m", "bench.child.worker",
        ]  # fmt: skip
    return [
        sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={point.devices or 1}",
        f"--nnodes={point.nnodes}", f"--node-rank={point.node_rank}",
        f"--rdzv-endpoint={point.rdzv_endpoint}", "--max-restarts=0", "-m", "bench.child.worker",
    ]  # fmt: skip


# One machine's ranks talk over loopback: gloo's and NCCL's sockets (RCCL's too) on `lo`,
# not on the interface the host name resolves to.
LOOPBACK_ENV = {"GLOO_SOCKET_IFNAME": "lo", "NCCL_SOCKET_IFNAME": "lo"}
_STORE_ARGS = ("world_size", "is_master", "timeout", "wait_for_workers", "multi_tenant",
               "master_listen_fd", "use_libuv")  # fmt: skip


def _serve_on_loopback() -> None:
    """Make every TCPStore this process serves listen on 127.0.0.1 alone. torchrun's
    stores (its c10d rendezvous and the store it shares with its ranks) bind every
    interface whatever --local-addr says: TCPStore binds the wildcard address, and only
    a socket handed to it (master_listen_fd) listens elsewhere."""
    import torch.distributed as dist
    from torch.distributed.elastic.rendezvous import c10d_rendezvous_backend

    class LoopbackStore(dist.TCPStore):
        def __init__(self, host_name: str, port: int, *args: Any, **kwargs: Any) -> None:
            kwargs.update(zip(_STORE_ARGS, args, strict=False))
            if not kwargs.get("is_master") or kwargs.get("master_listen_fd") is not None:
                super().__init__(host_name, port, **kwargs)
                return
            # libuv's store takes no listen fd before torch 2.8 or so (NotImplementedError:
            # bench:cuda12's 2.7.1); the legacy one does, and serves a point's few ranks.
            for use_libuv in (kwargs.pop("use_libuv", True), False):
                server = socket.create_server(("127.0.0.1", port))
                port, fd = server.getsockname()[1], server.detach()
                try:  # the store owns the socket once it is made
                    super().__init__(
                        host_name, port, master_listen_fd=fd, use_libuv=use_libuv, **kwargs
                    )
                    return
                except NotImplementedError:
                    os.close(fd)  # refused, still ours: the legacy store binds the port again
                    if not use_libuv:
                        raise

    dist.TCPStore = LoopbackStore  # type: ignore[misc]
    c10d_rendezvous_backend.TCPStore = LoopbackStore  # type: ignore[misc]


HELLO_MAX = 256  # bytes of a rank's hello line, at most
HELLO_TIMEOUT_S = 30.0  # a connection that has not said hello by then (in all) is closed
SPARE_CONNECTIONS = 4  # connections waiting for their hello, beyond one per local rank


class _RankStream(threading.Thread):
    """One rank's connection: 'hello TOKEN RANK LOCAL_RANK', progress lines, a response.
    Until its hello proves it a rank of this point, it holds one of the listener's
    pending slots and is read in bytes, at most HELLO_MAX, for HELLO_TIMEOUT_S in all."""

    def __init__(
        self, conn: socket.socket, token: bytes, on_progress: Progress, ranks: _Ranks,
        pending: threading.BoundedSemaphore,
    ) -> None:  # fmt: skip
        super().__init__(daemon=True)
        self.conn, self.token, self.on_progress, self.ranks = conn, token, on_progress, ranks
        self.pending = pending
        self.proven = False

    def run(self) -> None:
        try:
            with self.conn, self.conn.makefile("rb") as stream:
                said = self._hello(stream)
                self._release()
                if said is None:
                    return  # not a rank of this point: dropped without a word
                rank, local = said
                self.ranks.hello(local, rank)
                # Only local rank 0 sends progress (bench.child.worker.main_rank).
                read_protocol(
                    io.TextIOWrapper(stream, encoding="utf-8", errors="replace"),
                    self.on_progress,
                    lambda r: self.ranks.respond(local, r),
                    lambda: self.ranks.ready(local),
                )
        except OSError:  # a stranger's timeout or reset, or the listener closed it
            pass
        finally:
            self._release()

    def _hello_line(self, stream: Any) -> bytes:
        """The hello line, at most HELLO_MAX bytes in HELLO_TIMEOUT_S in all: each read
        gets only the time left, so a stranger dripping a byte at a time is closed on time.
        Peeked, and read up to the newline only: what follows stays in `stream`."""
        deadline = time.monotonic() + HELLO_TIMEOUT_S
        line = b""
        while len(line) < HELLO_MAX and not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0:
                return b""
            self.conn.settimeout(left)
            chunk = stream.peek(1)[: HELLO_MAX - len(line)]
            if not chunk:
                break  # closed before its hello
            line += stream.read(chunk.find(b"\n") + 1 or len(chunk))
        return line

    def _hello(self, stream: Any) -> tuple[int, int] | None:
        line = self._hello_line(stream)
        parts = line.split()
        if (
            not line.endswith(b"\n")
            or len(parts) != 4
            or parts[0] != b"hello"
            or not hmac.compare_digest(parts[1], self.token)
            or not all(p.isdigit() and len(p) <= 6 for p in parts[2:])
        ):
            return None
        self.conn.settimeout(None)  # a rank may be silent for as long as it measures
        self.proven = True
        return int(parts[2]), int(parts[3])

    def _release(self) -> None:
        if self.pending is not None:
            self.pending.release()
            self.pending = None  # type: ignore[assignment]

    def drop(self) -> None:
        """End a connection that never proved itself (the point is over)."""
        if not self.proven:
            with contextlib.suppress(OSError):
                self.conn.shutdown(socket.SHUT_RDWR)


class _Ranks:
    """What this machine's ranks said: global rank and response (each rank's own, read as
    it came: a Response), by local rank."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.global_rank: dict[int, int] = {}
        self.responses: dict[int, Response] = {}
        self.set_up: set[int] = set()  # said 'ready': in the group, about to measure

    def hello(self, local: int, rank: int) -> None:
        with self.lock:
            self.global_rank[local] = rank

    def ready(self, local: int) -> None:
        with self.lock:
            self.set_up.add(local)

    def respond(self, local: int, response: Response) -> None:
        with self.lock:
            self.responses[local] = response

    def name(self, local: int) -> str:
        rank = self.global_rank.get(local)
        return f"rank {rank}" if rank is not None else f"local rank {local} (never started)"


class _Listener(threading.Thread):
    """Accepts the ranks' connections on the report socket: at most `slots` waiting
    for their hello at once (one more is closed at once), and close() returns at once."""

    def __init__(
        self, server: socket.socket, token: str, on_progress: Progress, slots: int = 8
    ) -> None:
        super().__init__(daemon=True)
        self.server, self.token, self.on_progress = server, token.encode(), on_progress
        self.ranks = _Ranks()
        self.streams: list[_RankStream] = []
        self.pending = threading.BoundedSemaphore(slots)
        self.wake, self.woken = socket.socketpair()  # close(): a byte here ends run()

    def run(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self.server, selectors.EVENT_READ)
            selector.register(self.woken, selectors.EVENT_READ)
            while all(key.fileobj is self.server for key, _ in selector.select()):
                try:
                    conn, _ = self.server.accept()
                except OSError:
                    continue  # the peer gave up before it was accepted
                if not self.pending.acquire(blocking=False):
                    conn.close()  # more strangers than a point has ranks, and spares
                    continue
                stream = _RankStream(conn, self.token, self.on_progress, self.ranks, self.pending)
                self.streams.append(stream)
                stream.start()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.wake.send(b"x")
        self.join(timeout=5)
        self.server.close()
        self.wake.close()
        self.woken.close()
        for stream in self.streams:
            stream.drop()
        for stream in self.streams:
            stream.join(timeout=5)


def _stop(child: subprocess.Popen) -> None:
    """SIGTERM to torchrun (it stops its ranks), SIGKILL if it lingers."""
    with contextlib.suppress(ProcessLookupError):
        child.send_signal(signal.SIGTERM)
    try:
        child.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        child.wait()


def _children(pid: int) -> list[int]:
    """The processes `pid` started (torchrun's: its ranks), from /proc; none without it."""
    found = []
    with contextlib.suppress(OSError):
        for entry in os.listdir("/proc"):
            with contextlib.suppress(OSError, ValueError, IndexError):
                if entry.isdigit():
                    with open(f"/proc/{entry}/stat", "rb") as stat:
                        fields = stat.read().rpartition(b")")[2].split()
                    if int(fields[1]) == pid:
                        found.append(int(entry))
    return found


def _ask_ranks_to_stop(child: subprocess.Popen, ranks: _Ranks, point: PointConfig) -> bool:
    """SIGINT to each of this machine's ranks: they end their training after the next
    evaluation (the stop is reduced with its loss: every rank, of every machine, at the
    same step) and answer. Not through torchrun, whose signal to its ranks is SIGTERM, or
    the one it got, with a 30 s grace. Nothing is sent (False) before every rank is set
    up (a rank takes SIGINT as an error until then) or where its ranks cannot be found."""
    local = point.devices or 1
    with ranks.lock:
        ready = len(ranks.set_up) == local
    pids = _children(child.pid) if ready else []
    if len(pids) != local:
        return False
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGINT)
    return True


def spawn_ranks(
    point: PointConfig,
    job: str,
    on_progress: Progress,
    timeout_s: float | None = None,
    runtime: ChildRuntime | None = None,
) -> Response:
    """Run one point over torchrun's ranks and return the point's response; `runtime`:
    the environment and command prefix of torchrun and its ranks (bench.run.runtime)."""
    runtime = runtime or ChildRuntime(dict(os.environ))
    if point.nnodes > 1:  # the ranks prove they know it (bench.parallel.ranks.authenticate)
        rdzv_token(runtime.env, point.nnodes)
    server = socket.create_server(("127.0.0.1", 0))
    token = secrets.token_hex(16)
    listener = _Listener(server, token, on_progress, (point.devices or 1) + SPARE_CONNECTIONS)
    listener.start()
    child_env = compiler_cache.child_env(runtime.env)  # caches only the user can write
    env = {
        **{k: v for k, v in child_env.items() if k != TOKEN_ENV or point.nnodes > 1},
        "BENCH_REQUEST": json.dumps({"point": point.to_dict(), "job": job}),
        "BENCH_REPORT_ADDR": f"127.0.0.1:{server.getsockname()[1]}",
        "BENCH_REPORT_TOKEN": token,
        "BENCH_PARENT_PID": str(os.getpid()),  # the root of bench's processes (busy tracker)
        **(LOOPBACK_ENV if point.nnodes == 1 else {}),
    }
    env.pop("BENCH_REPORT_FD", None)
    oom_kills = oomkill.count()
    started, interrupt, child = time.monotonic(), None, None
    try:
        with stopping.deferred():  # a stop while it starts comes once `child` is set
            child = subprocess.Popen(
                [*runtime.prefix, *command(point)],
                stdin=subprocess.PIPE,  # never written: the ranks' lifeline (end-of-file)
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                env=env,
                start_new_session=True,  # a group of its own: a lingering torchrun dies whole
            )
            output = OutputTail(child.stdout, lines=80)  # type: ignore[arg-type]
            output.start()
        code = child.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _stop(child)  # type: ignore[arg-type]
        output.join(timeout=5)
        timed_out = f"timed out after {timeout_s:g} s; torchrun said:\n{output.text()}"
        return read_answer({"status": "error", "error": timed_out, "devices": point.ranks})
    except BaseException as stop:  # Ctrl-C, SIGTERM: stop the ranks before giving up the point
        if child is None:  # it never started
            raise
        if not (
            isinstance(stop, KeyboardInterrupt)
            and process.answers_a_stop(point, job)
            and _ask_ranks_to_stop(child, listener.ranks, point)
        ):
            _stop(child)
            raise
        interrupt = stop  # the ranks end their training with what they measured
        if process.wait_for_answer(child, process.grace_s(started, timeout_s)) is None:
            _stop(child)
        code = child.wait()
    finally:
        listener.close()
        if child is not None:
            with contextlib.suppress(OSError):
                child.stdin.close()  # type: ignore[union-attr]
            output.join(timeout=5)
    killer = oomkill.evidence(oom_kills, oomkill.count())
    response = outcome(point, code, listener.ranks, output.text(), killer)
    if interrupt is not None:
        raise process.stopped(interrupt, response)
    return response


# torchrun's summary of a rank that failed: its global rank, then its exit code (a
# signal's number negated) (torch.distributed.elastic.multiprocessing.errors).
_FAILURE = re.compile(r"rank\s*:\s*(\d+) \(local_rank: \d+\)\s*\n\s*exitcode\s*:\s*(-?\d+)")
LAST_WORDS = 12  # lines of torchrun's output a point's error keeps, before its summary


def _why_ended(output: str) -> dict[int, str]:
    """'killed by SIGKILL' or 'exited with status 1' by global rank, as torchrun's summary
    of its failed ranks says."""
    found = {}
    for rank, code in _FAILURE.findall(output):
        number = int(code)
        if number >= 0:
            found[int(rank)] = f"exited with status {number}"
            continue
        try:
            found[int(rank)] = f"killed by {signal.Signals(-number).name}"
        except ValueError:
            found[int(rank)] = f"killed by signal {-number}"
    return found


def _last_words(output: str) -> str:
    """The output's last lines before torchrun's own traceback and summary of the failures
    (which the first line says), at most LAST_WORDS, each cut at 300 characters: not the
    whole stderr."""
    lines = output.splitlines()
    summary = next((i for i, line in enumerate(lines) if "ChildFailedError" in line), None)
    if summary is not None:  # torchrun's own traceback, which ends in its summary
        summary = max((i for i, line in enumerate(lines[:summary]) if line.startswith("Traceback")),
                      default=summary)  # fmt: skip
    kept = [line for line in lines[:summary] if line.strip()][-LAST_WORDS:]
    return "\n".join(line if len(line) <= 300 else line[:300] + "..." for line in kept)


def outcome(
    point: PointConfig, code: int, ranks: _Ranks, output: str, oom_killer: str | None = None
) -> Response:
    """The point's response from what each rank of this machine said, and torchrun's
    status. Out of memory on any rank is the point's status, whatever the others said:
    a rank's own report, or for a rank that ended without one, evidence (`oom_killer`:
    a kernel OOM-kill counter that rose while the ranks ran, bench.run.oomkill; under
    --memory-limit, a crash or dying words in torchrun's output)."""
    local = range(point.devices or 1)
    said = {i: ranks.responses[i] for i in local if i in ranks.responses}
    failed = {i: r for i, r in said.items() if not r.ok and not r.stopped}
    stopped = [i for i, r in said.items() if r.stopped]
    silent = [i for i in local if i not in said]
    # A rank that ended silent before it was set up was stopped there (it takes SIGTERM
    # at once until then: bench.child.worker.main_rank) or died there; one that ended
    # silent while measuring died, or never started: the cause, before its peers' errors.
    cause = [i for i in silent if i in ranks.set_up or i not in ranks.global_rank]

    def answer(status: str, error: str, rank: Response | None = None) -> Response:
        # The point's devices, and no provenance, unless the rank said otherwise.
        fields = rank.to_json() if rank is not None else {}
        base = {"devices": point.ranks, "environment": None}
        return read_answer({**base, **fields, "status": status, "error": error})

    oom = next((i for i, r in failed.items() if r.status == "oom"), None)
    if oom is not None:
        return answer("oom", f"{ranks.name(oom)}: {failed[oom].error}", failed[oom])
    if silent:
        names = ", ".join(ranks.name(i) for i in silent)
        if oom_killer:
            return answer("oom", f"{names} ended without a result while the kernel's "
                          f"out-of-memory killer killed ({oom_killer})")  # fmt: skip
        # A rank that died of a failed allocation outside PyTorch's allocator, as
        # torchrun reports it: under --memory-limit the cap, as for one process.
        crash = point.memory_limit_bytes and any(mark in output for mark in CRASH_MARKS)
        if crash:
            return answer("oom", f"{names} crashed under --memory-limit "
                          f"{point.memory_limit_bytes} B: an allocation failed outside "
                          "PyTorch's allocator")  # fmt: skip
    if cause or (silent and not failed):
        ended = cause or silent
        names = ", ".join(ranks.name(i) for i in ended)
        why = _why_ended(output)
        said_why = [
            (ranks.name(i), why[r]) for i in ended if (r := ranks.global_rank.get(i)) in why
        ]
        how = ", ".join(f"{name} {what}" if len(ended) > 1 else what for name, what in said_why)
        line = f"{names} ended without a result{': ' + how if how else ''}"
        words = _last_words(output)
        words = f"\ntorchrun's output before its summary:\n{words}" if words else ""
        return answer("error", f"{line} (torchrun exited with status {code}){words}")
    if failed:
        first = min(failed, key=lambda i: ranks.global_rank.get(i, i))
        return answer(failed[first].status, f"{ranks.name(first)}: {failed[first].error}",
                      failed[first])  # fmt: skip
    if stopped:  # the one that failed was on another machine
        names = ", ".join(ranks.name(i) for i in stopped)
        return answer("error", f"{names} stopped by torchrun after a rank of another "
                      "machine ended; its own output says why")  # fmt: skip
    if code != 0:
        return answer("error", f"torchrun exited with status {code} after every rank "
                      f"reported:\n{output}")  # fmt: skip
    lead = min(said, key=lambda i: ranks.global_rank.get(i, i))
    return said[lead]


if __name__ == "__main__":  # torchrun for one machine's point: its stores on loopback
    _serve_on_loopback()
    from torch.distributed.run import main

    main(sys.argv[1:])
