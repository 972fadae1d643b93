"""Two measurements of one thing, each in a fresh process, run alternately for some
rounds, and the ratio of each round: what the overhead scripts share.

Within a round both halves run back to back, so slow drift of a shared machine hits
both; which goes first alternates, so neither always runs on a warmer machine. The
median of the per-round ratios is the figure, with its distribution-free 95% interval
(order statistics of the ratios: no assumption about a shared machine's noise), and the
verdict says whether the rounds settle the target or the machine is too noisy to tell.
"""

from __future__ import annotations

import json
import math
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable

Measure = Callable[[], float]


def alternate(
    reference: tuple[str, Measure], measured: tuple[str, Measure], rounds: int, unit: str
) -> dict[str, list[float]]:
    """Each side's figure per round, in `unit`, printed as it comes."""
    runs: dict[str, list[float]] = {reference[0]: [], measured[0]: []}
    width = max(len(name) for name in runs)
    for round_ in range(rounds):
        order = [reference, measured]
        for name, measure in order if round_ % 2 == 0 else order[::-1]:
            runs[name].append(measure())
            print(f"round {round_ + 1} {name:{width}s} {runs[name][-1]:12.2f} {unit}", flush=True)
    return runs


def median_interval(values: list[float], level: float = 0.95) -> tuple[float, float] | None:
    """The widest-ranked pair of order statistics (x_k, x_{n+1-k}) that holds the median
    with at least `level` probability, whatever the distribution (the sign test's
    interval); None when there are too few values for any (fewer than 6 at 95%)."""
    ordered, n = sorted(values), len(values)
    below = 0.0  # P(Binomial(n, 1/2) <= k - 1)
    best = None
    for k in range(1, n // 2 + 1):
        below += math.comb(n, k - 1) / 2**n
        if 1 - 2 * below < level:
            break
        best = (ordered[k - 1], ordered[n - k])
    return best


def verdict(interval: tuple[float, float] | None, floor: float) -> str:
    """What the rounds say of `ratio >= floor`."""
    if interval is None:
        return "too few rounds for a 95% interval: run 6 or more"
    low, high = interval
    if low >= floor:
        return f"within the target (>= {floor})"
    if high < floor:
        return f"below the target (>= {floor})"
    return (
        f"not settled: the interval holds {floor}; this machine's noise is wider than the "
        "target at these rounds (more rounds, or a quieter machine)"
    )


def summarise(runs: dict[str, list[float]], unit: str, title: str, floor: float) -> float:
    """Print each side's median, the per-round ratios measured / reference, their
    median (returned) with its 95% interval, and whether they settle `ratio >= floor`."""
    (reference, before), (measured, after) = runs.items()
    width = max(len(name) for name in runs)
    paired = [b / a for a, b in zip(before, after, strict=True)]
    print(f"\n{title}")
    for name, values in runs.items():
        print(f"  {name:{width}s} median {statistics.median(values):12.2f} {unit}")
    print(f"  {measured} / {reference} per round: {', '.join(f'{r:.3f}' for r in paired)}")
    ratio = statistics.median(paired)
    interval = median_interval(paired)
    spread = f", 95% interval {interval[0]:.3f}-{interval[1]:.3f}" if interval else ""
    print(f"  median ratio: {ratio:.3f}x{spread}: {verdict(interval, floor)}")
    return ratio


def run(argv: list[str], what: str, env: dict[str, str] | None = None) -> str:
    """A side's process: its stdout, or the script's end with the last 30 lines it said."""
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-30:])
        raise SystemExit(f"{what} failed (status {done.returncode}):\n{tail}")
    return done.stdout


def bench_throughput(args: list[str], losses: dict[str, float]) -> float:
    """`bench ARGS --output-dir TMP --json`'s one point: its throughput; its last loss
    into losses["bench"], for the two sides' losses to be compared."""
    with tempfile.TemporaryDirectory() as out_dir:
        argv = [sys.executable, "-m", "bench", *args, "--output-dir", out_dir, "--json"]
        point = json.loads(run(argv, "bench"))["points"][0]
    if point.get("throughput") is None:
        raise SystemExit(f"bench measured nothing: {point.get('error') or point}")
    if point.get("loss_last"):  # one per repeat
        losses["bench"] = point["loss_last"][-1]
    return point["throughput"]["value"]
