"""Each machine's colour, one for every chart of the page, report.md's figures and any
later report of the same machines: a colour drawn from the machine's identity (its
label), not from its place on a page. Colours dealt by place, and past ten machines
dealt again per chart, made one colour the GH200 in one chart, an RTX 4090 in the cost
chart and an L4 in the MFU chart.

The assignment: each machine's preferred colour is a hash of its label (CRC-32: the
same on every machine and Python, unlike hash()); machines are placed in the order of
their hashes, each taking its preferred colour or the next free one, so that up to
len(PALETTE) machines never share one. Past that, colours repeat (charts draw at most
ten machines, and name them)."""

from __future__ import annotations

import zlib

# Vega's tableau10, then ten more of distinct hue and lightness (category20b and d3's
# category10 pick): the first ten stay the colours pages used before.
PALETTE = [
    "#4c78a8", "#f58518", "#e45756", "#72b7b2", "#54a24b", "#eeca3b", "#b279a2",
    "#ff9da6", "#9d755d", "#bab0ac", "#393b79", "#637939", "#8c6d31", "#843c39",
    "#7b4173", "#17becf", "#bcbd22", "#e377c2", "#1f77b4", "#2ca02c",
]  # fmt: skip


def _hash(label: str) -> int:
    return zlib.crc32(label.encode("utf-8", "surrogatepass"))


def machine_colours(labels: list[str]) -> dict[str, str]:
    """{label: colour}: stable for a label whatever else the page holds, but where two
    labels want one colour (the later, by hash, takes the next free one)."""
    taken: set[int] = set()
    colours: dict[str, str] = {}
    for label in sorted(set(labels), key=lambda m: (_hash(m), m)):
        slot = _hash(label) % len(PALETTE)
        if len(taken) < len(PALETTE):
            while slot in taken:
                slot = (slot + 1) % len(PALETTE)
            taken.add(slot)
        colours[label] = PALETTE[slot]
    return colours
