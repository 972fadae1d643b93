"""A point trained to a target over several runs (its repeats, and the runs of one
configuration that a comparison pools): each run's time, tokens or epochs, energy and
final figure, MLPerf's score of the times (bench.stats.scoring) and, for a target loss, the
speedrun's test that the recipe reaches it; the words the tables say them in.

Nothing here is stored: the result file holds each repeat's loss or accuracy record
(Point.loss, Point.accuracy), and every figure is derived from them when read. A run's
figures are bench.result's own (ToLoss.of and ToAccuracy.of of that run alone), so a run
reaches its target here exactly where the point's means say it does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from bench.result import Point
from bench.result.derive import ToAccuracy
from bench.result.point import ToLoss
from bench.stats.scoring import (
    FAR_FASTER,
    FEWEST_RUNS,
    MLPERF_RUNS,
    Reaches,
    Score,
    mlperf_score,
    numbered,
    reaches_target,
)
from bench.util.units import human


@dataclass(frozen=True)
class Run:
    """One run's way to the target (a repeat of the point)."""

    reached: bool
    time_s: float | None  # training plus evaluation, to the target
    amount: float | None  # tokens (a loss) or epochs (a top-1) to the target
    energy_j: float | None
    final: float | None  # the last evaluation's loss or top-1
    seed: int | None  # where the run recorded its own seed


@dataclass(frozen=True)
class ToTarget:
    """A point's runs to its target, and what they score."""

    metric: str  # "loss" or "top-1"
    target: float
    amount_unit: str  # "tokens" or "epochs"
    runs: tuple[Run, ...]
    score: Score
    reaches: Reaches | None  # for a loss: the speedrun's test; None for a top-1

    def cost(self, usd_per_hour: float | None) -> tuple[float, tuple[float, float] | None] | None:
        """The score's cost and its interval at `usd_per_hour`; None unpriced or unscored."""
        return self.score.scaled(usd_per_hour / 3600 if usd_per_hour else None)

    def score_words(self, usd_per_hour: float | None = None) -> str:
        """'score 101.0 s [97.8–104.2] ($0.03 [...]): the mean of runs 1, 2 and 5 of 5
        (MLPerf: the fastest and the slowest dropped)', or 'no score: why'."""
        score, figure = self.score, self.score_figure(usd_per_hour)
        if figure is None:
            return f"no score: {score.why}"
        text = f"score {figure}"
        fastest, slowest = score.dropped
        text += (
            f": MLPerf's mean of {len(score.counted)} of {score.runs} runs, the fastest "
            f"(run {fastest}) and the slowest (run {slowest}"
            f"{', which missed' if score.reached < score.runs else ''}) dropped"
        )
        if score.ci95 is None:
            text += f"; {score.why}"
        if score.note:
            text += f"; {score.note}"
        return text

    def score_figure(self, usd_per_hour: float | None = None) -> str | None:
        """'101.0 s [97.8–104.2] ($0.0281 [0.0272–0.0290])': the score, its interval and
        its cost where priced; None without a score."""
        score = self.score
        if score.value is None:
            return None
        text = _seconds(score.value, score.ci95)
        cost = self.cost(usd_per_hour)
        return text + (f" (${_usd(*cost)})" if cost is not None else "")

    def flags(self) -> list[str]:
        """What to look at before quoting the score: runs far faster than the others,
        runs that missed, one seed for all."""
        out = []
        for i, times in self.score.far_faster:
            factor = f"{times:.1f}x" if math.isfinite(times) else "far"
            out.append(
                f"run {i} reached it {factor} faster than the others' median (flagged past "
                f"{FAR_FASTER:g}x): check it before quoting the score"
            )
        missed = [i for i, r in enumerate(self.runs, 1) if not r.reached]
        if missed and self.score.runs > 1:
            out.append(f"run{'s' * (len(missed) > 1)} {numbered(missed)} did not reach it")
        seeds = [r.seed for r in self.runs]
        if len(seeds) > 1 and None not in seeds and len(set(seeds)) == 1:
            out.append(f"every run trained with seed {seeds[0]}: their spread is the machine's, "
                       "not the recipe's")  # fmt: skip
        return out

    def summary(self, usd_per_hour: float | None = None) -> list[str]:
        """What a table adds of a point trained to its target in FEWEST_RUNS runs or more:
        the score, the flags, the speedrun's test; nothing of fewer (the means say them,
        and `bench show` why there is no score)."""
        if len(self.runs) < FEWEST_RUNS:
            return []
        parts = [self.score_words(usd_per_hour), *self.flags()]
        if self.reaches is not None:
            parts.append(self.reaches.sentence())
        return parts

    def times_words(self) -> str:
        """Each run's time in seconds, in the order they ran, the dropped two in brackets:
        '(98.1) 100.2 101.0 (missed) 103.3'."""
        dropped = set(self.score.dropped)
        words = []
        for i, run in enumerate(self.runs, 1):
            word = f"{run.time_s:,.1f}" if run.time_s is not None else "missed"
            words.append(f"({word})" if i in dropped else word)
        return " ".join(words)

    def amounts_words(self) -> str:
        """Each run's tokens or epochs to the target: '1.92 M 2.05 M - tokens', or
        '1.92 M tokens each' ('-': a run that missed)."""
        amounts = {r.amount for r in self.runs}
        if len(amounts) == 1 and None not in amounts:
            return f"{human(self.runs[0].amount)} {self.amount_unit} each"
        words = " ".join(human(r.amount) if r.amount is not None else "-" for r in self.runs)
        return f"{words} {self.amount_unit}"

    def record(self, usd_per_hour: float | None) -> dict[str, Any]:
        """The fields compare's JSON and CSV hold (None where there is no figure)."""
        score, cost = self.score, self.cost(usd_per_hour)
        reaches = self.reaches
        return {
            "runs_to_target": score.runs,
            "runs_reached": score.reached,
            "all_reached": score.all_reached,
            "run_times_to_target_s": [r.time_s for r in self.runs],
            f"run_{self.amount_unit}_to_target": [r.amount for r in self.runs],
            "run_final_" + ("loss" if self.metric == "loss" else "top1"): [
                r.final for r in self.runs
            ],
            "run_seeds": [r.seed for r in self.runs] if any(r.seed is not None for r in self.runs)
            else None,
            "score_s": score.value,
            "score_ci95_low_s": score.ci95[0] if score.ci95 else None,
            "score_ci95_high_s": score.ci95[1] if score.ci95 else None,
            "score_runs_counted": list(score.counted) or None,
            "score_runs_dropped": list(score.dropped) or None,
            "score_usd": cost[0] if cost else None,
            "score_why": score.why,
            "score_note": score.note,
            "far_faster_runs": [run for run, _ in score.far_faster] or None,
            "reaches_p": reaches.p_value if reaches else None,
            "reaches": reaches.reaches if reaches else None,
            "reaches_why": reaches.why if reaches else None,
        }  # fmt: skip


def of(point: Point | None) -> ToTarget | None:
    """A point's runs to its target loss (else its target top-1); None where it trained
    to neither, or to a top-1 without a target."""
    if point is None:
        return None
    if any(r and r.get("curve") for r in point.loss):
        return _to_loss(point)
    if any(r and r.get("target") is not None and r.get("epochs") for r in point.accuracy):
        return _to_accuracy(point)
    return None


def _laps(point: Point, i: int, key: str) -> list[float] | None:
    energy = point.energy[i] if i < len(point.energy) else None
    laps = (energy or {}).get(key)
    return laps if isinstance(laps, list) else None


def _seed(record: dict[str, Any]) -> int | None:
    seed = record.get("seed")
    return seed if isinstance(seed, int) and not isinstance(seed, bool) else None


def _finite(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def _to_loss(point: Point) -> ToTarget:
    runs, finals = [], []
    target = 0.0
    for i, record in enumerate(point.loss):
        if not record or not record.get("curve"):
            continue
        own = ToLoss.of([record], [_laps(point, i, "epoch_j")])
        target = own.target
        final = _finite(record["curve"][-1].get("loss"))
        finals.append(final)
        runs.append(Run(bool(own.reached), own.time_to_target_s, own.tokens_to_target,
                        own.energy_to_target_j, final, _seed(record)))  # fmt: skip
    if None in finals:
        missing = [i for i, f in enumerate(finals, 1) if f is None]
        why = f"run {numbered(missing)} ended at a loss that is not a number (diverged)"
        reaches = Reaches(len(finals), None, target, True, None, why)
    else:
        reaches = reaches_target([f for f in finals if f is not None], target, below=True)
    score = mlperf_score([r.time_s for r in runs])
    return ToTarget("loss", target, "tokens", tuple(runs), score, reaches)


def _to_accuracy(point: Point) -> ToTarget:
    runs = []
    target = 0.0
    for i, record in enumerate(point.accuracy):
        if not record or record.get("target") is None or not record.get("epochs"):
            continue
        own = ToAccuracy.of([record], [_laps(point, i, "epoch_j")])
        target = float(own.target or 0.0)
        runs.append(Run(bool(own.reached), own.time_to_target_s, own.epochs_to_target,
                        own.energy_to_target_j, _finite(record["epochs"][-1].get("top1")),
                        _seed(record)))  # fmt: skip
    score = mlperf_score([r.time_s for r in runs])
    return ToTarget("top-1", target, "epochs", tuple(runs), score, None)


def _seconds(value: float, ci: tuple[float, float] | None) -> str:
    if ci is None:
        return f"{value:,.1f} s"
    return f"{value:,.1f} s [{ci[0]:,.1f}–{ci[1]:,.1f}]"


def _usd(value: float, ci: tuple[float, float] | None) -> str:
    if ci is None:
        return human(value)
    return f"{human(value)} [{human(ci[0])}–{human(ci[1])}]"


MLPERF_NOTE = (
    f"MLPerf's score: the mean time of the runs between the fastest and the slowest (it "
    f"asks {MLPERF_RUNS} runs of most benchmarks; one run that missed counts as the "
    "slowest), with the trimmed mean's 95% interval"
)
