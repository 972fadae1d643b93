"""bench's throughput next to a bare hand-written PyTorch loop: the harness's cost.

Both run the same model and settings (torchvision ResNet-50, SGD momentum 0.9, lr 0.01,
cross-entropy, one synthetic batch made on the device), each in a fresh process, run
alternately so that drift on a noisy machine hits both. The bare loop reads the clock
once around all its steps; bench synchronises and reads it around every step.

    python benchmarks/overhead.py --device cpu --batch-size 16 --steps 10 --rounds 3

Not a test: it prints figures. Target: bench >= 0.98x the bare loop on CPU.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile

from paired import alternate, summarise

BARE_LOOP = r"""
import sys, time, torch, torchvision
import torch.nn.functional as F
device, precision, layout = sys.argv[1], sys.argv[5], sys.argv[6]
batch, warmup, steps = (int(a) for a in sys.argv[2:5])
torch.manual_seed(0)
torch.backends.cudnn.benchmark = device == "cuda"
fmt = torch.channels_last if layout == "channels_last" else torch.contiguous_format
dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(precision)
model = torchvision.models.resnet50(weights=None, num_classes=1000).to(device, memory_format=fmt)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
g = torch.Generator().manual_seed(0)
x = torch.randn((batch, 3, 224, 224), generator=g).to(device, memory_format=fmt)
y = torch.randint(0, 1000, (batch,), generator=g).to(device)
sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
def step():
    opt.zero_grad(set_to_none=True)
    with torch.autocast(torch.device(device).type, dtype=dtype, enabled=dtype is not None):
        loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
for _ in range(warmup):
    step()
sync(); start = time.perf_counter()
for _ in range(steps):
    step()
sync(); print(batch * steps / (time.perf_counter() - start))
"""


def bare(args: argparse.Namespace) -> float:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            BARE_LOOP,
            args.device,
            str(args.batch_size),
            str(args.warmup_steps),
            str(args.steps),
            args.precision,
            args.memory_format,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(out.stdout.split()[-1])


def with_bench(args: argparse.Namespace) -> float:
    with tempfile.TemporaryDirectory() as out_dir:
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "bench",
                "resnet50",
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
                "--memory-format",
                args.memory_format,
                "--output-dir",
                out_dir,
                "--json",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
    return json.loads(out.stdout)["points"][0]["throughput"]["value"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--precision", default="fp32")
    parser.add_argument(
        "--memory-format", default="contiguous", choices=("contiguous", "channels_last")
    )
    parser.add_argument("--warmup-steps", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    runs = alternate(
        ("bare loop", lambda: bare(args)), ("bench", lambda: with_bench(args)),
        args.rounds, "samples/s",
    )  # fmt: skip
    title = (
        f"resnet50 {args.device} batch {args.batch_size} {args.precision} {args.memory_format}, "
        f"{args.steps} steps, {args.rounds} rounds"
    )
    summarise(runs, "samples/s", title, 0.98)


if __name__ == "__main__":
    main()
