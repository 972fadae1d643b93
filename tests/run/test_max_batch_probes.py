"""A max-batch search's probes in one probing child: the same answers as a fresh child
each, an out-of-memory probe in the middle caught and the next still trained, an error
that stops, a killed child that loses no answered probe, and only the answer confirmed
in a fresh child."""

from __future__ import annotations

import json
import os
import queue
import signal

import pytest

from bench import registry, result
from bench.child import worker
from bench.config.run_config import PointConfig, RunConfig
from bench.result.response import Response
from bench.run.launchers import ProbingChild
from bench.run.max_batch import shares_a_child
from bench.run.runner import Runner
from tests.run.test_runner import FakeChild, ok_response

GIB, MIB = 2**30, 2**20
OOM = {"status": "oom", "error": "out of memory"}


@pytest.fixture
def in_process(monkeypatch):
    """PyTorch's probes may share a child (Framework.probes_in_process), in its process
    (as on a GPU: the CPU forks each)."""
    torch = type(registry.framework("torch"))
    monkeypatch.setattr(torch, "probes_in_process", True, raising=False)
    monkeypatch.setattr(type(registry.platform("cpu")), "probes_fork", False)


def fits_below(capacity):
    """A child's answer where batches up to `capacity` train (1 GiB + 64 MiB a sample)."""

    def answer(point, n=0):
        if point.batch_size > capacity:
            return OOM
        return {**ok_response(), "peak_memory_bytes": GIB + point.batch_size * 64 * MIB}

    return answer


class FakeProbing:
    """Stands in for launchers.ProbingChild: answers each probe with `answer(point)`;
    at batch `dies_at` (after a first answer) it dies without answering, as a killed
    child does. Every probe goes to `log` as (this child's number, batch)."""

    def __init__(self, answer, log, number, dies_at=None, on_death=None):
        self.answer, self.log, self.number = answer, log, number
        self.dies_at, self.on_death = dies_at, on_death
        self.answered, self.alive = 0, True

    def probe(self, point, on_progress):
        self.log.append((self.number, point.batch_size))
        if point.batch_size == self.dies_at and self.answered:
            if self.on_death:
                self.on_death()
            self.alive = False
            return {"status": "error", "error": "the child killed by SIGKILL without a result"}
        self.answered += 1
        answer = self.answer(point)
        if answer["status"] == "error":
            self.alive = False
        return answer

    def close(self):
        self.alive = False


def probing(answer, log, **kwargs):
    """A maker of FakeProbing children, numbered as they start."""
    return lambda: FakeProbing(answer, log, len({n for n, _ in log}) + 1, **kwargs)


CAPPED = RunConfig(workload="tiny", find_max_batch=True, memory_limit_bytes=16 * GIB)


@pytest.mark.parametrize("capacity", [100, 240, 6, 0, 5000])
def test_probes_in_one_child_find_the_answer_fresh_children_find(tmp_path, in_process, capacity):
    fresh = Runner(CAPPED, tmp_path / "fresh", spawn=FakeChild(fits_below(capacity))).run()
    [before] = fresh.max_batch
    assert {p.kind for p in before.probes} <= {"fresh"}  # a stand-in spawn alone: fresh children
    confirming, log = FakeChild(fits_below(capacity)), []
    runner = Runner(CAPPED, tmp_path / "shared", spawn=confirming,
                    probing=probing(fits_below(capacity), log))  # fmt: skip
    [search] = runner.run().max_batch
    assert (search.largest_ok, search.first_failing) == (before.largest_ok, before.first_failing)
    assert search.status == "done"
    shared = [p for p in search.probes if p.kind != "confirm"]
    assert [p.batch_size for p in shared] == [p.batch_size for p in before.probes]
    assert [p.kind for p in shared] == ["fresh"] + ["in-process"] * (len(shared) - 1)
    assert {p.child for p in shared} == {1} and {n for n, _ in log} == {1}
    # The confirmation: the answer alone, in a fresh child; none where the answer was
    # the probing child's first probe, or where nothing trained.
    confirmed = [p for p in search.probes if p.kind == "confirm"]
    if search.largest_ok in (None, shared[0].batch_size):
        assert confirmed == [] and confirming.calls == []
    else:
        assert [(p.batch_size, p.status, p.child) for p in confirmed] == [
            (search.largest_ok, "ok", 2)
        ]
        assert [(p.batch_size, t) for p, t in confirming.calls] == [(search.largest_ok, "measure")]
    assert result.load(runner.path).max_batch == [search]
    # each probe's whole time (the parent's clock) and its steps (its child's clock)
    assert all(p.seconds is not None and p.seconds >= 0 for p in search.probes)
    assert all(p.step_times_s == [0.1] * 3 for p in search.probes if p.status == "ok")
    assert all(p.step_times_s is None for p in search.probes if p.status == "oom")


def test_an_answer_a_fresh_child_cannot_train_sends_the_search_below_it(tmp_path, in_process):
    """The probing child trains up to 100 (its memory, say, less fragmented than a fresh
    process's); a fresh child only up to 90: the search goes on below the answer it could
    not confirm, and its answer is one a fresh child trained."""
    confirming, log = FakeChild(fits_below(90)), []
    runner = Runner(CAPPED, tmp_path, spawn=confirming, probing=probing(fits_below(100), log))
    [search] = runner.run().max_batch
    confirms = [(p.batch_size, p.status) for p in search.probes if p.kind == "confirm"]
    # 100 trained in the probing child, then 96 was the largest it trained, then 88
    assert confirms == [(100, "oom"), (96, "oom"), (88, "ok")], search.probes
    assert (search.largest_ok, search.first_failing) == (88, 96)
    assert {n for n, _ in log} == {1}  # one probing child for the whole search


def test_an_error_that_is_not_memory_stops_the_search_in_its_child(tmp_path, in_process):
    def answer(point):
        if point.batch_size == 2:
            return {"status": "error", "error": "ValueError: bad"}
        return fits_below(100)(point)

    confirming, log = FakeChild(answer), []
    runner = Runner(CAPPED, tmp_path, spawn=confirming, probing=probing(answer, log))
    outcome = runner.run()
    [search] = outcome.max_batch
    assert search.status == "error" and search.error == "ValueError: bad" and outcome.failed
    assert [(p.batch_size, p.status) for p in search.probes] == [(1, "ok"), (2, "error")]
    assert log == [(1, 1), (1, 2)] and confirming.calls == []


def test_a_killed_probing_child_keeps_the_probes_it_answered(tmp_path, in_process):
    """The probing child dies at its third probe: the two it answered are in the file
    already, the third is tried again in a fresh child, and the search ends as it would."""
    on_disk = []

    def read_the_file():
        on_disk.extend(result.load(runner.path).max_batch[0].probes)

    confirming, log = FakeChild(fits_below(100)), []
    runner = Runner(
        CAPPED, tmp_path, spawn=confirming,
        probing=probing(fits_below(100), log, dies_at=208, on_death=read_the_file),
    )  # fmt: skip
    [search] = runner.run().max_batch
    assert [(p.batch_size, p.status) for p in on_disk] == [(1, "ok"), (2, "ok")]
    crashed, again = search.probes[2], search.probes[3]
    assert (crashed.batch_size, crashed.status, crashed.child, crashed.kind) == (
        208, "error", 1, "in-process",
    )  # fmt: skip
    assert (again.batch_size, again.status, again.child, again.kind) == (208, "oom", 2, "fresh")
    [fresh] = Runner(CAPPED, tmp_path / "fresh", spawn=FakeChild(fits_below(100))).run().max_batch
    assert (search.status, search.largest_ok, search.first_failing) == (
        "done", fresh.largest_ok, fresh.first_failing,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("probes_in_process", "compile", "one_rank", "shares"),
    [
        (True, None, True, True),
        (True, "inductor", True, False),  # dynamo would compile the next batch as dynamic
        (True, None, False, False),  # torchrun's ranks: a fresh child each
        (False, None, True, False),  # JAX, TensorFlow: their memory stays taken
    ],
)
def test_which_searches_share_a_probing_child(probes_in_process, compile, one_rank, shares):
    class Framework:
        pass

    framework = Framework()
    framework.probes_in_process = probes_in_process  # type: ignore[attr-defined]
    assert shares_a_child(framework, compile, one_rank) is shares


def test_only_torch_says_its_probes_may_share_a_process():
    """The base Framework says no (JAX's and TensorFlow's memory stays taken)."""
    from bench import registry

    said = {name: registry.framework(name).probes_in_process for name in registry.framework_names()}
    assert said == {"jax": False, "mlx": False, "tensorflow": False, "torch": True}


def test_a_probing_child_goes_on_after_an_error_of_memory_and_ends_after_another(monkeypatch):
    """bench.child.worker.serve_probes: each answered in turn, memory freed between them
    (an out-of-memory probe's too); after an error that is not memory it reads no more."""
    said = iter([Response(status="ok"), Response(status="oom"), Response(status="error")])
    asked, freed, answered = [], [], []
    monkeypatch.setattr(worker, "run_point", lambda request, progress, describe: (
        asked.append((request["n"], describe)) or next(said)))  # fmt: skip
    monkeypatch.setattr(worker, "free_memory", lambda request: freed.append(request["n"]))

    class Parent:
        progress = None

        def respond(self, response):
            answered.append(response.status)

    monkeypatch.setattr(type(registry.platform("cpu")), "probes_fork", False)  # as on a GPU
    point = PointConfig("tiny", device="cpu").to_dict()
    requests: queue.Queue[str] = queue.Queue()
    for n in (2, 3, 4):
        requests.put(json.dumps({"point": point, "n": n}))
    worker.serve_probes({"point": point, "n": 1}, Parent(), requests)  # type: ignore[arg-type]
    assert asked == [(1, True), (2, False), (3, False)]  # provenance with the first only
    assert answered == ["ok", "oom", "error"] and freed == [1, 2]
    assert requests.qsize() == 1  # the probe after the error was never read


@pytest.mark.slow  # a real run in a child: the full tier's
def test_a_real_probing_child_trains_past_an_out_of_memory_probe_and_dies_without_loss():
    """One child: batch 1 trains, batch 4096 runs out of the capped memory (caught), batch
    2 still trains in the same process; killed, it answers the next probe as a crash."""
    point = PointConfig(workload="cnn-s", device="cpu", steps=1, warmup_steps=0,
                        memory_limit_bytes=1200 * MIB)  # fmt: skip
    child = ProbingChild(timeout_s=300)
    try:
        answers = [
            child.probe(PointConfig(**{**point.__dict__, "batch_size": b}), lambda *a: None)
            for b in (1, 4096, 2)
        ]
        assert [a.status for a in answers] == ["ok", "oom", "ok"], [a.error for a in answers]
        assert answers[0].environment and not answers[2].environment  # provenance once
        assert answers[2].peak_memory_bytes and child.answered == 3 and child.alive
        os.kill(child.pid, signal.SIGKILL)
        crashed = child.probe(PointConfig(**{**point.__dict__, "batch_size": 1}), lambda *a: None)
        assert crashed.status == "error" and "SIGKILL" in crashed.error
        assert not child.alive and child.answered == 3
    finally:
        child.close()


def test_a_probe_whose_fork_dies_is_said_with_its_exit_status_and_the_next_still_runs(
    monkeypatch,
):
    """bench.child.worker.probe_in_fork (the CPU's probes): a fork that ends without an
    answer is said as 'died CODE' for the parent to judge; the next fork answers."""

    def run_point(request, progress, describe):
        if request["n"] == 1:
            os.kill(os.getpid(), signal.SIGKILL)  # as the kernel kills one out of memory
        return Response(status="oom" if request["n"] == 2 else "error", error="x")

    monkeypatch.setattr(worker, "run_point", run_point)
    read_fd, write_fd = os.pipe()
    parent = worker.ParentPipe(os.fdopen(write_fd, "w", buffering=1))
    went = [worker.probe_in_fork({"n": n}, parent, describe=False) for n in (1, 2, 3)]
    parent.stream.close()
    with os.fdopen(read_fd) as lines:
        said = [line.split()[0] + (" " + line.split()[1] if "died" in line else "")
                for line in lines]  # fmt: skip
    assert said == [f"died {-signal.SIGKILL}", "response", "response"]
    assert went == ["ok", "ok", "error"]  # an answered error ends the probes
