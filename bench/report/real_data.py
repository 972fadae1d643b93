"""Real data beside synthetic, machine by machine (the TPUv2 vs V100 comparison's 2,796
images/s on ImageNet beside 2,839 on synthetic data): a configuration one machine trained
on synthetic data and on real data (a dataset, a token file, or synthetic samples
through a DataLoader), the real rate as a share of the synthetic one with its 95%
interval (bench.stats.estimate.ratio_interval: the ratio of the repeats' geometric means, as
every ratio of two throughputs), and the share of each step the real run waited for
data (bench.result.derive.input_wait_share). A run on a dataset trains whole epochs and
a synthetic one steps, so a comparison sets one apart from the other's rows
(bench.report.set_apart); here they pair, on one machine and one software stack, each
real-data variant (its dataset, workers, prefetch depth: the options declared
RunOption.feeds) a row of its own.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.config import data_ref, sweep
from bench.report.machines import machine_columns
from bench.report.rows import Figures, RowKey, Run, _facets, row_key
from bench.result import Point, Result
from bench.result.derive import percent_interval
from bench.stats.estimate import Estimate, ratio_interval
from bench.util.text import visible
from bench.util.units import human, ratio_with_interval

CAPTION = (
    "real data beside synthetic, per machine: the same configuration's throughput "
    "(samples/s, global) on real data and on synthetic data, the real rate as a share of "
    "the synthetic one [95% interval], and the share of each step it waited for data"
)
HEADERS = ["machine", "workload", "batch", "precision", "format", "compile", "setup",
           "real data", "real [95%]", "synthetic [95%]", "real / synthetic [95%]",
           "waited for data [95%]"]  # fmt: skip


def data_kind(value: str) -> str:
    """A data source as compared: a dataset or token file by its kind ('imagenet'), not
    its path, which differs from machine to machine."""
    ref = data_ref.parse(value)
    return ref.kind if ref else value


def feeding(res: Result, p: Point) -> str:
    """'data=imagenet · num-workers=2': how the point was fed, each option declared
    RunOption.feeds away from its default; '' on synthetic data."""
    parts = []
    for option in sweep.FEEDS:
        value = sweep.setting(option, res.config, p)
        if option.neutral(value):
            continue
        parts.append(option.shown(data_kind(value) if option.field == "data" else value))
    return visible(" · ".join(parts))


@dataclass(frozen=True)
class RealBesideSynthetic:
    """One machine's configuration on real data beside the same on synthetic data."""

    machine: str
    key: RowKey  # the configuration as its synthetic twin's row names it
    stack: str  # framework, image and device count: '' where the table holds one
    data: str  # how the real run was fed: 'data=imagenet · num-workers=2'
    real: Estimate
    synthetic: Estimate
    share: float  # real over synthetic, the ratio of the repeats' geometric means
    share_ci95: tuple[float, float] | None  # None: one run on a side
    wait: Estimate | None  # the real run's input-bound share; None: not recorded
    files: tuple[str, ...]  # the real runs' files, then the synthetic runs'

    @property
    def share_text(self) -> str:
        low, high = self.share_ci95 or (None, None)
        return ratio_with_interval(self.share, low, high)

    @property
    def wait_text(self) -> str:
        if self.wait is None:
            return "not recorded"
        return f"{percent_interval(self.wait)} of each step"

    def cells(self) -> list[str]:
        workload, batch, precision, fmt, compiler, setup = self.key
        setup = " · ".join(part for part in (setup, self.stack) if part)
        return [self.machine, workload, str(batch), precision, fmt, compiler or "none",
                setup or "default", self.data, _interval(self.real),
                _interval(self.synthetic), self.share_text, self.wait_text]  # fmt: skip

    def record(self) -> dict[str, Any]:
        """One row for bench compare --format json."""
        low, high = self.share_ci95 or (None, None)
        return {
            "machine": self.machine,
            **self.key._asdict(),
            "stack": self.stack or None,
            "data": self.data,
            "real": self.real.value,
            "real_ci95": _bounds(self.real),
            "synthetic": self.synthetic.value,
            "synthetic_ci95": _bounds(self.synthetic),
            "real_over_synthetic": self.share,
            "real_over_synthetic_ci95": [low, high],
            "input_wait_share": self.wait.value if self.wait else None,
            "input_wait_ci95": _bounds(self.wait) if self.wait else None,
            "files": list(self.files),
        }


def _interval(tp: Estimate) -> str:
    if tp.ci95_low is None or tp.ci95_high is None:
        return f"{human(tp.value)} (one run)"
    return f"{human(tp.value)} [{human(tp.ci95_low)}–{human(tp.ci95_high)}]"


def _bounds(estimate: Estimate) -> list[float | None]:
    return [estimate.ci95_low, estimate.ci95_high]


def pairs(loaded: list[tuple[Path, Result]]) -> list[RealBesideSynthetic]:
    """Every configuration a machine measured on synthetic data and on real data (the
    results before any was set apart), one row per real-data variant, machine by machine
    in the order their runs were read. A side's runs pool as a comparison's cell's do
    (Figures.of)."""
    found: dict[tuple[str, RowKey, tuple[str, ...]], dict[str, list[Run]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for label, machine in machine_columns(loaded).items():
        for path, res in machine.results:
            for p in res.points:
                run = (path, res, p)
                side = feeding(res, p)
                found[label, row_key(res, p, feeds=False), _facets(run)][side].append(run)
    stacks = {facets for (_, _, facets), sides in found.items() if "" in sides and len(sides) > 1}
    several = len(stacks) > 1
    made = []
    for (label, key, facets), sides in found.items():
        if not any(sides):  # synthetic data only (most of a fleet's): no pair, nothing pooled
            continue
        synthetic = Figures.of(sides.get("", []))
        if synthetic.tp is None:
            continue
        for side, runs in sorted(sides.items()):
            real = Figures.of(runs) if side else None
            if real is None or real.tp is None or real.point is None:
                continue
            made.append(RealBesideSynthetic(
                label, key, " · ".join(f for f in facets if f) if several else "", side,
                real.tp, synthetic.tp, real.tp.value / synthetic.tp.value,
                ratio_interval(real.values, synthetic.values), real.point.input_wait_share,
                tuple(str(path) for path, _, _ in [*runs, *sides[""]]),
            ))  # fmt: skip
    return made


def grid(rows: list[RealBesideSynthetic]) -> tuple[list[str], list[list[str]]]:
    """The table of the page, report.md and bench compare: a row per pair; the setup's
    column where some row has one."""
    body = [row.cells() for row in rows]
    at = HEADERS.index("setup")
    if all(cells[at] == "default" for cells in body):
        return [*HEADERS[:at], *HEADERS[at + 1 :]], [[*c[:at], *c[at + 1 :]] for c in body]
    return HEADERS, body
