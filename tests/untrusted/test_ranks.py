"""What a point's ranks expose on this machine and to each other: a single-machine point
listens on loopback only, the rank report socket drops a stranger's bytes without a
traceback and bounds its connections, and ranks prove they belong to the point right
after their group forms, before any model is built, in messages of a fixed small size."""

from __future__ import annotations

import ipaddress
import json
import os
import socket
import subprocess
import sys
import threading
import time

import psutil
import pytest

from bench.parallel import ranks
from bench.parallel.ranks import Rank
from bench.run.launchers import torchrun
from bench.util.errors import BenchError
from tests.conftest import free_port, needs_two_cores, only_result
from tests.untrusted.test_peers import TOKEN

# --- the rank report socket ------------------------------------------------------------


def _listener(**bounds: int) -> tuple[torchrun._Listener, tuple[str, int], str]:
    server = socket.create_server(("127.0.0.1", 0))
    token = "ab" * 16
    listener = torchrun._Listener(server, token, lambda *a: None, **bounds)
    listener.start()
    return listener, server.getsockname(), token


@pytest.fixture
def thread_errors(monkeypatch):
    """Every exception that ends a thread (threading.excepthook), instead of stderr."""
    seen: list[str] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: seen.append(repr(args.exc_value)))
    return seen


def _closed_by_peer(conn: socket.socket, within_s: float) -> bool:
    conn.settimeout(within_s)
    try:
        return conn.recv(1) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def test_a_hello_of_stray_bytes_is_dropped_without_a_traceback(thread_errors):
    listener, address, token = _listener()
    try:
        for hello in [b"hello \xff\xfe\xfd 0 0\n", b"hello \xc3\xa9" + b"a" * 31 + b" 0 0\n",
                      b"\x00" * 5000, b"hello " + token.encode() + b" x y\n",
                      b"hello " + token.encode() + b" 0 " + b"9" * 5000 + b"\n"]:  # fmt: skip
            with socket.create_connection(address) as conn:
                conn.sendall(hello)
                assert _closed_by_peer(conn, 5), hello[:20]
        with socket.create_connection(address) as conn:  # a real rank is still heard
            conn.sendall(f"hello {token} 3 1\nready\n".encode())
            deadline = time.monotonic() + 5
            while 1 not in listener.ranks.set_up and time.monotonic() < deadline:
                time.sleep(0.01)
    finally:
        listener.close()
    assert listener.ranks.global_rank == {1: 3} and listener.ranks.set_up == {1}
    assert thread_errors == []


def test_connections_are_bounded_and_a_silent_one_times_out(monkeypatch, thread_errors):
    monkeypatch.setattr(torchrun, "HELLO_TIMEOUT_S", 0.5)
    listener, address, token = _listener(slots=2)
    try:
        held = [socket.create_connection(address) for _ in range(2)]
        time.sleep(0.2)  # both taken up by the listener
        extra = [socket.create_connection(address) for _ in range(20)]
        assert all(_closed_by_peer(conn, 2) for conn in extra)  # closed at once
        assert all(_closed_by_peer(conn, 3) for conn in held)  # silent: timed out
        with socket.create_connection(address) as conn:  # a slot again
            conn.sendall(f"hello {token} 0 0\nready\n".encode())
            time.sleep(0.3)
        for conn in held + extra:
            conn.close()
    finally:
        listener.close()
    assert listener.ranks.set_up == {0}
    assert thread_errors == []


def _drip_until_closed(conn: socket.socket, every_s: float, for_s: float) -> float | None:
    """Send one byte every `every_s` until the peer closes: how long that took (None if it
    never did within `for_s`)."""
    started = time.monotonic()
    while time.monotonic() - started < for_s:
        try:
            conn.sendall(b"h")
        except OSError:
            return time.monotonic() - started
        if _closed_by_peer(conn, every_s):
            return time.monotonic() - started
    return None


def test_a_hello_dripped_byte_by_byte_is_closed_by_a_total_deadline(monkeypatch, thread_errors):
    """The review's: one byte every few seconds held a slot for up to HELLO_MAX x
    HELLO_TIMEOUT_S, each read having the whole timeout. The hello now has it in all; a
    rank's hello sent in pieces within it is still heard."""
    monkeypatch.setattr(torchrun, "HELLO_TIMEOUT_S", 0.5)
    listener, address, token = _listener(slots=2)
    try:
        with socket.create_connection(address) as drip:
            took = _drip_until_closed(drip, every_s=0.1, for_s=3)
        assert took is not None and took < 1.5, took
        with socket.create_connection(address) as conn:  # a real rank, its hello in pieces
            hello = f"hello {token} 0 0\nready\n".encode()
            for piece in (hello[:3], hello[3:20], hello[20:]):
                conn.sendall(piece)
                time.sleep(0.1)
            deadline = time.monotonic() + 2
            while 0 not in listener.ranks.set_up and time.monotonic() < deadline:
                time.sleep(0.01)
    finally:
        listener.close()
    assert listener.ranks.set_up == {0}
    assert thread_errors == []


def test_closing_the_listener_returns_at_once_and_ends_its_thread():
    listener, address, _ = _listener()
    idle = socket.create_connection(address)  # a connection that never says hello
    time.sleep(0.1)
    started = time.monotonic()
    listener.close()
    took = time.monotonic() - started
    idle.close()
    assert took < 0.5, f"close() took {took:.2f} s"
    assert not listener.is_alive()


# --- a single machine's point: loopback only, and a stranger on the report socket ------


def _listening(root: psutil.Process) -> list[tuple[str, str]]:
    """(process name, address) of every listening TCP socket of `root` and its
    descendants."""
    found = []
    for proc in [root, *root.children(recursive=True)]:
        try:
            connections = proc.net_connections(kind="tcp")
            name = " ".join(proc.cmdline()[1:4])
        except psutil.Error:
            continue
        found += [(name, c.laddr.ip) for c in connections if c.status == psutil.CONN_LISTEN]
    return found


def _loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%")[0])
    mapped = getattr(ip, "ipv4_mapped", None)
    return (mapped or ip).is_loopback


def _report_address(root: psutil.Process) -> tuple[str, int] | None:
    for proc in root.children(recursive=True):
        try:
            value = proc.environ().get("BENCH_REPORT_ADDR")
        except psutil.Error:
            continue
        if value:
            host, _, port = value.rpartition(":")
            return host, int(port)
    return None


def _stranger(address: tuple[str, int]) -> None:
    """Stray bytes, then more connections than a point has ranks, on the report socket."""
    with socket.create_connection(address) as conn:
        conn.sendall(b"hello \xff\xfe\x80 0 0\n")
    extra = []
    for _ in range(30):
        try:
            extra.append(socket.create_connection(address, timeout=2))
        except OSError:
            break
    for conn in extra:
        conn.close()


@pytest.mark.slow
@needs_two_cores
def test_a_single_machine_point_listens_on_loopback_only_and_ignores_a_stranger(tmp_path):
    bench = subprocess.Popen(
        [sys.executable, "-m", "bench", "tiny", "--device", "cpu", "--devices", "2",
         "--batch-size", "8", "--steps", "1500", "--warmup-steps", "1",
         "--output-dir", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    root = psutil.Process(bench.pid)
    seen: set[tuple[str, str]] = set()
    stranger_done = False
    try:
        while bench.poll() is None:
            seen.update(_listening(root))
            address = None if stranger_done else _report_address(root)
            if address is not None and any("torch.distributed" in n or "launchers" in n
                                           for n, _ in seen):  # fmt: skip
                _stranger(address)
                stranger_done = True
            time.sleep(0.05)
        out, err = bench.communicate(timeout=300)
    finally:
        if bench.poll() is None:
            bench.kill()
    assert bench.returncode == 0, err + out
    assert stranger_done, "the point ended before the test could reach its report socket"
    launcher = [(n, a) for n, a in seen if "-m torch.distributed" in n or "launchers" in n]
    assert launcher, seen  # torchrun's own stores were seen listening
    exposed = sorted({(n, a) for n, a in seen if not _loopback(a)})
    assert exposed == [], f"listening beyond loopback: {exposed}"
    assert "Traceback" not in err and "Traceback" not in out, err
    assert only_result(tmp_path)["points"][0]["status"] == "ok"


# --- the proof: bound to the group, right after it forms, in small messages ------------


def _authenticate_all(tokens: list[str], groups: list[ranks.Group]) -> list[str | None]:
    """ranks.authenticate on len(tokens) ranks (threads, each message through the fixed
    PROOF_BYTES encoding): None where a rank passed, else its one-line error."""
    world = len(tokens)
    slots: list = [None] * world
    barrier = threading.Barrier(world)
    outcome: list[str | None] = [None] * world

    def exchange_for(r):
        def exchange(mine):
            data = ranks.encode_proof(mine)
            assert len(data) == ranks.PROOF_BYTES
            slots[r] = data
            barrier.wait()
            everyone = [ranks.decode_proof(s) for s in slots]
            barrier.wait()
            return everyone

        return exchange

    def one(r):
        try:
            ranks.authenticate(exchange_for(r), tokens[r], Rank(r, 0, world, 1, r), groups[r])
        except BenchError as error:
            outcome[r] = str(error)

    threads = [threading.Thread(target=one, args=(r,)) for r in range(world)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return outcome


def test_a_proof_is_bound_to_the_group_each_rank_joined():
    """A relay that joins one group and forwards an honest node's proof made in another
    (another rendezvous id or store) is refused; the same group passes."""
    here = ranks.Group(run_id="run-a", endpoint="10.0.0.1:29500", address="10.0.0.2")
    there = ranks.Group(run_id="run-a", endpoint="10.9.9.9:29500", address="10.0.0.2")
    assert _authenticate_all([TOKEN, TOKEN], [here, here]) == [None, None]
    said = _authenticate_all([TOKEN, TOKEN], [here, there])
    assert said[0].startswith("rank 1 did not prove it knows this run's BENCH_RDZV_TOKEN")
    other_run = ranks.Group(run_id="run-b", endpoint="10.0.0.1:29500", address="10.0.0.2")
    assert _authenticate_all([TOKEN, TOKEN], [here, other_run])[1].startswith("rank 0 did not")


def test_a_proof_message_is_fixed_and_small_and_garbage_is_no_message():
    data = ranks.encode_proof({"nonce": "a" * 32, "at": "h" * 128})
    assert len(data) == ranks.PROOF_BYTES <= 256
    assert ranks.decode_proof(data)["nonce"] == "a" * 32
    for garbage in [b"\xff" * 256, b"[1,2]".ljust(256), (b"[" * 200).ljust(256), b""]:
        assert ranks.decode_proof(garbage) == {}
    with pytest.raises(BenchError, match="proof message"):
        ranks.encode_proof({"nonce": "a" * 300})


_HUGE_CLAIM = """
import json, os, resource, sys
import torch
import torch.distributed as dist

if os.environ["RANK"] == "1":  # a peer without the secret, speaking the share protocol
    dist.init_process_group("gloo")
    claim = 64 * 2**20  # 'my share is 64 MiB': the length round of Session.gather
    for sent in ([claim] * 32, [0] * 32):  # two rounds of 256 bytes: the claim, no proof
        dist.all_gather([torch.zeros(32, dtype=torch.long) for _ in range(2)],
                        torch.tensor(sent, dtype=torch.long))
    os._exit(0)

from bench.parallel import ranks
from bench import registry
from bench.config.run_config import PointConfig
from bench.frameworks.torch import TorchSession

built = []
real = TorchSession._checkpointed
TorchSession._checkpointed = lambda self, model: built.append(1) or real(self, model)
if hasattr(ranks, "hold"):
    ranks.hold(ranks.Secret(sys.argv[1], ranks.TOKEN_ENV))
point = PointConfig("tiny", device="cpu", devices=1, nnodes=2, node_rank=0,
                    rdzv_endpoint="127.0.0.1:1", batch_size=8)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    TorchSession(point, registry.platform("cpu"), ranks.Rank(0, 0, 2, 1, 0))
    said = "set up"
except Exception as error:
    said = f"{type(error).__name__}: {error}"
grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps({"said": said, "built": bool(built), "grew_kib": grew}), flush=True)
os._exit(0)
"""


@pytest.mark.slow
def test_a_peer_that_claims_a_huge_share_is_refused_before_any_model_is_built():
    """Two real gloo ranks; rank 1 knows no secret and announces a 64 MiB message. Rank 0
    stops in the proof round, in one line, before any model or parameter broadcast,
    having allocated no more than the proof's fixed messages."""
    port = str(free_port())
    peers = [
        subprocess.Popen(
            [sys.executable, "-c", _HUGE_CLAIM, TOKEN],
            env={
                **os.environ,
                "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": port,
                "RANK": str(r),
                "WORLD_SIZE": "2",
                "LOCAL_RANK": str(r),
                "TORCHELASTIC_RUN_ID": "test",
            },
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for r in (0, 1)
    ]
    outputs = [peer.communicate(timeout=120) for peer in peers]
    said = json.loads(outputs[0][0].splitlines()[-1])
    assert not said["built"], said
    assert said["said"].startswith("BenchError: rank 1 did not prove"), said
    assert "\n" not in said["said"]
    assert said["grew_kib"] < 32 * 1024, said  # far below the 64 MiB claimed
