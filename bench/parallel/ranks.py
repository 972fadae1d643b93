"""Which rank this process is, as torchrun tells it in the environment; what ranks
send each other (JSON, bounded: never a pickle, whose bytes a peer could make run
code); and how ranks on several machines prove they belong to one run."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from bench.result.response import InvalidResponse, Response
from bench.util.errors import BenchError, UsageError

# The run's shared secret on every machine of a run with several (never on a command
# line, which `ps` shows and the result records, nor in a result or a log).
TOKEN_ENV = "BENCH_RDZV_TOKEN"
TOKEN_MIN, TOKEN_MAX = 32, 1024  # characters: 32 hex digits are 128 bits
_TOKEN_HOW = (
    f"set the same secret on every machine, e.g. export {TOKEN_ENV}=$(python3 -c "
    "'import secrets; print(secrets.token_hex(32))')"
)
# The most one rank may send the others: every step time of a long run on a dataset
# (90 epochs of ImageNet at batch 256: about 450,000 steps) fits many times over.
MAX_SHARE_BYTES = 64 * 2**20
_NONCE = re.compile(r"[0-9a-f]{32}")
# One rank's message in each round of the proof: a fixed size that every rank allocates
# world size times, never a length a peer announces (not yet proven, it could claim any).
PROOF_BYTES = 256
_ADDRESS_MAX = 128  # characters of a rank's own address in its first message


@dataclass(frozen=True)
class Rank:
    rank: int  # global: 0 .. world_size - 1; rank 0 reports the point
    local_rank: int  # on this machine: also the device index
    world_size: int
    local_world_size: int
    node: int  # the machine: torchrun's group rank (--node-rank with its static rendezvous)

    @property
    def leads_node(self) -> bool:
        """The rank that speaks for its machine: its provenance, its energy counters."""
        return self.local_rank == 0

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> Rank | None:
        """This process's rank under torchrun, or None outside it."""
        if "WORLD_SIZE" not in env or "LOCAL_RANK" not in env:
            return None
        return cls(
            rank=int(env["RANK"]),
            local_rank=int(env["LOCAL_RANK"]),
            world_size=int(env["WORLD_SIZE"]),
            local_world_size=int(env.get("LOCAL_WORLD_SIZE", "1")),
            node=int(env.get("GROUP_RANK", "0")),
        )


def current() -> Rank | None:
    """This process's rank when bench's torchrun launcher started it (a WORLD_SIZE left
    in the environment by some other job does not make a plain child a rank)."""
    return Rank.from_env() if "BENCH_REPORT_ADDR" in os.environ else None


# What rank 0 keeps of each rank: enough to see a straggler, a node's provenance and
# its energy; not every rank's whole response.
_HOST_MAX = 253  # characters of a host name (DNS's longest)


@dataclass(frozen=True)
class RankShare:
    """One rank's part of a point, sent to rank 0 as JSON (never a pickle) and read back
    typed: its figures are a Response's own fields, checked by the rules a child's pipe
    is (bench.result.response), since a rank may be another machine's."""

    rank: int
    node: int
    host: str
    # Step times, peak memory and binding; where the rank speaks for its machine
    # (Rank.leads_node), also that machine's environment, energy and power before.
    answer: Response
    leads_node: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"rank": self.rank, "node": self.node, "host": self.host,
                "leads_node": self.leads_node, "answer": self.answer.to_json()}  # fmt: skip

    @classmethod
    def from_json(cls, sender: int, value: dict[str, Any]) -> RankShare:
        """Rank `sender`'s share, or one line saying what in it is refused."""

        def refused(why: str) -> BenchError:
            return BenchError(f"rank {sender} sent a share {why}: refused")

        if set(value) != {"rank", "node", "host", "leads_node", "answer"}:
            raise refused("with other fields than rank, node, host, leads_node, answer")
        rank, node, host = value["rank"], value["node"], value["host"]
        if rank != sender or type(rank) is not int:
            raise refused(f"that names another rank ({str(rank)[:20]!r})")
        if type(node) is not int or not 0 <= node < 2**16:
            raise refused("whose node is not a whole number from 0 to 65,535")
        if not isinstance(host, str) or not 0 < len(host) <= _HOST_MAX or not host.isprintable():
            raise refused(f"whose host is not a name of 1 to {_HOST_MAX} printable characters")
        if type(value["leads_node"]) is not bool:
            raise refused("whose leads_node is not true or false")
        try:
            answer = Response.from_json(value["answer"])
        except InvalidResponse as error:
            raise refused(f"that is not a rank's figures ({error})") from None
        return cls(rank, node, host, answer, value["leads_node"])


def share(response: Response, rank: Rank, host: str) -> RankShare:
    """This rank's part of the point, for rank 0 to gather."""
    mine = Response(
        status="ok",
        binding=response.binding,
        step_times_s=response.step_times_s,
        peak_memory_bytes=response.peak_memory_bytes,
    )
    if rank.leads_node:
        mine = replace(
            mine,
            environment=response.environment,
            energy=response.energy,
            energy_unavailable=response.energy_unavailable,
            power_before=response.power_before,
        )
    return RankShare(rank.rank, rank.node, host, mine, rank.leads_node)


# Provenance that must match on every machine of one point, or the result says so.
_SAME_ON_EVERY_NODE = (
    ("accelerator", "accelerator"),
    ("accelerator", "accelerator_count"),
    ("accelerator", "driver_version"),
    ("cpu", "model"),
    ("framework", "name"),
    ("framework", "torch"),
    ("framework", "torch_cuda"),
    ("framework", "torch_hip"),
    ("image", "name"),
    ("image", "digest"),
    ("image", "lock_sha256"),
    ("bench", "version"),
)


def _energy(nodes: list[RankShare]) -> tuple[dict[str, Any] | None, str | None]:
    """Every machine's energy window summed, device names prefixed by machine; the
    machines without a counter named."""
    if len(nodes) == 1:  # one machine: its window as it is
        return nodes[0].answer.energy, nodes[0].answer.energy_unavailable
    windows = [(n.node, n.answer.energy) for n in nodes]
    missing = [f"node {node}: {n.answer.energy_unavailable or 'no reading'}"
               for (node, e), n in zip(windows, nodes, strict=True) if not e]  # fmt: skip
    read = [(node, e) for node, e in windows if e]
    if not read:
        return None, "; ".join(missing) or None
    total: dict[str, Any] = {
        "window_s": read[0][1]["window_s"],
        "per_device_j": {},
        "sources": {},
        "epoch_j": None,
    }
    for node, energy in read:
        for device, joules in energy["per_device_j"].items():
            total["per_device_j"][f"node{node}/{device}"] = joules
        for device, kind in energy["sources"].items():
            total["sources"][f"node{node}/{device}"] = kind
        if energy.get("epoch_j"):
            epochs = total["epoch_j"] or [0.0] * len(energy["epoch_j"])
            total["epoch_j"] = [a + b for a, b in zip(epochs, energy["epoch_j"], strict=False)]
    return total, ("not counted on " + "; ".join(missing)) if missing else None


def _fact(environment: dict[str, Any], section: str, key: str) -> str:
    return json.dumps((environment.get(section) or {}).get(key), sort_keys=True)


def merge(shares: list[RankShare], response: Response) -> Response:
    """Rank 0's response for the whole point: its own step times (the global pace,
    every rank synchronised), every rank's mean step and the slowest rank's steps, the
    largest per-rank peak memory, every machine's provenance and energy."""
    shares = sorted(shares, key=lambda s: s.rank)
    steps = [s.answer.step_times_s for s in shares]
    means = [sum(times) / len(times) if times else None for times in steps]
    slowest = max(range(len(shares)), key=lambda i: means[i] or 0.0)
    peaks = [s.answer.peak_memory_bytes for s in shares if s.answer.peak_memory_bytes is not None]
    nodes = [s for s in shares if s.leads_node]  # each machine's local rank 0
    energy, energy_unavailable = _energy(nodes)
    merged = replace(
        response,
        devices=len(shares),
        peak_memory_bytes=max(peaks) if peaks else response.peak_memory_bytes,
        ranks={
            "world_size": len(shares),
            "nodes": len(nodes),
            "hosts": [s.host for s in shares],
            "mean_step_s": means,
            "slowest_rank": shares[slowest].rank,
            "slowest_step_times_s": list(steps[slowest]),
            "bindings": [s.answer.binding for s in shares],
        },
        energy=energy,
        energy_unavailable=energy_unavailable,
    )
    if len(nodes) > 1 and response.environment:
        environments = [n.answer.environment or {} for n in nodes]
        differ = sorted(
            f"{section}.{key}"
            for section, key in _SAME_ON_EVERY_NODE
            if len({_fact(e, section, key) for e in environments}) > 1
        )
        power = {}
        for node in nodes:
            for device, reading in (node.answer.power_before or {}).items():
                power[f"node{node.node}/{device}"] = reading
        merged = replace(
            merged,
            environment={**response.environment, "nodes": environments, "nodes_differ": differ},
            power_before=power or None,
        )
    return merged


# --- what ranks send each other --------------------------------------------------------


def encode_share(value: dict[str, Any]) -> bytes:
    """One rank's share as UTF-8 JSON: plain data the others decode, never code."""
    data = json.dumps(value, separators=(",", ":")).encode()
    if len(data) > MAX_SHARE_BYTES:
        raise BenchError(f"this rank's share is {len(data):,} bytes; at most {MAX_SHARE_BYTES:,}")
    return data


def check_share_sizes(sizes: list[int]) -> None:
    """Every rank's announced length, before anything that large is allocated."""
    bad = [f"rank {r} ({n:,} bytes)" for r, n in enumerate(sizes) if not 0 < n <= MAX_SHARE_BYTES]
    if bad:
        raise BenchError(
            f"{', '.join(bad)} announced a share outside 1 to {MAX_SHARE_BYTES:,} bytes: refused"
        )


def decode_share(rank: int, data: bytes) -> dict[str, Any]:
    """Rank `rank`'s share: a JSON object, or one line saying it is not one."""
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        reason = type(error).__name__
        raise BenchError(f"rank {rank} sent a share that is not JSON ({reason}): refused") from None
    if not isinstance(value, dict):
        raise BenchError(f"rank {rank} sent a {type(value).__name__}, not a JSON object: refused")
    return value


# --- several machines: every rank proves it knows the run's secret ----------------------


def rdzv_token(env: Mapping[str, str], nnodes: int) -> str:
    """The shared secret of a run on several machines, or one line saying how to set it."""
    token = env.get(TOKEN_ENV, "")
    if not token:
        raise UsageError(
            f"{TOKEN_ENV}: {nnodes} machines need a shared secret, so that only they can join "
            f"node 0's rendezvous; {_TOKEN_HOW}"
        )
    if not TOKEN_MIN <= len(token) <= TOKEN_MAX or not token.isprintable() or " " in token:
        raise UsageError(
            f"{TOKEN_ENV}: use {TOKEN_MIN} to {TOKEN_MAX} printable characters without spaces "
            f"(it is {len(token)} long); {_TOKEN_HOW}"
        )
    return token


@dataclass(frozen=True)
class Secret:
    """What this rank's proof is made with: the run's BENCH_RDZV_TOKEN on several
    machines, the parent's token of this point (BENCH_REPORT_TOKEN) on one."""

    value: str | None = field(repr=False)
    name: str


_held: list[Secret] = []


def hold(secret: Secret) -> None:
    """Keep the secret the worker took out of its environment, for the session to prove
    with right after its process group forms (bench.frameworks.torch)."""
    _held[:] = [secret]


def held() -> Secret | None:
    return _held[0] if _held else None


@dataclass(frozen=True)
class Group:
    """The group as this rank joined it, bound into every proof: torchrun's rendezvous id,
    the store every rank met at (MASTER_ADDR:MASTER_PORT) and this rank's own address
    toward that store (which the others see in its first message)."""

    run_id: str
    endpoint: str
    address: str

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> Group:
        host, port = env.get("MASTER_ADDR", ""), env.get("MASTER_PORT", "")
        return cls(env.get("TORCHELASTIC_RUN_ID", ""), f"{host}:{port}", _own_address(host, port))


def _own_address(host: str, port: str) -> str:
    """This machine's name and the address its packets to `host` leave from (a UDP
    socket's connect sends nothing), or only the name where that cannot be told."""
    name = socket.gethostname()
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.connect((host, int(port or 0)))
            return f"{name}/{probe.getsockname()[0]}"[:_ADDRESS_MAX]
    except (OSError, ValueError, OverflowError):
        return name[:_ADDRESS_MAX]


def encode_proof(message: dict[str, Any]) -> bytes:
    """One message of the proof as exactly PROOF_BYTES of JSON (space-padded)."""
    data = json.dumps(message, separators=(",", ":")).encode()
    if len(data) > PROOF_BYTES:
        raise BenchError(f"a proof message is {len(data)} bytes; at most {PROOF_BYTES}")
    return data.ljust(PROOF_BYTES)


def decode_proof(data: bytes) -> dict[str, Any]:
    """A peer's proof message, or {} where it is none (then it proves nothing)."""
    if len(data) != PROOF_BYTES:
        return {}
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _proof(token: str, rank: int, world_size: int, nonces: list[Any], bound: tuple = ()) -> str:
    """HMAC-SHA256 under the token of this rank's place, every rank's nonce and what the
    proof is `bound` to (the group: rendezvous id, store, every rank's address)."""
    message = json.dumps(["bench-rdzv-1", rank, world_size, nonces, *bound]).encode()
    return hmac.new(token.encode(), message, hashlib.sha256).hexdigest()


def _proves(token: str, rank: int, world: int, nonces: list[Any], bound: tuple, proof: Any) -> bool:
    """Whether `proof` is rank `rank`'s, made with `token`, over a well-formed nonce."""
    nonce = nonces[rank]
    if not isinstance(nonce, str) or not _NONCE.fullmatch(nonce) or not isinstance(proof, str):
        return False
    expected = _proof(token, rank, world, nonces, bound).encode()
    return hmac.compare_digest(proof.encode("utf-8", "replace"), expected)


Exchange = Callable[[dict[str, Any]], list[dict[str, Any]]]


def authenticate(
    exchange: Exchange,
    token: str | None,
    rank: Rank,
    group: Group | None = None,
    name: str = TOKEN_ENV,
) -> None:
    """Every rank proves to every other that it knows the run's secret (`name`), right
    after the process group forms, before any model or parameter: each sends a fresh
    nonce (and its own address), then an HMAC of the secret over all the nonces, its
    own rank and the `group` as it joined it. A proof cannot be replayed (it covers the
    verifier's own fresh nonce), does not reveal the secret, and made in one group (its
    rendezvous id, its store, its members' addresses) it fails in another. Every rank
    takes part in both rounds, then each decides alone, and all that see a bad proof
    stop with one line naming the rank: no peer is left waiting. `exchange` gathers one
    small JSON object from every rank, in rank order (PROOF_BYTES each: TorchSession)."""
    nonce = secrets.token_hex(16)
    first = (
        {"nonce": nonce} if group is None else {"nonce": nonce, "at": group.address[:_ADDRESS_MAX]}
    )
    said = exchange(first)
    nonces = [s.get("nonce") for s in said]
    bound = () if group is None else (group.run_id, group.endpoint, [s.get("at") for s in said])
    mine = _proof(token, rank.rank, rank.world_size, nonces, bound) if token else ""
    proofs = [s.get("proof") for s in exchange({"proof": mine})]
    if not token:
        raise BenchError(f"{name} is not set on this machine (node {rank.node}); {_TOKEN_HOW}")
    world = rank.world_size
    if len(nonces) != world or len(proofs) != world or said[rank.rank] != first:
        raise BenchError("the ranks' proofs of this run's secret came back altered: stopped")
    failed = [
        r
        for r in range(world)
        if r != rank.rank and not _proves(token, r, world, nonces, bound, proofs[r])
    ]
    if failed:
        names = ", ".join(f"rank {r}" for r in failed)
        raise BenchError(
            f"{names} did not prove it knows this run's {name}: stopped before training "
            "(a machine with another secret, or one that is not yours, joined the rendezvous)"
        )
