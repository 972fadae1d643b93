"""Max-batch probes per minute: a probing child (this checkout) against a fresh child
per probe (another checkout, e.g. a worktree of main before the probing child).

Each side runs the same search, `bench WORKLOAD --find-max-batch --memory-limit CAP`,
as a process of its own with its checkout first on PYTHONPATH, alternately for
--rounds (the machine may be shared: each round's pair ran under the same load). A
side's figure is the probes its result file holds over the search's wall time, per
minute; with a probing child the probes include the fresh child that confirms the
answer. Each search's answer is printed too: both sides must find the same one. The CPU
(lscpu) and the load (uptime) are printed before and after.

    git worktree add /tmp/bench-main main
    python benchmarks/max_batch_probes.py --before /tmp/bench-main \
        --workload cnn-s --memory-limit 1200MiB --rounds 6

Not a test: it prints figures. Target: more probes per minute than one child a probe.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from paired import alternate, summarise

HERE = Path(__file__).resolve().parent.parent


def _machine() -> str:
    """The CPU's model and core count (lscpu), and the load (uptime)."""
    facts = {}
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    for line in lscpu.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("Model name", "CPU(s)"):
            facts[key.strip()] = value.strip()
    uptime = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout
    return f"{facts.get('Model name')}, {facts.get('CPU(s)')} CPUs; {uptime.strip()}"


def search(checkout: Path, args: argparse.Namespace, answers: list[str]) -> float:
    """One search with `checkout`'s bench: its probes per minute; its answer to `answers`."""
    with tempfile.TemporaryDirectory() as out:
        command = [
            sys.executable, "-m", "bench", args.workload, "--device", "cpu",
            "--find-max-batch", "--memory-limit", args.memory_limit, "--output-dir", out,
        ]  # fmt: skip
        # In the checkout: `python -m` puts the working directory before PYTHONPATH.
        env = {**os.environ, "PYTHONPATH": str(checkout)}
        started = time.monotonic()
        subprocess.run(command, cwd=checkout, env=env, capture_output=True, check=True)
        wall = time.monotonic() - started
        [path] = Path(out).glob("*.json")
        [found] = json.loads(path.read_text())["max_batch"]
    probes = found["probes"]
    kinds = sorted({str(p.get("kind")) for p in probes})
    answers.append(
        f"{checkout}: largest {found['largest_ok']}, first failing {found['first_failing']}, "
        f"{len(probes)} probes ({', '.join(kinds)}) in {wall:.1f} s"
    )
    return len(probes) / wall * 60


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="the checkout to compare with")
    parser.add_argument("--after", type=Path, default=HERE, help="default: this checkout")
    parser.add_argument("--workload", default="cnn-s")
    parser.add_argument("--memory-limit", default="1200MiB")
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    print("before:", _machine(), flush=True)
    answers: list[str] = []
    runs = alternate(
        ("fresh child a probe", lambda: search(args.before, args, answers)),
        ("probing child", lambda: search(args.after, args, answers)),
        args.rounds,
        "probes/min",
    )
    print("\n".join(["", *answers]))
    summarise(runs, "probes/min", f"{args.workload} at --memory-limit {args.memory_limit}", 1.0)
    print("after:", _machine())


if __name__ == "__main__":
    main()
