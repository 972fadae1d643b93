"""A comparison's rows: the configuration a result's point measured (its row key), and
each row's runs, a list per machine. A row's runs on one machine pool into one cell
(bench.report.pooling); what would make two measurements of them is a row of its own:
two software stacks (framework, image), or two device counts."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from bench import registry
from bench.config import sweep
from bench.report.machines import Machine, image_name
from bench.result import Point, Result
from bench.util.errors import UsageError


class RowKey(NamedTuple):
    """A comparison's row: the configuration a point measured. Its own places (the
    workload, batch, precision, layout, compiler) are the columns every view shows;
    `setup` names the rest, built from the option table (bench.config.sweep.settings: every
    option declared compared=ROW, away from its neutral value) with the sequence length,
    a swept device count and, where one machine ran several, the software stack."""

    workload: str
    batch_size: int
    precision: str
    memory_format: str
    compile: str | None
    setup: str


ROW_KEYS = RowKey._fields

# One run's point in a cell: the file, its result and the point it measured.
Run = tuple[Path, Result, Point]


def sequence_length(res: Result) -> int | None:
    """The tokens a sample held, for a workload that takes a sequence length (its
    default where the run gave none); None for others, or a workload this bench lacks."""
    try:
        spec = registry.workload(res.config.workload)
    except UsageError:
        return res.config.seq_len
    return spec.input_shape(res.config.seq_len)[0] if spec.takes_seq_len else None


def row_key(res: Result, p: Point, feeds: bool = True) -> RowKey:
    """A point's row. `setup` holds what tells it apart beyond the key's columns: the
    sequence length of a workload that takes one, the device count where the result
    swept it (a machine's 8 GPUs and another's 4 stay one row when each just used all of
    its own), then every option of the table declared compared=ROW that the point did not
    leave at its neutral value, named by its flag (bench.config.sweep.settings: 'loss=chunked',
    'expert-parallel=2', 'train-to-loss=3.5'): a new option is kept apart with no edit
    here, and an older result, which reads the neutral value, joins today's rows.
    feeds=False: the row of its twin on synthetic data, the input pipeline's options
    (RunOption.feeds) left out (bench.report.real_data)."""
    swept = len(set(res.config.devices)) > 1
    length = sequence_length(res)
    tokens = f"{length} tokens" if length else ""
    devices = f"{p.devices} device{'s' if p.devices > 1 else ''}" if swept else ""
    setup = " · ".join(
        part for part in (tokens, devices, *sweep.settings(res.config, p, feeds)) if part
    )
    # A memory format is an image tensor's layout; token inputs have none, so a decoder
    # trained in PyTorch (recorded contiguous) and in JAX (NHWC) shares its rows.
    layout = p.memory_format if length is None else "n/a"
    return RowKey(res.config.workload, p.batch_size, p.precision, layout, p.compile, setup)


def _stack(res: Result) -> tuple[str, str]:
    """The software a run measured: its framework and its image ('native' outside one)."""
    return res.config.framework, image_name(res) or "native"


def device_count(p: Point) -> str:
    """'1 device', '8 devices': how many trained the point (its ranks over every node,
    or the devices one process used), as a row's setup names them."""
    n = p.devices_trained
    return f"{n} device{'s' if n > 1 else ''}"


def _facets(run: Run) -> tuple[str, str, str]:
    """What makes a run's figures another measurement of its configuration: its
    framework, its image and its device count (throughput is global)."""
    _, res, p = run
    return (*_stack(res), device_count(p))


# The facets that split a row together: the software stack; the device count.
_SPLITS = ((0, 1), (2,))


def row_runs(ordered: list[Machine]) -> dict[RowKey, list[list[Run]]]:
    """Each row's runs, a list per column (oldest first). A configuration one machine
    ran in several frameworks or images is a row per framework or image (its setup
    names which differ: 'jax', 'bench:xeon', 'native'), for every machine: two software
    stacks are two measurements, never pooled. Likewise one machine's runs on several
    device counts (one process and 2 ranks of torchrun, not swept in one result): a row
    per count ('1 device', '2 devices'), since throughput is global. Otherwise one row,
    whatever framework or device count each machine used (a GPU in torch beside a TPU
    in JAX; a machine's 8 GPUs beside another's 4)."""
    found: dict[RowKey, list[list[Run]]] = {}
    for i, machine in enumerate(ordered):
        for path, res in machine.results:
            for p in res.points:
                key = row_key(res, p)
                if key not in found:
                    found[key] = [[] for _ in ordered]
                found[key][i].append((path, res, p))
    rows: dict[RowKey, list[list[Run]]] = {}
    for key, columns in found.items():
        facets = [[_facets(run) for run in runs] for runs in columns]
        every = {f for cell in facets for f in cell}
        named = [
            n
            for split in _SPLITS
            if any(len({tuple(f[n] for n in split) for f in cell}) > 1 for cell in facets)
            for n in split
            if len({f[n] for f in every}) > 1
        ]
        if not named:
            rows[key] = columns
            continue
        for i, runs in enumerate(columns):
            for run, own in zip(runs, facets[i], strict=True):
                parts = (key.setup, *(own[n] for n in named))
                split = key._replace(setup=" · ".join(part for part in parts if part))
                if split not in rows:
                    rows[split] = [[] for _ in ordered]
                rows[split][i].append(run)
    return rows
