"""Real data beside synthetic, per machine (bench.report.real_data): the TPUv2 vs V100
article's 2,796 vs 2,839 images/s, with the ratio's interval and the wait for data."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from bench.commands.compare import json_lines
from bench.config.run_config import RunConfig
from bench.report import compare as cmp
from bench.report import grids, page
from bench.stats.estimate import geometric_mean, ratio_interval
from tests.report.test_compare import V100, machine, point

REAL = [80.0, 82.0, 81.0]
SYNTHETIC = [100.0, 101.0, 99.0]


def _real(throughputs, wait_share, **config):
    """A run on imagenet (whole epochs, no warm-up) whose steps waited `wait_share` of
    their time for data, each repeat a little apart."""
    res = machine(V100, [point(64, throughputs)])
    p = res.points[0]
    waits = tuple(tuple(t * (wait_share + 0.01 * r) for t in steps)
                  for r, steps in enumerate(p.step_times_s))  # fmt: skip
    # the input pipeline's sweep axes: the point's value, and the config's list of it
    axes = {one: config.pop(one) for one in FEED_AXES if one in config}
    res.points[0] = replace(p, input_wait_s=waits, **axes)
    res.config = RunConfig(
        workload="resnet50",
        data="imagenet:/data/imagenet",
        epochs=2,
        **{FEED_AXES[one]: (v,) for one, v in axes.items()},
        **config,
    )
    return res


FEED_AXES = {"num_workers": "workers", "input_dtype": "input_dtypes",
             "pin_memory": "pin_memories", "decode": "decodes"}  # fmt: skip


def _comparison():
    synthetic = machine(V100, [point(64, SYNTHETIC), point(128, [120, 121, 122])])
    workers = _real(REAL, 0.05, num_workers=2)
    none = _real([40.0, 41.0, 39.5], 0.40)
    loaded = [(Path("s.json"), synthetic), (Path("w2.json"), workers), (Path("w0.json"), none)]
    return cmp.compare(loaded, None)


def test_a_machine_s_real_data_runs_sit_beside_its_synthetic_one_with_the_ratio_s_interval():
    comparison = _comparison()
    # The real runs are measured unlike the synthetic one (epochs): never in its rows (the
    # two real runs are the rows, one per worker count: a sweep axis; the synthetic one
    # set apart),
    assert len(comparison.rows) == 2 and comparison.set_apart_count == 1
    assert {key.setup for key, _ in comparison.rows} == {"", "num-workers=2"}
    # and beside it here, one row per way they were fed; batch 128 ran on synthetic alone.
    rows = {row.data: row for row in comparison.real_data}
    assert set(rows) == {"data=imagenet", "data=imagenet · num-workers=2"}
    fed = rows["data=imagenet · num-workers=2"]
    assert fed.key.batch_size == 64 and fed.machine == V100
    assert fed.share == pytest.approx(geometric_mean(REAL) / geometric_mean(SYNTHETIC))
    assert fed.share_ci95 == pytest.approx(ratio_interval(REAL, SYNTHETIC))
    assert fed.wait.value == pytest.approx(0.06) and fed.wait.n == 3
    assert fed.files == ("w2.json", "s.json")
    starved = rows["data=imagenet"]
    assert starved.share_text.startswith("0.40x [") and starved.wait_text.startswith("41% [")
    headers, body = grids.real_data_grid(comparison)
    assert "setup" not in headers  # no row has one
    assert body[1][6:] == [
        "data=imagenet · num-workers=2",
        "81.0 [78.5–83.5]",
        "100 [97.5–103]",
        "0.81x [0.79x–0.83x]",
        "6% [4-8%] of each step",
    ]
    assert starved.share_ci95[1] < fed.share_ci95[0]  # the workers' gain is beyond noise


def test_the_pairs_reach_compare_s_json_markdown_and_the_report_page(monkeypatch):
    from bench.report import views

    monkeypatch.setattr(views, "bundle", lambda: "/* vega bundle */")  # seconds to make
    comparison = _comparison()
    record = json.loads(json_lines(grids.as_dict(comparison)))["real_data"][1]
    assert record["data"] == "data=imagenet · num-workers=2"
    assert record["real_over_synthetic_ci95"] == pytest.approx(ratio_interval(REAL, SYNTHETIC))
    assert record["input_wait_share"] == pytest.approx(0.06)
    assert "Real data beside synthetic" in grids.to_markdown(comparison)
    md, html = page.texts(comparison)
    assert r"| data=imagenet · num-workers=2 | 81.0 \[78.5–83.5\] |" in md
    assert "## Is each machine fed? Real data beside synthetic" in md
    section = html[html.index("<section id='real-data'>") :]
    assert 'data-label="real / synthetic [95%]">0.81x [0.79x–0.83x]</td>' in section
    assert html.count("0.81x [0.79x–0.83x]") == 1  # not again in report.md's tables


def test_every_input_pipeline_lever_names_its_row_and_none_the_synthetic_twin_s():
    """--input-dtype, --pin-memory and --decode are input pipeline options
    (RunOption.feeds): each names the real run's row here, and is left out of the
    configuration it pairs on."""
    synthetic = machine(V100, [point(64, SYNTHETIC)])
    lever = _real(REAL, 0.05, num_workers=2, input_dtype="uint8", pin_memory="off",
                  decode="device", device="cuda")  # fmt: skip
    [row] = cmp.compare([(Path("s.json"), synthetic), (Path("u.json"), lever)], None).real_data
    assert row.data == ("data=imagenet · num-workers=2 · input-dtype=uint8 · pin-memory=off · "
                        "decode=device")  # fmt: skip
    assert row.key.setup == ""


def test_no_synthetic_run_of_the_configuration_no_row():
    """A real run alone, or beside a synthetic one of another batch or another machine,
    has nothing to be a share of."""
    other = machine("NVIDIA A100-SXM4-40GB", [point(64, SYNTHETIC)])
    loaded = [(Path("r.json"), _real(REAL, 0.05)), (Path("o.json"), other),
              (Path("b.json"), machine(V100, [point(128, SYNTHETIC)]))]  # fmt: skip
    assert cmp.compare(loaded, None).real_data == []
    assert grids.real_data_grid(cmp.compare(loaded, None))[1] == []
