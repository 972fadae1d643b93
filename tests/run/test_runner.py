"""The parent's logic with a fake child: sweeps, failures, interrupts, repeats, search."""

import dataclasses
import json
import os
import re

import pytest

from bench import result
from bench.config.run_config import RunConfig
from bench.report.table import notes
from bench.run.max_batch import search_largest
from bench.run.runner import Runner
from bench.util import files
from bench.util.errors import UsageError


def ok_response(step_s: float = 0.1) -> dict:
    return {
        "status": "ok",
        "warmup_times_s": [0.5],
        "step_times_s": [step_s] * 3,
        "epoch_times_s": None,
        "peak_memory_bytes": 1000,
        "memory_kind": "host_peak_rss",
        "loss_first": 2.0,
        "loss_last": 1.0,
        "parameters": 5354,
        "environment": {"host": {"hostname": "fake"}},
    }


class FakeChild:
    """Stands in for spawn_worker: answers measurements from a script (n counts them),
    FLOP counts with `flops`, and records every (point, job) it was asked."""

    def __init__(self, answer, flops=2e6):
        self.answer, self.flops = answer, flops
        self.calls = []
        self.measured = 0

    def __call__(self, point, job, on_progress):
        self.calls.append((point, job))
        if job == "count_flops":
            return {"status": "ok", "flops_per_sample": self.flops, "environment": {"host": {}}}
        self.measured += 1
        return self.answer(point, self.measured)


def test_a_failed_point_keeps_the_others(tmp_path):
    def answer(point, n):
        if point.batch_size == 16:
            return {"status": "error", "error": "RuntimeError: boom", "traceback": "..."}
        return ok_response()

    runner = Runner(
        RunConfig(workload="tiny", batch_sizes=(8, 16, 32)), tmp_path, spawn=FakeChild(answer)
    )
    outcome = runner.run()
    assert [p.status for p in outcome.points] == ["ok", "error", "ok"]
    assert outcome.failed and outcome.status == "complete"
    saved = result.load(runner.path)
    assert [p.status for p in saved.points] == ["ok", "error", "ok"]
    assert saved.points[1].error == "RuntimeError: boom"


def test_an_interrupted_sweep_keeps_its_finished_points(tmp_path):
    def answer(point, n):
        if n == 3:
            raise KeyboardInterrupt
        return ok_response()

    runner = Runner(
        RunConfig(workload="tiny", batch_sizes=(4, 8, 16, 32)), tmp_path, spawn=FakeChild(answer)
    )
    with pytest.raises(KeyboardInterrupt):
        runner.run()
    saved = result.load(runner.path)
    assert saved.status == "interrupted"
    assert [p.batch_size for p in saved.points] == [4, 8]
    assert saved.finished is not None


def test_the_file_is_written_after_every_point(tmp_path):
    seen = []

    def answer(point, n):
        if n > 1:  # the previous point is already on disk when the next starts
            seen.append(len(json.loads(next(tmp_path.glob("*.json")).read_text())["points"]))
        return ok_response()

    Runner(
        RunConfig(workload="tiny", batch_sizes=(4, 8, 16)), tmp_path, spawn=FakeChild(answer)
    ).run()
    assert seen == [1, 2]


def test_flops_are_counted_once_per_shape_in_a_child_of_their_own(tmp_path, monkeypatch):
    """Where the shipped table lacks the shape (or another PyTorch release made it), a
    child of its own counts it, once for all points of that shape."""
    from bench.result import catalog

    monkeypatch.setattr(catalog, "reference_flops", lambda workload, shape: None)
    child = FakeChild(lambda point, n: ok_response())
    outcome = Runner(
        RunConfig(workload="tiny", batch_sizes=(4, 8), precisions=("fp32", "bf16")),
        tmp_path,
        spawn=child,
    ).run()
    assert [job for _, job in child.calls] == ["count_flops"] + ["measure"] * 4
    assert all(p.flops_per_sample == 2e6 for p in outcome.points)
    assert outcome.points[0].achieved_flops == pytest.approx(2e6 * 4 / 0.1)


def test_a_failed_flop_count_leaves_flops_unknown_not_the_point_failed(tmp_path, monkeypatch):
    monkeypatch.setattr("bench.result.catalog.reference_flops", lambda workload, shape: None)
    child = FakeChild(lambda point, n: ok_response(), flops=None)
    outcome = Runner(RunConfig(workload="tiny"), tmp_path, spawn=child).run()
    assert outcome.points[0].status == "ok" and outcome.points[0].achieved_flops is None


def test_automatic_repeats_stop_once_the_spread_is_small(tmp_path):
    steady = FakeChild(lambda point, n: ok_response(0.1))
    config = RunConfig(workload="tiny", repeats=None, min_repeats=3, max_repeats=8, target_rsd=0.05)
    outcome = Runner(config, tmp_path, spawn=steady).run()
    assert len(outcome.points[0].step_times_s) == 3
    assert outcome.points[0].noise is None

    noisy = FakeChild(lambda point, n: ok_response(0.1 if n % 2 else 0.3))
    runner = Runner(config, tmp_path, spawn=noisy)
    outcome = runner.run()
    assert len(outcome.points[0].step_times_s) == 8  # never settles: stops at the cap
    # ... and says so, in the result and under the table
    assert outcome.points[0].noise == (
        "--repeats auto stopped at 8 repeats with a spread of 53.5%, above its 5.0% target"
    )
    assert result.load(runner.path).points[0].noise == outcome.points[0].noise
    assert "batch 16 fp32: noisy: --repeats auto stopped at 8" in notes(outcome)


def test_fixed_repeats_give_a_confidence_interval(tmp_path):
    child = FakeChild(lambda point, n: ok_response([0.1, 0.11, 0.12][n - 1]))
    outcome = Runner(RunConfig(workload="tiny", repeats=3), tmp_path, spawn=child).run()
    tp = outcome.points[0].throughput
    assert tp.n == 3 and tp.ci95_low < tp.value < tp.ci95_high


@pytest.mark.parametrize(
    ("capacity", "limit", "expected"),
    [
        (100, 4096, (100, 101)),
        (1, 4096, (1, 2)),
        (0, 4096, (None, 1)),  # '*': even batch 1 does not fit
        (5000, 512, (512, None)),  # the limit was reached without failing
        (384, 4096, (384, 385)),
    ],
)
def test_search_finds_the_boundary_in_logarithmic_probes(capacity, limit, expected):
    probed = []

    def fits(batch):
        probed.append(batch)
        return "ok" if batch <= capacity else "oom"

    assert search_largest(fits, limit) == expected
    assert len(probed) <= 2 * max(limit, 2).bit_length() + 1
    assert len(set(probed)) == len(probed)


@pytest.mark.parametrize(
    ("capacity", "limit", "start", "step", "expected"),
    [
        (1540, 4096, 32, 8, (1536, 1544)),  # stops one step short: not 1540, 1541
        (1540, 4096, 32, 1, (1540, 1541)),  # step 1: the exact batch
        (6, 4096, 32, 8, (6, 7)),  # below the step: exact, found by halving from 32
        (0, 4096, 32, 8, (None, 1)),
        (5000, 512, 32, 8, (512, None)),
        (100, 4096, 96, 8, (96, 104)),  # starts at the user's batch, not at 1
    ],
)
def test_search_starts_where_asked_and_stops_at_its_resolution(
    capacity, limit, start, step, expected
):
    probed = []

    def fits(batch):
        probed.append(batch)
        return "ok" if batch <= capacity else "oom"

    assert search_largest(fits, limit, start=start, step=step) == expected
    assert len(set(probed)) == len(probed)
    above = [b for b in probed if b >= step and b not in (start, limit)]
    assert all(b % step == 0 for b in above if b > start), probed
    if expected == (1536, 1544):
        assert len(probed) == 14, probed  # was 22 probes of a fresh process on a GPU


def test_max_batch_search_through_the_runner(tmp_path):
    def answer(point, n):
        return (
            ok_response() if point.batch_size <= 6 else {"status": "oom", "error": "out of memory"}
        )

    child = FakeChild(answer)
    config = RunConfig(workload="tiny", find_max_batch=True, precisions=("fp32", "bf16"))
    runner = Runner(config, tmp_path, spawn=child)
    outcome = runner.run()
    assert [(m.precision, m.largest_ok, m.first_failing, m.display) for m in outcome.max_batch] == [
        ("fp32", 6, 7, "6"),
        ("bf16", 6, 7, "6"),
    ]
    assert all(p.steps == 2 and p.warmup_steps == 0 for p, _ in child.calls)
    assert not outcome.failed
    assert result.load(runner.path).max_batch == outcome.max_batch


def test_a_probe_error_stops_that_search_and_fails_the_run(tmp_path):
    child = FakeChild(lambda point, n: {"status": "error", "error": "ValueError: bad"})
    outcome = Runner(RunConfig(workload="tiny", find_max_batch=True), tmp_path, spawn=child).run()
    assert outcome.max_batch[0].status == "error" and outcome.failed
    assert len(child.calls) == 1


def test_a_failure_without_a_message_is_still_reported(tmp_path):
    child = FakeChild(lambda point, n: {"status": "error", "error": ""})
    outcome = Runner(RunConfig(workload="tiny"), tmp_path, spawn=child).run()
    assert outcome.points[0].error_line == "error" and outcome.failed


@pytest.mark.parametrize(
    ("code", "output", "limit", "killer", "status"),
    [
        (-9, "", None, "oom_kill in /proc/vmstat rose from 3 to 4", "oom"),  # the OOM killer
        (-9, "", None, None, "error"),  # docker stop, kill -9, pre-emption: not memory
        (-9, "", 1 << 30, None, "error"),  # a cap alone does not make a SIGKILL memory
        (-11, "", 1 << 30, None, "oom"),  # SIGSEGV under a memory cap: a failed native allocation
        (-6, "terminate called after throwing an instance of 'std::bad_alloc'", 1 << 30, None,
         "oom"),
        (-11, "", None, None, "error"),  # a segfault without a cap is a real error
        (1, "Traceback ...", None, None, "error"),
        # out of memory again while reporting, under the cap (exit 1, MemoryError)
        (1, "Exception ignored in atexit callback\nMemoryError:", 1 << 30, None, "oom"),
        (1, "MemoryError:", None, None, "error"),  # no cap: a real error
        # OpenMP's thread, whose stack the cap could not map (seen at 800 MiB on llama3-tiny)
        (1, "libgomp: Thread creation failed: Resource temporarily unavailable", 1 << 30, None,
         "oom"),
    ],
)  # fmt: skip
def test_a_crashed_child_is_out_of_memory_only_with_evidence(code, output, limit, killer, status):
    from bench.run.launchers.process import classify_crash

    response = classify_crash(code, output, limit, killer)
    assert response.status == status and response.error
    if killer:
        assert killer in response.error


def test_oom_kill_counters_are_read_from_cgroup_and_vmstat(tmp_path, monkeypatch):
    from bench.run import oomkill

    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "cgroup").write_text("0::/docker/abc\n")
    (proc / "vmstat").write_text("nr_free_pages 1\noom_kill 7\n")
    events = tmp_path / "cg" / "docker" / "abc" / "memory.events"
    events.parent.mkdir(parents=True)
    events.write_text("low 0\nhigh 0\nmax 2\noom 1\noom_kill 1\n")
    monkeypatch.setattr(oomkill, "CGROUP_ROOT", tmp_path / "cg")
    before = oomkill.count(proc)
    assert before == {str(events): 1, str(proc / "vmstat"): 7}
    assert oomkill.evidence(before, before) is None
    events.write_text("low 0\nhigh 0\nmax 5\noom 2\noom_kill 2\n")
    assert oomkill.evidence(before, oomkill.count(proc)) == (
        f"oom_kill in {events} rose from 1 to 2"
    )


def test_max_batch_search_starts_at_the_given_batch_and_records_its_resolution(tmp_path):
    def answer(point, n):
        return ok_response() if point.batch_size <= 100 else {"status": "oom", "error": "oom"}

    child = FakeChild(answer)
    config = RunConfig(workload="tiny", find_max_batch=True, max_batch_start=32)
    runner = Runner(config, tmp_path, spawn=child)
    [search] = runner.run().max_batch
    assert [p.batch_size for p in search.probes][:2] == [32, 64]
    assert (search.largest_ok, search.first_failing, search.resolution) == (96, 104, 8)
    assert result.load(runner.path).max_batch[0].resolution == 8


def test_the_sequence_length_search_probes_lengths_at_one_batch_and_records_them(tmp_path):
    def answer(point, n):  # lengths up to 200 train at batch 8
        return ok_response() if point.seq_len <= 200 else {"status": "oom", "error": "oom"}

    child = FakeChild(answer)
    config = RunConfig(workload="bert-base", find_max_seq_len=True, batch_sizes=(8,))
    runner = Runner(config, tmp_path, spawn=child)
    [search] = runner.run().max_batch
    # from bert-base's default 128, doubling to its longest (512), then halving the gap
    assert [(p.batch_size, p.seq_len, p.status) for p in search.probes] == [
        (8, 128, "ok"), (8, 256, "oom"),
    ]  # fmt: skip
    assert (search.axis, search.largest_ok, search.first_failing, search.resolution) == (
        "seq_len", 128, 256, 128,
    )  # fmt: skip
    saved = result.load(runner.path)
    assert saved.max_batch[0].axis == "seq_len" and saved.max_batch[0].probes[1].seq_len == 256
    from bench.report.table import max_batch_table

    table = max_batch_table(saved)
    assert "largest sequence length that trains at batch 8" in str(table.title)
    # the probes column: how many, and in how long where each probe's time is known
    probes = next(c for c in table.columns if c.header == "probes")
    assert re.fullmatch(r"2 in \d+ s", str(probes._cells[0]))
    first = dataclasses.replace(saved.max_batch[0].probes[0], seconds=None)  # before 16
    saved.max_batch[0].probes[0] = first
    probes = next(c for c in max_batch_table(saved).columns if c.header == "probes")
    assert str(probes._cells[0]) == "2"


def test_the_sequence_length_search_reaches_the_workloads_longest_and_halves_below_128(tmp_path):
    fits = FakeChild(lambda point, n: ok_response())
    config = RunConfig(workload="llama3-tiny", find_max_seq_len=True)
    [search] = Runner(config, tmp_path, spawn=fits).run().max_batch
    assert [p.seq_len for p in search.probes] == [64, 128, 256]  # llama3-tiny: 64 to 256
    assert (search.largest_ok, search.first_failing) == (256, None)
    short = FakeChild(lambda p, n: ok_response() if p.seq_len <= 40 else {"status": "oom"})
    [search] = Runner(config, tmp_path, spawn=short).run().max_batch
    assert [p.seq_len for p in search.probes] == [64, 32]  # powers of two, no 48, 40
    assert (search.largest_ok, search.first_failing) == (32, 64)


def test_the_max_batch_search_over_ranks_probes_whole_micro_batches(tmp_path):
    """Two ranks: every probe's global batch splits evenly (an odd one was refused as
    the search's own probe, and batch 1, where it started, stopped the run)."""
    child = FakeChild(
        lambda p, n: ok_response() if p.batch_size <= 13 else {"status": "oom", "error": "oom"}
    )
    config = RunConfig(workload="tiny", find_max_batch=True, devices=(2,), max_batch_step=1)
    [search] = Runner(config, tmp_path, spawn=child).run().max_batch
    assert all(p.batch_size % 2 == 0 for p in search.probes), search.probes
    assert (search.largest_ok, search.first_failing, search.resolution) == (12, 14, 2)


@pytest.mark.parametrize(("limit", "status"), [(2**40, "oom"), (None, "error")])
def test_a_primitive_that_cannot_be_created_under_a_cap_is_out_of_memory(
    monkeypatch, limit, status
):
    from bench import registry
    from bench.child import worker
    from bench.config.run_config import PointConfig

    torch_framework = type(registry.framework("torch"))

    class Failing(torch_framework):  # type: ignore[misc, valid-type]
        def limit_memory(self, platform, nbytes):
            pass  # not in the test process

        def prepare(self, point, platform):
            raise RuntimeError("could not create a primitive")

    monkeypatch.setattr(registry, "framework", lambda name: Failing())
    point = PointConfig(workload="tiny", device="cpu", memory_limit_bytes=limit)
    response = worker.run_point({"point": point.to_dict(), "job": "measure"})
    assert response.status == status
    assert response.error == "RuntimeError: could not create a primitive"


def test_a_rank_that_does_not_speak_for_its_machine_imports_before_the_cap(monkeypatch):
    """Rank 1 of two: the framework's imports come before --memory-limit's cap, as on
    rank 0 (it imported torch under the cap and died of a MemoryError without a word),
    and a thread the cap cannot give a stack (gloo's, joining the group) is out of memory."""
    from bench import registry
    from bench.child import worker
    from bench.config.run_config import PointConfig
    from bench.parallel.ranks import Rank

    torch_framework = type(registry.framework("torch"))
    done: list[str] = []

    class Recording(torch_framework):  # type: ignore[misc, valid-type]
        def versions(self):
            done.append("imports")
            return {}

        def limit_memory(self, platform, nbytes):
            done.append("cap")  # not in the test process

        def prepare(self, point, platform):
            raise RuntimeError("Resource temporarily unavailable")

    monkeypatch.setattr(registry, "framework", lambda name: Recording())
    platform = registry.platform("cpu")
    monkeypatch.setattr(type(platform), "bind_rank", lambda self, local, ranks: {})
    point = PointConfig(workload="tiny", device="cpu", devices=2, batch_size=8,
                        memory_limit_bytes=2**40)  # fmt: skip
    rank = Rank(rank=1, local_rank=1, world_size=2, local_world_size=2, node=0)
    response = worker.run_point({"point": point.to_dict(), "job": "measure"}, rank=rank)
    assert done == ["imports", "cap"]
    assert response.status == "oom", response.error


def test_a_memory_error_is_out_of_memory_without_asking_the_framework(monkeypatch):
    from bench import registry
    from bench.child import worker
    from bench.config.run_config import PointConfig

    torch_framework = type(registry.framework("torch"))

    class Starved(torch_framework):  # type: ignore[misc, valid-type]
        def limit_memory(self, platform, nbytes):
            pass

        def prepare(self, point, platform):
            raise MemoryError

        def is_out_of_memory(self, error):
            raise MemoryError  # its own import, under the cap

    monkeypatch.setattr(registry, "framework", lambda name: Starved())
    point = PointConfig(workload="tiny", device="cpu", memory_limit_bytes=2**40)
    assert worker.run_point({"point": point.to_dict(), "job": "measure"}).status == "oom"


def test_a_resumed_run_keeps_what_it_measured_and_measures_only_the_rest(tmp_path):
    config = RunConfig(workload="tiny", batch_sizes=(8, 16, 32))
    first = Runner(config, tmp_path, spawn=FakeChild(lambda p, n: ok_response()))
    first.run()
    partial = json.loads(first.path.read_text())
    partial["points"] = partial["points"][:1]  # stopped after the first point
    partial["status"] = "interrupted"
    first.path.write_text(json.dumps(partial))

    child = FakeChild(lambda p, n: ok_response(0.2))
    again = Runner(config, tmp_path, spawn=child)
    again.resume(first.path)
    outcome = again.run()
    assert [p.batch_size for p, job in child.calls if job == "measure"] == [16, 32]
    assert again.path == first.path and len(list(tmp_path.glob("*.json"))) == 1
    saved = result.load(first.path)
    assert saved.status == "complete" and [p.batch_size for p in saved.points] == [8, 16, 32]
    assert outcome.points[0].step_times_s == ((0.1, 0.1, 0.1),)  # kept, not measured again


def test_only_a_run_of_the_same_config_can_be_resumed(tmp_path):
    first = Runner(
        RunConfig(workload="tiny"), tmp_path, spawn=FakeChild(lambda p, n: ok_response())
    )
    first.run()
    other = Runner(RunConfig(workload="tiny", steps=7), tmp_path, spawn=FakeChild(None))
    with pytest.raises(UsageError, match="a run of another config"):
        other.resume(first.path)


def test_two_runs_never_go_on_with_one_file_at_once(tmp_path):
    """Two suites (or tunes) that both go on with one interrupted file would each
    rewrite it whole, and the last to save would drop the other's points: the second
    is refused while the first writes, and may go on once it has ended."""
    config = RunConfig(workload="tiny", batch_sizes=(8, 16, 32))
    first = Runner(config, tmp_path, spawn=FakeChild(lambda p, n: ok_response()))
    first.run()
    partial = json.loads(first.path.read_text())
    partial["points"], partial["status"] = partial["points"][:1], "interrupted"
    first.path.write_text(json.dumps(partial))
    refused = []

    def answer(point, n):
        if n == 1:  # while this run goes on with the file, another tries the same
            other = Runner(config, tmp_path, spawn=FakeChild(lambda p, n: ok_response(0.3)))
            with pytest.raises(UsageError) as error:
                other.resume(first.path)
            refused.append(str(error.value))
        return ok_response(0.2)

    again = Runner(config, tmp_path, spawn=FakeChild(answer))
    again.resume(first.path)
    again.run()
    assert refused == [f"{first.path}: another bench is writing it now; let that one finish "
                       "(or stop it) before going on with this file"]  # fmt: skip
    saved = result.load(first.path)
    assert [p.step_times_s[0][0] for p in saved.points] == [0.1, 0.2, 0.2]
    assert [p.name for p in tmp_path.iterdir()] == [first.path.name]  # claim released
    claim = files.FileClaim(first.path)
    assert claim.acquire()  # free again for the next bench
    claim.release()


def test_the_max_batch_search_jumps_along_the_line_through_its_probes_peaks(tmp_path):
    # 1 GiB plus 64 MiB a sample, 16 GiB of memory: batch 240 is the largest that fits.
    # Doubling from 1 takes 13 probes; from the peaks of 1 and 2 the search probes the
    # batch predicted at 90% (214, as a multiple of the search's step of 8: 208), then
    # the first predicted past all of it (248), and bisects to the step.
    gib, mib = 2**30, 2**20

    def answer(point, n):
        peak = gib + point.batch_size * 64 * mib
        if peak > 16 * gib:
            return {"status": "oom", "error": "out of memory"}
        return {**ok_response(), "peak_memory_bytes": peak}

    config = RunConfig(workload="tiny", find_max_batch=True, memory_limit_bytes=16 * gib)
    [search] = Runner(config, tmp_path, spawn=FakeChild(answer)).run().max_batch
    probed = [p.batch_size for p in search.probes]
    assert probed[:4] == [1, 2, 208, 248], probed
    assert (search.largest_ok, search.first_failing) == (240, 248)
    assert len(probed) == 7, probed  # doubling from 1: 13


def test_a_larger_batch_that_peaked_lower_still_gives_the_search_a_line(tmp_path):
    # On an H200 at a 16 GiB cap, ResNet-50 held 14.4 GiB at batch 112 and 13.6 at 136
    # (cuDNN chose a smaller workspace at the larger batch): the line through the two
    # largest fell, and the search doubled to 272, four probes of bisection from the
    # answer. Through the smallest and the largest, the jump lands beside it.
    gib, mib = 2**30, 2**20

    def peak(batch):
        workspace = int(1.5 * gib) if 100 <= batch <= 130 else 0
        return int(4.5 * gib) + batch * 75 * mib + workspace

    def answer(point, n):
        if peak(point.batch_size) > 16 * gib:
            return {"status": "oom", "error": "out of memory"}
        return {**ok_response(), "peak_memory_bytes": peak(point.batch_size)}

    config = RunConfig(workload="tiny", find_max_batch=True, memory_limit_bytes=16 * gib)
    [search] = Runner(config, tmp_path, spawn=FakeChild(answer)).run().max_batch
    probed = [p.batch_size for p in search.probes]
    largest = max(b for b in range(1, 400) if peak(b) <= 16 * gib and b % 8 == 0)
    assert (search.largest_ok, search.first_failing) == (largest, largest + 8), probed
    assert max(probed) < 2 * 136, probed  # no doubling past the line
    assert len(probed) <= 7, probed


def test_a_guess_past_the_memory_still_ends_in_the_probed_boundary(tmp_path):
    # Memory that runs out well before the line says (fragmentation, a second buffer):
    # the jump fails, the search bisects below it, and the answer is a probe's.
    gib, mib = 2**30, 2**20

    def answer(point, n):
        if point.batch_size > 100:
            return {"status": "oom", "error": "out of memory"}
        return {**ok_response(), "peak_memory_bytes": gib + point.batch_size * 64 * mib}

    config = RunConfig(workload="tiny", find_max_batch=True, memory_limit_bytes=16 * gib)
    [search] = Runner(config, tmp_path, spawn=FakeChild(answer)).run().max_batch
    low, high = search.largest_ok, search.first_failing
    assert low <= 100 < high and high - low <= search.resolution, search.probes
    assert {p.batch_size: p.status for p in search.probes}[low] == "ok"


@pytest.mark.parametrize("framework", ["torch", "jax", "tensorflow"])
def test_a_run_reads_the_reference_flops_table_without_a_child(tmp_path, monkeypatch, framework):
    """Every framework records PyTorch's count as its model FLOPs: where bench's table
    has the workload at this shape (and, for PyTorch, this release counted it), no child
    is started for it (a PyTorch child took ~9 s on a CPU, a JAX one compiles the whole
    step); where it has not, the PyTorch child still counts it."""
    from bench.result import catalog

    child = FakeChild(lambda p, n: ok_response(), flops=1.0)
    config = RunConfig(workload="tiny", framework=framework, batch_sizes=(8,), steps=4)
    runner = Runner(config, tmp_path, spawn=child)
    point = next(iter(config.points()))
    table = catalog.reference_flops("tiny", point.spec.input_shape())
    assert table is not None and runner._flops_per_sample(point) == table
    assert child.calls == []
    monkeypatch.setattr(catalog, "reference_flops", lambda workload, shape: None)
    other = dataclasses.replace(point, workload="cnn-s")
    assert runner._flops_per_sample(other) == 1.0
    ((counted, job),) = child.calls
    assert job == "count_flops" and counted.workload == "cnn-s"


def test_a_decoders_progress_lines_name_no_memory_format(tmp_path):
    """JAX records its only layout (NHWC, channels_last) for every point: a decoder's
    progress read '… batch 2 fp32 channels_last'. An image workload's still names it."""

    class Recorder:
        def __init__(self):
            self.labels = []

        def start(self, label, total_steps):
            self.labels.append(label)

        def progress(self, phase, done, total): ...

        def finish(self, label, status, summary):
            self.labels.append(label)

    for workload, named in (("llama3-tiny", False), ("tiny", True)):
        seen = Recorder()
        config = RunConfig(workload=workload, framework="jax", batch_sizes=(2,), steps=2)
        Runner(config, tmp_path, reporter=seen, spawn=FakeChild(lambda p, n: ok_response())).run()
        measured = [label for label in seen.labels if label.startswith("batch 2")]
        assert measured and all(("channels_last" in x) == named for x in measured), seen.labels


def test_each_run_to_a_target_trains_with_a_seed_of_its_own_and_a_measurement_shares_one(
    tmp_path,
):
    """MLPerf's runs and the speedrun's are each a draw of the seed: repeat i of a point
    training to a target takes seed + i (bench/stats/scoring.py reads the runs' spread as the
    recipe's); a plain measurement repeats the same work under the same seed."""
    to_loss = FakeChild(lambda point, n: ok_response())
    Runner(
        RunConfig(workload="llama3-tiny", batch_sizes=(4,), data="tokens:/t.bin",
                  val_data="tokens:/v.bin", train_to_loss=3.0, warmup_steps=0, repeats=3,
                  seed=7),
        tmp_path / "a", spawn=to_loss,
    ).run()  # fmt: skip
    assert [p.seed for p, job in to_loss.calls if job == "measure"] == [7, 8, 9]
    plain = FakeChild(lambda point, n: ok_response())
    Runner(RunConfig(workload="tiny", batch_sizes=(4,), repeats=3, seed=7), tmp_path / "b",
           spawn=plain).run()  # fmt: skip
    assert [p.seed for p, job in plain.calls if job == "measure"] == [7, 7, 7]


@pytest.mark.skipif(
    not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="needs two CPUs this process may run on",
)
def test_the_cores_a_run_had_are_read_before_the_framework_pins_its_thread(monkeypatch):
    """GNU OpenMP bound close (OMP_PROC_BIND=CLOSE, the CPU study's setting) pins the
    thread that starts it to one core: an H100's run recorded 1 of its 16 cores."""
    from bench import registry
    from bench.child import worker
    from bench.config.run_config import PointConfig

    torch_framework = type(registry.framework("torch"))
    cores = os.sched_getaffinity(0)

    class Pinning(torch_framework):  # type: ignore[misc, valid-type]
        def configure(self, platform):
            os.sched_setaffinity(0, {min(cores)})
            super().configure(platform)

    monkeypatch.setattr(registry, "framework", lambda name: Pinning())
    point = PointConfig(workload="tiny", device="cpu", steps=2, warmup_steps=1)
    try:
        response = worker.run_point({"point": point.to_dict(), "job": "measure"})
    finally:
        os.sched_setaffinity(0, cores)
    assert response.status == "ok", response.error
    assert response.environment["cpu"]["affinity_cores"] == len(cores)
