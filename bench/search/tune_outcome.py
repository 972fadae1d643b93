"""How a `bench tune` search ended, in its record: what of the grid it measured, left out
or did not reach (`coverage`), and, when it could not rank, why in words and what budget
would let it (`not_ranked`); and the winner as the command that measures it again
(`command_line`)."""

from __future__ import annotations

from typing import Any

from bench import registry
from bench.config.options import RUN_OPTIONS
from bench.result import Point
from bench.run import cost


def coverage(tune: dict[str, Any], grid: int, images: bool) -> dict[str, int]:
    """The grid's configurations by what became of them: measured (a probe trained),
    failed (every probe failed), left out (before a probe: memory, a cap), not reached.
    `images`: the points are named with their memory format (bench.result.Point.label_for)."""
    probed: dict[str, str] = {}  # label -> its best status
    for record in tune["rounds"]:
        for data in record["points"]:
            point = Point.from_json(data)
            label = point.label_for(images)
            if probed.get(label) != "ok":
                probed[label] = point.status
    left_out = {s["label"] for s in tune["skipped"]} - probed.keys()
    ok = sum(status == "ok" for status in probed.values())
    return {
        "grid": grid,
        "measured": ok,
        "failed": len(probed) - ok,
        "left_out": len(left_out),
        "not_reached": grid - len(probed) - len(left_out),
    }


def why_not_ranked(
    tune: dict[str, Any], final_ran: bool, ranked: int, *, repeats: int, probes_s: list[float],
    budget_s: float, elapsed_s: float, round_one_share: float,
) -> str:  # fmt: skip
    """Why a search whose record has its `coverage` ranked fewer than two configurations,
    with, where the budget was short, the budget that would let it: `ranked` of the
    final round trained (`final_ran`: it ran); `probes_s`: the children's seconds so far;
    round 1 may spend `round_one_share` of the budget."""
    ok = tune["coverage"]["measured"]
    if final_ran and ok <= 1:
        return (
            f"only {ranked} configuration trained to the end and nothing else of the "
            "grid trained: nothing to rank it against (see each probe's error)"
        )
    if final_ran:
        return (
            f"only {ranked} configuration of the final round trained to the end: "
            "nothing to rank it against (see each probe's error)"
        )
    need = tune.get("needed_s")
    if need is None:  # round 1 did not finish two probes
        caps = [c for r in tune["rounds"] for c in r["caps_s"]]
        cheapest = min(probes_s, default=min(caps, default=budget_s))
        need = (2 + 2 * repeats) * cheapest / round_one_share
        finished = {0: "no configuration", 1: "one configuration"}.get(ok, f"{ok} configurations")
        return (
            f"could not rank: {finished} finished a probe in "
            f"{cost.format_seconds(elapsed_s)} of a "
            f"{cost.format_seconds(budget_s)} budget (the cheapest probe takes about "
            f"{cost.format_seconds(cheapest)} or more), and a ranking needs two probed and "
            f"measured again {repeats} times each; a budget of at least "
            f"{cost.format_seconds(need)} would let it"
        )
    return (
        f"could not rank: the final round of two did not fit in the "
        f"{cost.format_seconds(budget_s)} budget; a budget of about "
        f"{cost.format_seconds(need)} would let it"
    )


def command_line(point: Point, config: Any) -> str:
    """`bench run ...` for one configuration: what to paste to measure the winner again.
    Each axis of the point as its option (bench.config.options), in their order, but
    those that are off (no value, 'none'); a decoder's sequence length in place of a
    memory format (an image tensor's layout); the data where it is not synthetic (the
    input pipeline's levers apply only there)."""
    words = ["bench", "run", config.workload, "--framework", config.framework,
             "--device", config.device]  # fmt: skip
    if config.data != "synthetic":
        words += ["--data", config.data]
    decoder = registry.workload(config.workload).takes_seq_len
    for axis in RUN_OPTIONS:
        if not (axis.sweeps and axis.point_axis):
            continue
        value = getattr(point, axis.one)
        if axis.one == "memory_format" and decoder:  # its tokens, no layout
            words += ["--seq-len", str(config.seq_len)] if config.seq_len else []
        elif value and value not in ("none", axis.off):
            words += [axis.flag, str(value)]
    if config.threads:
        words += ["--threads", str(config.threads)]
    return " ".join(words)
