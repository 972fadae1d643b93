"""What a measuring child does between its set-up and its answer: warm-up steps, then
measured steps (or epochs over a dataset, or steps to a validation loss), with the
trackers around them (bench.child.worker runs it for each request)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

from bench.config.run_config import PointConfig
from bench.datasets import loss_target
from bench.frameworks.base import Session
from bench.platforms.base import Platform
from bench.trackers.busy import BusyTracker
from bench.trackers.energy import EnergySource, EnergyTracker
from bench.trackers.memory import MemoryTracker
from bench.trackers.timing import StepTimer

Progress = Callable[[str, int, int], None]
PROGRESS_PERIOD_S = 0.1  # a progress line at most this often (a display's refresh)


def no_progress(phase: str, done: int, total: int) -> None:
    pass


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
    progress: Progress = no_progress,
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
    counted = point.epochs * (point.steps_per_epoch or 0) if point.epochs else point.steps
    plain = point.dataset is None and point.train_to_loss is None  # a known step count
    energy = EnergyTracker(sources, session.synchronize, unavailable, clock,
                           counted if plain else None)  # fmt: skip
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
    record["details"].update(energy.details())
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
