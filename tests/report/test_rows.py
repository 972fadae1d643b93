"""A comparison's row key (bench.report.rows): every option that changes what was
measured keeps two points apart, read from the option table, never a hand-written list.
Each case below was pooled into one cell before: `bench llama3-tiny --loss
plain,chunked` measured 649 and 566 samples/s and compare printed one '608 [254-1,446]'."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from bench.config import sweep
from bench.config.option import COMPARED, KEY
from bench.report import compare as cmp
from bench.report.rows import RowKey, row_key
from bench.report.table import points_table
from bench.result import io
from tests.conftest import DATA

DECODER = io.load(DATA / "moe-tiny-cpu.json")  # a decoder, its levers left neutral


def _two(axis: str, values: tuple) -> tuple[list, object]:
    """One result whose two points differ only in `axis`."""
    first = DECODER.points[0]
    points = [dataclasses.replace(first, **{axis: v}) for v in values]
    res = dataclasses.replace(DECODER, points=points)
    return cmp.compare([(Path("two.json"), res)], None).rows, res


@pytest.mark.parametrize(
    ("axis", "values", "named"),
    [
        ("cross_entropy", ("plain", "chunked"), "loss=chunked"),
        ("attention", ("auto", "math"), "attention=math"),
        ("pad_vocab", (0, 64), "pad-vocab=64"),
        ("optimize", (None, "fused"), "optimize=fused"),
        ("allocator", (None, "tcmalloc"), "allocator=tcmalloc"),
        ("activation_checkpointing", ("none", "full"), "activation-checkpointing=full"),
    ],
)
def test_two_values_of_a_lever_are_two_rows_named_by_the_option(axis, values, named):
    rows, res = _two(axis, values)
    assert len(rows) == 2, [key for key, _ in rows]
    setups = sorted(key.setup for key, _ in rows)
    assert not any(named in s for s in setups[:1]) and named in setups[1]
    # The run's own table shows the option as a column, so its two rows do not look alike.
    headers = [str(c.header).replace("\n", "-") for c in points_table(res).columns]
    assert named.split("=")[0] in headers


def test_the_threads_of_two_results_are_two_rows():
    """--threads is no sweep axis but a run's: 1 and 2 threads were one cell."""
    one = dataclasses.replace(DECODER, config=dataclasses.replace(DECODER.config, threads=1))
    two = dataclasses.replace(DECODER, config=dataclasses.replace(DECODER.config, threads=2),
                              started="2026-12-07T09:00:00+00:00")  # fmt: skip
    rows = cmp.compare([(Path("1.json"), one), (Path("2.json"), two)], None).rows
    assert sorted(key.setup for key, _ in rows) == [
        "64 tokens · threads=1",
        "64 tokens · threads=2",
    ]


def test_an_older_file_reads_its_neutral_values_and_joins_todays_row():
    """A schema-8 file has no loss, attention, padding or checkpointing: it reads the
    neutral values and pools with today's run of the same configuration (named only by
    its one loader worker: a sweep axis since schema 19, read from its config)."""
    old = io.load(DATA / "result-v8.json")
    key = row_key(old, old.points[0])
    assert isinstance(key, RowKey) and key.setup == "num-workers=1"


def test_every_option_says_how_a_comparison_treats_it():
    """The row key reads its KEY options by name; every other option is ROW, MATCH or
    FREE in the table, so a new one is a row of its own unless it says otherwise."""
    assert {o.compared for o in sweep.RUN_OPTIONS} <= set(COMPARED)
    keyed = {o.field for o in sweep.RUN_OPTIONS if o.field and o.compared == KEY}
    assert keyed == {"workload", "framework", "device", "batch_sizes", "precisions",
                     "memory_formats", "compilers", "devices", "nnodes", "seq_len"}  # fmt: skip
    assert {"attentions", "cross_entropies", "pad_vocabs", "threads"} <= {
        o.field for o in sweep.ROW_OPTIONS
    }
