"""Ctrl-C or SIGTERM to bench while a point trains a decoder to a target loss:
bench asks the point's child (or its ranks) to stop, waits for the curve it measured,
and records the point before the run ends as interrupted. Before, the parent killed its
child at once and the point's training (hours, on a real run) was lost."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, ClassVar

import pytest

from bench import result
from bench.config.run_config import PointConfig, RunConfig
from bench.result.response import Response, read_answer
from bench.run import launchers, stopping
from bench.run.launchers import process
from bench.run.runner import Runner
from tests.conftest import only_result
from tests.datasets.test_loss_target import SEQ, _files
from tests.run.test_runner import FakeChild, ok_response
from tests.run.test_runner_faults import alive

_TRAINING_S = 240  # a busy 2-core machine takes a while to import torch twice


class _Output(threading.Thread):
    """bench's output, as it comes (the live bar's phase says when training runs)."""

    def __init__(self, stream: IO[str]) -> None:
        super().__init__(daemon=True)
        self.stream, self.text = stream, ""

    def run(self) -> None:
        for chunk in iter(lambda: self.stream.read(1), ""):
            self.text += chunk

    def wait_for(self, word: str, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while word not in self.text and time.monotonic() < deadline and self.is_alive():
            time.sleep(0.2)
        return word in self.text


def _stop_while_training(tmp_path: Path, devices: int, signum: int) -> tuple[int, dict, str]:
    train, val = _files(tmp_path)
    out = tmp_path / "out"
    bench = subprocess.Popen(
        [
            sys.executable, "-m", "bench", "llama3-tiny", "--device", "cpu",
            "--devices", str(devices), "--data", f"tokens:{train}", "--val-data", f"tokens:{val}",
            "--train-to-loss", "0.001", "--max-tokens", "10M", "--batch-size", "4",
            "--seq-len", str(SEQ), "--eval-every", "256", "--eval-sequences", "8",
            "--output-dir", str(out),
        ],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        # The live bar, though not on a terminal: its phase column shows 'train'.
        env={**os.environ, "TTY_COMPATIBLE": "1", "COLUMNS": "200"},
    )  # fmt: skip
    output = _Output(bench.stdout)
    output.start()
    try:
        assert output.wait_for(" train ", _TRAINING_S), output.text[-3000:]
        time.sleep(1)  # a few evaluation intervals in
        bench.send_signal(signum)
        code = bench.wait(timeout=150)
    finally:
        if bench.poll() is None:
            bench.kill()
            bench.wait()
    output.join(timeout=5)
    return code, only_result(out), output.text


@pytest.mark.slow
@pytest.mark.parametrize(
    ("devices", "signum"), [(1, signal.SIGINT), (1, signal.SIGTERM), (2, signal.SIGINT)]
)
def test_a_stop_while_training_to_a_loss_keeps_the_points_curve(tmp_path, devices, signum):
    code, saved, text = _stop_while_training(tmp_path, devices, signum)
    assert code == 128 + signum, text[-3000:]
    assert saved["status"] == "interrupted"
    assert len(saved["points"]) == 1, text[-3000:]  # before: none, the curve lost
    (point,) = saved["points"]
    assert point["status"] == "ok" and point["devices"] == devices
    (record,) = point["loss"]
    # One process gets the parent's SIGTERM; ranks get SIGINT (a rank's SIGTERM is torchrun's).
    assert record["stopped"] == ("SIGTERM" if devices == 1 else "SIGINT")
    assert record["curve"] and all(c["loss"] > 0.001 for c in record["curve"])
    assert record["curve"][-1]["tokens"] == record["curve"][-1]["step"] * 64
    assert len(point["step_times_s"][0]) == record["curve"][-1]["step"]
    assert point["to_loss"]["reached"] == 0 and point["to_loss"]["best_loss"] > 0.001
    assert "interrupted (SIG" in text and "saved in" in text


# --- fast: the runner's record of a stopped point, and the parent's bounded wait ----------


def test_the_runner_records_a_stopped_points_answer_before_the_run_ends_interrupted(tmp_path):
    """A sweep of three points; the second is stopped (SIGTERM) and its child answers
    with what it measured: the first two are in the file, the run is 'interrupted', and
    bench exits as for that signal."""

    def answer(point: object, n: int) -> dict:
        if n == 2:
            stopped = read_answer({**ok_response(0.2), "step_times_s": [0.2]})
            raise launchers.Stopped(signal.SIGTERM, stopped)
        return ok_response()

    runner = Runner(RunConfig("tiny", batch_sizes=(4, 8, 16)), tmp_path, spawn=FakeChild(answer))
    with pytest.raises(KeyboardInterrupt) as caught:
        runner.run()
    assert getattr(caught.value, "exit_code", None) == 128 + signal.SIGTERM
    saved = result.load(runner.path)
    assert saved.status == "interrupted"
    assert [p.batch_size for p in saved.points] == [4, 8]  # 16 never started
    assert saved.points[1].status == "ok" and saved.points[1].step_times_s == ((0.2,),)


def test_a_second_stop_ends_the_wait_for_the_childs_answer_at_once():
    """A child that ignores the stop (here: SIGTERM ignored) is waited for up to the
    grace, but a second Ctrl-C ends the wait at once; the caller then kills it."""
    child = subprocess.Popen(
        [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, "
         "signal.SIG_IGN); print('ready', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    before = signal.getsignal(signal.SIGINT)  # default, or ignored in a background job
    try:
        assert child.stdout.readline() == "ready\n"  # type: ignore[union-attr]
        child.send_signal(signal.SIGTERM)
        start = time.monotonic()
        assert process.wait_for_answer(child, 0.5) is None  # the grace ran out
        assert 0.4 < time.monotonic() - start < 5
        threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
        start = time.monotonic()
        assert process.wait_for_answer(child, 60) is None  # the second Ctrl-C
        assert time.monotonic() - start < 10
        assert signal.getsignal(signal.SIGINT) is before  # restored
    finally:
        child.kill()
        child.wait()


# What a child stopped after one evaluation answers (bench.child.measure.train_to_loss).
STOPPED_LOSS = {
    "target": 3.0, "stopped": "SIGTERM",
    "curve": [{"step": 1, "tokens": 512, "loss": 9.0, "train_s": 1.0, "eval_s": 0.5}],
}  # fmt: skip


def test_only_a_point_training_to_a_loss_waits_for_its_answer_and_only_what_trained_is_kept():
    trains = PointConfig("llama3-tiny", batch_size=4, data="tokens:/t.bin",
                         val_data="tokens:/v.bin", train_to_loss=3.0, warmup_steps=0)  # fmt: skip
    assert process.answers_a_stop(trains, "measure")
    assert not process.answers_a_stop(trains, "count_flops")
    assert not process.answers_a_stop(PointConfig("tiny", batch_size=4), "measure")
    interrupt = stopping.Interrupted(signal.SIGTERM)
    assert process.stopped(interrupt, None) is interrupt  # died without a word
    assert process.stopped(interrupt, Response(status="error", error="x")) is interrupt
    kept = process.stopped(interrupt, Response(status="ok", loss=STOPPED_LOSS))
    assert isinstance(kept, launchers.Stopped) and kept.exit_code == 128 + signal.SIGTERM
    assert process.grace_s(time.monotonic(), None) == process.ANSWER_GRACE_S
    assert process.grace_s(time.monotonic() - 50, 60) == pytest.approx(10, abs=1)


# --- a stop that lands while a child starts -------------------------------------------


class _SignalledPopen(subprocess.Popen):
    """A Popen that, once its child runs, gets the parent a SIGTERM: a stop that lands
    while bench starts a point's child (CI saw one leave the child running)."""

    started: ClassVar[list[subprocess.Popen]] = []

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        _SignalledPopen.started.append(self)
        os.kill(os.getpid(), signal.SIGTERM)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize("launcher", ["process", "torchrun", "probing"])
def test_a_stop_while_a_child_starts_leaves_no_child(monkeypatch, launcher):
    """Before, the stop was raised between the child's start and the `try` that stops it:
    bench exited and the child ran on."""
    from bench.run.launchers import torchrun

    _SignalledPopen.started = []
    monkeypatch.setattr(subprocess, "Popen", _SignalledPopen)
    point = PointConfig("tiny", batch_size=4, devices=2 if launcher == "torchrun" else None)
    spawn = {
        "process": process.spawn_worker,
        "torchrun": torchrun.spawn_ranks,
        "probing": lambda point, job, progress: launchers.ProbingChild().probe(point, progress),
    }[launcher]
    with pytest.raises(stopping.Interrupted), stopping.stop_on_signals():
        spawn(point, "measure", lambda *a: None)
    (child,) = _SignalledPopen.started
    assert child.returncode is not None and not alive(child.pid)


def test_a_deferred_stop_comes_as_the_block_ends_and_not_off_the_main_thread():
    order = []
    with pytest.raises(stopping.Interrupted), stopping.stop_on_signals():
        with stopping.deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)  # a handler would have run by now
            order.append("block ended")
        order.append("after")  # never: the stop comes as the block ends
    assert order == ["block ended"]
    done = []
    worker = threading.Thread(target=lambda: done.append(stopping.deferred().__enter__()))
    worker.start()
    worker.join()
    assert done == [None]
