"""Which rank this process is, as torchrun tells it in the environment."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


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
def share(response: dict[str, Any], rank: Rank, host: str) -> dict[str, Any]:
    """This rank's part of the point, for rank 0 to gather."""
    mine: dict[str, Any] = {
        "rank": rank.rank,
        "node": rank.node,
        "host": host,
        "binding": response.get("binding"),
        "step_times_s": response.get("step_times_s") or [],
        "peak_memory_bytes": response.get("peak_memory_bytes"),
    }
    if rank.leads_node:
        mine.update(
            environment=response.get("environment"),
            energy=response.get("energy"),
            energy_unavailable=response.get("energy_unavailable"),
            power_before=response.get("power_before"),
        )
    return mine


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


def _energy(nodes: list[dict[str, Any]]) -> tuple[dict[str, Any] | None, str | None]:
    """Every machine's energy window summed, device names prefixed by machine; the
    machines without a counter named."""
    if len(nodes) == 1:  # one machine: its window as it is
        return nodes[0].get("energy"), nodes[0].get("energy_unavailable")
    windows = [(n["node"], n.get("energy")) for n in nodes]
    missing = [f"node {node}: {n.get('energy_unavailable') or 'no reading'}"
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


def merge(shares: list[dict[str, Any]], response: dict[str, Any]) -> dict[str, Any]:
    """Rank 0's response for the whole point: its own step times (the global pace,
    every rank synchronised), every rank's mean step and the slowest rank's steps, the
    largest per-rank peak memory, every machine's provenance and energy."""
    shares = sorted(shares, key=lambda s: s["rank"])
    means = [sum(s["step_times_s"]) / len(s["step_times_s"]) if s["step_times_s"] else None
             for s in shares]  # fmt: skip
    slowest = max(range(len(shares)), key=lambda i: means[i] or 0.0)
    peaks = [s["peak_memory_bytes"] for s in shares if s["peak_memory_bytes"] is not None]
    nodes = [s for s in shares if "environment" in s]  # each machine's local rank 0
    merged = {
        **response,
        "devices": len(shares),
        "peak_memory_bytes": max(peaks) if peaks else response.get("peak_memory_bytes"),
        "ranks": {
            "world_size": len(shares),
            "nodes": len(nodes),
            "hosts": [s["host"] for s in shares],
            "mean_step_s": means,
            "slowest_rank": shares[slowest]["rank"],
            "slowest_step_times_s": shares[slowest]["step_times_s"],
            "bindings": [s["binding"] for s in shares],
        },
    }
    if "energy" in response:
        merged["energy"], merged["energy_unavailable"] = _energy(nodes)
    if len(nodes) > 1 and response.get("environment"):
        environments = [n.get("environment") or {} for n in nodes]
        differ = sorted(
            f"{section}.{key}"
            for section, key in _SAME_ON_EVERY_NODE
            if len({_fact(e, section, key) for e in environments}) > 1
        )
        merged["environment"] = {
            **response["environment"],
            "nodes": environments,
            "nodes_differ": differ,
        }
        power = {}
        for node in nodes:
            for device, reading in (node.get("power_before") or {}).items():
                power[f"node{node['node']}/{device}"] = reading
        merged["power_before"] = power or None
    return merged
