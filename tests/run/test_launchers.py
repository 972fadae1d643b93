"""Data-parallel points through torchrun: rank layout, what rank 0 gathers, how a
point's outcome follows its worst rank, bad input, and real gloo ranks on this CPU."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.cli import main
from bench.config.run_config import PointConfig, RunConfig
from bench.parallel.ranks import Rank, merge, share
from bench.platforms.cpu import rank_cpus
from bench.result.response import Response, read_answer
from bench.run.launchers import name, torchrun
from bench.util.errors import UsageError
from tests.conftest import DATA, free_port, needs_two_cores, only_result, run_bench, two_nodes

CORES = len(os.sched_getaffinity(0))


# --- layout -------------------------------------------------------------------------


def test_cpu_ranks_get_equal_disjoint_shares_of_the_usable_cores():
    usable = [0, 1, 2, 3, 4, 5, 6, 7]
    shares = [rank_cpus(r, 2, usable, numa=[])[0] for r in range(2)]
    assert shares == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_cpu_ranks_stay_within_a_numa_node_when_they_divide_over_the_nodes():
    numa = [[0, 1, 4, 5], [2, 3, 6, 7]]
    layout = [rank_cpus(r, 4, list(range(8)), numa) for r in range(4)]
    assert layout == [([0, 1], 0), ([4, 5], 0), ([2, 3], 1), ([6, 7], 1)]
    # three ranks do not divide over two nodes: equal shares of all cores instead
    assert rank_cpus(2, 3, list(range(8)), numa) == ([4, 5], None)


def test_torchrun_gets_only_its_own_flags_and_one_machine_runs_it_with_loopback_stores():
    one = PointConfig("tiny", devices=2, batch_size=8)
    assert name(one) == "torchrun"
    # one machine: torchrun's own flags, run by bench's module that keeps its stores on
    # loopback (tests/untrusted/test_ranks.py)
    assert torchrun.command(one)[2:] == [
        "bench.run.launchers.torchrun", "--nproc-per-node=2", "--nnodes=1", "--rdzv-backend=c10d",
        "--rdzv-endpoint=127.0.0.1:0", "--local-addr=127.0.0.1", "--max-restarts=0",
        "-m", "bench.child.worker",
    ]  # fmt: skip
    assert torchrun.command(PointConfig("tiny", devices=1, nnodes=2, rdzv_endpoint="h:1",
                                        batch_size=8))[2] == "torch.distributed.run"  # fmt: skip
    two = PointConfig(
        "tiny", devices=1, nnodes=2, node_rank=1, rdzv_endpoint="10.0.0.1:29500", batch_size=8
    )
    assert "--nnodes=2" in torchrun.command(two) and "--node-rank=1" in torchrun.command(two)
    assert "--rdzv-endpoint=10.0.0.1:29500" in torchrun.command(two)
    assert name(PointConfig("tiny", devices=1)) == name(PointConfig("tiny")) == "process"


# --- what rank 0 gathers ----------------------------------------------------------------


def _response(steps, node_env=None, energy=None):
    return Response(
        status="ok",
        step_times_s=tuple(steps),
        peak_memory_bytes=100 * len(steps),
        environment=node_env,
        energy=energy,
        energy_unavailable=None if energy else "no counter here",
        binding={"cpus": [0]},
    )


def test_rank_zero_keeps_every_rank_mean_the_slowest_rank_and_the_largest_peak():
    ranks = [Rank(r, r, 3, 3, 0) for r in range(3)]
    env = {"accelerator": {"accelerator": "X"}}
    shares = [
        share(_response([0.1, 0.1], env), ranks[0], "a"),
        share(_response([0.1, 0.3, 0.2]), ranks[1], "a"),
        share(_response([0.1]), ranks[2], "a"),
    ]
    merged = merge(list(reversed(shares)), _response([0.1, 0.1], env))
    gathered = merged.ranks
    assert merged.devices == 3 and gathered["world_size"] == 3 and gathered["nodes"] == 1
    assert gathered["slowest_rank"] == 1 and gathered["slowest_step_times_s"] == [0.1, 0.3, 0.2]
    assert gathered["mean_step_s"] == pytest.approx([0.1, 0.2, 0.1])
    assert merged.peak_memory_bytes == 300
    assert merged.step_times_s == (0.1, 0.1)  # rank 0's: the global pace
    assert "nodes" not in merged.environment  # one machine: its provenance as it is


def test_several_machines_sum_their_energy_name_the_missing_and_say_what_differs():
    a = {"accelerator": {"accelerator": "A100"}, "image": {"digest": "sha256:1"}}
    b = {"accelerator": {"accelerator": "H100"}, "image": {"digest": "sha256:1"}}
    e = {"window_s": 2.0, "per_device_j": {"gpu0": 10.0}, "sources": {"gpu0": "nvml"},
         "epoch_j": None}  # fmt: skip
    shares = [
        share(_response([0.1], a, e), Rank(0, 0, 3, 1, 0), "m0"),
        share(_response([0.1], b, e), Rank(1, 0, 3, 1, 1), "m1"),
        share(_response([0.1], a, None), Rank(2, 0, 3, 1, 2), "m2"),
    ]
    merged = merge(shares, _response([0.1], a, e))
    assert merged.energy["per_device_j"] == {"node0/gpu0": 10.0, "node1/gpu0": 10.0}
    assert "node 2: no counter here" in merged.energy_unavailable
    assert merged.environment["nodes_differ"] == ["accelerator.accelerator"]
    assert [n["accelerator"]["accelerator"] for n in merged.environment["nodes"]] == [
        "A100", "H100", "A100",
    ]  # fmt: skip


# --- a point fails as its worst rank --------------------------------------------------


def _ranks(said: dict[int, dict], started=(0, 1), ready=None):
    """What the ranks said (their JSON, read as the launcher reads it); the started ones
    also said 'ready' (set up) unless `ready` names those that did."""
    ranks = torchrun._Ranks()
    for local in started:
        ranks.hello(local, local)
    for local in started if ready is None else ready:
        ranks.ready(local)
    for local, response in said.items():
        ranks.respond(local, read_answer(response))
    return ranks


POINT = PointConfig("tiny", devices=2, batch_size=8)


def test_out_of_memory_on_any_rank_makes_the_point_oom_and_names_the_rank():
    said = {0: {"status": "error", "error": "peer closed"}, 1: {"status": "oom", "error": "OOM"}}
    response = torchrun.outcome(POINT, 1, _ranks(said), "")
    assert response.status == "oom" and response.error == "rank 1: OOM"


def test_a_rank_that_ended_without_reporting_is_named_before_its_peers_errors():
    said = {0: {"status": "error", "error": "Connection closed by peer"}}
    response = torchrun.outcome(POINT, 1, _ranks(said), "exitcode: -9")
    assert response.status == "error"
    assert response.error.startswith("rank 1 ended without a result (torchrun exited")
    never = torchrun.outcome(POINT, 1, _ranks({}, started=(0,)), "")
    assert "local rank 1 (never started)" in never.error and "rank 0" in never.error


def test_a_rank_that_ended_silent_while_setting_up_is_not_taken_for_the_cause():
    """Rank 0 ended without a word while joining the group (torchrun's SIGTERM ends a
    rank at once until it is ready); rank 1's own error is the point's."""
    said = {1: {"status": "error", "error": "cannot join"}}
    response = torchrun.outcome(POINT, 1, _ranks(said, ready=()), "exitcode: -15")
    assert response.error == "rank 1: cannot join"
    alone = torchrun.outcome(POINT, 1, _ranks({}, ready=()), "exitcode: -11")
    assert alone.error == (
        "rank 0, rank 1 ended without a result (torchrun exited with "
        "status 1)\ntorchrun's output before its summary:\nexitcode: -11"
    )


# torchrun's stderr when one rank was killed (kill -9 of a worker of `bench moe-tiny
# --device cpu --devices 2 --expert-parallel 2`), its own traceback cut short.
KILLED = """W1207 08:32:31.414000 765 torch/distributed/run.py:982] Setting OMP_NUM_THREADS ...
[rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer
W1207 08:32:43.304000 765 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 809 closing signal SIGTERM
E1207 08:32:43.472000 765 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: -9) local_rank: 1 (pid: 810) of binary: python
Traceback (most recent call last):
  File "torch/distributed/run.py", line 1138, in main
    run(args)
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
bench.child.worker FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-12-07_08:32:43
  host      : host
  rank      : 1 (local_rank: 1)
  exitcode  : -9 (pid: 810) (SIGKILL)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 810
============================================================
"""  # noqa: E501


def test_a_killed_rank_is_named_with_its_signal_and_the_error_is_a_summary():
    """The line ended 'rank 1 ended without a result (torchrun exited with status 1):'
    with nothing after the colon, and the stored error was torchrun's whole stderr."""
    said = {0: {"status": "error", "error": "Connection closed by peer"}}
    noise = "".join(f"W] warning {i}\n" for i in range(60))
    response = torchrun.outcome(POINT, 1, _ranks(said), noise + KILLED)
    first, *rest = response.error.splitlines()
    assert (
        first == "rank 1 ended without a result: killed by SIGKILL (torchrun exited with status 1)"
    )
    assert rest[0] == "torchrun's output before its summary:"
    assert len(rest) <= 1 + torchrun.LAST_WORDS and "Connection closed by peer" in rest[-3]
    assert "ChildFailedError" not in response.error and "Traceback" not in response.error
    exited = KILLED.replace("exitcode  : -9 (pid: 810) (SIGKILL)", "exitcode  : 3 (pid: 810)")
    line = torchrun.outcome(POINT, 1, _ranks(said), exited).error.splitlines()[0]
    assert (
        line
        == "rank 1 ended without a result: exited with status 3 (torchrun exited with status 1)"
    )


def test_a_crash_under_a_memory_limit_is_out_of_memory_as_for_one_process():
    capped = PointConfig("tiny", devices=2, batch_size=8, memory_limit_bytes=2**30)
    response = torchrun.outcome(capped, 1, _ranks({}), "Signal 11 (SIGSEGV) received")
    assert response.status == "oom"
    assert torchrun.outcome(POINT, 1, _ranks({}), "SIGSEGV").status == "error"


@pytest.mark.parametrize(
    "words",
    ["MemoryError", "libgomp: Thread creation failed: Resource temporarily unavailable"],
)
def test_a_rank_that_died_of_its_cap_without_reporting_makes_the_point_oom(words):
    capped = PointConfig("tiny", devices=2, batch_size=8, memory_limit_bytes=2**30)
    said = {0: {"status": "error", "stopped": True, "error": "stopped by torchrun"}}
    response = torchrun.outcome(capped, 1, _ranks(said), f"Traceback ...\n{words}\n")
    assert response.status == "oom" and response.error.startswith("rank 1 crashed")
    assert torchrun.outcome(POINT, 1, _ranks(said), words).status == "error"  # no cap


def test_a_rank_the_kernel_killed_for_memory_makes_the_point_oom():
    said = {0: {"status": "error", "error": "Connection closed by peer"}}
    killer = "oom_kill in /proc/vmstat rose from 3 to 4"
    response = torchrun.outcome(POINT, 1, _ranks(said), "Signal 9 (SIGKILL)", killer)
    assert response.status == "oom" and killer in response.error
    assert response.error.startswith("rank 1 ended without a result")


def test_every_rank_ok_gives_rank_zero_response():
    said = {1: {"status": "ok", "rank": 1}, 0: {"status": "ok", "step_times_s": [0.1]}}
    assert torchrun.outcome(POINT, 0, _ranks(said), "").step_times_s == (0.1,)
    assert torchrun.outcome(POINT, 1, _ranks(said), "boom").status == "error"


# --- bad input: one line, exit 2 ---------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--devices", "2", "--batch-size", "15"], "--batch-size: 15 does not split evenly over 2"),
        (["--devices", "0"], "devices: 0 is not allowed"),
        (["--nnodes", "2"], "--rdzv-endpoint: nnodes 2 needs the rendezvous HOST:PORT"),
        (["--devices", str(CORES + 2)], f"{CORES + 2} ranks need {CORES + 2} usable CPU cores"),
        (["--nnodes", "2", "--rdzv-endpoint", "h"], "'h' is not HOST:PORT"),
        (["--nnodes", "2", "--rdzv-endpoint", "h:1", "--node-rank", "2"], "must be below nnodes"),
        (["--node-rank", "1"], "only apply with nnodes above 1"),
        (["--nnodes", "2", "--rdzv-endpoint", "h:1", "--repeats", "auto"], "a fixed --repeats"),
        (["--devices", "two"], "'two' is not allowed; use all or whole numbers"),
    ],
)
def test_bad_launch_input_is_one_line_and_exit_2(args, message, capsys, tmp_path):
    code = main(["tiny", "--device", "cpu", "--output-dir", str(tmp_path), *args])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and message in err[0], err
    assert list(tmp_path.iterdir()) == []


def test_frameworks_that_use_every_device_in_one_process_refuse_ranks():
    with pytest.raises(UsageError, match="spreads a point over every local device"):
        RunConfig("tiny", framework="jax", devices=(2,))


# --- real ranks on this CPU -------------------------------------------------------------


# Every process these tests start carries this in its environment, so that the check
# for orphans sees only theirs, not those of other test runs on the same machine.
_TAG = f"bench-test-{os.getpid()}-{time.monotonic_ns()}"


@pytest.fixture(autouse=True)
def _tagged(monkeypatch):
    monkeypatch.setenv("BENCH_TEST_TAG", _TAG)


def _bench_processes() -> list[str]:
    """Command lines of any torchrun or rank of these tests still alive (an orphan
    after a point)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            environ = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        mine = f"BENCH_TEST_TAG={_TAG}".encode() in environ
        if mine and ("torch.distributed.run" in cmdline or "-m bench.child.worker" in cmdline):
            found.append(cmdline)
    return found


@pytest.mark.slow
@needs_two_cores
def test_two_gloo_ranks_train_one_point_and_the_result_says_how_it_scaled(tmp_path):
    done = run_bench(
        "tiny", "--device", "cpu", "--devices", "1,2", "--batch-size", "32", "--steps", "12",
        "--output-dir", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr + done.stdout
    data = only_result(tmp_path)
    one, two = data["points"]
    assert (one["devices"], two["devices"]) == (1, 2)
    parallel = two["details"]["data_parallel"]
    assert parallel["backend"] == "gloo" and parallel["per_rank_batch"] == 16
    assert two["loss_last"][0] < two["loss_first"][0]  # real training over both ranks
    ranks = two["ranks"][0]
    assert ranks["world_size"] == 2 and len(ranks["mean_step_s"]) == 2
    cpus = [b["cpus"] for b in ranks["bindings"]]
    assert cpus[0] and cpus[1] and not set(cpus[0]) & set(cpus[1])  # each rank its own cores
    assert two["scaling_efficiency"] == pytest.approx(
        two["throughput"]["value"] / (2 * one["throughput"]["value"])
    )
    assert "x the one-device point" in done.stdout and "scaling" in done.stdout
    assert _bench_processes() == []


@pytest.mark.slow
@needs_two_cores
def test_a_run_of_ranks_records_the_machine_s_cores_not_one_rank_s_share(tmp_path):
    """Rank 0 collects the provenance after pinning itself to its share of the CPUs; the
    machine's label (bench compare, report) must still read as the machine's, or one
    machine's runs over 1 and 2 ranks look like two machines."""
    done = run_bench(
        "tiny", "--device", "cpu", "--devices", "2", "--batch-size", "8", "--steps", "2",
        "--warmup-steps", "1", "--output-dir", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr + done.stdout
    data = only_result(tmp_path)
    assert data["environment"]["cpu"]["affinity_cores"] == len(os.sched_getaffinity(0))
    assert len(data["points"][0]["ranks"][0]["bindings"][0]["cpus"]) < len(os.sched_getaffinity(0))


@pytest.mark.slow
@needs_two_cores
def test_two_machines_on_one_host_write_one_result_with_both_in_its_provenance(tmp_path):
    secret = "c0ffee" * 8  # the run's BENCH_RDZV_TOKEN, the same on both machines
    nodes = two_nodes(tmp_path, (secret, secret), steps=5)
    outputs = [node.communicate(timeout=300)[0] for node in nodes]
    assert [node.returncode for node in nodes] == [0, 0], outputs
    assert (
        secret not in "".join(outputs)
        and secret not in next((tmp_path / "n0").glob("*.json")).read_text()
    )  # in no result, no output
    assert not (tmp_path / "n1").exists() and "node 0 writes the result" in outputs[1]
    data = only_result(tmp_path / "n0")
    point = data["points"][0]
    assert point["devices"] == 2 and point["ranks"][0]["nodes"] == 2
    environment = data["environment"]
    assert len(environment["nodes"]) == 2 and environment["nodes_differ"] == []
    assert data["config"]["nnodes"] == 2


def _threads(pid: int) -> list[str]:
    names = []
    for task in Path(f"/proc/{pid}/task").glob("*/comm"):
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            names.append(task.read_text())
    return names


def _my_rank_one() -> int | None:
    """Rank 1 of this test process's bench (its tag: not another bench on the machine)."""
    for proc in Path("/proc").iterdir():
        try:
            environ = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if (
            b"RANK=1" in environ
            and f"BENCH_TEST_TAG={_TAG}".encode() in environ
            and any(v.startswith(b"BENCH_REPORT_ADDR=") for v in environ)
        ):
            return int(proc.name)
    return None


@pytest.mark.slow
@needs_two_cores
def test_a_killed_rank_ends_the_point_as_an_error_naming_it_and_leaves_no_process(tmp_path):
    bench = subprocess.Popen(
        [sys.executable, "-m", "bench", "tiny", "--device", "cpu", "--devices", "2",
         "--batch-size", "32", "--steps", "1000000", "--output-dir", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        victim = None
        while victim is None and time.monotonic() < deadline:
            time.sleep(0.5)
            victim = _my_rank_one()
        assert victim is not None, "rank 1 never started"
        # In its process group (gloo's threads are up), then well inside its steps: a
        # rank killed while still setting up is not taken for the cause.
        while time.monotonic() < deadline and not any("gloo" in t for t in _threads(victim)):
            time.sleep(0.2)
        time.sleep(3)
        os.kill(victim, signal.SIGKILL)
        output = bench.communicate(timeout=120)[0]
    finally:  # a million steps: never left running by a failed check
        if bench.poll() is None:
            bench.terminate()
            bench.communicate(timeout=60)
    assert bench.returncode == 1, output
    point = only_result(tmp_path)["points"][0]
    assert point["status"] == "error"
    assert point["error"].startswith("rank 1 ended without a result"), point["error"]
    assert _bench_processes() == []


@pytest.mark.slow
@needs_two_cores
def test_a_rank_out_of_memory_under_the_cap_makes_the_point_oom(tmp_path):
    done = run_bench(
        "resnet50", "--device", "cpu", "--devices", "2", "--batch-size", "64", "--steps", "1",
        "--warmup-steps", "1", "--memory-limit", "1GiB", "--output-dir", str(tmp_path),
    )  # fmt: skip
    point = only_result(tmp_path)["points"][0]
    assert done.returncode == 1 and point["status"] == "oom", point["error"]
    assert point["error"].startswith("rank ")
    assert _bench_processes() == []


# Started in every Python process of the test's bench (PYTHONPATH): rank 1 alone gets a
# smaller cap than --memory-limit, so it runs out where rank 0 does not.
_CAP_RANK_ONE = """
import os
if os.environ.get("RANK") == "1" and "BENCH_REPORT_ADDR" in os.environ:
    import resource
    from bench.platforms import cpu

    def limit_memory(self, nbytes):
        resource.setrlimit(resource.RLIMIT_DATA, ({cap}, {cap}))

    cpu.CpuPlatform.limit_memory = limit_memory
"""


@pytest.mark.slow
@needs_two_cores
def test_a_search_goes_on_when_one_rank_alone_runs_out_of_memory(tmp_path):
    """Rank 1 capped at 1.2 GiB, rank 0 at 4 GiB: the probe at 256 tokens is out of
    memory on rank 1 only, and the point is 'oom' (not an error, not a hang): the
    search's answer is the longest sequence both ranks train."""
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(_CAP_RANK_ONE.format(cap=int(1.2 * 2**30)))
    path = os.pathsep.join([str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")])
    done = run_bench(
        "llama3-tiny", "--device", "cpu", "--devices", "2", "--find-max-seq-len",
        "--batch-size", "128", "--memory-limit", "4GiB", "--timeout", "200",
        "--output-dir", str(tmp_path / "out"), env={"PYTHONPATH": path},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (search,) = only_result(tmp_path / "out")["max_batch"]
    probes = [(p["seq_len"], p["status"]) for p in search["probes"]]
    assert probes == [(64, "ok"), (128, "ok"), (256, "oom")], search["probes"]
    assert search["probes"][-1]["error"].startswith("rank 1: "), search["probes"][-1]
    assert (search["largest_ok"], search["first_failing"], search["status"]) == (128, 256, "done")
    assert _bench_processes() == []


# Rank 1 fails before it joins the process group; rank 0 waits inside C++ to join it.
_FAIL_RANK_ONE = """
import os
if os.environ.get("RANK") == "1" and "BENCH_REPORT_ADDR" in os.environ:
    from bench.util.errors import BenchError
    from bench.frameworks import torch

    def refuse(self, *args, **kwargs):
        raise BenchError("rank 1 cannot join")

    torch.TorchSession.__init__ = refuse
"""


@pytest.mark.slow
@needs_two_cores
def test_a_rank_waiting_to_join_a_group_that_lost_a_rank_answers_when_stopped(tmp_path):
    """torchrun stops rank 0 with SIGTERM when rank 1 fails; rank 0, blocked in C++
    joining the group, runs no Python handler until torchrun's SIGKILL 30 s later, and
    then says nothing. Its wakeup-fd watch answers 'stopped' instead, so the point names
    rank 1's own error."""
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(_FAIL_RANK_ONE)
    path = os.pathsep.join([str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")])
    done = run_bench(
        "tiny", "--device", "cpu", "--devices", "2", "--batch-size", "8", "--steps", "1",
        "--output-dir", str(tmp_path / "out"), env={"PYTHONPATH": path},
    )  # fmt: skip
    point = only_result(tmp_path / "out")["points"][0]
    assert done.returncode == 1 and point["status"] == "error", done.stdout + done.stderr
    assert point["error"] == "rank 1: rank 1 cannot join", point["error"]
    assert _bench_processes() == []


_CLOSE_A_RANK = """
import torch.distributed as dist
from bench import registry
from bench.config.run_config import PointConfig
from bench.frameworks.torch import TorchSession
from bench.parallel.ranks import Rank, RankShare
from bench.result.response import Response

session = TorchSession(PointConfig(workload="tiny", batch_size=4, device="cpu"),
                       registry.platform("cpu"), Rank(0, 0, 1, 1, 0))
session.step()
session.gather(RankShare(0, 0, "here", Response(status="ok")))
session.close()
print("kept" if dist.is_initialized() else "destroyed", flush=True)
# As bench.child.worker leaves: os._exit, not the interpreter's teardown, where a gloo
# thread still joinable at exit can abort ("terminate called without an active
# exception", exit -6: seen once in CI on the 2-vCPU build machine).
import os
os._exit(0)
"""


@pytest.mark.slow  # a real run in a child: the full tier's
def test_a_rank_leaves_its_process_group_to_the_process_end():
    # Destroying it deadlocked PyTorch 2.8.0's ranks in their teardown (the group's
    # destructor joins gloo's threads holding the GIL; see TorchSession.close).
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()),
           "RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0"}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", _CLOSE_A_RANK], env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["kept"]


def test_result_v4_fixture_holds_a_two_rank_point():
    data = json.loads((DATA / "result-v4.json").read_text())
    assert [p["devices"] for p in data["points"]] == [1, 2]
    assert data["points"][1]["ranks"][0]["world_size"] == 2


def test_ranks_torchrun_stopped_are_not_taken_for_the_cause():
    stopped = {"status": "error", "stopped": True, "error": "stopped by torchrun"}
    response = torchrun.outcome(POINT, 1, _ranks({0: stopped}), "")
    assert response.error.startswith("rank 1 ended without a result")
    other_machine = torchrun.outcome(POINT, 1, _ranks({0: stopped, 1: stopped}), "")
    assert "stopped by torchrun after a rank of another machine ended" in other_machine.error
