"""The wait for data bench records on real data (bench/child/measure.py, _train_epoch:
the host clock read around the loader's `next`, the difference kept) against the bare
loop: what it adds to a step.

1. In one process: `next` over a ready iterator, bare and with the two clock reads and
   the append bench adds, alternated for some rounds: the nanoseconds it adds a step.
2. The bare loop: cnn-s (bench's model) trained on an ImageNet-layout folder through
   PyTorch's DataLoader as bench builds it (split_loader), each half of a round a fresh
   process, without and with the wait timed, alternated (benchmarks/paired.py): the
   ratio of their rates, and the step time the nanoseconds of part 1 are a share of.

    python benchmarks/input_wait.py --data imagenet:/data/imagenet --workers 2 --rounds 6

Not a test: it prints figures. Target: the wait's cost within 1% of a step.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from paired import alternate, median_interval, summarise

LOOP = r"""
import sys, time, torch
from bench import datasets, registry
from bench.frameworks._torch_data import split_loader
from bench.workloads.cifar_cnn.torch import build_model
data, workers, batch, steps, timed = sys.argv[1], *map(int, sys.argv[2:6])
torch.manual_seed(0)
spec = registry.workload("cnn-s")
split = datasets.open_dataset(datasets.parse(data), spec).train
model = build_model(spec, None)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
clock, waits, done, warmup, epoch = time.perf_counter, [], 0, 2, 0
while done < warmup + steps:
    batches = iter(split_loader(split, batch, seed=0, epoch=epoch, train=True,
                                workers=workers, pin_memory=False))
    epoch += 1
    while done < warmup + steps:
        if done == warmup:
            start = clock()
        if timed:
            asked = clock()
            item = next(batches, None)
            waits.append(clock() - asked)
        else:
            item = next(batches, None)
        if item is None:
            break
        x, y = item
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        done += 1
print(batch * steps / (clock() - start))
"""


def loop(args: argparse.Namespace, timed: bool) -> float:
    out = subprocess.run(
        [sys.executable, "-c", LOOP, args.data, str(args.workers), str(args.batch_size),
         str(args.steps), str(int(timed))],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return float(out.stdout.split()[-1])


def added_ns(count: int, rounds: int) -> list[float]:
    """Per round, the nanoseconds the wait's timing adds to one `next`."""
    clock, added = time.perf_counter, []
    for _ in range(rounds):
        items = iter(range(count))
        start = clock()
        for _ in range(count):
            next(items)
        bare = clock() - start
        items, waits = iter(range(count)), []
        start = clock()
        for _ in range(count):
            asked = clock()
            next(items)
            waits.append(clock() - asked)
        added.append(((clock() - start) - bare) / count * 1e9)
    return added


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="imagenet:PATH")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    added = added_ns(1_000_000, 9)
    interval = median_interval(added)
    spread = f" (95% interval {interval[0]:.0f}-{interval[1]:.0f} ns)" if interval else ""
    print(f"the wait's timing adds {statistics.median(added):.0f} ns a step{spread}, "
          "9 rounds of 1e6")  # fmt: skip
    runs = alternate(("bare", lambda: loop(args, False)), ("timed", lambda: loop(args, True)),
                     args.rounds, "images/s")  # fmt: skip
    summarise(runs, "images/s", f"cnn-s, {args.workers} workers, batch {args.batch_size}", 0.99)
    step_s = args.batch_size / statistics.median(runs["bare"])
    share = statistics.median(added) * 1e-9 / step_s
    print(f"a step of the bare loop: {step_s * 1e3:.1f} ms; the timing's share: {share:.2e}")


if __name__ == "__main__":
    main()
