"""bench's JAX throughput next to a bare hand-written JAX/Flax/Optax loop: the harness's cost.

Both train the same model with the same maths: bench's Flax ResNet-50
(bench.workloads._flax.ResNet50, parameters float32, bf16 as the compute dtype),
softmax cross-entropy on float32 logits, optax SGD momentum 0.9 lr 0.01, batch-norm
statistics updated every step, XLA's matmul precision as bench sets it ('highest' in
fp32, 'default' in bf16), one synthetic NHWC batch (bench's NumPy draw, seed 0) placed
on the device once, one jax.jit step donating the old state. Each runs in a fresh
process, alternately for --rounds. The bare loop reads the clock once around all its
steps, after jax.block_until_ready; bench compiles the step ahead of time, then
synchronises (jax.block_until_ready on the state and the loss) and reads the clock
around every step (StepTimer, host_clock_after_sync): the device idles while the host
dispatches each step, which is part of the cost measured here. bench's step also
carries its fp16 loss-scale bookkeeping (a scale of 1.0 in fp32 and bf16) and a
one-device mesh's shardings. The last losses of the two are printed: the same maths
gives nearly the same loss.

Both share a compilation cache made fresh for this run (JAX_COMPILATION_CACHE_DIR;
--no-compile-cache compiles every time): the rounds after the first load each side's
compiled step instead of compiling it again, the same executables in seconds instead of
a GPU's tens of seconds; no clock of either side sees compilation. Each side's process
wall time per round is printed, to size a run on a lent machine.

    python benchmarks/jax_overhead.py --device cuda --batch-size 128 --precision bf16 \
        --warmup-steps 3 --steps 20 --rounds 2

Not a test: it prints figures. Target: bench >= 0.98x the bare loop.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable

from paired import alternate, bench_throughput, run, summarise

BARE_LOOP = r"""
import sys, time
import jax, jax.numpy as jnp, numpy as np, optax
from bench.workloads._flax import ResNet50, loss
device, precision = sys.argv[1], sys.argv[5]
batch, warmup, steps = (int(a) for a in sys.argv[2:5])
jax.config.update("jax_default_matmul_precision", "highest" if precision == "fp32" else "default")
dev = jax.devices("gpu" if device == "cuda" else "cpu")[0]
model = ResNet50(1000, jnp.bfloat16 if precision == "bf16" else jnp.float32)
tx = optax.sgd(learning_rate=0.01, momentum=0.9)
rng = np.random.default_rng(0)
x = rng.standard_normal((batch, 224, 224, 3), dtype=np.float32)
y = rng.integers(0, 1000, (batch,), dtype=np.int32)
x, y, key = jax.device_put((x, y, jax.random.key(0)), dev)
variables = jax.jit(lambda key, x: model.init(key, x, train=False))(key, x[:1])
params, stats = variables["params"], variables["batch_stats"]
state = (params, stats, tx.init(params))
def step(params, stats, opt_state, x, y):
    def loss_of(params):
        logits, new = model.apply(
            {"params": params, "batch_stats": stats}, x, train=True, mutable=["batch_stats"]
        )
        return loss(logits.astype(jnp.float32), y), new["batch_stats"]
    (value, stats), grads = jax.value_and_grad(loss_of, has_aux=True)(params)
    updates, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), stats, opt_state, value
step = jax.jit(step, donate_argnums=(0, 1, 2))
for _ in range(warmup):
    *state, value = step(*state, x, y)
jax.block_until_ready((state, value)); start = time.perf_counter()
for _ in range(steps):
    *state, value = step(*state, x, y)
jax.block_until_ready((state, value)); seconds = time.perf_counter() - start
print(batch * steps / seconds, float(value))
"""


def _bare_env(device: str) -> dict[str, str]:
    """bench's child environment for JAX (bench.frameworks.jax configure): the CPU
    alone on --device cpu, no TPU metadata query; the GPU found as JAX finds it."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "TPU_SKIP_MDS_QUERY": "1"}
    if device == "cpu":
        env["JAX_PLATFORMS"] = "cpu"
    return env


def bare(args: argparse.Namespace, losses: dict[str, float]) -> float:
    argv = [
        sys.executable, "-c", BARE_LOOP, args.device, str(args.batch_size),
        str(args.warmup_steps), str(args.steps), args.precision,
    ]  # fmt: skip
    throughput, loss = run(argv, "the bare loop", _bare_env(args.device)).split()[-2:]
    losses["bare loop"] = float(loss)
    return float(throughput)


def with_bench(args: argparse.Namespace, losses: dict[str, float]) -> float:
    return bench_throughput(
        [
            "resnet50",
            "--framework",
            "jax",
            "--device",
            args.device,
            "--batch-size",
            str(args.batch_size),
            "--warmup-steps",
            str(args.warmup_steps),
            "--steps",
            str(args.steps),
            "--precision",
            args.precision,
        ],
        losses,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--precision", default="fp32", choices=("fp32", "bf16"))
    parser.add_argument("--warmup-steps", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--compile-cache", action=argparse.BooleanOptionalAction, default=True)
    args = parser.parse_args()
    if args.warmup_steps < 1:  # the bare loop's first step compiles; bench's never does
        parser.error("--warmup-steps must be at least 1")
    losses: dict[str, float] = {}
    walls: dict[str, list[float]] = {"bare loop": [], "bench": []}

    def timed(name: str, measure: Callable[[], float]) -> tuple[str, Callable[[], float]]:
        def timed_run() -> float:
            started = time.perf_counter()
            value = measure()
            walls[name].append(time.perf_counter() - started)
            return value

        return name, timed_run

    with tempfile.TemporaryDirectory(prefix="jax-cache-") as cache:
        if args.compile_cache:  # read by both children's JAX at import
            os.environ["JAX_COMPILATION_CACHE_DIR"] = cache
        runs = alternate(
            timed("bare loop", lambda: bare(args, losses)),
            timed("bench", lambda: with_bench(args, losses)),
            args.rounds, "samples/s",
        )  # fmt: skip
    title = (
        f"resnet50 jax {args.device} batch {args.batch_size} {args.precision}, "
        f"{args.warmup_steps} warm-up + {args.steps} steps, {args.rounds} rounds"
    )
    summarise(runs, "samples/s", title, 0.98)
    said = ", ".join(f"{name} {value:.4f}" for name, value in losses.items())
    print(f"  last loss (the same maths: nearly equal): {said}")
    for name, seconds in walls.items():  # start-up, compile and steps: the run's budget
        print(f"  {name} process wall time per round: {', '.join(f'{s:.1f}' for s in seconds)} s")


if __name__ == "__main__":
    main()
