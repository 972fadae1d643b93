"""The winner of `bench tune` as the command that measures it again: `bench run ...`
with each axis of its point as its option (bench.config.options)."""

from __future__ import annotations

from typing import Any

from bench import registry
from bench.config.options import RUN_OPTIONS
from bench.result import Point


def command_line(point: Point, config: Any) -> str:
    """`bench run ...` for one configuration: what to paste to measure the winner again.
    Each axis of the point as its option (bench.config.options), in their order, but
    those that are off (no value, 'none'); a decoder's sequence length in place of a
    memory format (an image tensor's layout)."""
    words = ["bench", "run", config.workload, "--framework", config.framework,
             "--device", config.device]  # fmt: skip
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
