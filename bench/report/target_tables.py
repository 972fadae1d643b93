"""The tables of points trained to a target: top-1 per epoch, the validation loss per
evaluation, and MLPerf's score over several runs, with time, energy and cost to it."""

from __future__ import annotations

from rich.table import Table

from bench.report.headings import takes_images
from bench.report.to_target import MLPERF_NOTE
from bench.report.to_target import of as to_target
from bench.result import Point, Result
from bench.result.derive import percent_interval
from bench.result.point import ToLoss
from bench.util.text import plain
from bench.util.units import human


def accuracy_table(result: Result) -> Table:
    """Training on a dataset: top-1 after each epoch, and time, energy and cost to the
    target (wall clock from the first step, evaluations included), as the TPUv2 vs V100
    comparison reported its time and cost to 75.7%."""
    price = (result.pricing or {}).get("usd_per_hour")
    target = result.config.train_to
    heading = f"to {target:.1%} top-1" if target is not None else "top-1 per epoch"
    table = Table(title=plain(f"accuracy: {heading} on {result.config.data}"),
                  title_justify="left")  # fmt: skip
    headers = ["point", "top-1 by epoch", "best", "epochs to target", "time to target",
               "energy to target", "cost to target", "input wait", "real / synthetic"]  # fmt: skip
    for header in headers:
        table.add_column(
            header, justify="left" if header in ("point", "top-1 by epoch") else "right"
        )
    for point in result.points:
        reached = point.to_accuracy
        if reached is None:
            continue
        wait = point.input_wait_share
        cost = reached.cost_to_target(price)
        joules = reached.energy_to_target_j
        missed = "not reached" if target is not None else "–"
        cells = [
            point.label_for(takes_images(result)),
            " ".join(f"{top1:.1%}" for top1 in reached.curve),
            f"{reached.best_top1:.1%}",
            f"{reached.epochs_to_target:g}" if reached.epochs_to_target else missed,
            f"{reached.time_to_target_s:,.1f} s" if reached.time_to_target_s else missed,
            f"{joules / 3.6e6:,.4f} kWh" if joules is not None else "n/a",
            f"${cost:,.4f}" if cost is not None else ("n/a (no price)" if not price else missed),
            f"{percent_interval(wait)} of step time" if wait is not None else "n/a",
            f"{point.synthetic_ratio:.2f}" if point.synthetic_ratio is not None else "n/a",
        ]
        table.add_row(*map(plain, cells))
    return table


def _curve_text(losses: list[float]) -> str:
    """'4.000 → 3.500 → 2.900': each evaluation's loss, or beyond four the first and the
    last with how many there were."""
    if len(losses) <= 4:
        return " → ".join(f"{loss:.3f}" for loss in losses)
    return f"{losses[0]:.3f} → {losses[-1]:.3f} ({len(losses)} evaluations)"


def _loss_note(point: Point, reached: ToLoss) -> str:
    """Why a point missed its target (a signal, or the budget spent), and how many of its
    repeats reached it where not all did."""
    stops = [(r, record["stopped"]) for r, record in enumerate(point.loss, 1)
             if record and record.get("stopped")]  # fmt: skip
    parts = []
    if stops:
        repeat, signal = stops[0]
        at = f" at repeat {repeat} of {reached.repeats}" if reached.repeats > 1 else ""
        curve = (point.loss[repeat - 1] or {}).get("curve") or [{}]
        parts.append(f"stopped ({signal}){at} after {human(curve[-1].get('tokens'))} tokens")
    elif not reached.reached:
        parts.append(f"budget spent ({human(reached.tokens_trained)} tokens)")
    if 0 < reached.reached < reached.repeats:
        parts.append(f"{reached.reached} of {reached.repeats} repeats reached it (their mean)")
    return "; ".join(parts)


def _to_target(reached: ToLoss) -> tuple[str, str]:
    """Tokens (and steps) to the target, and the wall time to it with the evaluations'
    share; 'not reached' for both where no repeat reached it."""
    tokens, time, share = reached.tokens_to_target, reached.time_to_target_s, reached.eval_share
    if tokens is None or time is None:
        return "not reached", "not reached"
    steps = f" ({reached.steps_to_target:,.0f} steps)" if reached.steps_to_target else ""
    evaluation = f" (evaluation {share:.0%})" if share is not None else ""
    return f"{human(tokens)}{steps}", f"{time:,.1f} s{evaluation}"


def loss_table(result: Result) -> Table:
    """Training a decoder to a validation loss (--train-to-loss): each evaluation's loss,
    the best, and tokens, time (training plus evaluation, as MLPerf counts it), energy
    and cost to the target; what accuracy_table is to images."""
    price = (result.pricing or {}).get("usd_per_hour")
    found = [(p, r) for p in result.points if (r := p.to_loss) is not None]
    target = result.config.train_to_loss
    target = target if target is not None else (found[0][1].target if found else None)
    heading = f"to {target:g} nats/token" if target is not None else "validation loss"
    on = result.config.val_data or result.config.data
    table = Table(title=plain(f"loss: {heading} on {on}"), title_justify="left")
    rows = []
    for point, reached in found:
        cost = reached.cost_to_target(price)
        joules = reached.energy_to_target_j
        rows.append([
            point.label_for(takes_images(result)),
            _curve_text([entry["loss"] for entry in reached.curve]),
            f"{reached.best_loss:.3f} at {human(reached.best_at_tokens)}",
            *_to_target(reached),
            f"{joules / 3.6e6:,.4f} kWh" if joules is not None else "n/a",
            f"${cost:,.4f}" if cost is not None
            else ("n/a (no price)" if not price else "not reached"),
            _loss_note(point, reached),
        ])  # fmt: skip
    headers = ["point", "validation loss by evaluation\n(nats/token)", "best\n(at tokens)",
               "tokens to target", "time to target\n(training + evaluation)",
               "energy to target", "cost to target", "note"]  # fmt: skip
    if not any(row[-1] for row in rows):  # every point reached it, in every repeat
        headers.pop()
    for header in headers:
        left = header in ("point", "note") or header.startswith("validation")
        table.add_column(header, justify="left" if left else "right")
    for row in rows:
        table.add_row(*map(plain, row[: len(headers)]))
    return table


def to_target_table(result: Result) -> Table | None:
    """The points trained to a target in several runs (--repeats): each run's time and
    tokens or epochs to it, MLPerf's score of the times with its interval and cost, and
    what to check (a run far faster than the others, runs that missed, the speedrun's
    test of the final losses). None where no point ran more than once."""
    price = (result.pricing or {}).get("usd_per_hour")
    found = [(p, runs) for p in result.points if (runs := to_target(p)) and len(runs.runs) > 1]
    if not found:
        return None
    title = "to the target over several runs, scored as MLPerf does (the mean of the runs "
    table = Table(title=plain(title + "between the fastest and the slowest)"),
                  title_justify="left", caption=plain(MLPERF_NOTE),
                  caption_justify="left")  # fmt: skip
    headers = ["point", "runs reached", "time to target per run (s)\n(dropped in brackets)",
               "to target per run", "score", "check"]  # fmt: skip
    for header in headers:
        table.add_column(header, justify="left" if header in ("point", "check") else "right")
    for point, runs in found:
        score = runs.score
        checks = runs.flags()
        if score.value is None and score.why:
            checks.insert(0, f"no score: {score.why}")
        elif score.ci95 is None and score.why:
            checks.insert(0, score.why)
        if score.note:
            checks.append(score.note)
        if runs.reaches is not None:
            checks.append(runs.reaches.sentence())
        table.add_row(*map(plain, [
            point.label_for(takes_images(result)),
            f"{score.reached} of {score.runs}",
            runs.times_words(),
            runs.amounts_words(),
            runs.score_figure(price) or "none",
            "; ".join(checks),
        ]))  # fmt: skip
    return table
