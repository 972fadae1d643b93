"""`bench compare` and `bench report` over a fleet's results: seconds and peak memory.

Fabricates N result files (default 10,000 from 100 machines) with bench's own Result and
Point classes, sealed by bench.result.dumps so that they load as measured files do: a
few workloads, batch sizes and precisions, 3 repeats of 20 steps a point, some runs in
JAX, some with a memory cap (set apart), dated over a month. Then times, each in its
own process:

    bench compare DIR --format json -o OUT/c.json
    bench report DIR -o OUT/report

and prints wall and CPU seconds, peak RSS (of that process alone), output size and the
file count. Load the machine with nothing else: wall time doubles on 2 busy cores.

    python benchmarks/report_scale.py [--files 10000] [--machines 100] [--dir DIR]
        [--keep] [--only compare|report] [--baseline MACHINE] [--profile]

--profile runs `bench compare` under cProfile and prints its 25 costliest functions.
Not a test: it prints figures. The targets (issue 65), on 2 cores: each command over
10,000 files from 100 machines in at most 10 s and 1 GB, over 2,000 in at most 3 s.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GPUS = (
    "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB", "NVIDIA A100-SXM4-80GB",
    "Tesla V100-SXM2-16GB", "NVIDIA L4", "NVIDIA A10G", "NVIDIA L40S", "NVIDIA RTX A6000",
    "NVIDIA GeForce RTX 4090", "NVIDIA H200",
)  # fmt: skip
CPUS = (
    "Intel(R) Xeon(R) Platinum 8488C", "AMD EPYC 9R14", "Intel(R) Xeon(R) Processor",
    "AMD EPYC 7B13", "Neoverse-V2",
)  # fmt: skip
# workload -> (batch sizes, precisions, seq_len)
WORKLOADS = {
    "resnet50": ((64, 128, 256), ("fp32", "bf16"), None),
    "bert-base": ((16, 32), ("bf16",), 128),
    "cnn-s": ((128, 256), ("fp32",), None),
}
STEPS, REPEATS = 20, 3
GIB = 2**30


def machines(n: int) -> list[dict]:
    """n distinct machines: GPUs by model and count, CPUs by model, cores and instance."""
    found = []
    for i in range(n):
        if i % 2 == 0:
            j = i // 2
            gpu, count = GPUS[j % len(GPUS)], (1, 2, 4, 8, 16)[j // len(GPUS) % 5]
            found.append(
                {
                    "device": "cuda",
                    "speed": 2000.0 * (1 + j % 7),
                    "accelerator": {
                        "platform": "cuda",
                        "accelerator": f"{gpu}" if j < 50 else f"{gpu} #{j}",
                        "accelerator_count": count,
                        "driver_version": "580.159.04",
                    },
                    "cpu": {"model": "AMD EPYC 7R13", "logical_cores": 96, "affinity_cores": 96},
                    "dmi": None,
                }
            )
        else:
            j = i // 2
            cores = (2, 4, 8, 16, 32, 48, 64, 96, 128, 192)[j // len(CPUS) % 10]
            found.append(
                {
                    "device": "cpu",
                    "speed": 20.0 * cores,
                    "accelerator": {"accelerator": None},
                    "cpu": {
                        "model": CPUS[j % len(CPUS)],
                        "logical_cores": cores,
                        "affinity_cores": cores,
                        "flags": ["avx2", "avx512f"],
                    },
                    "dmi": {"sys_vendor": "Amazon EC2", "product_name": f"c7i.{j}xlarge"},
                }
            )
    return found


def fabricate(directory: Path, files: int, n_machines: int, seed: int = 0) -> None:
    from dataclasses import replace

    from bench import result
    from bench.config.run_config import RunConfig
    from bench.result import Point, Result

    rng = random.Random(seed)
    fleet = machines(n_machines)
    directory.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        m = fleet[i % n_machines]
        run = i // n_machines  # the machine's n-th run: a nightly rerun, a day later
        workload = list(WORKLOADS)[run % len(WORKLOADS)]
        batches, precisions, seq_len = WORKLOADS[workload]
        framework = "jax" if m["device"] == "cuda" and run % 10 == 9 else "torch"
        capped = rng.random() < 0.04  # a run with --memory-limit: measured differently
        config = RunConfig(
            workload=workload, framework=framework, device=m["device"], batch_sizes=batches,
            precisions=precisions, steps=STEPS, seq_len=seq_len, repeats=REPEATS,
            memory_limit_bytes=16 * GIB if capped else None,
        )  # fmt: skip
        points = []
        for batch in batches:
            for precision in precisions:
                speed = m["speed"] * (1.6 if precision == "bf16" else 1.0)
                steps = tuple(
                    tuple(batch / (speed * rng.uniform(0.97, 1.03)) for _ in range(STEPS))
                    for _ in range(REPEATS)
                )
                energy = tuple(
                    {"window_s": sum(s), "per_device_j": {"gpu0": 300.0 * sum(s)},
                     "sources": {"gpu0": "nvml_counter"}, "epoch_j": None}
                    for s in steps
                ) if m["device"] == "cuda" else ()  # fmt: skip
                point = Point(
                    batch_size=batch, precision=precision, step_times_s=steps,
                    warmup_times_s=tuple((0.5,) * 5 for _ in range(REPEATS)),
                    peak_memory_bytes=(GIB * batch // 64,) * REPEATS, energy=energy,
                    loss_first=(6.9,) * REPEATS, loss_last=(6.8,) * REPEATS,
                    memory_format="channels_last" if framework == "jax" else "contiguous",
                )  # fmt: skip
                if rng.random() < 0.02:
                    point = replace(point, status="oom", error="out of memory", step_times_s=())
                points.append(point)
        env = {
            "bench": {"version": "0.4.0", "git_commit": "0" * 40},
            "host": {"hostname": f"node-{i % n_machines:03d}", "os": "Linux", "dmi": m["dmi"]},
            "cpu": m["cpu"],
            "accelerator": m["accelerator"],
            "framework": {"name": framework, framework: "2.11.0"},
            "image": {"name": f"bench:{framework}-{m['device']}", "digest": "sha256:" + "ab" * 32},
        }
        day = 1 + run % 28
        res = Result(
            config=config, environment=env, points=points,
            command=["bench", workload, "--device", m["device"]],
            started=f"2026-10-{day:02d}T{(run // 28) % 24:02d}:{i % 60:02d}:00+00:00",
            status="complete",
        )  # fmt: skip
        name = f"{workload}-{framework}-{m['device']}-{i:06d}.json"
        (directory / name).write_text(result.dumps(res))


def timed(command: list[str]) -> tuple[float, float, int, int]:
    """Wall seconds, CPU seconds (user + system: steadier than wall time on a shared
    machine), peak RSS (bytes) of the command's process, and its exit status."""
    probe = (
        "import resource, subprocess, sys, time; t = time.perf_counter(); "
        "rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode; "
        "s = time.perf_counter() - t; u = resource.getrusage(resource.RUSAGE_CHILDREN); "
        "print(s, u.ru_utime + u.ru_stime, u.ru_maxrss * 1024, rc)"
    )
    out = subprocess.run([sys.executable, "-c", probe, *command], capture_output=True, text=True)
    seconds, cpu, rss, rc = out.stdout.split()
    if int(rc):
        print(out.stderr[-2000:], file=sys.stderr)
    return float(seconds), float(cpu), int(rss), int(rc)


def size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def profile(directory: Path, out: Path) -> None:
    import cProfile
    import pstats

    from bench.cli import main

    profiler = cProfile.Profile()
    profiler.enable()
    main(["compare", str(directory), "--format", "json", "-o", str(out / "profiled.json")])
    profiler.disable()
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)


def run(args: argparse.Namespace) -> None:
    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="bench-scale-"))
    results, out = base / "results", base / "out"
    if not results.is_dir() or not any(results.iterdir()):
        start = time.perf_counter()
        fabricate(results, args.files, args.machines)
        mib, seconds = size(results) / 2**20, time.perf_counter() - start
        print(f"fabricated {args.files} files ({mib:.0f} MiB): {seconds:.0f} s")
    files = sum(1 for _ in results.glob("*.json"))
    out.mkdir(parents=True, exist_ok=True)
    bench = [sys.executable, "-m", "bench"]
    if args.profile:
        profile(results, out)
        return
    chosen = ["--baseline", args.baseline] if args.baseline else []
    commands = {
        "compare": (
            [
                *bench,
                "compare",
                str(results),
                *chosen,
                "--format",
                "json",
                "-o",
                str(out / "c.json"),
            ],
            out / "c.json",
        ),
        "report": (
            [*bench, "report", str(results), *chosen, "-o", str(out / "report")],
            out / "report",
        ),
    }
    for name, (command, output) in commands.items():
        if args.only and name != args.only:
            continue
        seconds, cpu, rss, rc = timed(command)
        extra = ""
        if name == "compare" and output.exists():
            data = json.loads(output.read_text())
            extra = f", {len(data['machines'])} columns, {len(data['points'])} records"
        page = output / "report.html" if name == "report" else output
        print(
            f"bench {name}: {files} files: {seconds:.1f} s ({cpu:.1f} s CPU), "
            f"peak RSS {rss / 2**20:.0f} MiB, "
            f"output {size(output) / 2**20:.1f} MiB"
            + (
                f" (page {size(page) / 2**20:.1f} MiB)"
                if name == "report" and page.exists()
                else ""
            )
            + f"{extra}, exit {rc}"
        )
    if not args.keep and not args.dir:
        shutil.rmtree(base)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--machines", type=int, default=100)
    parser.add_argument("--dir", help="work here (fabricated once, kept); default: a temp dir")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir")
    parser.add_argument("--only", choices=("compare", "report"))
    parser.add_argument("--baseline", help="passed to both commands")
    parser.add_argument("--profile", action="store_true", help="cProfile bench compare")
    run(parser.parse_args())


if __name__ == "__main__":
    main()
