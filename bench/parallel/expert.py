"""Expert parallelism: a mixture of experts' experts split over ranks, tokens sent to
the rank that holds their expert and back by all-to-all (torch.distributed's
all_to_all_single), as torchtitan and Megatron train MoEs.

Applied to the plain model (built on the meta device) before FSDP2 shards the rest:
each MoE layer keeps experts [first, first + experts/N) of its rank's group of N, and
its exchange becomes an AllToAll. The world is a (replicas, N) mesh: ranks r and r+N
hold the same experts, so their experts are FSDP2-sharded over the replica dimension
(one rank when N is the world: nothing to share), with the gradient divided by the
world, as every other gradient is (each rank's loss is the mean of its own tokens).
The other parameters are the session's to shard (bench.parallel.fsdp, every rank).

The all-to-all's time is measured where it runs, forward and backward: by the
platform's timing events where it has them (Platform.torch_timing_event: CUDA's and
ROCm's, read after the steps, not synchronising them), else by the host's clock (gloo's
all_to_all_single on a CPU returns when the data has arrived).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from bench.util.errors import BenchError

if TYPE_CHECKING:
    import torch
    from torch import nn

NAME = "expert-parallel"


class AllToAll:
    """The exchange of one MoE layer over its expert-parallel group: rows sorted by
    global expert go to the ranks holding those experts, come back in the same order."""

    def __init__(
        self,
        group: Any,
        parallel: int,
        backend: str,
        timing_event: Callable[[], Any] | None = None,
    ) -> None:
        """timing_event: the platform's maker of timing events (record, synchronize,
        elapsed_time in ms: Platform.torch_timing_event); None: the host's clock."""
        self.group, self.parallel = group, parallel
        self.describe = f"all_to_all_single over {parallel} ranks ({backend})"
        self.seconds = 0.0
        self._event = timing_event
        self._events: list[tuple[Any, Any]] = []

    def _timed(self, run: Callable[[], Any]) -> None:
        if self._event is not None:
            start, end = self._event(), self._event()
            start.record()
            run()
            end.record()
            self._events.append((start, end))
        else:
            began = time.perf_counter()
            run()
            self.seconds += time.perf_counter() - began

    def elapsed(self) -> float:
        """Seconds in this layer's all-to-alls so far (timing events read once done)."""
        for start, end in self._events:
            end.synchronize()
            self.seconds += start.elapsed_time(end) / 1000
        self._events.clear()
        return self.seconds

    def send(self, rows: torch.Tensor, out_sizes: list[int], in_sizes: list[int]) -> torch.Tensor:
        return _AllToAllFunction.apply(rows, out_sizes, in_sizes, self)

    def __call__(self, rows: torch.Tensor, counts: list[int], experts: Any, grouped: bool):
        import torch
        import torch.distributed as dist

        per_rank = len(counts) // self.parallel
        in_sizes = [sum(counts[r * per_rank : (r + 1) * per_rank]) for r in range(self.parallel)]
        mine = torch.tensor(counts, dtype=torch.int64, device=rows.device)
        theirs = torch.empty_like(mine)  # what each peer sends for each of my experts
        self._timed(lambda: dist.all_to_all_single(theirs, mine, group=self.group))
        table = theirs.view(self.parallel, per_rank)
        out_sizes = table.sum(1).tolist()
        check_counts(out_sizes, int(table.min()), rows.shape[0])
        arrived = self.send(rows, out_sizes, in_sizes)  # by source rank, then expert
        expert_of_row = torch.arange(per_rank, device=rows.device).repeat(self.parallel)
        expert_of_row = expert_of_row.repeat_interleave(table.flatten())
        order = expert_of_row.argsort(stable=True)  # by expert, then source rank
        done = experts(arrived[order], table.sum(0).tolist(), grouped)
        return self.send(done[order.argsort()], in_sizes, out_sizes)


def check_counts(out_sizes: list[int], smallest: int, most: int) -> None:
    """A peer's announced rows, checked before this rank allocates them: every rank
    routes the same number of rows (its share of the global batch times top-k), so no
    peer sends more than this rank routes, nor a negative count."""
    if smallest < 0 or max(out_sizes) > most:
        raise BenchError(
            f"expert parallelism: a peer announced {max(out_sizes)} rows (smallest count "
            f"{smallest}); each rank routes {most}, so at most {most} and none negative: "
            "stopped"
        )


def _all_to_all_function():
    import torch
    import torch.distributed as dist

    class AllToAllFunction(torch.autograd.Function):
        """all_to_all_single with its backward the reverse exchange, both timed."""

        @staticmethod
        def forward(ctx, rows, out_sizes, in_sizes, exchange):
            ctx.sizes, ctx.exchange = (out_sizes, in_sizes), exchange
            out = rows.new_empty((sum(out_sizes), *rows.shape[1:]))
            exchange._timed(lambda: dist.all_to_all_single(
                out, rows.contiguous(), out_sizes, in_sizes, group=exchange.group))  # fmt: skip
            return out

        @staticmethod
        def backward(ctx, grad):
            out_sizes, in_sizes = ctx.sizes
            back = grad.new_empty((sum(in_sizes), *grad.shape[1:]))
            group = ctx.exchange.group
            ctx.exchange._timed(lambda: dist.all_to_all_single(
                back, grad.contiguous(), in_sizes, out_sizes, group=group))  # fmt: skip
            return back, None, None, None

    return AllToAllFunction


class _Lazy:
    """The autograd Function, built on first use (torch stays a lazy import)."""

    function: Any = None

    def apply(self, *args: Any) -> Any:
        if _Lazy.function is None:
            _Lazy.function = _all_to_all_function()
        return _Lazy.function.apply(*args)


_AllToAllFunction = _Lazy()


def apply_expert_parallel(
    model: nn.Module,
    parallel: int,
    device_type: str,
    param_dtype: torch.dtype | None = None,
    timing_event: Callable[[], Any] | None = None,
) -> dict[str, Any]:
    """Split every MoE layer's experts (modules with `experts` holding `count` and
    `first`, and an `exchange`) over groups of `parallel` ranks; the process group must
    be up. timing_event: the platform's maker of timing events for the all-to-alls
    (None: the host's clock). Returns what was applied, for the point's details."""
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    world, rank = dist.get_world_size(), dist.get_rank()
    replicas = world // parallel
    with torch.device("cpu"):  # the mesh's rank table, not the model's (meta) device
        mesh = init_device_mesh(device_type, (replicas, parallel),
                                mesh_dim_names=("replica", "expert"))  # fmt: skip
    group = mesh.get_group("expert")
    position = rank % parallel  # the rank's place in its expert group (the mesh's inner dim)
    policy = MixedPrecisionPolicy(param_dtype=param_dtype, reduce_dtype=torch.float32)
    layers: list[Any] = [
        m for m in model.modules() if hasattr(m, "exchange") and hasattr(m, "experts")
    ]
    for layer in layers:
        experts: Any = layer.experts
        per_rank = experts.count // parallel
        first = position * per_rank
        for name, parameter in list(experts.named_parameters(recurse=False)):
            kept = torch.empty((per_rank, *parameter.shape[1:]), device=parameter.device,
                               dtype=parameter.dtype)  # fmt: skip
            setattr(experts, name, nn.Parameter(kept))
        experts.count, experts.first = per_rank, first
        layer.exchange = AllToAll(group, parallel, dist.get_backend(), timing_event)
        fully_shard(experts, mesh=mesh["replica"], mp_policy=policy)
        experts.set_gradient_divide_factor(float(world))
    return {
        "kind": NAME,
        "expert_parallel": parallel,
        "replicas": replicas,
        "layers": len(layers),
        "experts_per_rank": layers[0].experts.count if layers else 0,
        "exchange": "all_to_all_single, forward and backward",
        "experts_sharded_by": f"FSDP2 over {replicas} replica(s), gradients divided by {world}",
    }
