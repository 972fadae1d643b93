"""The tables of a result beside its points' (bench.report.table): the largest batch (or
sequence) that trains, bench ladder's rungs and bench tune's rounds; points trained to a
target (top-1 per epoch, the validation loss per evaluation, and MLPerf's score over
several runs, with time, energy and cost to it); and what every table of a result is
titled, with whether its workload takes images (a memory format is named only where it
does)."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from bench import registry
from bench.config.option import RunOption
from bench.report.to_target import MLPERF_NOTE
from bench.report.to_target import of as to_target
from bench.result import MaxBatch, Point, Result, point_axes
from bench.result.derive import percent_interval
from bench.result.point import ToLoss
from bench.stats.estimate import Estimate
from bench.util.errors import UsageError
from bench.util.text import plain
from bench.util.units import format_bytes, human


def title(result: Result) -> str:
    config, env = result.config, result.environment or {}
    accelerator = (env.get("accelerator") or {}).get("accelerator")
    where = accelerator or (env.get("cpu") or {}).get("model") or config.device
    framework = (env.get("framework") or {}).get(config.framework)
    parts = [
        config.workload,
        f"{config.framework} {framework or ''}".strip(),
        f"{config.device} ({where})",
    ]
    if result.label:
        parts.append(result.label)
    if result.status != "complete":
        parts.append(result.status.upper())
    return " · ".join(parts)


def takes_images(result: Result) -> bool:
    """Whether the result's workload takes images. A memory format is an image tensor's
    layout: a token sequence has none, though JAX records its only one (NHWC) for every
    point (bench.report.rows.row_key's rule). True for a workload this bench lacks."""
    try:
        return not registry.workload(result.config.workload).takes_seq_len
    except UsageError:
        return True


def option_header(option: RunOption) -> str:
    """A table's column for a run option: its flag, a word a line ('activation\ncheckpointing')."""
    return option.flag.lstrip("-").replace("-", "\n")


# The tables of a run's searches and Runners: the largest batch (or sequence) that
# trains, bench ladder's rungs and bench tune's rounds.


def max_batch_table(result: Result) -> Table:
    """The searches of a run: the largest batch that trains, or (--find-max-seq-len) the
    longest sequence that trains at the config's one batch size."""
    config = result.config
    by_length = any(s.axis == "seq_len" for s in result.max_batch)
    what = "sequence length" if by_length else "batch"
    at = f" at batch {config.batch_sizes[0]}" if by_length else ""
    name = f"largest {what} that trains{at}"
    table = Table(title=plain(f"{title(result)} · {name}"), title_justify="left")
    images = takes_images(result)  # a token workload's searches have no memory format
    for column in ("precision", "memory format", "compile") if images else ("precision", "compile"):
        table.add_column(column)
    table.add_column("largest seq len" if by_length else "largest batch", justify="right")
    table.add_column("first failing", justify="right")
    table.add_column("peak memory\nat largest", justify="right")
    table.add_column("probes", justify="right")
    table.add_column("note")
    for search in result.max_batch:
        length = search.axis == "seq_len"
        at_largest = next(
            (p.peak_memory_bytes for p in search.probes
             if (p.seq_len if length else p.batch_size) == search.largest_ok),
            None,
        )  # fmt: skip
        note = search.error or ""
        if search.status == "done" and search.largest_ok is None:
            smallest = "sequence length 1" if length else "batch 1"
            note = search.error or f"even {smallest} does not fit"  # the floor says why
        elif search.status == "done" and search.first_failing is None:
            longest = registry.workload(config.workload).max_seq_len
            limit = f"{config.workload}'s longest, {longest}" if length else config.max_batch_limit
            note = f"reached the search limit ({limit})"
        elif (
            search.largest_ok
            and search.first_failing
            and search.first_failing - search.largest_ok > 1
        ):
            steps = f"steps of {search.resolution}"
            if length and search.largest_ok < search.resolution:
                steps = f"halvings below {search.resolution}"
            note = f"searched in {steps}: the largest lies in between"
        row = [
            search.precision,
            *([search.memory_format] if images else []),
            search.compile or "none",
            search.display,
            str(search.first_failing or ""),
            format_bytes(at_largest) if at_largest else "",
            _probes(search),
            note,
        ]
        table.add_row(*map(plain, row))
    return table


def _probes(search: MaxBatch) -> str:
    """'7 in 71 s': how many probes, and their time where every probe's is known
    (schema 16 on); the count alone before."""
    known = [p.seconds for p in search.probes if p.seconds is not None]
    if not known or len(known) < len(search.probes):
        return str(len(search.probes))
    return f"{len(known)} in {sum(known):.0f} s"


def ladder_rows(result: Result) -> list[tuple[dict[str, Any], Estimate | None, float | None]]:
    """Each rung of bench ladder with its throughput (None: skipped, or failed) and its
    speed over the baseline rung; the table and the report's chart read these."""
    rows: list[tuple[dict[str, Any], Estimate | None, float | None]] = []
    base = None
    points: dict[tuple[Any, ...], Point] = {}  # the first point of each config, by its axes
    for p in result.points:
        points.setdefault(point_axes(p), p)
    for rung in result.ladder:
        point = points.get(point_axes(rung["point"]))
        tp = point.throughput if point and rung["kept"] is not None else None
        base = base or tp
        rows.append((rung, tp, tp.value / base.value if tp and base else None))
    return rows


def _rate(value: float) -> str:
    """A rung's rate: whole above a thousand (434,142 tokens/s), else two decimals."""
    return f"{value:,.0f}" if value >= 1000 else f"{value:,.2f}"


def ladder_table(result: Result) -> Table:
    """bench ladder: each rung, its throughput, its speed over the baseline (the Xeon CPU
    training study's table), whether it was kept and why."""
    price = (result.pricing or {}).get("usd_per_hour")
    # In the workload's own unit where it has one (a decoder's tokens/s, the figure LLM
    # training is quoted in): every rung trains the same sequence length.
    scale, unit = 1.0, "samples"
    natural = next((u for p in result.points if (u := p.unit_throughput)), None)
    first = next((p.throughput for p in result.points if p.throughput), None)
    if natural and first and first.value:
        scale, unit = natural[0] / first.value, natural[1].removesuffix("/s")
    caption = None
    if result.status != "complete":
        caption = (f"{result.status}: the rungs after the last one shown were not measured; "
                   "the same command with --resume FILE goes on")  # fmt: skip
    table = Table(title=plain("ladder: each change on top of the best so far"),
                  title_justify="left", caption=caption, caption_justify="left")  # fmt: skip
    for header in ("rung", f"{unit}/s", "95% CI", "x baseline", "kept", "why"):
        table.add_column(header, justify="left" if header in ("rung", "kept", "why") else "right")
    if price:
        table.add_column(f"{unit}/$", justify="right")
    for rung, tp, speedup in ladder_rows(result):
        low, high = (tp.ci95_low, tp.ci95_high) if tp else (None, None)
        cells = [
            rung["rung"],
            _rate(tp.value * scale) if tp else "",
            f"{_rate(low * scale)}–{_rate(high * scale)}"
            if low is not None and high is not None
            else "",
            f"{speedup:.2f}" if speedup is not None else "",
            {True: "yes", False: "no", None: "–"}[rung["kept"]],
            rung["why"],
        ]
        if price:
            cells.append(human(tp.value * scale * 3600 / price) if tp else "")
        table.add_row(*map(plain, cells))
    return table


def tune_table(result: Result) -> Table:
    """bench tune: each round of successive halving, what it probed and its best."""
    table = Table(title=plain("tune: successive halving, the best third of each round goes on"),
                  title_justify="left")  # fmt: skip
    for header in ("round", "steps", "runs", "probed", "ok", "best", "samples/s"):
        table.add_column(header, justify="left" if header == "best" else "right")
    images = takes_images(result)
    for record in (result.tune or {}).get("rounds", []):
        points = [Point.from_json(p) for p in record["points"]]
        ok = [p for p in points if p.throughput]
        best = max(ok, key=lambda p: p.throughput.value, default=None)  # type: ignore[union-attr]
        named = best.label_for(images) if best else ""
        cells = [record["round"], record["steps"], record.get("repeats", 1),
                 f"{len(points)} of {record.get('of', len(points))}", len(ok),
                 named, f"{best.throughput.value:,.1f}" if best else ""]  # type: ignore[union-attr]  # fmt: skip
        table.add_row(*(plain(str(c)) for c in cells))
    return table


# The tables of points trained to a target: top-1 per epoch, the validation loss per
# evaluation, and MLPerf's score over several runs, with time, energy and cost to it.


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
