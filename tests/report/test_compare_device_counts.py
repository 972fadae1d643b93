"""A machine's runs of one configuration on several device counts are a row per count
in compare and report (throughput is global: one process and two ranks pooled into one
cell read 2,382 samples/s [83.2-6,138]); a plain comparison keeps its one row and no
label. The fixtures are two real runs of `bench tiny --device cpu --steps 3 --repeats 3`
on one 2-core VM: one process, and `--devices 2` (two gloo ranks under torchrun)."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import pytest

from bench import result
from bench.report import compare as cmp
from bench.report import grids, records, tidy
from tests.conftest import DATA

ONE, TWO = DATA / "tiny-cpu.json", DATA / "tiny-cpu-2ranks.json"
EPYC = "AMD EPYC 9654 96-Core Processor"


def _loaded(path: Path, cpu: str | None = None, image: str | None = None):
    """A fixture as it stands, or as another CPU (or in an image) would have run it."""
    res = result.load(path)
    env = copy.deepcopy(res.environment)
    if cpu is not None:
        env["cpu"]["model"] = cpu
        env["host"]["hostname"] = cpu.split()[0].lower()
    if image is not None:
        env["image"] = {"name": image}
    named = "-".join(part.split()[0].lower() for part in (cpu, image) if part)
    path = path.with_name(f"{named}-{path.name}") if named else path
    return path, dataclasses.replace(res, environment=env)


def test_the_fixtures_are_one_process_and_two_ranks_of_one_config():
    one, two = result.load(ONE), result.load(TWO)
    assert [p.devices for p in one.points] == [1] and [p.devices for p in two.points] == [2]
    assert one.config.devices == (1,) and two.config.devices == (2,)  # neither swept
    assert [p.batch_size for p in one.points] == [p.batch_size for p in two.points]


def test_one_machines_device_counts_are_a_row_each_with_its_own_interval():
    comparison = cmp.compare([_loaded(ONE), _loaded(TWO)], None)
    assert [key[5] for key, _ in comparison.rows] == ["1 device", "2 devices"]
    for (_, [cell]), path in zip(comparison.rows, (ONE, TWO), strict=True):
        own = result.load(path).points[0].throughput
        assert [run[0] for run in cell.runs] == [path]  # nothing pooled across counts
        assert cell.throughput == own
        assert own.ci95_low < own.value < own.ci95_high < 2 * own.value  # a sane interval


def test_the_json_csv_and_markdown_name_each_count():
    comparison = cmp.compare([_loaded(ONE), _loaded(TWO)], None)
    found = records.records(comparison)
    assert [(r["setup"], r["runs"], r["repeats"]) for r in found] == [
        ("1 device", 1, 3),
        ("2 devices", 1, 3),
    ]
    table = grids.to_markdown(comparison)
    assert "| setup |" in table and "| 1 device |" in table and "| 2 devices |" in table
    points = tidy.tidy(comparison).points
    assert [(p["setup"], p["devices"]) for p in points] == [("1 device", 1), ("2 devices", 2)]


def test_a_plain_comparison_keeps_one_row_and_no_label():
    """Repeats of one count pool as before; another machine's other count (its own
    devices, all used) stays on the row beside it."""
    comparison = cmp.compare([_loaded(ONE), _loaded(ONE, cpu=EPYC)], None)
    assert [key[5] for key, _ in comparison.rows] == [""]
    again = dataclasses.replace(result.load(ONE), started="2026-12-07T09:00:00+00:00")
    repeated = cmp.compare([_loaded(ONE), (ONE.with_name("again.json"), again)], None)
    [(key, [cell])] = repeated.rows
    assert key[5] == "" and len(cell.runs) == 2 and cell.throughput.n == 6
    across = cmp.compare([_loaded(ONE), _loaded(TWO, cpu=EPYC)], None)
    [(key, cells)] = across.rows
    assert key[5] == "" and all(cell.throughput for cell in cells)
    assert "| setup |" not in grids.to_markdown(across)


def test_a_count_and_an_image_that_differ_are_both_named():
    loaded = [_loaded(ONE), _loaded(TWO), _loaded(ONE, image="bench:cpu")]
    comparison = cmp.compare(loaded, None)
    setups = sorted(key[5] for key, _ in comparison.rows)
    assert setups == ["bench:cpu · 1 device", "native · 1 device", "native · 2 devices"]


def test_collect_names_each_points_device_count(tmp_path):
    pytest.importorskip("pandas")
    from bench.report import collect

    points = collect.points_frame([_loaded(ONE), _loaded(TWO)])
    assert list(points["devices"]) == [1, 2]
    both, alone = tmp_path / "both", tmp_path / "alone"
    collect.write([_loaded(ONE), _loaded(TWO)], both)
    collect.write([_loaded(ONE), _loaded(ONE, cpu=EPYC)], alone)
    header = next(line for line in both.with_suffix(".md").read_text().splitlines() if "|" in line)
    assert [cell.strip() for cell in header.split("|")][4:7] == ["image", "devices", "batch\\_size"]
    assert "devices" not in alone.with_suffix(".md").read_text()  # one count: no column
