"""What a result's tables cannot hold, in lines under them: why points failed, which
stayed noisy, how multi-device points scaled, why energy is missing."""

from __future__ import annotations

from bench.report.headings import takes_images
from bench.result import Result


def notes(result: Result) -> str | None:
    """What the table's cells cannot hold: why each failed point failed (first line of
    its error), which points stayed noisier than asked, which waited for their data (the
    input-bound share, bench.result.derive.INPUT_BOUND_SHARE), why energy is missing, and
    any point whose power reading is suspect."""
    images = takes_images(result)
    failures = [
        f"{p.label_for(images)}: {p.status}: {p.error_line[:200]}"
        for p in result.points
        if p.status != "ok"
    ]
    noisy = [f"{p.label_for(images)}: noisy: {p.noise}" for p in result.points if p.noise]
    noisy += [f"{p.label_for(images)}: {why}" for p in result.points
              if (why := p.repeats_disagree)]  # fmt: skip
    noisy += [
        f"{p.label_for(images)}: busy machine: {p.busy_note}" for p in result.points if p.busy_note
    ]
    fed = [f"{p.label_for(images)}: {why}" for p in result.points if (why := p.input_bound_note)]
    unbound = [
        f"{p.label_for(images)}: NUMA binding asked for, not applied: {why}"
        for p in result.points
        if (why := (p.runtime or {}).get("numa_reason"))
    ]
    differ = (result.environment or {}).get("nodes_differ")
    machines = [f"the machines of this run differ in: {', '.join(differ)}"] if differ else []
    stopped = (result.tune or {}).get("stopped")
    tune = [f"tune stopped early: {stopped}"] if stopped else []
    lines = [*failures, *noisy, *fed, *unbound, *scaling_notes(result), *machines, *tune,
             *empty_curves(result), energy_note(result) or ""]  # fmt: skip
    return "\n".join(line for line in lines if line) or None


def empty_curves(result: Result) -> list[str]:
    """A point that trained to a validation loss but whose loss records hold no
    evaluation has no row in the loss and to-target tables: a line says so, rather than
    the tables leaving it out without a word."""
    images = takes_images(result)
    return [
        f"{p.label_for(images)}: trained to a validation loss, but its loss curves hold no "
        "evaluation: left out of the loss tables"
        for p in result.points
        if p.status == "ok" and any(r is not None for r in p.loss) and p.to_loss is None
    ]


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
