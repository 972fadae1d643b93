"""A bare hand-written training loop of bench's Llama 3 decoders: the peer that
benchmarks/llm_overhead.py runs beside bench. It imports nothing of bench.

It does what bench does for a llama3 point and nothing else: the same model (copied
below, not imported: the peer must not move when bench's package does; a test checks
that both build the same weights and logits), the same random-token batch per rank
made once, the same loss, the same optimizer and the same mixed precision. Over
several ranks (under torchrun) it shards the model with FSDP2 as bench.parallel.fsdp
does: built on the meta device, fully_shard per block (the last block not resharded
after its forward), then the root, parameters in bf16 when asked and gradients reduced
in fp32, each rank pinned to an equal share of the CPUs with that many threads. One
process is one plain model, bf16 by autocast (bench's one-rank point is no rank
either). It times steps the plain way: synchronise (and a barrier) after warm-up, read
the clock once, run every measured step, synchronise, read it again.

It takes bench's three decoder levers, written plainly, so that bench's
overhead can be measured lever by lever: --attention holds scaled_dot_product_attention
to one kernel (sdpa_kernel); --loss chunked sums the cross-entropy over chunks of 1,024
tokens, each chunk's output projection recomputed in the backward (checkpoint);
--pad-vocab N pads the embedding and output rows to a multiple of N and slices the
padded logits off before the loss.

    python benchmarks/llm_peer.py --size llama3-tiny --batch-size 4 --steps 10
    python -m torch.distributed.run --standalone --nproc-per-node 2 \\
        benchmarks/llm_peer.py --size llama3-tiny --batch-size 4 --precision bf16

Rank 0 prints one JSON line: global tokens/s and what it ran.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.checkpoint import checkpoint


class Size(NamedTuple):
    dim: int
    layers: int
    heads: int
    kv_heads: int
    ffn: int
    tied: bool
    max_seq_len: int
    vocab: int = 128_256
    rope_theta: float = 500_000.0
    norm_eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        return self.dim // self.heads


SIZES = {
    "llama3-1b": Size(2048, 16, 32, 8, 8192, tied=True, max_seq_len=131_072),
    "llama3-8b": Size(4096, 32, 32, 8, 14_336, tied=False, max_seq_len=131_072),
    "llama3-tiny": Size(64, 2, 4, 2, 192, tied=False, max_seq_len=256, vocab=512),
}

# --- the model: bench/workloads/llama3/torch.py, line for line ---------------------------

KERNELS = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
           "cudnn": SDPBackend.CUDNN_ATTENTION, "math": SDPBackend.MATH}  # fmt: skip
CHUNK_TOKENS = 1024  # --loss chunked: tokens per chunk


def rotary_table(size: Size, device: torch.device | None = None) -> torch.Tensor:
    half = size.head_dim // 2
    frequencies = size.rope_theta ** (
        -torch.arange(half, device=device, dtype=torch.float32) / half
    )
    angles = torch.outer(
        torch.arange(size.max_seq_len, device=device, dtype=torch.float32), frequencies
    )
    return torch.stack((angles.cos(), angles.sin()), dim=-2)


def rotate(x: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    pairs = x.float().unflatten(-1, (-1, 2))
    cos, sin = table[: x.shape[1], None, 0], table[: x.shape[1], None, 1]
    even, odd = pairs[..., 0], pairs[..., 1]
    rotated = torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1)
    return rotated.flatten(-2).type_as(x)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        normed = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
        return normed.type_as(x) * self.weight


class Attention(nn.Module):
    def __init__(self, size: Size, kernel: str = "auto") -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = size.heads, size.kv_heads, size.head_dim
        self.kernel = kernel
        self.wq = nn.Linear(size.dim, size.heads * size.head_dim, bias=False)
        self.wk = nn.Linear(size.dim, size.kv_heads * size.head_dim, bias=False)
        self.wv = nn.Linear(size.dim, size.kv_heads * size.head_dim, bias=False)
        self.wo = nn.Linear(size.heads * size.head_dim, size.dim, bias=False)

    def forward(self, x: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        batch, length, _ = x.shape
        q = rotate(self.wq(x).view(batch, length, self.heads, self.head_dim), table)
        k = rotate(self.wk(x).view(batch, length, self.kv_heads, self.head_dim), table)
        v = self.wv(x).view(batch, length, self.kv_heads, self.head_dim)
        repeat = self.heads // self.kv_heads
        k, v = (t.repeat_interleave(repeat, dim=2) for t in (k, v))
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        if self.kernel == "auto":
            attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            with sdpa_kernel(KERNELS[self.kernel]):
                attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(attended.transpose(1, 2).reshape(batch, length, -1))


class FeedForward(nn.Module):
    def __init__(self, size: Size) -> None:
        super().__init__()
        self.w1 = nn.Linear(size.dim, size.ffn, bias=False)
        self.w2 = nn.Linear(size.ffn, size.dim, bias=False)
        self.w3 = nn.Linear(size.dim, size.ffn, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, size: Size, kernel: str = "auto") -> None:
        super().__init__()
        self.attention_norm = RMSNorm(size.dim, size.norm_eps)
        self.attention = Attention(size, kernel)
        self.ffn_norm = RMSNorm(size.dim, size.norm_eps)
        self.feed_forward = FeedForward(size)

    def forward(self, x: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.attention_norm(x), table)
        return x + self.feed_forward(self.ffn_norm(x))


class Llama(nn.Module):
    rotary: torch.Tensor

    def __init__(
        self, size: Size, kernel: str = "auto", chunked: bool = False, pad_vocab: int = 0
    ) -> None:
        super().__init__()
        self.size, self.chunked = size, chunked
        rows = -(-size.vocab // pad_vocab) * pad_vocab if pad_vocab else size.vocab
        self.embedding = nn.Embedding(rows, size.dim)
        self.layers = nn.ModuleDict({str(i): Block(size, kernel) for i in range(size.layers)})
        self.norm = RMSNorm(size.dim, size.norm_eps)
        self.output = None if size.tied else nn.Linear(size.dim, rows, bias=False)
        self.register_buffer("rotary", rotary_table(size), persistent=False)
        self.init_weights()

    @torch.no_grad()
    def init_weights(self, device: torch.device | None = None) -> None:
        if self.rotary.device.type != "meta" or device is not None:
            self.rotary = rotary_table(self.size, device or self.rotary.device)
        depth_std = 0.02 / math.sqrt(2 * self.size.layers)
        for name, parameter in self.named_parameters():
            if name.endswith("norm.weight"):
                nn.init.ones_(parameter)
            elif name.endswith(("wo.weight", "w2.weight")):
                nn.init.normal_(parameter, std=depth_std)
            else:
                nn.init.normal_(parameter, std=0.02)

    def forward(self, tokens: torch.Tensor, targets: torch.Tensor | None = None) -> torch.Tensor:
        """The real vocabulary's logits; given targets, the mean next-token loss."""
        x = self.embedding(tokens)
        for block in self.layers.values():
            x = block(x, self.rotary)
        x = self.norm(x)
        weight = self.embedding.weight if self.output is None else self.output.weight
        vocab = self.size.vocab
        if targets is None:
            return (x @ weight.T)[..., :vocab]
        x, targets = x.flatten(0, 1), targets.flatten()
        if not self.chunked:
            return F.cross_entropy((x @ weight.T)[..., :vocab].float(), targets)

        def chunk_loss(h: torch.Tensor, w: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
            return F.cross_entropy((h @ w.T)[..., :vocab].float(), t, reduction="sum")

        total = x.new_zeros((), dtype=torch.float32)
        for start in range(0, len(targets), CHUNK_TOKENS):
            end = start + CHUNK_TOKENS
            total = total + checkpoint(chunk_loss, x[start:end], weight, targets[start:end],
                                       use_reentrant=False)  # fmt: skip
        return total / len(targets)


# --- the training loop ---------------------------------------------------------------------

# The optimizers a plain loop would write: AdamW as torchtitan trains decoders (lr 3e-4,
# betas (0.9, 0.95), weight decay 0.1, the fused kernel: CPU and CUDA have one), as
# bench's decoders train; SGD with momentum, bench's default for other workloads.
OPTIMIZERS = {
    "sgd": lambda params: torch.optim.SGD(params, lr=0.01, momentum=0.9),
    "adamw": lambda params: torch.optim.AdamW(
        params, lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=True
    ),
}


def describe(optimizer: torch.optim.Optimizer) -> str:
    """'SGD(lr=0.01, momentum=0.9)', as bench's details.optimizer writes it."""
    names = ("lr", "momentum", "betas", "weight_decay", "fused", "foreach")
    settings = ", ".join(f"{n}={optimizer.defaults[n]}" for n in names if optimizer.defaults.get(n))
    return f"{type(optimizer).__name__}({settings})"


def checkpoint_blocks(model: Llama, mode: str) -> None:
    """Activation checkpointing as bench applies it: every block (full) or every other
    one from the first (selective), before FSDP2."""
    if mode == "none":
        return
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

    for index, (name, block) in enumerate(list(model.layers.named_children())):
        if mode == "full" or index % 2 == 0:
            model.layers.register_module(name, checkpoint_wrapper(block, preserve_rng_state=False))


def shard(model: Llama, world_size: int, device_type: str, param_dtype: torch.dtype | None):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    mesh = init_device_mesh(device_type, (world_size,))
    policy = MixedPrecisionPolicy(param_dtype=param_dtype, reduce_dtype=torch.float32)
    blocks = list(model.layers.children())
    for index, block in enumerate(blocks):
        fully_shard(
            block, mesh=mesh, mp_policy=policy, reshard_after_forward=index < len(blocks) - 1
        )
    fully_shard(model, mesh=mesh, mp_policy=policy)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="llama3-tiny", choices=sorted(SIZES))
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--batch-size", type=int, default=4, help="GLOBAL, split over ranks")
    parser.add_argument("--seq-len", type=int, default=64)
    parser.add_argument("--precision", default="fp32", choices=("fp32", "bf16"))
    parser.add_argument("--optimizer", default="adamw", choices=sorted(OPTIMIZERS))
    parser.add_argument(
        "--activation-checkpointing", default="none", choices=("none", "selective", "full")
    )
    parser.add_argument("--attention", default="auto", choices=("auto", *KERNELS))
    parser.add_argument("--loss", default="plain", choices=("plain", "chunked"))
    parser.add_argument("--pad-vocab", type=int, default=0, help="0: unpadded")
    parser.add_argument("--threads", type=int, help="intra-op threads (default: as bench)")
    parser.add_argument("--warmup-steps", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    size = SIZES[args.size]
    if args.steps < 1 or args.warmup_steps < 0:
        parser.error("--steps: at least 1; --warmup-steps: at least 0")
    if args.pad_vocab < 0:
        parser.error("--pad-vocab: 0 (unpadded) or a positive multiple")
    if not 0 < args.seq_len <= size.max_seq_len:
        parser.error(f"--seq-len: {args.seq_len}; {args.size} takes 1 to {size.max_seq_len}")

    ranked = "WORLD_SIZE" in os.environ and "LOCAL_RANK" in os.environ
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1")) if ranked else 1
    if args.batch_size % world:
        parser.error(f"--batch-size: {args.batch_size} does not split over {world} ranks")
    device = torch.device(args.device)
    if ranked:
        import torch.distributed as dist

        local, local_world = int(os.environ["LOCAL_RANK"]), int(os.environ["LOCAL_WORLD_SIZE"])
        if device.type == "cuda":
            device = torch.device("cuda", local)
            torch.cuda.set_device(device)
        else:  # an equal share of the CPUs, as bench binds a CPU rank
            usable = sorted(os.sched_getaffinity(0))
            share = len(usable) // local_world
            os.sched_setaffinity(0, usable[local * share : (local + 1) * share])
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    if args.threads:
        torch.set_num_threads(args.threads)
    elif ranked and device.type == "cpu":  # torchrun's OMP_NUM_THREADS=1 undone, as bench
        torch.set_num_threads(len(os.sched_getaffinity(0)))
    torch.manual_seed(args.seed)

    amp_dtype = torch.bfloat16 if args.precision == "bf16" else None
    levers = (args.attention, args.loss == "chunked", args.pad_vocab)
    if ranked:
        with torch.device("meta"):
            model = Llama(size, *levers)
        checkpoint_blocks(model, args.activation_checkpointing)
        shard(model, world, device.type, amp_dtype)
        model.to_empty(device=device)
        model.init_weights(device)
        amp_dtype = None  # FSDP2's policy casts the parameters; no autocast
    else:
        model = Llama(size, *levers)
        checkpoint_blocks(model, args.activation_checkpointing)
        model = model.to(device)
    optimizer = OPTIMIZERS[args.optimizer](model.parameters())

    generator = torch.Generator().manual_seed(args.seed + 1_000_003 * rank)
    local_batch = args.batch_size // world
    tokens = torch.randint(0, size.vocab, (local_batch, args.seq_len + 1), generator=generator)
    inputs, targets = tokens[:, :-1].to(device), tokens[:, 1:].to(device)

    def step() -> torch.Tensor:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=amp_dtype, enabled=amp_dtype is not None):
            loss = model(inputs, targets)
        loss.backward()
        optimizer.step()
        return loss.detach()

    def synchronize() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize()
        if ranked:
            dist.barrier()

    for _ in range(args.warmup_steps):
        step()
    synchronize()
    start = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    synchronize()
    elapsed = time.perf_counter() - start
    if rank == 0:
        figures = {
            "tokens_per_s": args.batch_size * args.seq_len * args.steps / elapsed,
            "unit": "tokens/s",
            "ranks": world,
            "threads": torch.get_num_threads(),
            "optimizer": describe(optimizer),
            "loss_last": float(loss),
            "attention": args.attention,
            "loss": args.loss,
            "pad_vocab": args.pad_vocab,
        }
        print(json.dumps(figures), flush=True)
    if ranked:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
