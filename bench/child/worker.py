"""The child process: measures one point and reports one JSON response.

    python -m bench.child.worker   < REQUEST    (BENCH_REPORT_FD=N: a pipe to the parent)

REQUEST is {"point": PointConfig as a dict, "task": "measure" or "count_flops"}. On
the pipe the child writes 'progress PHASE DONE TOTAL' lines, then one 'response JSON'
line. Pipes, not files: bench needs no writable /tmp (read-only containers).

As one of torchrun's ranks (bench.launchers.torchrun) the request comes in
BENCH_REQUEST and the same lines go over a loopback socket (BENCH_REPORT_ADDR), with
'ready' once the rank is set up (until then torchrun's SIGTERM ends it at once); every
rank trains its share of the global batch, and rank 0 gathers the others' figures (as
JSON, never a pickle). Right after its process group forms every rank proves that it
knows the point's secret (on several machines the run's BENCH_RDZV_TOKEN, taken out of
the environment at once; on one, the parent's token of this point), and stops with one
line when a peer cannot.

A fresh process per point (and per repeat) means an out-of-memory error or a crash
cannot poison the next point, and every point starts from the same state. Failures
come back as a status and message (with the traceback), never as a lost result.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import replace
from typing import Any

from bench import mfu, provenance, registry
from bench.config import PointConfig
from bench.datasets import loss_target
from bench.errors import BenchError
from bench.frameworks.base import Session
from bench.platforms.base import Platform
from bench.ranks import TOKEN_ENV, Rank, Secret, current, hold, merge, share
from bench.result.checks import MAX_TEXT
from bench.result.response import Response
from bench.trackers.busy import BusyTracker
from bench.trackers.energy import EnergySource, EnergyTracker, open_sources
from bench.trackers.memory import MemoryTracker
from bench.trackers.timing import StepTimer

Progress = Callable[[str, int, int], None]
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
EXIT_ORPHANED = 128 + signal.SIGHUP  # as if the parent had hung up
PROGRESS_PERIOD_S = 0.1  # a progress line at most this often (a display's refresh)


def _no_progress(phase: str, done: int, total: int) -> None:
    pass


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


def run_steps(
    session: Session, timer: StepTimer, count: int, phase: str, progress: Progress
) -> tuple[list[float], list[Any]]:
    """Time `count` steps. The progress write never falls inside a timed interval with
    the host clock; with device events it overlaps the device's work, as a log line in
    a training loop does. At most one every PROGRESS_PERIOD_S, and the last: each line
    wakes the parent, whose work takes a core from a model training on every core
    (a straggler thread slows each of its parallel operations)."""
    last = -PROGRESS_PERIOD_S

    def after(i: int) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last >= PROGRESS_PERIOD_S or i + 1 == count:
            last = now
            progress(phase, i + 1, count)

    return timer.steps(session.step, count, after)


def measure(
    point: PointConfig,
    session: Session,
    platform: Platform,
    *,
    clock: Callable[[], float] = time.perf_counter,
    progress: Progress = _no_progress,
    energy_sources: tuple[list[EnergySource], str | None] = ([], "not measured"),
) -> dict[str, Any]:
    """Warm-up steps, then measured steps (or epochs), with trackers around them:
    memory over everything, energy over the measured window only."""
    timer = session.timer(clock)
    record: dict[str, Any] = {
        "epoch_times_s": None,
        "details": {**session.details, "step_clock": timer.kind},
    }
    units = point.spec.units_per_sample(point.seq_len)
    if units:
        record["details"]["per_sample"] = {"unit": units[0], "count": units[1]}
    sources, unavailable = energy_sources
    energy = EnergyTracker(sources, session.synchronize, unavailable, clock)
    # bench's own processes: the parent and everything under it (ranks, workers).
    root = int(os.environ.get("BENCH_PARENT_PID", os.getpid()))
    busy = BusyTracker(root, platform.throttle_reasons)
    with ExitStack() as trackers:
        memory = trackers.enter_context(MemoryTracker(session))
        warmup, losses = run_steps(session, timer, point.warmup_steps, "warmup", progress)
        first_loss = losses[0] if losses else None
        trackers.enter_context(busy)
        trackers.enter_context(energy)
        if point.dataset is not None:
            steps, losses = train_to_accuracy(point, session, timer, energy, progress, record)
        elif point.train_to_loss is not None:
            steps, losses = train_to_loss(point, session, timer, energy, progress, record)
        elif point.epochs is None:
            steps, losses = run_steps(session, timer, point.steps, "measure", progress)
        else:
            steps, losses, epochs = [], [], []
            per_epoch = point.steps_per_epoch or 0  # set whenever epochs is
            for epoch in range(point.epochs):
                start = timer.now()
                phase = f"epoch{epoch + 1}/{point.epochs}"
                times, epoch_losses = run_steps(session, timer, per_epoch, phase, progress)
                epochs.append(timer.now() - start)
                energy.lap()
                steps += times
                losses += epoch_losses
            record["epoch_times_s"] = epochs
    if point.dataset is not None:  # outside the trackers' window: not part of the training
        record["synthetic_step_times_s"] = synthetic_reference(session, timer, progress)
    record.update(memory.fields())
    record.update(energy.fields())
    record.update(busy.fields())
    if first_loss is None and losses:
        first_loss = losses[0]
    record.update(
        warmup_times_s=warmup,
        step_times_s=steps,
        # Read only now: a loss value forces a device sync, which must not fall in a step.
        loss_first=session.loss_value(first_loss) if first_loss is not None else None,
        loss_last=session.loss_value(losses[-1]) if losses else None,
    )
    return record


def _train_epoch(
    session: Session, timer: StepTimer, epoch: int, count: int, waits: list[float],
    phase: str, progress: Progress,
) -> tuple[list[float], list[Any]]:  # fmt: skip
    """One epoch's timed steps; each step's wait for its batch goes to `waits`."""
    batches = iter(session.train_batches(epoch))

    def step() -> Any:
        asked = timer.clock()
        batch = next(batches)
        waits.append(timer.clock() - asked)
        return session.train_on(batch)

    # Every step's loss: the epoch's mean is in the accuracy curve.
    return timer.steps(step, count, lambda i: progress(phase, i + 1, count), keep_all=True)


def train_to_accuracy(
    point: PointConfig,
    session: Session,
    timer: StepTimer,
    energy: EnergyTracker,
    progress: Progress,
    record: dict[str, Any],
) -> tuple[list[float], list[Any]]:
    """Whole epochs over the dataset through the framework's input pipeline, top-1 on
    the validation split after each, until --train-to is reached or the epochs run
    out. Each step's time includes waiting for its batch; the wait is also kept apart
    (input_wait_s), so a device starved by its input pipeline shows. An epoch's energy
    includes its evaluation."""
    plan = session.training
    per_epoch = plan.steps_per_epoch
    steps: list[float] = []
    losses: list[Any] = []
    waits: list[float] = []
    epochs: list[float] = []
    curve: list[dict[str, Any]] = []
    for epoch in range(point.epochs or 0):
        start = timer.now()
        times, epoch_losses = _train_epoch(
            session, timer, epoch, per_epoch, waits, f"epoch{epoch + 1}/{point.epochs}", progress
        )
        train_s = timer.now() - start
        epochs.append(train_s)
        progress("evaluate", 0, 1)
        correct, seen = session.evaluate()
        eval_s = timer.now() - start - train_s
        energy.lap()
        steps += times
        losses += epoch_losses
        values = [session.loss_value(h) for h in epoch_losses]
        curve.append({
            "epoch": epoch + 1, "top1": correct / seen, "correct": correct, "samples": seen,
            "train_s": train_s, "eval_s": eval_s,
            "loss_mean": sum(values) / len(values) if values else None,
        })  # fmt: skip
        if point.train_to is not None and correct / seen >= point.train_to:
            break
    record["epoch_times_s"] = epochs
    record["input_wait_s"] = waits
    record["accuracy"] = {
        "metric": "top1", "target": point.train_to, "seed": point.seed, "epochs": curve,
    }  # fmt: skip
    record["details"].update(plan.details())
    return steps, losses


def train_to_loss(
    point: PointConfig,
    session: Session,
    timer: StepTimer,
    energy: EnergyTracker,
    progress: Progress,
    record: dict[str, Any],
) -> tuple[list[float], list[Any]]:
    """Steps over the token file in the recipe's schedule, the validation loss every
    `eval_every_steps` (bench.datasets.loss_target), until it is at most the target or
    the token budget ends. Training and evaluation are timed apart; both count toward
    the time to the target, and each interval's energy (an energy lap) holds its
    evaluation. SIGINT (and SIGTERM in a single process: a rank's ends it, as torchrun
    stops ranks) ends the training after the next evaluation with what was measured."""
    target = loss_target.evaluator(point, session)
    plan = target.plan
    steps: list[float] = []
    losses: list[Any] = []
    curve: list[dict[str, Any]] = []
    stopped: str | None = None
    done = 0
    signals = (signal.SIGINT,) if session.devices > 1 else (signal.SIGINT, signal.SIGTERM)
    try:
        with loss_target.stop_requests(signals) as asked:
            while done < plan.budget_steps:
                count = min(plan.eval_every_steps, plan.budget_steps - done)
                start = timer.now()

                def overall(phase: str, i: int, n: int, base: int = done) -> None:
                    progress("train", base + i, plan.budget_steps)

                times, chunk = run_steps(session, timer, count, "train", overall)
                train_s = timer.now() - start
                progress("evaluate", 0, 1)
                result = target.evaluate(bool(asked))
                eval_s = timer.now() - start - train_s
                energy.lap()
                done += count
                steps += times
                losses += chunk
                curve.append({
                    "step": done, "tokens": done * plan.tokens_per_step,
                    "sequences": done * point.batch_size, "loss": result.loss,
                    "train_s": train_s, "eval_s": eval_s,
                    "train_loss": session.loss_value(chunk[-1]) if chunk else None,
                })  # fmt: skip
                if result.stop:
                    stopped = asked[0] if asked else "another rank's SIGINT"
                if result.loss <= plan.target or result.stop:
                    break
        val = target.val.describe(hashed=target.rank == 0)  # hashed once, by rank 0
    finally:
        target.val.close()
    record["loss"] = {
        "metric": "val_loss", "unit": "nats/token", **plan.describe(), "curve": curve,
        "stopped": stopped, "val": val, "seed": point.seed,
    }  # fmt: skip
    record["details"]["recipe"] = record["loss"]["recipe"]
    return steps, losses


def synthetic_reference(session: Session, timer: StepTimer, progress: Progress) -> list[float]:
    """After training on the dataset: the same model, optimizer and batch shape on one
    synthetic batch already on the device, 5 warm-up steps then 20 timed. Beside the
    real data's throughput, the ratio is what the input pipeline and the host cost."""
    batch = session.synthetic_batch()
    timer.steps(lambda: session.train_on(batch), 5, lambda i: progress("synthetic", i + 1, 25))
    times, _ = timer.steps(
        lambda: session.train_on(batch), 20, lambda i: progress("synthetic", i + 6, 25)
    )
    return times


# Under --memory-limit on a CPU: oneDNN reports a scratchpad it could not allocate as a
# primitive it could not create (seen at the cap's edge), and a thread whose stack the
# cap could not map fails with EAGAIN (gloo's, as a rank joins its process group).
_CAPPED_ALLOCATION_FAILURES = ("could not create a primitive", "Resource temporarily unavailable")


def run_point(
    request: dict[str, Any],
    progress: Progress = _no_progress,
    rank: Rank | None = None,
    on_ready: Callable[[], None] = lambda: None,
) -> Response:
    """Everything the child does for one request, failures included. As a rank, each
    machine's local rank 0 speaks for the machine (provenance, power, energy) and rank
    0 answers for the point with every rank's figures. Every rank proves it knows the
    point's secret (bench.ranks.hold) as its group forms, and a rank that meets one that
    cannot stops before training. `on_ready`: called once the session is set up (as a
    rank: in its process group, proven), before anything is measured."""
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
        framework.configure(platform)
        run_cores = provenance.affinity_cores()  # the machine as the run has it
        if rank is not None:  # this rank's device, or its own CPU cores
            answer = replace(answer, binding=platform.bind_rank(rank.local_rank,
                                                                rank.local_world_size))  # fmt: skip
        # Imports the framework, without opening the device (the cap below must come
        # after the imports, which need memory of their own, and before the device opens):
        # on every rank, so that a rank that does not speak for its machine does not
        # import the framework under the cap and die of it without a word.
        if speaks:
            answer = replace(answer, environment=provenance.collect(framework, platform, run_cores))
        else:
            framework.versions()
        if point.memory_limit_bytes:
            framework.limit_memory(platform, point.memory_limit_bytes)
        if request.get("task") != "count_flops" and speaks:
            # Before this child puts any work on the device: the floor for the check
            # that the measured mean power is plausible.
            answer = replace(answer, power_before=platform.power_readings() or None)
        session = framework.prepare(point, platform)  # a rank proves itself there
        on_ready()
        answer = replace(
            answer, parameters=session.parameters, devices=session.devices, details=session.details
        )
        if request.get("task") == "count_flops":
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
    (bench.ranks.merge), another rank's with its own rank only."""
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
    account = getattr(getattr(session, "impl", None), "moe_report", None)
    if account is not None:
        moe = account(session.eager_model, list(answer.step_times_s))  # type: ignore[attr-defined]
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


def die_with_parent(parent_pid: int) -> None:
    """Never outlive the parent, even one killed by SIGKILL. Linux: the kernel sends
    SIGKILL when the parent dies (PR_SET_PDEATHSIG). Everywhere: the parent holds our
    stdin open while it lives, so a thread blocked reading it sees end-of-file when the
    parent is gone, however it died."""
    if sys.platform == "linux":
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:  # it died before the line above took effect
        os._exit(EXIT_ORPHANED)

    def watch() -> None:
        # The raw descriptor, not sys.stdin: a thread blocked inside sys.stdin holds its
        # lock, and forked DataLoader workers, which close sys.stdin, would wait forever.
        while os.read(0, 4096):
            pass
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
            parent.progress if rank.local_rank == 0 else _no_progress,
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
    die_with_parent(int(os.environ.get("BENCH_PARENT_PID", os.getppid())))
    parent = ParentPipe(os.fdopen(int(fd), "w", buffering=1))
    parent.respond(run_point(request, parent.progress))
    return 0


if __name__ == "__main__":
    sys.exit(main())
