"""The child process: measures one point and writes one JSON response.

    python -m bench.worker REQUEST.json RESPONSE.json

REQUEST is {"point": PointConfig as a dict, "task": "measure" or "count_flops"}.

A fresh process per point (and per repeat) means an out-of-memory error or a crash
cannot poison the next point, and every point starts from the same state. Failures
come back as a status and message (with the traceback), never as a lost result.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from bench import provenance, registry
from bench.config import PointConfig
from bench.errors import BenchError
from bench.frameworks.base import Session
from bench.platforms.base import Platform
from bench.trackers.memory import MemoryTracker
from bench.trackers.timing import StepTimer

Progress = Callable[[str, int, int], None]


def _no_progress(phase: str, done: int, total: int) -> None:
    pass


def fd_progress(fd: int) -> Progress:
    """Progress lines for the parent on an inherited pipe: 'phase done total'."""
    stream = os.fdopen(fd, "w", buffering=1)

    def report(phase: str, done: int, total: int) -> None:
        # If the parent stopped listening, measuring goes on regardless.
        with contextlib.suppress(OSError):
            stream.write(f"{phase} {done} {total}\n")

    return report


def run_steps(
    session: Session, timer: StepTimer, count: int, phase: str, progress: Progress
) -> tuple[list[float], list[Any]]:
    """Time `count` steps one by one. The progress write happens between clock reads,
    outside every timed interval."""
    times, losses = [], []
    for i in range(count):
        seconds, loss = timer.time(session.step)
        times.append(seconds)
        losses.append(loss)
        progress(phase, i + 1, count)
    return times, losses


def measure(
    point: PointConfig,
    session: Session,
    platform: Platform,
    *,
    clock: Callable[[], float] = time.perf_counter,
    progress: Progress = _no_progress,
) -> dict[str, Any]:
    """Warm-up steps, then measured steps (or epochs), with trackers around them."""
    timer = StepTimer(session.synchronize, clock)
    record: dict[str, Any] = {"epoch_times_s": None}
    with ExitStack() as trackers:
        memory = trackers.enter_context(MemoryTracker(platform))
        warmup, losses = run_steps(session, timer, point.warmup_steps, "warmup", progress)
        first_loss = losses[0] if losses else None
        if point.epochs is None:
            steps, losses = run_steps(session, timer, point.steps, "measure", progress)
        else:
            steps, losses, epochs = [], [], []
            per_epoch = point.steps_per_epoch or 0  # set whenever epochs is
            for epoch in range(point.epochs):
                start = timer.now()
                phase = f"epoch{epoch + 1}/{point.epochs}"
                times, epoch_losses = run_steps(session, timer, per_epoch, phase, progress)
                epochs.append(timer.now() - start)
                steps += times
                losses += epoch_losses
            record["epoch_times_s"] = epochs
    record.update(memory.fields())
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


def run_point(request: dict[str, Any], progress: Progress = _no_progress) -> dict[str, Any]:
    """Everything the child does for one request, failures included."""
    response: dict[str, Any] = {"status": "error", "error": None, "environment": None}
    framework = None
    try:
        point = PointConfig.from_dict(request["point"])
        platform = registry.platform(point.device)
        reason = platform.unavailable_reason() or platform.precision_unsupported(point.precision)
        if reason:
            raise BenchError(reason)
        framework = registry.framework(point.framework)
        progress("setup", 0, 1)
        response["environment"] = provenance.collect(framework, platform)
        if point.memory_limit_bytes:
            platform.limit_memory(point.memory_limit_bytes)
        session = framework.prepare(point, platform)
        response["parameters"] = session.parameters
        response["details"] = session.details
        if request.get("task") == "count_flops":
            # A child of its own: the measured process does only what training does.
            response["flops_per_sample"] = session.count_flops()
        else:
            response.update(measure(point, session, platform, progress=progress))
        response["status"] = "ok"
    except BenchError as error:
        response["error"] = str(error)
    except Exception as error:
        oom = framework is not None and framework.is_out_of_memory(error)
        response["status"] = "oom" if oom else "error"
        first_line = (str(error).strip().splitlines() or [""])[0][:500]
        response["error"] = f"{type(error).__name__}: {first_line}"
        response["traceback"] = traceback.format_exc()
    return response


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def main(argv: list[str]) -> int:
    request_path, response_path = (Path(arg) for arg in argv)
    request = json.loads(request_path.read_text())
    fd = os.environ.get("BENCH_PROGRESS_FD")
    progress = fd_progress(int(fd)) if fd else _no_progress
    write_json_atomic(response_path, run_point(request, progress))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
