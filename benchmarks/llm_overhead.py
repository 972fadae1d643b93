"""bench's Llama 3 tokens/s next to a bare hand-written FSDP2 loop: the harness's cost.

bench (`python -m bench llama3-... --devices N`) and the peer (benchmarks/llm_peer.py,
which imports nothing of bench) train the same decoder on the same ranks with the same
settings: global batch, sequence length, precision (FSDP2's bf16 parameters over
ranks, autocast in one process), optimizer, activation checkpointing, warm-up and
measured steps, threads per rank. Over several ranks both run under torchrun with
gloo (CPU) or NCCL (CUDA); one rank is one plain process for both, as bench runs it.
Each run is a fresh process, the two alternate for --rounds; both figures are global
tokens/s. The peer reads the clock once around all its steps; bench times each step
(as ranks: a barrier at the window's start and end, each rank's device synchronised
around its steps) and sums them.

    python benchmarks/llm_overhead.py --workload llama3-tiny --devices 2 --precision bf16
    python benchmarks/llm_overhead.py --seq-len 256 --batch-size 8 --loss chunked --rounds 8

--attention, --loss and --pad-vocab go to both, so the overhead is measured per lever.

The driver stops (status 2) if the two report different optimizers or threads per
rank: the figures would not compare. Not a test: it prints figures.
Target: bench within 3% of the peer (median ratio >= 0.97, settled when its 95%
interval lies above 0.97: benchmarks/paired.py).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from paired import alternate, summarise

PEER = Path(__file__).with_name("llm_peer.py")
WORKLOADS = ("llama3-tiny", "llama3-1b", "llama3-8b")


class Mismatch(Exception):
    """bench and the peer did not run the same thing."""


def _run(argv: list[str], what: str) -> str:
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-30:])
        raise SystemExit(f"{what} failed (status {done.returncode}):\n{tail}")
    return done.stdout


def _shared(args: argparse.Namespace) -> list[str]:
    """The settings both take, under the same flag names."""
    argv = [
        "--device", args.device, "--batch-size", str(args.batch_size),
        "--seq-len", str(args.seq_len), "--precision", args.precision,
        "--warmup-steps", str(args.warmup_steps), "--steps", str(args.steps),
        "--activation-checkpointing", args.activation_checkpointing,
        "--attention", args.attention, "--loss", args.loss,
    ]  # fmt: skip
    if args.pad_vocab:  # the peer's 0 is bench's default: no --pad-vocab
        argv += ["--pad-vocab", str(args.pad_vocab)]
    return [*argv, "--threads", str(args.threads)] if args.threads else argv


class Pair:
    """Runs each side once per call and checks they ran the same optimizer and threads."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.seen: dict[str, dict[str, Any]] = {}

    def _check(self, side: str, facts: dict[str, Any]) -> None:
        self.seen[side] = facts
        if len(self.seen) == 2 and self.seen["bench"] != self.seen["peer"]:
            raise Mismatch(
                f"bench ran {self.seen['bench']}, the peer {self.seen['peer']}: pass the "
                "peer bench's --optimizer (or set OPTIMIZERS in benchmarks/llm_peer.py to "
                "bench's settings), --threads to both"
            )

    def bench(self) -> float:
        args = self.args
        with tempfile.TemporaryDirectory() as out_dir:
            stdout = _run(
                [sys.executable, "-m", "bench", args.workload, "--devices", str(args.devices),
                 *_shared(args), "--output-dir", out_dir, "--json"],
                "bench",
            )  # fmt: skip
        (point,) = json.loads(stdout)["points"]
        if point["status"] != "ok":
            raise SystemExit(f"bench's point ended {point['status']}: {point.get('error')}")
        details = point["details"]
        self._check("bench", {"optimizer": details["optimizer"], "threads": details["threads"]})
        figure = point["unit_throughput"]
        if figure["unit"] != "tokens/s":
            raise SystemExit(f"bench reported {figure['unit']}, not tokens/s")
        return float(figure["value"])

    def peer(self) -> float:
        args = self.args
        launcher = [sys.executable]
        if args.devices > 1:  # as bench.run.launchers.torchrun starts its ranks
            launcher += ["-m", "torch.distributed.run", f"--nproc-per-node={args.devices}",
                         "--standalone", "--local-addr=127.0.0.1", "--max-restarts=0"]  # fmt: skip
        stdout = _run(
            [*launcher, str(PEER), "--size", args.workload, "--optimizer", args.optimizer,
             "--seed", "0", *_shared(args)],
            "the peer",
        )  # fmt: skip
        figures = json.loads(stdout.strip().splitlines()[-1])
        self._check("peer", {"optimizer": figures["optimizer"], "threads": figures["threads"]})
        return float(figures["tokens_per_s"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="llama3-tiny", choices=WORKLOADS)
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--devices", type=int, default=1, help="ranks on this machine")
    parser.add_argument("--batch-size", type=int, default=4, help="GLOBAL, split over ranks")
    parser.add_argument("--seq-len", type=int, default=64)
    parser.add_argument("--precision", default="fp32", choices=("fp32", "bf16"))
    parser.add_argument(
        "--optimizer", default="adamw", choices=("sgd", "adamw"), help="the peer's; bench's own"
    )
    parser.add_argument(
        "--activation-checkpointing", default="none", choices=("none", "selective", "full")
    )
    # The decoder levers, passed to both: bench's overhead measured lever by lever.
    parser.add_argument("--attention", default="auto", help="SDPA kernel: auto, flash, math, ...")
    parser.add_argument("--loss", default="plain", choices=("plain", "chunked"))
    parser.add_argument("--pad-vocab", type=int, default=0, help="0: unpadded")
    parser.add_argument("--threads", type=int, help="intra-op threads per rank (both)")
    parser.add_argument("--warmup-steps", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.devices < 1 or args.rounds < 1 or args.batch_size % args.devices:
        parser.error("--devices and --rounds: at least 1; --batch-size: a multiple of --devices")
    pair = Pair(args)
    try:
        runs = alternate(("peer", pair.peer), ("bench", pair.bench), args.rounds, "tokens/s")
    except Mismatch as error:
        print(f"llm_overhead: not the same run: {error}", file=sys.stderr)
        return 2
    title = (
        f"{args.workload} {args.device} x{args.devices} rank(s), global batch {args.batch_size} "
        f"x {args.seq_len} tokens, {args.precision}, {pair.seen['peer']['optimizer']}, "
        f"{pair.seen['peer']['threads']} thread(s) per rank, {args.steps} steps after "
        f"{args.warmup_steps}, {args.rounds} rounds, attention {args.attention}, loss "
        f"{args.loss}, pad-vocab {args.pad_vocab or 'none'} (global tokens/s)"
    )
    summarise(runs, "tokens/s", title, 0.97)  # bench within 3% of the peer
    return 0


if __name__ == "__main__":
    sys.exit(main())
