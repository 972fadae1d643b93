"""The mixture-of-experts decoder in plain PyTorch, as current trainers build it.

Attention is llama3's (RMSNorm, rotary positions, grouped-query attention through
scaled_dot_product_attention), with OLMoE's q/k norms and GPT-OSS's biases where the
shape has them. The feed-forward of every block is a MoE layer:

- a top-k softmax router (softmax over every expert, then the k largest; GPT-OSS
  rescales the k weights to sum to one) with the Switch/OLMoE load-balancing loss and
  the optional router z-loss, both added to the training loss by train_loss;
- dropless routing: each token's k copies sorted by expert, every expert's SwiGLU over
  its contiguous rows by torch.nn.functional.grouped_mm where this torch runs it for
  the device and dtype (bf16 on CUDA; fp32 and bf16 on the CPU in 2.14), else a loop over experts;
  which ran is recorded (moe_report);
- a capacity factor as an option (Size.capacity_factor): rows past an expert's capacity
  are dropped (the residual carries the token) and counted.

Expert parallelism replaces the layer's `exchange` (bench.parallel.expert): routing
stays here, the all-to-all goes there.
"""

from __future__ import annotations

import functools
import math
import operator
import zlib
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from bench.workloads._torch import adamw, next_token_batch, next_token_loss, next_token_pairs
from bench.workloads.llama3.torch import RMSNorm, rotary_table, rotate
from bench.workloads.moe import SIZES, Size

GROUPED = "torch.nn.functional.grouped_mm"
LOOP = "loop over experts"


def route(
    logits: torch.Tensor, top_k: int, renormalize: bool = False
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(weights, experts, probabilities) of (tokens, experts) router logits: softmax in
    float32 over every expert, then each token's top_k."""
    probabilities = logits.float().softmax(dim=-1)
    weights, experts = probabilities.topk(top_k, dim=-1)
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights, experts, probabilities


def balance_loss(
    probabilities: torch.Tensor, experts: torch.Tensor, assigned: torch.Tensor | None = None
) -> torch.Tensor:
    """Switch Transformer's load-balancing loss, as OLMoE and torchtitan: E x sum over
    experts of f_i x P_i, f_i the share of the token-to-expert assignments expert i got
    (counted, no gradient; `assigned`: that count where the caller has it), P_i its mean
    router probability. 1.0 when perfectly even."""
    count = probabilities.shape[-1]
    if assigned is None:
        assigned = torch.bincount(experts.flatten(), minlength=count)
    share = assigned.float() / experts.numel()
    return count * (share * probabilities.mean(dim=0)).sum()


def z_loss(logits: torch.Tensor) -> torch.Tensor:
    """ST-MoE's router z-loss: the mean squared log-sum-exp of the logits."""
    return torch.logsumexp(logits.float(), dim=-1).pow(2).mean()


_GROUPED_RUNS: dict[tuple[str, torch.dtype], str | None] = {}


def grouped_unavailable(device: torch.device, dtype: torch.dtype) -> str | None:
    """Why grouped_mm cannot run here (None: it can), tried once per device and dtype
    on a small problem, forward and backward (2.14 runs it on CUDA SM 80+ in bf16, and
    on the CPU in fp32 and bf16; its CPU backward fails on a gradient of stride 0)."""
    key = (device.type, dtype)
    if key not in _GROUPED_RUNS:
        grouped = getattr(F, "grouped_mm", None)
        if grouped is None:
            _GROUPED_RUNS[key] = f"torch {torch.__version__} has no grouped_mm"
        else:
            try:
                a = torch.ones(8, 16, device=device, dtype=dtype, requires_grad=True)
                b = torch.ones(2, 16, 16, device=device, dtype=dtype, requires_grad=True)
                offsets = torch.tensor([4, 8], device=device, dtype=torch.int32)
                grouped(a, b, offs=offsets).square().sum().backward()
                _GROUPED_RUNS[key] = None
            except (RuntimeError, NotImplementedError) as error:
                first = (str(error).strip().splitlines() or [""])[0][:120]
                _GROUPED_RUNS[key] = f"grouped_mm does not run on {device.type} in {dtype}: {first}"
    return _GROUPED_RUNS[key]


def _rows(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
    counts: list[int], offsets: torch.Tensor | None,
) -> torch.Tensor:  # fmt: skip
    """Each expert's rows times its (in, out) weight: one grouped matmul (offsets given)
    or a loop over experts."""
    if weight.dtype != x.dtype:  # a dtype's cast, not a no-op's call (bf16 autocast)
        weight = weight.to(x.dtype)
    if offsets is not None:
        out = F.grouped_mm(x, weight, offs=offsets)
        if bias is not None:
            out = out + bias.to(x.dtype).repeat_interleave(
                torch.tensor(counts, device=x.device), dim=0, output_size=x.shape[0]
            )
        return out
    parts, start = [], 0
    for expert, count in enumerate(counts):
        part = x[start : start + count] @ weight[expert]
        parts.append(part if bias is None else part + bias[expert].to(x.dtype))
        start += count
    return torch.cat(parts) if parts else x.new_zeros(0, weight.shape[-1])


class Experts(nn.Module):
    """`count` SwiGLU experts stored as (experts, in, out) tensors, as grouped GEMM takes
    them; `first`: the global index of expert 0 here (non-zero under expert parallelism)."""

    def __init__(self, size: Size, count: int, first: int = 0) -> None:
        super().__init__()
        self.count, self.first = count, first
        dim, ffn = size.dim, size.expert_ffn
        self.w1 = nn.Parameter(torch.empty(count, dim, ffn))  # gate
        self.w3 = nn.Parameter(torch.empty(count, dim, ffn))  # up
        self.w2 = nn.Parameter(torch.empty(count, ffn, dim))  # down
        self.b1 = nn.Parameter(torch.empty(count, ffn)) if size.bias else None
        self.b3 = nn.Parameter(torch.empty(count, ffn)) if size.bias else None
        self.b2 = nn.Parameter(torch.empty(count, dim)) if size.bias else None
        self.path: str | None = None  # GROUPED or LOOP, as last run
        self.why_loop: str | None = None

    def forward(self, x: torch.Tensor, counts: list[int], grouped: bool = True) -> torch.Tensor:
        """x: rows sorted by expert, counts[i] of them for expert i here."""
        reason = grouped_unavailable(x.device, x.dtype) if grouped else "asked for the loop"
        offsets = None
        if reason is None:
            ends = torch.tensor(counts, dtype=torch.int64).cumsum(0)
            offsets = ends.to(device=x.device, dtype=torch.int32)
        ran = (GROUPED, None) if reason is None else (LOOP, reason)
        if (self.path, self.why_loop) != ran:  # set once: a module's setattr is slow
            self.path, self.why_loop = ran
        gate = _rows(x, self.w1, self.b1, counts, offsets)
        up = _rows(x, self.w3, self.b3, counts, offsets)
        return _rows(F.silu(gate) * up, self.w2, self.b2, counts, offsets)


class LocalExchange:
    """One process: every expert is here; rows go to them and come back in place."""

    seconds = 0.0

    def __call__(self, rows: torch.Tensor, counts: list[int], experts: Experts, grouped: bool):
        return experts(rows, counts, grouped)


class Routing:
    """What a MoE layer's routing did, summed over its calls (a plain object: updated
    every step, outside nn.Module's slower attribute handling)."""

    def __init__(self, experts: int) -> None:
        self.tokens_per_expert = [0] * experts
        self.dropped = 0
        self.assignments = 0
        self.calls = 0
        self.aux_loss: torch.Tensor | None = None  # the last forward's

    def add(self, counts: list[int], assignments: int) -> None:
        before = self.tokens_per_expert
        self.tokens_per_expert = [a + b for a, b in zip(before, counts, strict=True)]
        self.assignments += assignments
        self.dropped += assignments - sum(counts)
        self.calls += 1


class MoE(nn.Module):
    def __init__(self, size: Size) -> None:
        super().__init__()
        self.size = size
        self.router = nn.Linear(size.dim, size.experts, bias=size.bias)
        self.experts = Experts(size, size.experts)
        self.exchange: Any = LocalExchange()
        self.grouped = True
        self.reset_stats()

    def reset_stats(self) -> None:
        self.routing = Routing(self.size.experts)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        size = self.size
        shape = x.shape
        flat = x.reshape(-1, shape[-1])
        logits = self.router(flat)
        weights, experts, probabilities = route(logits, size.top_k, size.renormalize)
        choices = experts.flatten()
        counts_t = torch.bincount(choices, minlength=size.experts)
        aux = size.balance_coef * balance_loss(probabilities, experts, counts_t)
        if size.z_coef:
            aux = aux + size.z_coef * z_loss(logits)
        self.routing.aux_loss = aux
        order = choices.argsort(stable=True)  # token order within each expert
        if size.capacity_factor is not None:
            order, counts_t = self._within_capacity(choices, order, counts_t)
        counts = counts_t.tolist()
        token = order // size.top_k
        out = self.exchange(flat[token], counts, self.experts, self.grouped)
        scale = weights.flatten()[order, None]
        out = out * (scale if scale.dtype == out.dtype else scale.to(out.dtype))
        combined = torch.zeros_like(flat, dtype=out.dtype).index_add_(0, token, out)
        self.routing.add(counts, choices.numel())
        if combined.dtype != x.dtype:
            combined = combined.type_as(x)
        return combined.reshape(shape)

    def _within_capacity(
        self, choices: torch.Tensor, order: torch.Tensor, counts: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The first `capacity` rows of each expert in token order; the rest dropped."""
        factor = self.size.capacity_factor or 1.0  # called only with a factor
        capacity = math.ceil(factor * choices.numel() / self.size.experts)
        starts = counts.cumsum(0) - counts
        sorted_experts = choices[order]
        position = torch.arange(order.numel(), device=order.device) - starts[sorted_experts]
        keep = position < capacity
        return order[keep], torch.bincount(sorted_experts[keep], minlength=self.size.experts)


class Attention(nn.Module):
    def __init__(self, size: Size) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = size.heads, size.kv_heads, size.head_dim
        q, kv = size.heads * size.head_dim, size.kv_heads * size.head_dim
        self.wq = nn.Linear(size.dim, q, bias=size.bias)
        self.wk = nn.Linear(size.dim, kv, bias=size.bias)
        self.wv = nn.Linear(size.dim, kv, bias=size.bias)
        self.wo = nn.Linear(q, size.dim, bias=size.bias)
        self.q_norm = RMSNorm(q, size.norm_eps) if size.qk_norm else None
        self.k_norm = RMSNorm(kv, size.norm_eps) if size.qk_norm else None

    def forward(self, x: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        batch, length, _ = x.shape
        q, k, v = self.wq(x), self.wk(x), self.wv(x)
        if self.q_norm is not None and self.k_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        q = rotate(q.view(batch, length, self.heads, self.head_dim), table)
        k = rotate(k.view(batch, length, self.kv_heads, self.head_dim), table)
        v = v.view(batch, length, self.kv_heads, self.head_dim)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        attended = F.scaled_dot_product_attention(
            q, k, v, is_causal=True, enable_gqa=self.heads != self.kv_heads
        )
        return self.wo(attended.transpose(1, 2).reshape(batch, length, -1))


class Block(nn.Module):
    def __init__(self, size: Size) -> None:
        super().__init__()
        self.attention_norm = RMSNorm(size.dim, size.norm_eps)
        self.attention = Attention(size)
        self.ffn_norm = RMSNorm(size.dim, size.norm_eps)
        self.moe = MoE(size)

    def forward(self, x: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.attention_norm(x), table)
        return x + self.moe(self.ffn_norm(x))


def _seed(name: str) -> int:
    return zlib.crc32(name.replace("_checkpoint_wrapped_module.", "").encode())


class MoEDecoder(nn.Module):
    rotary: torch.Tensor
    applied: dict[str, Any] | None = None  # what bench.parallel.expert applied

    def __init__(self, size: Size, seed: int = 0) -> None:
        super().__init__()
        self.size, self.seed = size, seed
        self.embedding = nn.Embedding(size.vocab, size.dim)
        self.layers = nn.ModuleDict({str(i): Block(size) for i in range(size.layers)})
        self.norm = RMSNorm(size.dim, size.norm_eps)
        self.output = nn.Linear(size.dim, size.vocab, bias=False)
        self.register_buffer("rotary", rotary_table(size), persistent=False)
        # The blocks as built (a wrapper, e.g. activation checkpointing's, keeps each
        # block's MoE): the routers' losses are read from them every step.
        self.blocks: tuple[Block, ...] = tuple(self.layers.values())  # type: ignore[arg-type]
        self.init_weights()

    def moe_layers(self) -> list[MoE]:
        return [block.moe for block in self.blocks]

    @torch.no_grad()
    def init_weights(self, device: torch.device | None = None) -> None:
        """Normal(0, 0.02), output projections scaled down by depth, norms at one, biases
        at zero: each tensor drawn whole from a generator seeded by its name and the
        seed, so that a sharded model (FSDP2's DTensor shards, expert parallelism's
        slice of the experts) holds exactly the one-process model's values."""
        if self.rotary.device.type != "meta" or device is not None:
            self.rotary = rotary_table(self.size, device or self.rotary.device)
        depth_std = 0.02 / math.sqrt(2 * self.size.layers)
        owners = {id(p): m for m in self.modules() for p in m.parameters(recurse=False)}
        for name, parameter in self.named_parameters():
            if parameter.device.type == "meta":
                continue
            owner = owners[id(parameter)]
            leaf = name.rsplit(".", 1)[-1]
            if name.endswith("norm.weight"):
                _fill(parameter, lambda shape, d: torch.ones(shape, device=d))
            elif leaf == "bias" or leaf in ("b1", "b2", "b3"):
                _fill(parameter, lambda shape, d: torch.zeros(shape, device=d))
            else:
                std = depth_std if leaf == "w2" or name.endswith("wo.weight") else 0.02
                first = owner.first if isinstance(owner, Experts) else None
                _fill(parameter, _normal(self.seed * 1_000_003 + _seed(name), std, first))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embedding(tokens)
        for block in self.layers.values():
            x = block(x, self.rotary)
        return self.output(self.norm(x))

    def aux_loss(self) -> torch.Tensor:
        """The routers' load-balancing and z-losses of the last forward, summed."""
        losses = [m.routing.aux_loss for m in self.moe_layers()]
        return functools.reduce(operator.add, [loss for loss in losses if loss is not None])


def _normal(seed: int, std: float, first: int | None):
    """A function (shape, device) -> N(0, std) values; for an experts' tensor, the slice
    from expert `first` of all `experts` drawn expert by expert."""

    def draw(shape: torch.Size, device: torch.device) -> torch.Tensor:
        if first is None:
            generator = torch.Generator(device=device).manual_seed(seed)
            return torch.randn(shape, generator=generator, device=device) * std
        parts = []
        for expert in range(first, first + shape[0]):
            generator = torch.Generator(device=device).manual_seed(seed + 7919 * expert)
            parts.append(torch.randn(shape[1:], generator=generator, device=device) * std)
        return torch.stack(parts)

    return draw


def _fill(parameter: nn.Parameter, make) -> None:
    """The parameter's whole value made by make(shape, device), then its share copied in
    (a DTensor's shard of it, or all of a plain tensor)."""
    from torch.distributed.tensor import DTensor, distribute_tensor

    if isinstance(parameter, DTensor):
        whole = make(parameter.shape, parameter.to_local().device)
        parameter.copy_(distribute_tensor(whole, parameter.device_mesh, parameter.placements))
    else:
        parameter.copy_(make(parameter.shape, parameter.device))


def moe_report(model: nn.Module, step_times_s: list[float] | None = None) -> dict[str, Any]:
    """What the point's details say of its experts: which matmul ran, tokens per expert
    and the balance (max over mean), dropped assignments, and the all-to-all's seconds
    (its share of the mean measured step where steps are given). Counts cover every
    step this process ran (warm-up included); under expert parallelism, this rank's."""
    layers = [m for m in model.modules() if isinstance(m, MoE)]
    if not layers:
        return {}
    tokens = torch.tensor([m.routing.tokens_per_expert for m in layers]).sum(0)
    exchange_s = sum(m.exchange.elapsed() for m in layers if hasattr(m.exchange, "elapsed"))
    assignments = sum(m.routing.assignments for m in layers)
    dropped = sum(m.routing.dropped for m in layers)
    applied = getattr(model, "applied", None)
    if applied is not None:  # every rank's tokens (a collective: every rank calls this)
        import torch.distributed as dist

        device = _device(model)
        totals = torch.cat([tokens, torch.tensor([assignments, dropped])]).to(device)
        dist.all_reduce(totals)
        slowest = torch.tensor([exchange_s], dtype=torch.float64, device=device)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        tokens, assignments, dropped = totals[:-2].cpu(), int(totals[-2]), int(totals[-1])
        exchange_s = float(slowest)
    mean = float(tokens.float().mean())
    experts = next(m.experts for m in layers)
    exchange = layers[0].exchange
    steps = max(1, layers[0].routing.calls)
    record: dict[str, Any] = {
        "expert_matmuls": experts.path,
        "why_loop": experts.why_loop,
        "experts": layers[0].size.experts,
        "top_k": layers[0].size.top_k,
        "tokens_per_expert": [int(t) for t in tokens],
        "balance_max_over_mean": (float(tokens.max()) / mean) if mean else None,
        "assignments": assignments,
        "dropped_assignments": dropped,
        "capacity_factor": layers[0].size.capacity_factor,
        "exchange": getattr(exchange, "describe", "local (one process)"),
        "expert_parallel": applied,
        "all_to_all_s_per_step": exchange_s / steps,
    }
    if step_times_s:
        mean_step = sum(step_times_s) / len(step_times_s)
        record["all_to_all_share"] = record["all_to_all_s_per_step"] / mean_step
    return record


def _device(model: nn.Module) -> torch.device:
    """Where the collectives' tensors go: the rotary table's device (the model's)."""
    rotary = getattr(model, "rotary", None)
    return rotary.device if isinstance(rotary, torch.Tensor) else torch.device("cpu")


def build_model(spec, point) -> nn.Module:
    """The model; under torchrun with --expert-parallel N, its experts split over groups
    of N ranks (bench.parallel.expert) before the session's FSDP2 shards the rest. (Here
    because the session calls the workload, not bench.parallel.expert: the parent counts
    parameters on one process, where every expert is built.)"""
    model = MoEDecoder(SIZES[spec.name], seed=point.seed)
    parallel = getattr(point, "expert_parallel", 1)
    if parallel > 1:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            from bench import registry
            from bench.parallel.expert import apply_expert_parallel

            dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp8": torch.bfloat16}
            platform = registry.platform(point.device)
            device_type = torch.device(platform.torch_device).type
            model.applied = apply_expert_parallel(
                model,
                parallel,
                device_type,
                dtype.get(point.precision),
                platform.torch_timing_event(),
            )
    return model


def train_loss(model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Next-token cross-entropy plus the routers' auxiliary losses (OLMoE's recipe)."""
    logits = model(inputs)
    plain: Any = getattr(model, "_orig_mod", model)  # torch.compile's wrapper
    return next_token_loss(logits, targets) + plain.aux_loss()


make_batch = next_token_batch
token_batch = next_token_pairs
loss = next_token_loss  # evaluation's loss: the language model's alone
optimizer = adamw
