"""What other machines and other people send is untrusted: a result file does not choose
the machines a rerun joins, a rank's share is JSON (never a pickle) within a bound, the
ranks of several machines prove they know the run's secret, concurrent runs never
write one file, and what bench creates is never writable by everyone."""

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from bench import cli, result
from bench.commands import rerun
from bench.config.run_config import RunConfig
from bench.parallel import ranks
from bench.parallel.ranks import TOKEN_ENV, Rank, RankShare
from bench.run.launchers import process, torchrun
from bench.run.runner import Runner
from bench.util import files
from bench.util.errors import BenchError, UsageError
from tests.conftest import free_port, needs_two_cores, only_result, two_nodes
from tests.run.test_runner import FakeChild, ok_response

TOKEN = "0123456789abcdef" * 4  # 64 hex digits, as secrets.token_hex(32) makes


# --- bench rerun: machines and devices only from the command line ----------------------


def _crafted(tmp_path: Path) -> Path:
    """A result that names another machine's rendezvous (TEST-NET-3: nobody's)."""
    config = RunConfig(
        workload="tiny", device="cpu", devices=(1,), nnodes=2, rdzv_endpoint="203.0.113.5:29500",
        batch_sizes=(8,), steps=3,
    )  # fmt: skip
    return result.create(result.Result(config=config, command=["bench", "tiny"]), tmp_path)


def _rerun_config(monkeypatch, *argv: str) -> tuple[RunConfig, int]:
    """What `bench rerun ...` would run (nothing runs: run_and_print is replaced)."""
    seen = {}

    def run_and_print(config, args, resume=None, runner_class=None):
        seen["config"] = config
        return 2, None, None

    monkeypatch.setattr(rerun, "run_and_print", run_and_print)
    code = cli.main(["rerun", *argv])
    return seen["config"], code


def test_a_rerun_never_joins_the_rendezvous_a_file_names(tmp_path, monkeypatch, capsys):
    path = _crafted(tmp_path)
    assert result.load(path).config.rdzv_endpoint == "203.0.113.5:29500"
    config, _ = _rerun_config(monkeypatch, str(path), "--output-dir", str(tmp_path / "b"))
    assert config.nnodes == 1 and config.node_rank == 0 and config.rdzv_endpoint is None
    assert all(point.rdzv_endpoint is None for point in config.points())
    said = capsys.readouterr().out
    assert "the saved run used 2 machines; this rerun runs on this one only" in said
    assert "203.0.113.5" not in said
    # what to train still comes from the file
    assert (config.workload, config.batch_sizes, config.steps) == ("tiny", (8,), 3)


def test_a_rerun_on_several_machines_takes_them_from_its_own_command_line(tmp_path, monkeypatch):
    path = _crafted(tmp_path)
    config, _ = _rerun_config(
        monkeypatch, str(path), "--nnodes", "2", "--node-rank", "1",
        "--rdzv-endpoint", "10.0.0.1:29500", "--output-dir", str(tmp_path / "b"),
    )  # fmt: skip
    assert (config.nnodes, config.node_rank, config.rdzv_endpoint) == (2, 1, "10.0.0.1:29500")


# --- a rank's share: JSON within a bound, never a pickle -------------------------------


def test_a_share_is_json_and_anything_else_is_refused_in_one_line():
    data = ranks.encode_share({"rank": 1, "step_times_s": [0.1, 0.2]})
    assert ranks.decode_share(1, data) == {"rank": 1, "step_times_s": [0.1, 0.2]}
    import pickle

    for sent, why in [
        (pickle.dumps({"rank": 1}), "not JSON"),
        (b"[1, 2]", "a list, not a JSON object"),
        (b"[" * 100_000 + b"]" * 100_000, "not JSON"),
        (b"\xff\xfe", "not JSON"),
    ]:
        with pytest.raises(BenchError, match=why) as error:
            ranks.decode_share(3, sent)
        assert str(error.value).startswith("rank 3 ") and "\n" not in str(error.value)
    ranks.check_share_sizes([10, ranks.MAX_SHARE_BYTES])
    with pytest.raises(BenchError, match=r"rank 1 \(1,099,511,627,776 bytes\) announced"):
        ranks.check_share_sizes([10, 2**40])
    with pytest.raises(BenchError, match=r"rank 0 \(-5 bytes\)"):
        ranks.check_share_sizes([-5, 10])


def test_a_share_is_read_typed_and_one_that_claims_too_much_is_refused():
    """What rank 0 reads of a peer: its own rank, a node, a host, a Response's figures
    (the pipe's checks); anything else one line naming the rank."""
    from bench.result.response import Response

    share = RankShare(1, 0, "m1", Response(status="ok", step_times_s=(0.1, 0.2)), True)
    sent = json.loads(ranks.encode_share(share.to_json()))
    assert RankShare.from_json(1, sent) == share
    for change, why in [
        ({"rank": 0}, "names another rank"),
        ({"rank": True}, "names another rank"),
        ({"node": -1}, "node is not a whole number"),
        ({"host": "m1\x1b]52;c;"}, "host is not a name"),
        ({"host": "h" * 300}, "host is not a name"),
        ({"leads_node": "yes"}, "leads_node is not true or false"),
        ({"answer": {"status": "ok", "step_times_s": ["0.1"]}}, "not a rank's figures"),
        ({"answer": {"status": "ok", "step_times_s": [-1.0]}}, "not a rank's figures"),
        ({"answer": {"status": "ok", "exec": "x"}}, "not a rank's figures"),
        ({"extra": 1}, "other fields"),
    ]:
        with pytest.raises(BenchError, match=why) as error:
            RankShare.from_json(1, {**sent, **change})
        assert str(error.value).startswith("rank 1 sent a share") and "\n" not in str(error.value)


_PEER = """
import json, os, pickle, sys
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
marker = sys.argv[1]
if dist.get_rank() == 1:  # a hostile peer speaking all_gather_object's own wire format
    class Payload:
        def __reduce__(self):
            return (exec, (f"open({marker!r}, 'w').close()",))
    data = pickle.dumps(Payload())
    sizes = [torch.zeros(1, dtype=torch.long) for _ in range(2)]
    dist.all_gather(sizes, torch.tensor([len(data)], dtype=torch.long))
    longest = int(max(sizes))
    padded = torch.zeros(longest, dtype=torch.uint8)
    padded[: len(data)] = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    dist.all_gather([torch.empty_like(padded) for _ in range(2)], padded)
    # then a length no rank should allocate
    dist.all_gather([torch.zeros(1, dtype=torch.long) for _ in range(2)],
                    torch.tensor([2**40], dtype=torch.long))
else:
    from types import SimpleNamespace
    from bench.frameworks.torch import TorchSession
    from bench.parallel.ranks import Rank, RankShare
    from bench.result.response import Response
    me = SimpleNamespace(rank=Rank(0, 0, 2, 2, 0), device=torch.device("cpu"))
    mine = RankShare(0, 0, "x" * 200, Response(status="ok", step_times_s=(0.1,) * 400))
    for _ in range(2):
        try:
            got = TorchSession.gather(me, mine)
            print(json.dumps({"got": repr(got)[:200]}), flush=True)
        except Exception as error:
            print(json.dumps({"error": str(error)}), flush=True)
os._exit(0)
"""


def test_a_peer_that_sends_a_pickle_runs_no_code_and_is_refused(tmp_path):
    """Two real gloo ranks; rank 1 sends what all_gather_object would unpickle."""
    marker = tmp_path / "pwned"
    port = str(free_port())
    peers = [
        subprocess.Popen(
            [sys.executable, "-c", _PEER, str(marker)],
            env={
                **os.environ,
                "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": port,
                "RANK": str(r),
                "WORLD_SIZE": "2",
                "LOCAL_RANK": str(r),
            },
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for r in (0, 1)
    ]
    outputs = [peer.communicate(timeout=120) for peer in peers]
    assert [peer.returncode for peer in peers] == [0, 0], outputs
    said = [json.loads(line) for line in outputs[0][0].splitlines()]
    assert not marker.exists(), "the peer's pickle ran code in rank 0"
    assert said[0] == {"error": "rank 1 sent a share that is not JSON (UnicodeDecodeError): "
                                "refused"}, said  # fmt: skip
    assert said[1]["error"].startswith("rank 1 (1,099,511,627,776 bytes) announced a share")


# --- several machines: every rank proves it knows the secret ---------------------------


def _ranks_with(tokens: list[str | None]) -> list[str | None]:
    """ranks.authenticate on len(tokens) ranks (threads exchanging through a barrier):
    None where a rank passed, else its one-line error."""
    world = len(tokens)
    slots: list = [None] * world
    barrier = threading.Barrier(world)
    outcome: list[str | None] = [None] * world

    def exchange_for(r):
        def exchange(mine):
            slots[r] = json.loads(ranks.encode_share(mine))
            barrier.wait()
            everyone = [dict(s) for s in slots]
            barrier.wait()
            return everyone

        return exchange

    def one(r):
        try:
            ranks.authenticate(exchange_for(r), tokens[r], Rank(r, 0, world, 1, r))
        except BenchError as error:
            outcome[r] = str(error)

    threads = [threading.Thread(target=one, args=(r,)) for r in range(world)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return outcome


def test_ranks_that_share_the_secret_pass_and_one_that_does_not_is_named_by_all():
    assert _ranks_with([TOKEN, TOKEN, TOKEN]) == [None, None, None]
    other = "f" * 64
    said = _ranks_with([TOKEN, TOKEN, other])
    assert said[0] == said[1]
    assert said[0].startswith("rank 2 did not prove it knows this run's BENCH_RDZV_TOKEN")
    assert said[2].startswith("rank 0, rank 1 did not prove")
    unset = _ranks_with([TOKEN, None])
    assert unset[0].startswith("rank 1 did not prove")
    assert unset[1].startswith("BENCH_RDZV_TOKEN is not set on this machine (node 1)")
    assert all("\n" not in line and TOKEN not in line for line in said + unset if line)


def test_a_proof_cannot_be_replayed_in_another_run():
    """A peer that replays a proof it saw (another run's nonces) is refused."""
    seen: dict = {}

    def honest(mine):
        seen.setdefault("nonces", [])
        if "nonce" in mine:
            seen["round1"] = [mine, {"nonce": "a" * 32}]
            return seen["round1"]
        nonces = [s["nonce"] for s in seen["round1"]]
        seen["proof1"] = ranks._proof(TOKEN, 1, 2, nonces)
        return [mine, {"proof": seen["proof1"]}]

    ranks.authenticate(honest, TOKEN, Rank(0, 0, 2, 1, 0))  # a genuine peer passes

    def replay(mine):
        if "nonce" in mine:
            return [mine, {"nonce": "a" * 32}]
        return [mine, {"proof": seen["proof1"]}]  # last run's proof: rank 0's nonce is new

    with pytest.raises(BenchError, match="rank 1 did not prove"):
        ranks.authenticate(replay, TOKEN, Rank(0, 0, 2, 1, 0))


def test_several_machines_without_a_secret_are_refused_in_one_line(tmp_path, monkeypatch):
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    config = RunConfig(
        "tiny", device="cpu", devices=(1,), nnodes=2, rdzv_endpoint="127.0.0.1:1",
        batch_sizes=(8,),
    )  # fmt: skip
    child = FakeChild(lambda p, n: ok_response())
    with pytest.raises(UsageError) as error:
        Runner(config, tmp_path / "out", spawn=child).run()
    line = str(error.value)
    assert line.startswith("BENCH_RDZV_TOKEN: 2 machines need a shared secret") and "\n" not in line
    assert "export BENCH_RDZV_TOKEN=" in line
    assert child.calls == [] and not (tmp_path / "out").exists()
    monkeypatch.setenv(TOKEN_ENV, "short")
    with pytest.raises(UsageError, match="use 32 to 1024 printable characters"):
        Runner(config, tmp_path / "out", spawn=child).run()


def test_one_machine_needs_no_secret_and_its_children_never_see_one(monkeypatch):
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    seen = []

    class Stop(Exception):
        pass

    def popen(argv, **kwargs):
        seen.append(kwargs["env"])
        raise Stop

    monkeypatch.setattr(process.subprocess, "Popen", popen)
    monkeypatch.setattr(torchrun.subprocess, "Popen", popen)
    from bench.config.run_config import PointConfig

    for spawn, point in [
        (process.spawn_worker, PointConfig("tiny")),
        (torchrun.spawn_ranks, PointConfig("tiny", devices=2, batch_size=8)),
    ]:
        with pytest.raises(Stop):
            spawn(point, "measure", lambda *a: None)
    several = PointConfig("tiny", devices=1, nnodes=2, rdzv_endpoint="10.0.0.1:29500", batch_size=8)
    with pytest.raises(Stop):
        torchrun.spawn_ranks(several, "measure", lambda *a: None)
    assert [TOKEN_ENV in env for env in seen] == [False, False, True]


@pytest.mark.slow
@needs_two_cores
def test_a_machine_with_another_secret_is_stopped_before_training(tmp_path):
    nodes = two_nodes(tmp_path, (TOKEN, "e" * 64))
    outputs = [node.communicate(timeout=300)[0] for node in nodes]
    assert [node.returncode for node in nodes] == [1, 1], outputs
    point = only_result(tmp_path / "n0")["points"][0]
    assert point["status"] == "error"
    assert point["error"].startswith(
        "rank 0: rank 1 did not prove it knows this run's BENCH_RDZV_TOKEN"
    ), point["error"]
    assert "rank 0 did not prove" in outputs[1]
    saved = next((tmp_path / "n0").glob("*.json")).read_text()
    assert TOKEN not in saved and TOKEN not in "".join(outputs)


# --- concurrent runs in one folder --------------------------------------------------------


def test_two_runs_in_the_same_second_keep_both_files(tmp_path, monkeypatch):
    monkeypatch.setattr(result.io, "default_name", lambda config, when=None: "same.json")
    config = RunConfig(workload="tiny", batch_sizes=(8,))
    for step in (0.1, 0.2):
        Runner(config, tmp_path, spawn=FakeChild(lambda p, n, s=step: ok_response(s))).run()
    saved = sorted(tmp_path.glob("*.json"))
    assert [p.name for p in saved] == ["same-2.json", "same.json"]
    steps = sorted(result.load(p).points[0].step_times_s[0][0] for p in saved)
    assert steps == [0.1, 0.2]
    assert not list(tmp_path.glob(".*.lock"))  # every claim released


def test_what_bench_creates_is_never_writable_by_everyone(tmp_path):
    old = os.umask(0)
    try:
        folder = files.require_writable_dir(tmp_path / "results", "output-dir")
        files.replace(folder / "r.json", "{}")
    finally:
        os.umask(old)
    assert folder.stat().st_mode & 0o777 == 0o755
    assert (folder / "r.json").stat().st_mode & 0o777 == 0o664


def test_a_file_claim_is_exclusive_and_released(tmp_path):
    path = tmp_path / "r.json"
    first, second = files.FileClaim(path), files.FileClaim(path)
    assert first.acquire() and not second.acquire()
    first.release()
    assert second.acquire() and not files.FileClaim(path).acquire()
    second.release()
    assert not list(tmp_path.iterdir())
