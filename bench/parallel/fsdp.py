"""FSDP2 (torch.distributed.fsdp.fully_shard) over every rank of a point.

Each transformer block is its own FSDP unit (its parameters all-gathered just before
its forward and backward, resharded after), then the root takes what is left (the
embedding, the final norm, the output layer). Mixed precision is FSDP2's policy, not
autocast: the parameters are cast to `param_dtype` when gathered, the sharded fp32
parameters stay the optimizer's, and gradients are reduced in `reduce_dtype`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bench.parallel import block_container

if TYPE_CHECKING:
    import torch
    from torch import nn

NAME = "fsdp2"


def blocks(model: nn.Module) -> list[nn.Module]:
    """The model's repeated blocks, each its own FSDP unit."""
    return list(block_container(model).children())


def apply_fsdp(
    model: nn.Module,
    world_size: int,
    device_type: str,
    param_dtype: torch.dtype | None = None,
    reduce_dtype: torch.dtype | None = None,
) -> dict[str, Any]:
    """Shard `model` in place over a 1-D mesh of `world_size` ranks (the process group
    must be up). Returns what was applied, for the point's details."""
    import torch
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    mesh = init_device_mesh(device_type, (world_size,))
    policy = MixedPrecisionPolicy(param_dtype=param_dtype, reduce_dtype=reduce_dtype)
    units = blocks(model)
    for index, block in enumerate(units):
        # The last block's parameters are gathered again at once for the backward:
        # keeping them saves an all-gather (torchtitan does the same).
        fully_shard(block, mesh=mesh, mp_policy=policy,
                    reshard_after_forward=index < len(units) - 1)  # fmt: skip
    fully_shard(model, mesh=mesh, mp_policy=policy)
    return {
        "kind": NAME,
        "units": len(units) + 1,
        "mesh": [world_size],
        "param_dtype": str(param_dtype or torch.float32),
        "reduce_dtype": str(reduce_dtype or torch.float32),
        "reshard_after_forward": "every block but the last",
    }


def materialize(model: nn.Module, device: torch.device) -> None:
    """Storage for a model built on the meta device and sharded: each rank allocates
    only its shards, then fills them (the model's init_weights(device), else each
    module's reset_parameters)."""
    model.to_empty(device=device)
    init = getattr(model, "init_weights", None)
    if init is not None:
        init(device)
        return
    for module in model.modules():
        reset = getattr(module, "reset_parameters", None)
        if reset is not None:
            reset()
