"""Two measurements of one thing, each in a fresh process, run alternately for some
rounds, and the ratio of each round: what the overhead scripts share.

Within a round both halves run back to back, so slow drift of a shared machine hits
both; which goes first alternates, so neither always runs on a warmer machine. The
median of the per-round ratios is the figure.
"""

from __future__ import annotations

import statistics
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


def summarise(runs: dict[str, list[float]], unit: str, title: str, target: str) -> float:
    """Print each side's median, the per-round ratios measured / reference and their
    median (returned)."""
    (reference, before), (measured, after) = runs.items()
    width = max(len(name) for name in runs)
    paired = [b / a for a, b in zip(before, after, strict=True)]
    print(f"\n{title}")
    for name, values in runs.items():
        print(f"  {name:{width}s} median {statistics.median(values):12.2f} {unit}")
    print(f"  {measured} / {reference} per round: {', '.join(f'{r:.3f}' for r in paired)}")
    ratio = statistics.median(paired)
    print(f"  median ratio: {ratio:.3f}x ({target})")
    return ratio
