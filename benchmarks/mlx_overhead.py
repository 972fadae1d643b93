"""bench's MLX throughput next to a bare hand-written MLX loop: the harness's cost.

Both train the same model with the same maths: the workload's own MLX model
(bench/workloads/<name>/mlx.py, float32 parameters), its loss, its optimizer (AdamW
for the decoders, SGD momentum 0.9 lr 0.01 otherwise), one synthetic batch (bench's
NumPy draw, seed 0) made into MLX arrays once, and nn.value_and_grad plus
optimizer.update per step, each step ended by mx.eval of the loss, the parameters and
the optimizer state (MLX is lazy: nothing runs before). Each runs in a fresh process,
alternately for --rounds. The bare loop reads the clock once around all its steps;
bench reads it around every step (after mx.synchronize) and keeps each step's time.
The last losses of the two are printed: the same maths gives nearly the same loss.

    python benchmarks/mlx_overhead.py --workload cnn-s --batch-size 16 --steps 15 --rounds 6
    python benchmarks/mlx_overhead.py --workload llama3-tiny --steps 40 --rounds 6

Not a test: it prints figures. Target: bench >= 0.98x the bare loop.
"""

from __future__ import annotations

import argparse
import sys

from paired import alternate, bench_throughput, run, summarise

BARE_LOOP = r"""
import importlib, sys, time
import mlx.core as mx, mlx.nn as nn, mlx.optimizers as optim
from bench.config.run_config import PointConfig
workload, device = sys.argv[1], sys.argv[2]
batch, warmup, steps = (int(a) for a in sys.argv[3:6])
mx.set_default_device(mx.Device(getattr(mx.DeviceType, device)))
mx.random.seed(0)
point = PointConfig(workload=workload, framework="mlx", batch_size=batch)
impl = importlib.import_module(f"{point.spec.package}.mlx")
model = impl.build_model(point.spec, point)
model.train()
if getattr(impl, "optimizer", None) is not None:
    optimizer = impl.optimizer()[0]
else:
    optimizer = optim.SGD(learning_rate=0.01, momentum=0.9)
x, y = (mx.array(a) for a in impl.make_batch(point.spec, point, batch, 0))
loss_and_grad = nn.value_and_grad(model, lambda model, x, y: impl.loss(model(x), y))
def step():
    loss, grads = loss_and_grad(model, x, y)
    optimizer.update(model, grads)
    mx.eval(loss, model.parameters(), optimizer.state)
    return loss
for _ in range(warmup):
    loss = step()
start = time.perf_counter()
for _ in range(steps):
    loss = step()
seconds = time.perf_counter() - start
print(batch * steps / seconds, loss.item())
"""


def bare(args: argparse.Namespace, losses: dict[str, float]) -> float:
    device = "cpu" if args.device == "cpu" else "gpu"
    argv = [
        sys.executable, "-c", BARE_LOOP, args.workload, device, str(args.batch_size),
        str(args.warmup_steps), str(args.steps),
    ]  # fmt: skip
    throughput, loss = run(argv, "the bare loop").split()[-2:]
    losses["bare loop"] = float(loss)
    return float(throughput)


def with_bench(args: argparse.Namespace, losses: dict[str, float]) -> float:
    return bench_throughput(
        [
            args.workload,
            "--framework",
            "mlx",
            "--device",
            args.device,
            "--batch-size",
            str(args.batch_size),
            "--warmup-steps",
            str(args.warmup_steps),
            "--steps",
            str(args.steps),
            "--repeats",
            "1",
        ],
        losses,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="cnn-s", choices=("cnn-s", "gpt2", "llama3-tiny"))
    parser.add_argument("--device", default="cpu", choices=("cpu", "mps", "cuda"))
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--warmup-steps", type=int, default=3)
    parser.add_argument("--steps", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    losses: dict[str, float] = {}
    runs = alternate(
        ("bare loop", lambda: bare(args, losses)),
        ("bench", lambda: with_bench(args, losses)),
        args.rounds, "samples/s",
    )  # fmt: skip
    title = (
        f"{args.workload} mlx {args.device} batch {args.batch_size}, "
        f"{args.warmup_steps} warm-up + {args.steps} steps, {args.rounds} rounds"
    )
    summarise(runs, "samples/s", title, 0.98)
    said = ", ".join(f"{name} {value:.4f}" for name, value in losses.items())
    print(f"  last loss (the same maths: nearly equal): {said}")


if __name__ == "__main__":
    main()
