"""The NUMA nodes Linux shows in sysfs, read in one place: for the provenance (how many
nodes), the CPU ranks' binding (each rank within a node) and numactl's (-m: the nodes
of the CPUs a child runs on)."""

from __future__ import annotations

from pathlib import Path

NODES = Path("/sys/devices/system/node")


def node_cpus(root: Path = NODES) -> dict[int, list[int]]:
    """The CPUs of each node, by node number in order; {} where the kernel shows no
    nodes (not Linux, or a container that hides them). A node with memory and no CPUs
    has an empty list."""
    nodes: dict[int, list[int]] = {}
    for node in sorted(root.glob("node[0-9]*"), key=lambda p: int(p.name[4:])):
        try:
            text = node.joinpath("cpulist").read_text().strip()
        except OSError:
            continue
        cpus: list[int] = []
        for part in filter(None, text.split(",")):
            low, _, high = part.partition("-")
            cpus += range(int(low), int(high or low) + 1)
        nodes[int(node.name[4:])] = cpus
    return nodes
