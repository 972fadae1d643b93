"""Rich tables of a result: measured points, and max-batch searches."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from bench.report.text import plain
from bench.result import Result
from bench.units import format_bytes

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


def points_table(result: Result) -> Table:
    points = result.points
    show_format = any(p.memory_format != "contiguous" for p in points)
    show_compile = any(p.compile for p in points)
    show_devices = any(p.devices > 1 for p in points)
    show_scaling = any(result.scaling_efficiency(p) is not None for p in points)
    epoch_mode = any(p.epoch_times_s for p in points)
    table = Table(title=plain(title(result)), title_justify="left")
    if show_devices:
        table.add_column("devices", justify="right")
    table.add_column("batch", justify="right")
    table.add_column("precision")
    if show_format:
        table.add_column("memory format")
    if show_compile:
        table.add_column("compile")
    table.add_column("status")
    table.add_column("throughput\n(samples/s)", justify="right")
    table.add_column("95% CI\n(samples/s)", justify="right")
    if show_scaling:
        table.add_column("scaling\nefficiency", justify="right")
    table.add_column("step median\n(ms)", justify="right")
    table.add_column("step p95\n(ms)", justify="right")
    if epoch_mode:
        table.add_column("epoch 2..N\nmean (s)", justify="right")
    table.add_column("peak\nmemory", justify="right")
    table.add_column("model\nTFLOP/s", justify="right")
    with_energy = any(p.energy_summary for p in points)
    if with_energy:
        table.add_column("mean\npower (W)", justify="right")
        table.add_column("energy\n(J/sample)", justify="right")
    price = (result.pricing or {}).get("usd_per_hour")
    if price:
        table.add_column(f"samples/USD\n(at ${price:g}/h)", justify="right")
    for p in points:
        tp, step, epoch, flops = p.throughput, p.step_time, p.epoch_time, p.achieved_flops
        ci = (
            f"{tp.ci95_low:,.1f}–{tp.ci95_high:,.1f}"
            if tp and tp.ci95_low is not None and tp.ci95_high is not None
            else "– (1 run)"
            if tp
            else ""
        )
        status = p.status  # why it failed: a note under the table, not a tall cell
        row: list[str | Text] = [str(p.devices)] if show_devices else []
        row += [str(p.batch_size), p.precision]
        if show_format:
            row.append(p.memory_format)
        if show_compile:
            row.append(p.compile or "none")
        row += [
            plain(status, _STATUS_STYLE.get(p.status, "")),
            f"{tp.value:,.1f}" if tp else "",
            ci,
        ]
        if show_scaling:
            efficiency = result.scaling_efficiency(p)
            row.append(f"{efficiency:.0%}" if efficiency is not None else "")
        row += [
            _ms(step.median) if step else "",
            _ms(step.p95) if step else "",
        ]
        if epoch_mode:
            row.append(f"{epoch.mean:,.3f}" if epoch else "")
        row += [
            format_bytes(p.peak_memory) if p.measured else "",
            f"{flops / 1e12:,.3f}" if flops is not None else ("n/a" if p.measured else ""),
        ]
        if with_energy:
            energy = p.energy_summary
            row += (
                [f"{energy.mean_power_w:,.1f}", f"{energy.per_sample_j:,.3g}"]
                if energy
                else ["", ""]
            )
        if price:
            row.append(f"{tp.value * 3600 / price:,.0f}" if tp else "")
        table.add_row(*map(plain, row))
    return table


def notes(result: Result) -> str | None:
    """What the table's cells cannot hold: why each failed point failed (first line of
    its error), which points stayed noisier than asked, why energy is missing, and any
    point whose power reading is suspect."""
    failures = [
        f"{p.label}: {p.status}: {p.error_line[:200]}" for p in result.points if p.status != "ok"
    ]
    noisy = [f"{p.label}: noisy: {p.noise}" for p in result.points if p.noise]
    noisy += [f"{p.label}: busy machine: {p.busy_note}" for p in result.points if p.busy_note]
    differ = (result.environment or {}).get("nodes_differ")
    machines = [f"the machines of this run differ in: {', '.join(differ)}"] if differ else []
    lines = [*failures, *noisy, *scaling_notes(result), *machines, energy_note(result) or ""]
    return "\n".join(line for line in lines if line) or None


def scaling_notes(result: Result) -> list[str]:
    """Whether each multi-device point beat its one-device point, and its slowest rank."""
    lines = []
    for p in result.points:
        efficiency = result.scaling_efficiency(p)
        if efficiency is not None:
            speedup = efficiency * p.devices
            verdict = "faster than" if speedup > 1 else "no faster than"
            lines.append(
                f"{p.label}: {speedup:.2f}x the one-device point ({verdict} one device; "
                f"scaling efficiency {efficiency:.0%})"
            )
        slowest = [r for r in p.ranks if r]
        if slowest and len(slowest[0].get("mean_step_s") or []) > 1:
            means = [m for m in slowest[0]["mean_step_s"] if m]
            if means and max(means) > 1.05 * min(means):
                lines.append(
                    f"{p.label}: rank {slowest[0]['slowest_rank']} was the slowest, mean step "
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
            notes.append(f"energy of {p.label} is suspect: {energy.power_check}")
    return "\n".join(notes) or None


def max_batch_table(result: Result) -> Table:
    table = Table(title=plain(f"{title(result)} · largest batch that trains"), title_justify="left")
    for name in ("precision", "memory format", "compile"):
        table.add_column(name)
    table.add_column("largest batch", justify="right")
    table.add_column("first failing", justify="right")
    table.add_column("peak memory\nat largest", justify="right")
    table.add_column("probes", justify="right")
    table.add_column("note")
    for search in result.max_batch:
        at_largest = next(
            (p.peak_memory_bytes for p in search.probes if p.batch_size == search.largest_ok), None
        )
        note = search.error or ""
        if search.status == "done" and search.largest_ok is None:
            note = "even batch 1 does not fit"
        elif search.status == "done" and search.first_failing is None:
            note = f"reached the search limit ({result.config.max_batch_limit})"
        elif (
            search.largest_ok
            and search.first_failing
            and search.first_failing - search.largest_ok > 1
        ):
            note = f"searched in steps of {search.resolution}: the largest lies in between"
        row = [
            search.precision,
            search.memory_format,
            search.compile or "none",
            search.display,
            str(search.first_failing or ""),
            format_bytes(at_largest) if at_largest else "",
            str(len(search.probes)),
            note,
        ]
        table.add_row(*map(plain, row))
    return table


def tables(result: Result) -> list[Table]:
    found = []
    if result.points:
        found.append(points_table(result))
    if result.max_batch:
        found.append(max_batch_table(result))
    return found
