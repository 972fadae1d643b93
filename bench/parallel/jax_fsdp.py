"""FSDP for JAX: every array of the training state (parameters and optimizer state
alike) sharded along one mesh axis over all devices, the batch along the same axis.

Nothing here touches the model: apply_fsdp reads only the shapes of a state (abstract,
from jax.eval_shape, so nothing is allocated whole) and returns a NamedSharding for each
array. The session builds the state under jit with those shardings as out_shardings and
compiles its step with them as in and out shardings; XLA's SPMD partitioner then inserts
the all-gathers of the parameters before their use and the reduce-scatters of the
gradients, as FSDP does by hand.

Each array is split along its largest dimension that the device count divides (the
first of equal ones); one that no dimension divides (a scalar, a small odd vector) is
replicated.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jax.sharding import Mesh, PartitionSpec

NAME = "fsdp"


def shard_dimension(shape: Sequence[int], devices: int) -> int | None:
    """The dimension of `shape` to split over `devices`, or None (replicate)."""
    divisible = [(size, -index) for index, size in enumerate(shape)
                 if size >= devices and size % devices == 0]  # fmt: skip
    return -max(divisible)[1] if divisible else None


def partition_spec(shape: Sequence[int], devices: int, axis: str) -> PartitionSpec:
    from jax.sharding import PartitionSpec

    split = shard_dimension(shape, devices)
    return PartitionSpec(*(axis if index == split else None for index in range(len(shape))))


def apply_fsdp(state: Any, mesh: Mesh, axis: str = "data") -> tuple[Any, dict[str, Any]]:
    """Shardings for every array of `state` (a pytree of arrays or ShapeDtypeStructs)
    over `mesh`'s `axis`, and what was applied, for the point's details."""
    import jax
    from jax.sharding import NamedSharding

    devices = mesh.shape[axis]
    shardings = jax.tree.map(
        lambda leaf: NamedSharding(mesh, partition_spec(leaf.shape, devices, axis)), state
    )
    leaves = jax.tree.leaves(state)
    whole = [leaf for leaf in leaves if shard_dimension(leaf.shape, devices) is None]
    return shardings, {
        "kind": NAME,
        "mesh": {axis: devices},
        "arrays_sharded": len(leaves) - len(whole),
        "arrays_replicated": len(whole),
        "elements_replicated": sum(int(leaf.size) for leaf in whole),
        "collectives": "inserted by XLA's SPMD partitioner (all-gather, reduce-scatter)",
    }
