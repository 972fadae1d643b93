"""Steps in history: for each configuration of each machine measured on several dates
(a comparison's cell whose runs pooled), where its throughput stepped, by how much and
with what interval (bench.stats.changepoint); none where it is noise. What `bench compare`
lists and the report's history view marks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bench.report.words import config_label
from bench.result import moment
from bench.stats.changepoint import MIN_RUNS, Step, steps
from bench.util.text import visible

if TYPE_CHECKING:
    from bench.report.machines import Machine
    from bench.report.rows import Cell, RowKey

NO_NUMPY = "steps in history need numpy: pip install 'bench[report]'"


@dataclass(frozen=True)
class HistoryStep:
    """A step of one configuration of one machine: between which runs, and how much."""

    machine: str
    key: RowKey  # the comparison's row
    step: Step
    before: tuple[str, str]  # the last run before it: (its start, its file)
    after: tuple[str, str]  # the first run after it

    @property
    def config(self) -> str:
        return config_label(self.key)

    def record(self) -> dict[str, Any]:
        """compare's JSON of a step."""
        s = self.step
        return {
            "machine": self.machine,
            "workload": self.key.workload,
            "config": self.config,
            "from_started": self.after[0],
            "from_file": self.after[1],
            "last_before_started": self.before[0],
            "last_before_file": self.before[1],
            "ratio": s.ratio,
            "ci95_low": s.interval[0],
            "ci95_high": s.interval[1],
            "verdict": s.verdict.word,
            "p_value": s.p_value,
            "runs_before": s.before,
            "runs_after": s.after,
            "text": visible(s.sentence()),
        }


def dated_runs(cell: Any) -> list[tuple[str, str, list[float]]]:
    """A cell's runs that trained and say when they started, oldest first: (start, file,
    each repeat's throughput)."""
    found = []
    for path, res, p in cell.runs:
        if p.status != "ok" or not res.started:
            continue
        repeats = [v for v in p.repeat_throughputs() if v > 0]
        if repeats:
            found.append((res.started, str(path), repeats))
    found.sort(key=lambda run: moment(run[0]))  # by the time, not the text: offsets differ
    return found


def history_steps(
    rows: list[tuple[RowKey, list[Cell]]], machines: list[Machine]
) -> tuple[list[HistoryStep], str | None]:
    """Every step of every cell (a comparison's rows, a cell per machine) measured in
    2 x MIN_RUNS runs or more, and a line where they could not be looked for (numpy
    missing)."""
    found: list[HistoryStep] = []
    for key, cells in rows:
        for machine, cell in zip(machines, cells, strict=True):
            runs = dated_runs(cell)
            if len(runs) < 2 * MIN_RUNS:
                continue
            try:
                made = steps([repeats for _, _, repeats in runs])
            except ImportError:
                return [], NO_NUMPY
            for step in made:
                before, after = runs[step.at - 1], runs[step.at]
                found.append(HistoryStep(machine.label, key, step, before[:2], after[:2]))
    return found, None
