"""How often bench's verdict is wrong, measured: A/A pairs (one configuration as both old
and new) and A/B pairs whose new side is slower by a known 5% or 10%, for each way of
choosing the repeats: a fixed count, --repeats auto, and --settle.

    python benchmarks/verdict_calibration.py                        # simulated: seconds
    python benchmarks/verdict_calibration.py --sigma 0.01 --noise t3
    python benchmarks/verdict_calibration.py --fit results/*.json   # your results' spread
    python benchmarks/verdict_calibration.py --real 12              # bench tiny, here

The rules, each judged by bench.stats.verdict over a 2% margin (bench diff's default):
- fixed N: N repeats a side, the 95% interval of the ratio (bench.stats.estimate.ratio_interval,
  what bench diff and bench compare use);
- re-looked: 3 a side, then the same fixed-sample interval judged again after every new
  repeat up to 20: what --settle must not do, shown for its error rate;
- auto: each side repeats until its spread is at most 3.5% (--repeats auto: at least 3,
  at most 10, the Phoronix Test Suite's rule), then the fixed-sample interval;
- settle: 3 a side, then bench.stats.sequential's interval after every new repeat, until it
  decides, more repeats are futile (bench.stats.sequential.futile) or the new side holds 20
  (bench diff --settle's default cap).

Noise model (simulated): each repeat's throughput is 100 x exp(e), e normal with
standard deviation sigma ("normal"), or sigma x t(3) / sqrt(3) ("t3": the same spread,
heavy tails, as a busy neighbour now and then gives). sigma defaults to 2.4%, fitted to
the real per-repeat spreads bench has recorded on a CPU: the root mean square of the
three 3-repeat figures in docs/performance.md (resnet50, batch 16, on a 2-vCPU AMD EPYC
VM: PyTorch, TensorFlow and JAX spread 3.4%, 2.1% and 1.4%, from their 95% intervals).
The H100 and H200 results in docs/results spread 0.03% to 0.18%: there every rule
decides at 3 repeats. --fit reads the spread of your own results instead.

--real K runs `bench run tiny --repeats K` on this machine (a child per repeat) and
draws each pair's repeats from those K real throughputs (with replacement); a slowdown
is applied exactly to the new side's draws, so the noise is this machine's and the change
is known (a thread count or a sleep would change the speed by an amount not known in
advance). It measures the rules on real noise, not bench diff --settle end to end; at
least 10 repeats (drawn with replacement, a few make identical draws, a spread of zero).
On the shared 2-vCPU build machine, 4 repeats of bench tiny spread 79%: no rule decides
a 10% change there, and the noise model does not apply.

Not a test: it prints a table. Goal: at most 5% false alarms for every rule.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from bench import result
from bench.stats import sequential, verdict
from bench.stats.estimate import ratio_interval

Draw = Callable[[random.Random], float]  # one repeat's log-throughput noise
MARGIN = verdict.DEFAULT_MARGIN
SLOWDOWNS = (0.05, 0.10)
RECORDED_CPU_SPREADS = (0.0336, 0.0207, 0.0144)  # docs/performance.md, see above
TARGET_RSD, MIN_AUTO, MAX_AUTO = 0.035, 3, 10  # bench.config.run_config's --repeats auto
START, CAP = 3, 20  # --settle: the repeats a side it starts from, and its default cap
MIN_REAL = 10  # --real: fewer repeats to draw from make identical draws too often
FUTILE = "futile"  # --settle stopped: more repeats of new would very likely not decide


def fixed_sample(new: list[float], old: list[float]) -> str:
    low, high = ratio_interval(new, old) or (1.0, 1.0)
    return verdict.judge(math.sqrt(low * high), (low, high), min(len(new), len(old)), MARGIN).word


def sequential_look(new: list[float], old: list[float]) -> str:
    looked = sequential.interval(new, old, plan=CAP)
    if looked is None:
        return verdict.CANNOT_TELL
    ratio, interval = looked
    word = verdict.judge(ratio, interval, len(new), MARGIN, sequential=True).word
    if word == verdict.CANNOT_TELL and sequential.futile(new, old, CAP, MARGIN) is not None:
        return FUTILE
    return word


def auto(sample: Callable[[], float]) -> list[float]:
    values = [sample() for _ in range(MIN_AUTO)]
    while len(values) < MAX_AUTO and statistics.stdev(values) / statistics.fmean(values) > (
        TARGET_RSD
    ):
        values.append(sample())
    return values


def one_pair(rule: str, rng: random.Random, draw: Draw, slowdown: float) -> tuple[str, int]:
    """The verdict of one simulated comparison and its runs, both sides together."""

    def old() -> float:
        return 100 * math.exp(draw(rng))

    def new() -> float:
        return 100 * math.exp(draw(rng)) / (1 + slowdown)

    if rule.startswith("fixed "):
        n = int(rule.split()[1])
        news, olds = [new() for _ in range(n)], [old() for _ in range(n)]
        return fixed_sample(news, olds), 2 * n
    if rule == "auto (RSD 3.5%)":
        olds, news = auto(old), auto(new)
        return fixed_sample(news, olds), len(olds) + len(news)
    judge = fixed_sample if rule.startswith("re-looked") else sequential_look
    olds, news = [old() for _ in range(START)], [new() for _ in range(START)]
    while True:
        word = judge(news, olds)
        if word != verdict.CANNOT_TELL or len(news) >= CAP:  # futile is a stop too
            return word, len(olds) + len(news)
        news.append(new())


RULES = ("fixed 3", "fixed 5", "fixed 10", "auto (RSD 3.5%)", "re-looked 3..20", "settle 3..20")


def table(draw: Draw, pairs: int, seed: int) -> list[str]:
    lines = [
        "| rule | A/A: faster or slower (false alarm) | A/A: the same | 5% slower found "
        "| 10% slower found | runs, both sides (A/A, 10%) |",
        "|---|---|---|---|---|---|",
    ]
    for rule in RULES:
        cells = []
        counts = []
        for slowdown in (0.0, *SLOWDOWNS):
            rng = random.Random(seed)
            runs = [one_pair(rule, rng, draw, slowdown) for _ in range(pairs)]
            words = [word for word, _ in runs]
            counts.append(statistics.fmean(n for _, n in runs))
            if slowdown == 0.0:
                alarms = sum(w in (verdict.FASTER, verdict.SLOWER) for w in words) / pairs
                cells += [f"{alarms:.1%}", f"{words.count(verdict.SAME) / pairs:.1%}"]
            else:
                cells.append(f"{words.count(verdict.SLOWER) / pairs:.1%}")
        cells.append(f"{counts[0]:.1f}, {counts[-1]:.1f}")
        lines.append(f"| {rule} | " + " | ".join(cells) + " |")
    return lines


def normal(sigma: float) -> Draw:
    return lambda rng: rng.gauss(0.0, sigma)


def t3(sigma: float) -> Draw:
    """Student's t with 3 degrees of freedom, scaled to standard deviation sigma."""

    def draw(rng: random.Random) -> float:
        chi2 = sum(rng.gauss(0.0, 1.0) ** 2 for _ in range(3))
        return sigma * rng.gauss(0.0, 1.0) / math.sqrt(chi2 / 3) / math.sqrt(3)

    return draw


def fitted(paths: list[Path]) -> tuple[float, str]:
    """The pooled standard deviation of log-throughput over repeats of your results'
    points (those with two repeats or more)."""
    squares, df, points = 0.0, 0, 0
    for path in paths:
        for point in result.load(path).points:
            logs = [math.log(v) for v in point.repeat_throughputs() if v > 0]
            if len(logs) >= 2:
                mean = statistics.fmean(logs)
                squares += sum((v - mean) ** 2 for v in logs)
                df, points = df + len(logs) - 1, points + 1
    if not df:
        sys.exit("--fit: no point with two repeats or more in those files")
    return math.sqrt(squares / df), f"fitted to {points} points of {len(paths)} files"


def real(repeats: int, extra: list[str]) -> tuple[Draw, str]:
    """bench tiny's repeats on this machine, centred on their mean log: draws of them."""
    with tempfile.TemporaryDirectory() as out:
        command = [sys.executable, "-m", "bench", "run", "tiny", "--repeats", str(repeats),
                   "--output-dir", out, *extra]  # fmt: skip
        print("running:", " ".join(command), file=sys.stderr, flush=True)
        subprocess.run(command, check=True, stdout=sys.stderr)
        [path] = Path(out).glob("*.json")
        values = result.load(path).points[0].repeat_throughputs()
    logs = [math.log(v) for v in values]
    mean = statistics.fmean(logs)
    centred = [v - mean for v in logs]
    spread = statistics.stdev(logs)
    return (lambda rng: rng.choice(centred)), f"{repeats} repeats of bench tiny here, {spread:.1%}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=2000, help="pairs per cell (default 2000)")
    parser.add_argument("--seed", type=int, default=53)
    parser.add_argument("--sigma", type=float, help="spread of a repeat's log-throughput")
    parser.add_argument("--noise", choices=("normal", "t3"), default="normal")
    parser.add_argument("--fit", type=Path, nargs="+", metavar="RESULT", help="fit sigma here")
    parser.add_argument("--real", type=int, metavar="K", help="K repeats of bench tiny here")
    parser.add_argument("--tiny-option", action="append", default=[], metavar="OPTION",
                        help="an option for bench run tiny with --real (repeatable)")  # fmt: skip
    args = parser.parse_args()
    if args.real is not None and args.real < MIN_REAL:
        parser.error(f"--real: at least {MIN_REAL} repeats (drawn again and again, a few make "
                     "identical draws: a spread of zero that --repeats auto stops on)")  # fmt: skip
    if args.real:
        draw, source = real(args.real, args.tiny_option)
    else:
        if args.sigma is not None:
            sigma, source = args.sigma, "given"
        elif args.fit:
            sigma, source = fitted(args.fit)
        else:
            sigma = math.sqrt(statistics.fmean(s * s for s in RECORDED_CPU_SPREADS))
            source = "bench's recorded CPU spreads (docs/performance.md)"
        draw = (t3 if args.noise == "t3" else normal)(sigma)
        source = f"{args.noise}, sigma {sigma:.1%}, {source}"
    print(f"noise: {source}; {args.pairs} pairs a cell, seed {args.seed}, margin ±{MARGIN:.0%}")
    print("\n".join(table(draw, args.pairs, args.seed)))


if __name__ == "__main__":
    main()
