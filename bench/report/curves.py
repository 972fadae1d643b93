"""The curves the page draws: top-1 after each epoch of points trained to an
accuracy, and the validation loss of points trained to a loss, a long curve thinned."""

from __future__ import annotations

import math
from typing import Any

from bench.report.compare import Comparison
from bench.report.words import clean, config_label


def curves(comparison: Comparison) -> list[dict[str, Any]]:
    """Top-1 after each epoch of points trained to accuracy (the first repeat)."""
    rows = []
    for key, cells in comparison.rows:
        for machine, cell in zip(comparison.machines, cells, strict=True):
            reached = cell.point.to_accuracy if cell.point else None
            if reached is None:
                continue
            for epoch, top1 in enumerate(reached.curve, start=1):
                rows.append(
                    clean(
                        {
                            "machine": machine.label,
                            "workload": key.workload,
                            "config": config_label(key),
                            "precision": key.precision,
                            "epoch": epoch,
                            "top1": top1,
                            "target": reached.target,
                        }
                    )
                )
    return rows


LOSS_POINTS = 200  # evaluations of one loss curve the page embeds at most
LOSS_ROWS = 3000  # loss-curve rows the page embeds at most


def thinned(losses: list[float], most: int, keep: tuple[int, ...] = ()) -> list[int]:
    """Which of a curve's evaluations the page draws: every one of a curve of `most` or
    fewer; of a longer one, its first, its last, those in `keep` and, in each of the
    stretches of equal length between, the lowest and the highest loss (a spike or a
    divergence stays drawn: a loss that is not a number counts as the highest). A
    300,000-evaluation curve made a 59 MB page that drew its first 400."""
    n = len(losses)
    if n <= most:
        return list(range(n))
    chosen = {0, n - 1, *(i for i in keep if 0 <= i < n)}
    stretches = max(1, (most - len(chosen)) // 2)

    def height(i: int) -> float:
        return losses[i] if math.isfinite(losses[i]) else math.inf

    for s in range(stretches):
        span = range(s * n // stretches, (s + 1) * n // stretches)
        chosen.update((min(span, key=height), max(span, key=height)))
    return sorted(chosen)


def loss_curves(comparison: Comparison) -> list[dict[str, Any]]:
    """Validation loss at each evaluation of points trained to a target loss (the first
    repeat), against tokens trained and wall seconds (training plus evaluation)."""
    return loss_curves_noted(comparison)[0]


def loss_curves_noted(comparison: Comparison) -> tuple[list[dict[str, Any]], str]:
    """The loss curves' rows, each curve thinned to LOSS_POINTS evaluations and the
    whole to LOSS_ROWS rows (the first curves), and a line saying what was left out."""
    rows: list[dict[str, Any]] = []
    curves = drawn = thinned_curves = 0
    for key, cells in comparison.rows:
        for machine, cell in zip(comparison.machines, cells, strict=True):
            reached = cell.point.to_loss if cell.point else None
            if reached is None or not reached.curve:
                continue
            curves += 1
            if drawn < curves - 1:  # the page is full: the curves after it left out
                continue
            losses = [float(entry["loss"]) for entry in reached.curve]
            first = next((i for i, loss in enumerate(losses) if loss <= reached.target), None)
            kept = thinned(losses, LOSS_POINTS, () if first is None else (first,))
            if len(rows) + len(kept) > LOSS_ROWS:
                continue
            drawn += 1
            thinned_curves += len(kept) < len(losses)
            base = {
                "machine": machine.label,
                "workload": key.workload,
                "config": config_label(key),
                "precision": key.precision,
                "target": reached.target,
            }
            for i in kept:
                entry = reached.curve[i]
                row = {**base, "tokens": entry["tokens"], "wall_s": entry["wall_s"]}
                rows.append(clean({**row, "loss": entry["loss"], "evaluation": i + 1}))
    notes = []
    if thinned_curves:
        notes.append(
            f"A curve of more than {LOSS_POINTS:,} evaluations is drawn from at most "
            f"{LOSS_POINTS:,} of them: its first, its last, the first at the target and "
            "each stretch's lowest and highest loss."
        )
    if drawn < curves:
        notes.append(
            f"The first {drawn} of {curves} curves; bench compare --format json holds "
            "every point's figures to the target."
        )
    return rows, " ".join(notes)
