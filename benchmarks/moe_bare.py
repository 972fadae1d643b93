"""bench's mixture-of-experts tokens/s next to a bare MoE training loop: the harness's cost.

The bare loop (this file with --bare; it imports nothing of bench) trains moe-tiny's
shape with the same maths written plainly: Llama-style attention, a top-k softmax
router with the Switch load-balancing loss and the router z-loss, dropless routing
with torch.nn.functional.grouped_mm (a loop over experts where it cannot run), AdamW
with bench's decoder settings; under torchrun with --expert-parallel N, the experts
split over N ranks and tokens exchanged with torch's functional all_to_all_single,
FSDP2 over the rest, each rank bound to an equal share of the CPUs as bench binds
a CPU rank. It reads the clock once around all measured steps.

The driver (no --bare) alternates fresh processes of bench and the bare loop for
--rounds and prints each side's global tokens/s and the paired ratio's median with its
95% interval (benchmarks/paired.py):

    python benchmarks/moe_bare.py --rounds 8 --threads 2
    python benchmarks/moe_bare.py --rounds 8 --devices 2 --expert-parallel 2 --threads 1
    python benchmarks/moe_bare.py --rounds 16 --threads 2 --allocator tcmalloc

--allocator preloads the same library into both sides (bench's --allocator, and the
same environment, from bench.run.runtime, for the bare loop). Under glibc's malloc this
model's speed is a property of each process: its steps page-fault as the heap grows
and shrinks, and fresh processes of the same loop land 10% apart (two modes, about
37k and 40-41k tokens/s on the 2-vCPU Xeon); under TCMalloc they land within about 3%.

Target: bench within 2% of the bare loop (median ratio >= 0.98). Not a test.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

# moe-tiny (bench/workloads/moe/__init__.py), written out again.
DIM, LAYERS, HEADS, KV_HEADS, HEAD_DIM = 64, 2, 4, 2, 16
EXPERTS, TOP_K, FFN, VOCAB = 8, 2, 32, 512
BALANCE, Z = 0.01, 0.001
THETA, EPS = 10_000.0, 1e-5
ADAMW = {"lr": 3e-4, "betas": (0.9, 0.95), "eps": 1e-8, "weight_decay": 0.1}


def bare(args: argparse.Namespace) -> None:
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch import nn

    ranked = "WORLD_SIZE" in os.environ
    world, rank = 1, 0
    if ranked:  # each rank on an equal share of the CPUs, as bench binds a CPU rank
        usable = sorted(os.sched_getaffinity(0))
        local, local_world = int(os.environ["LOCAL_RANK"]), int(os.environ["LOCAL_WORLD_SIZE"])
        share = len(usable) // local_world
        os.sched_setaffinity(0, usable[local * share : (local + 1) * share])
        dist.init_process_group("gloo")
        world, rank = dist.get_world_size(), dist.get_rank()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    parallel = args.expert_parallel if ranked else 1
    local = EXPERTS // parallel
    group = None
    if parallel > 1:
        from torch.distributed.device_mesh import init_device_mesh

        mesh = init_device_mesh("cpu", (world // parallel, parallel), mesh_dim_names=("r", "e"))
        group = mesh.get_group("e")

    def grouped_ok() -> bool:
        try:
            a = torch.ones(8, 16, requires_grad=True)
            b = torch.ones(2, 16, 16, requires_grad=True)
            F.grouped_mm(
                a, b, offs=torch.tensor([4, 8], dtype=torch.int32)
            ).square().sum().backward()
            return True
        except (AttributeError, RuntimeError):
            return False

    use_grouped = grouped_ok()

    def norm(x, w):
        return (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + EPS)).type_as(
            x
        ) * w

    half = HEAD_DIM // 2
    angles = torch.outer(torch.arange(args.seq_len, dtype=torch.float32),
                         THETA ** (-torch.arange(half, dtype=torch.float32) / half))  # fmt: skip
    cos, sin = angles.cos()[:, None, :], angles.sin()[:, None, :]

    def rope(x):
        pairs = x.float().unflatten(-1, (-1, 2))
        e, o = pairs[..., 0], pairs[..., 1]
        return torch.stack((e * cos - o * sin, e * sin + o * cos), -1).flatten(-2).type_as(x)

    def expert_mlp(x, w1, w3, w2, counts):
        if use_grouped:
            offs = torch.tensor(counts).cumsum(0).to(torch.int32)
            h = F.silu(F.grouped_mm(x, w1, offs=offs)) * F.grouped_mm(x, w3, offs=offs)
            return F.grouped_mm(h, w2, offs=offs)
        out, start = [], 0
        for e, n in enumerate(counts):
            rows = x[start : start + n]
            out.append((F.silu(rows @ w1[e]) * (rows @ w3[e])) @ w2[e])
            start += n
        return torch.cat(out)

    class Experts(nn.Module):  # a module: FSDP2 gathers its weights around forward()
        def __init__(self) -> None:
            super().__init__()
            for name, shape in (("w1", (DIM, FFN)), ("w3", (DIM, FFN)), ("w2", (FFN, DIM))):
                setattr(self, name, nn.Parameter(torch.randn(local, *shape) * 0.02))

        def forward(self, x, counts):
            return expert_mlp(x, self.w1, self.w3, self.w2, counts)

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.n1, self.n2 = nn.Parameter(torch.ones(DIM)), nn.Parameter(torch.ones(DIM))
            self.wq = nn.Linear(DIM, HEADS * HEAD_DIM, bias=False)
            self.wk = nn.Linear(DIM, KV_HEADS * HEAD_DIM, bias=False)
            self.wv = nn.Linear(DIM, KV_HEADS * HEAD_DIM, bias=False)
            self.wo = nn.Linear(HEADS * HEAD_DIM, DIM, bias=False)
            self.router = nn.Linear(DIM, EXPERTS, bias=False)
            self.experts = Experts()

        def forward(self, x):
            b, t, _ = x.shape
            h = norm(x, self.n1)
            q = rope(self.wq(h).view(b, t, HEADS, HEAD_DIM)).transpose(1, 2)
            k = rope(self.wk(h).view(b, t, KV_HEADS, HEAD_DIM)).transpose(1, 2)
            v = self.wv(h).view(b, t, KV_HEADS, HEAD_DIM).transpose(1, 2)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            x = x + self.wo(a.transpose(1, 2).reshape(b, t, -1))
            flat = norm(x, self.n2).reshape(-1, DIM)
            logits = self.router(flat)
            probs = logits.float().softmax(-1)
            weights, chosen = probs.topk(TOP_K, -1)
            counts = torch.bincount(chosen.flatten(), minlength=EXPERTS)
            aux = BALANCE * EXPERTS * ((counts.float() / chosen.numel()) * probs.mean(0)).sum()
            aux = aux + Z * torch.logsumexp(logits.float(), -1).pow(2).mean()
            order = chosen.flatten().argsort(stable=True)
            token = order // TOP_K
            rows = flat[token]
            e = self.experts
            local_only = group is None
            out = e(rows, counts.tolist()) if local_only else self._exchange(rows, counts, e)
            out = out * weights.flatten()[order, None]
            y = torch.zeros_like(flat).index_add_(0, token, out)
            return x + y.reshape(b, t, DIM), aux

        def _exchange(self, rows, counts, e):
            from torch.distributed._functional_collectives import all_to_all_single_autograd

            table = torch.empty_like(counts)
            dist.all_to_all_single(table, counts, group=group)
            table = table.view(parallel, local)
            send = counts.view(parallel, local).sum(1).tolist()
            recv = table.sum(1).tolist()
            got = all_to_all_single_autograd(rows, recv, send, group)
            ids = torch.arange(local).repeat(parallel).repeat_interleave(table.flatten())
            by_expert = ids.argsort(stable=True)
            done = e(got[by_expert], table.sum(0).tolist())
            return all_to_all_single_autograd(done[by_expert.argsort()], send, recv, group)

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embedding = nn.Embedding(VOCAB, DIM)
            self.layers = nn.ModuleList(Block() for _ in range(LAYERS))
            self.norm = nn.Parameter(torch.ones(DIM))
            self.output = nn.Linear(DIM, VOCAB, bias=False)

        def forward(self, tokens):
            x, aux = self.embedding(tokens), 0.0
            for block in self.layers:
                x, extra = block(x)
                aux = aux + extra
            return self.output(norm(x, self.norm)), aux

    model = Model()
    if ranked:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard

        everyone = init_device_mesh("cpu", (world,))
        for index, block in enumerate(model.layers):
            if parallel > 1:
                fully_shard(block.experts, mesh=mesh["r"])
                block.experts.set_gradient_divide_factor(float(world))
            # the last block's weights stay gathered for the backward that follows, as
            # bench (and torchtitan) shards a decoder
            fully_shard(block, mesh=everyone, reshard_after_forward=index < LAYERS - 1)
        fully_shard(model, mesh=everyone)
    optimizer = torch.optim.AdamW(model.parameters(), fused=True, **ADAMW)
    per_rank = args.batch_size // world
    generator = torch.Generator().manual_seed(args.seed + 1_000_003 * rank)
    tokens = torch.randint(0, VOCAB, (per_rank, args.seq_len + 1), generator=generator)
    inputs, targets = tokens[:, :-1], tokens[:, 1:]

    def step():
        optimizer.zero_grad(set_to_none=True)
        logits, aux = model(inputs)
        loss = F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten()) + aux
        loss.backward()
        optimizer.step()
        return loss

    for _ in range(args.warmup_steps):
        step()
    if ranked:
        dist.barrier()
    began = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    float(loss.detach())
    if ranked:
        dist.barrier()
    elapsed = time.perf_counter() - began
    if rank == 0:
        print(json.dumps({
            "tokens_per_s": args.batch_size * args.seq_len * args.steps / elapsed,
            "loss": float(loss.detach()), "matmul": "grouped_mm" if use_grouped else "loop",
            "threads": torch.get_num_threads(),
        }))  # fmt: skip


def _run(argv: list[str], what: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-20:])
        raise SystemExit(f"{what} failed (status {done.returncode}):\n{tail}")
    return done.stdout


def _shared(args: argparse.Namespace) -> list[str]:
    return ["--batch-size", str(args.batch_size), "--seq-len", str(args.seq_len),
            "--warmup-steps", str(args.warmup_steps), "--steps", str(args.steps),
            "--threads", str(args.threads)]  # fmt: skip


def measure_bench(args: argparse.Namespace) -> float:
    with tempfile.TemporaryDirectory() as out:
        argv = [sys.executable, "-m", "bench", "moe-tiny", "--device", "cpu", "--devices",
                str(args.devices), *_shared(args), "--output-dir", out, "--json"]  # fmt: skip
        if args.expert_parallel > 1:
            argv += ["--expert-parallel", str(args.expert_parallel)]
        if args.allocator:
            argv += ["--allocator", args.allocator]
        (point,) = json.loads(_run(argv, "bench"))["points"]
    if point["status"] != "ok":
        raise SystemExit(f"bench's point ended {point['status']}: {point.get('error')}")
    return float(point["unit_throughput"]["value"])


def measure_bare(args: argparse.Namespace) -> float:
    launcher = [sys.executable]
    if args.devices > 1:
        launcher += ["-m", "torch.distributed.run", f"--nproc-per-node={args.devices}",
                     "--standalone", "--local-addr=127.0.0.1", "--max-restarts=0"]  # fmt: skip
    argv = [*launcher, __file__, "--bare", "--expert-parallel", str(args.expert_parallel),
            *_shared(args)]  # fmt: skip
    env = None
    if args.allocator:  # the environment bench gives its child for this allocator
        from bench.run.runtime import child_runtime

        env = child_runtime(args.allocator, None, None, dict(os.environ)).env
    answer = _run(argv, "the bare loop", env).strip().splitlines()[-1]
    return float(json.loads(answer)["tokens_per_s"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bare", action="store_true", help="run the bare loop once (JSON out)")
    parser.add_argument("--devices", type=int, default=1, help="CPU ranks (gloo)")
    parser.add_argument("--expert-parallel", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=4, help="GLOBAL, split over ranks")
    parser.add_argument("--seq-len", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads per rank")
    parser.add_argument("--warmup-steps", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--allocator", choices=("tcmalloc", "jemalloc"),
                        help="preload it into both sides (default: glibc's malloc)")  # fmt: skip
    args = parser.parse_args()
    if args.bare:
        bare(args)
        return 0
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from paired import alternate, summarise

    runs = alternate(("bare", lambda: measure_bare(args)), ("bench", lambda: measure_bench(args)),
                     args.rounds, "tokens/s")  # fmt: skip
    title = (
        f"moe-tiny cpu x{args.devices} rank(s), expert parallel {args.expert_parallel}, global "
        f"batch {args.batch_size} x {args.seq_len} tokens, fp32, {args.threads} thread(s) per "
        f"rank, {args.steps} steps after {args.warmup_steps}, {args.rounds} rounds, "
        f"allocator {args.allocator or 'glibc'}"
    )
    summarise(runs, "tokens/s", title, 0.98)
    return 0 if math.isfinite(runs["bench"][-1]) else 1


if __name__ == "__main__":
    sys.exit(main())
