"""Rich tables of a result: measured points, and max-batch searches."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from bench import registry
from bench.errors import UsageError
from bench.report.to_target import MLPERF_NOTE
from bench.report.to_target import of as to_target
from bench.result import Point, Result, point_axes
from bench.result.point import ToLoss
from bench.stats import Estimate
from bench.text import plain
from bench.units import format_bytes, human

_STATUS_STYLE = {"ok": "green", "oom": "yellow", "error": "red"}


def _ms(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds * 1e3:,.1f}"


def console(stderr: bool = False) -> Console:
    """Where tables go. Off a terminal (docker logs, CI, a pipe) rich would wrap them at
    80 columns: there, a log-friendly width."""
    probe = Console(stderr=stderr)
    return probe if probe.is_terminal else Console(stderr=stderr, width=160)


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
    point (bench.report.compare.row_key's rule). True for a workload this bench lacks."""
    try:
        return not registry.workload(result.config.workload).takes_seq_len
    except UsageError:
        return True


# Columns a narrow terminal drops first (the rest always stay): details before figures.
_DROP_ORDER = (
    "step p95\n(ms)",
    "throughput\n(pixels/s)",
    "per device\n(tokens/s)",
    "throughput\n(tokens/s)",
    "model\nTFLOP/s",
    "MFU",
    "mean\npower (W)",
    "peak\nmemory",
    "step median\n(ms)",
    "epoch 2..N\nmean (s)",
    "95% CI\n(samples/s)",
)


def _width(header: str, cells: list[str]) -> int:
    """Characters a column takes in a rich table: its widest line, padding, a border."""
    return max(len(line) for text in (header, *cells) for line in text.split("\n")) + 3


def points_table(result: Result, width: int | None = None) -> Table:
    """The measured points; at a `width` too narrow for every column, the least
    important are left out and named under the table (nothing is cut mid-number)."""
    points = result.points
    price = (result.pricing or {}).get("usd_per_hour")
    columns: dict[str, list[str]] = {}

    def column(header: str, cells: list[str], when: bool = True) -> None:
        if when:
            columns[header] = cells

    def ci(p: Point) -> str:
        tp = p.throughput
        if tp and tp.ci95_low is not None and tp.ci95_high is not None:
            return f"{tp.ci95_low:,.1f}–{tp.ci95_high:,.1f}"
        return "– (1 run)" if tp else ""

    efficiency = result.scaling_efficiencies()
    energy = [p.energy_summary for p in points]
    column("devices", [str(p.devices) for p in points], any(p.devices > 1 for p in points))
    column("batch", [str(p.batch_size) for p in points])
    column("precision", [p.precision for p in points])
    layouts = takes_images(result) and any(p.memory_format != "contiguous" for p in points)
    column("memory format", [p.memory_format for p in points], layouts)
    column("compile", [p.compile or "none" for p in points], any(p.compile for p in points))
    column("optimize", [p.optimize or "none" for p in points], any(p.optimize for p in points))
    column("activation\ncheckpointing", [p.activation_checkpointing for p in points],
           any(p.activation_checkpointing != "none" for p in points))  # fmt: skip
    column("runtime", [p.runtime_label or "as launched" for p in points],
           any(p.runtime_label for p in points))  # fmt: skip
    column("status", [p.status for p in points])  # why it failed: a note under the table
    column("throughput\n(samples/s)", [f"{p.throughput.value:,.1f}" if p.throughput else ""
                                        for p in points])  # fmt: skip
    column("95% CI\n(samples/s)", [ci(p) for p in points])
    per_unit = [p.unit_throughput for p in points]
    units = {u[1] for u in per_unit if u}
    header = f"throughput\n({', '.join(sorted(units))})"
    column(header, [human(u[0]) if u else "" for u in per_unit], bool(units))
    # LLM figures are quoted per GPU (torchtitan's TPS/GPU): beside the global one.
    per_device = [p.unit_throughput_per_device for p in points]
    several = any(p.unit_throughput and p.devices_trained > 1 for p in points)
    column(f"per device\n({', '.join(sorted(units))})",
           [human(u[0]) if u else "" for u in per_device], several)  # fmt: skip
    column("scaling\nefficiency", [f"{e:.0%}" if e is not None else "" for e in efficiency],
           any(e is not None for e in efficiency))  # fmt: skip
    steps = [p.step_time for p in points]
    column("step median\n(ms)", [_ms(t.median) if t else "" for t in steps])
    column("step p95\n(ms)", [_ms(t.p95) if t else "" for t in steps])
    epochs = [p.epoch_time for p in points]
    column("epoch 2..N\nmean (s)", [f"{e.mean:,.3f}" if e else "" for e in epochs],
           any(p.epoch_times_s for p in points))  # fmt: skip
    column("peak\nmemory", [format_bytes(p.peak_memory) if p.measured else "" for p in points])
    column("model\nTFLOP/s", [
        f"{f / 1e12:,.3f}" if (f := p.achieved_flops) is not None else ("n/a" if p.measured else "")
        for p in points
    ])  # fmt: skip
    # The child's peak of the devices that trained, else --peak-tflops (all devices) for
    # a workload that records MFU (formula FLOPs) where the catalogue knows no peak.
    given = result.peak_tflops * 1e12 if result.peak_tflops else None
    utilisation = [
        p.mfu if p.mfu is not None or not given or "mfu" not in p.details
        else (f / given if (f := p.achieved_flops) is not None else None)
        for p in points
    ]  # fmt: skip
    column("MFU", [f"{m:.1%}" if m is not None else "" for m in utilisation],
           any(m is not None for m in utilisation))  # fmt: skip
    with_energy = any(energy)
    column("mean\npower (W)", [f"{e.mean_power_w:,.1f}" if e else "" for e in energy], with_energy)
    column("energy\n(J/sample)", [f"{e.per_sample_j:,.3g}" if e else "" for e in energy],
           with_energy)  # fmt: skip
    if price:
        column(f"samples/USD\n(at ${price:g}/h)", [
            f"{p.throughput.value * 3600 / price:,.0f}" if p.throughput else "" for p in points
        ])  # fmt: skip

    left_out = []
    for header in _DROP_ORDER:
        if width is None or sum(_width(h, c) for h, c in columns.items()) + 1 <= width:
            break
        if header in columns:
            del columns[header]
            left_out.append(header.replace("\n", " "))
    caption = (
        f"left out at this width: {', '.join(left_out)} (all in the JSON; a wider terminal "
        "shows them)"
        if left_out
        else None
    )
    table = Table(
        title=plain(title(result)), title_justify="left",
        caption=plain(caption) if caption else None, caption_justify="left",
    )  # fmt: skip
    text_columns = ("precision", "memory format", "compile", "optimize", "status")
    for header in columns:  # a header may hold a file's unit: text, never markup
        table.add_column(plain(header), justify="left" if header in text_columns else "right")
    for i, p in enumerate(points):
        row = [plain(cells[i]) for cells in columns.values()]
        if "status" in columns:
            row[list(columns).index("status")] = plain(p.status, _STATUS_STYLE.get(p.status, ""))
        table.add_row(*row)
    return table


def notes(result: Result) -> str | None:
    """What the table's cells cannot hold: why each failed point failed (first line of
    its error), which points stayed noisier than asked, why energy is missing, and any
    point whose power reading is suspect."""
    images = takes_images(result)
    failures = [
        f"{p.label_for(images)}: {p.status}: {p.error_line[:200]}"
        for p in result.points
        if p.status != "ok"
    ]
    noisy = [f"{p.label_for(images)}: noisy: {p.noise}" for p in result.points if p.noise]
    noisy += [
        f"{p.label_for(images)}: busy machine: {p.busy_note}" for p in result.points if p.busy_note
    ]
    unbound = [
        f"{p.label_for(images)}: NUMA binding asked for, not applied: {why}"
        for p in result.points
        if (why := (p.runtime or {}).get("numa_reason"))
    ]
    differ = (result.environment or {}).get("nodes_differ")
    machines = [f"the machines of this run differ in: {', '.join(differ)}"] if differ else []
    stopped = (result.tune or {}).get("stopped")
    tune = [f"tune stopped early: {stopped}"] if stopped else []
    lines = [*failures, *noisy, *unbound, *scaling_notes(result), *machines, *tune,
             energy_note(result) or ""]  # fmt: skip
    return "\n".join(line for line in lines if line) or None


def scaling_notes(result: Result) -> list[str]:
    """Whether each multi-device point beat its one-device point, and its slowest rank."""
    images, lines = takes_images(result), []
    for p, efficiency in zip(result.points, result.scaling_efficiencies(), strict=True):
        label = p.label_for(images)
        if efficiency is not None:
            speedup = efficiency * p.devices
            verdict = "faster than" if speedup > 1 else "no faster than"
            lines.append(
                f"{label}: {speedup:.2f}x the one-device point ({verdict} one device; "
                f"scaling efficiency {efficiency:.0%})"
            )
        slowest = [r for r in p.ranks if r]
        if slowest and len(slowest[0].get("mean_step_s") or []) > 1:
            means = [m for m in slowest[0]["mean_step_s"] if m]
            if means and max(means) > 1.05 * min(means):
                lines.append(
                    f"{label}: rank {slowest[0]['slowest_rank']} was the slowest, mean step "
                    f"{max(means) * 1e3:,.1f} ms vs {min(means) * 1e3:,.1f} ms on the fastest"
                )
    return lines


def energy_note(result: Result) -> str | None:
    """Why energy is missing, once per result rather than in every row; and every
    point whose mean power lies outside what its device can draw."""
    reasons = {p.energy_unavailable for p in result.points if p.measured and not p.energy_summary}
    reasons.discard(None)
    missing = "; ".join(sorted(r for r in reasons if r))
    notes = [f"energy: not measured ({missing})"] if reasons else []
    for p in result.points:
        energy = p.energy_summary
        if energy and energy.power_check not in (None, "ok"):
            notes.append(
                f"energy of {p.label_for(takes_images(result))} is suspect: {energy.power_check}"
            )
    return "\n".join(notes) or None


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
            str(len(search.probes)),
            note,
        ]
        table.add_row(*map(plain, row))
    return table


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


def ladder_table(result: Result) -> Table:
    """bench ladder: each rung, its throughput, its speed over the baseline (the Xeon CPU
    training study's table), whether it was kept and why."""
    price = (result.pricing or {}).get("usd_per_hour")
    table = Table(title=plain("ladder: each change on top of the best so far"),
                  title_justify="left")  # fmt: skip
    for header in ("rung", "samples/s", "95% CI", "x baseline", "kept", "why"):
        table.add_column(header, justify="right" if header[0] in "s9x" else "left")
    if price:
        table.add_column("samples/$", justify="right")
    for rung, tp, speedup in ladder_rows(result):
        low, high = (tp.ci95_low, tp.ci95_high) if tp else (None, None)
        cells = [
            rung["rung"],
            f"{tp.value:,.2f}" if tp else "",
            f"{low:,.2f}–{high:,.2f}" if low is not None and high is not None else "",
            f"{speedup:.2f}" if speedup is not None else "",
            {True: "yes", False: "no", None: "–"}[rung["kept"]],
            rung["why"],
        ]
        if price:
            cells.append(human(tp.value * 3600 / price) if tp else "")
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
        wait = point.input_wait_fraction
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
            f"{wait:.1%} of step time" if wait is not None else "n/a",
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


def is_rung(point: Point, config: dict) -> bool:
    return point_axes(point) == point_axes(config)


def tables(result: Result, width: int | None = None) -> list[Table]:
    found = []
    if result.ladder:
        found.append(ladder_table(result))
    if result.tune:
        found.append(tune_table(result))
    if result.points:
        found.append(points_table(result, width))
    if any(point.accuracy for point in result.points):
        found.append(accuracy_table(result))
    if any(point.to_loss for point in result.points):
        found.append(loss_table(result))
    scored = to_target_table(result)
    if scored is not None:
        found.append(scored)
    if result.max_batch:
        found.append(max_batch_table(result))
    return found
