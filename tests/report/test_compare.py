"""compare / report / energy / cost, on result sets with known numbers."""

import dataclasses
import importlib.util
import itertools
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from bench import result
from bench.config.run_config import RunConfig
from bench.report import compare as cmp
from bench.report import grids, records
from bench.result import MaxBatch, Point, Result, catalog
from bench.util.errors import UsageError
from tests.conftest import DATA

STEPS = 10
V100, A100 = "Tesla V100-SXM2-16GB", "NVIDIA A100-SXM4-40GB"


def point(batch, throughputs, *, status="ok", joules=None, precision="fp32", flops=None):
    """A point whose repeats ran at exactly these throughputs (samples/s)."""
    if status != "ok":
        return Point(batch_size=batch, precision=precision, status=status, error="out of memory")
    steps = tuple((batch / tp,) * STEPS for tp in throughputs)
    energy = (
        tuple(
            {
                "window_s": sum(s),
                "per_device_j": {"gpu0": joules},
                "sources": {"gpu0": "nvml_counter"},
                "epoch_j": None,
            }
            for s in steps
        )
        if joules is not None
        else ()
    )
    return Point(
        batch_size=batch,
        precision=precision,
        step_times_s=steps,
        energy=energy,
        flops_per_sample=flops,
    )


_RUNS = itertools.count()


def machine(accelerator, points, *, price=None, steps=20, max_batch=()):
    """A run of its own (its own start: two runs alike in all else are not copies)."""
    env = {"accelerator": {"accelerator": accelerator, "accelerator_count": 1}, "cpu": {}}
    pricing = {"usd_per_hour": price, "source": "test"} if price else None
    config = RunConfig(workload="resnet50", steps=steps)
    started = f"2026-11-20T10:00:00.{next(_RUNS):06d}+00:00"
    return Result(
        config=config, environment=env, points=points, pricing=pricing, max_batch=list(max_batch),
        started=started,
    )  # fmt: skip


@pytest.fixture
def two_machines():
    fits = MaxBatch("fp32", largest_ok=200, first_failing=201, status="done")
    nothing_fits = MaxBatch("fp32", largest_ok=None, first_failing=1, status="done")
    a_points = [
        point(64, [99, 100, 101], joules=1280, flops=24.5e9),  # 640 samples per repeat
        point(128, [110]),
        point(256, [], status="oom"),
    ]
    b_points = [
        point(64, [299, 300, 301], joules=320, flops=24.5e9),
        point(128, [112]),
        point(256, [400, 401, 402]),
    ]
    a = machine(V100, a_points, price=3.06, max_batch=[fits])
    b = machine(A100, b_points, price=4.10, max_batch=[nothing_fits])
    return [(Path("a.json"), a), (Path("b.json"), b)]


def cells_by_batch(comparison):
    return {key[1]: cells for key, cells in comparison.rows}


def test_throughput_is_normalised_to_the_baseline(two_machines):
    comparison = cmp.compare(two_machines, baseline="v100")
    assert comparison.baseline.label == V100
    rows = cells_by_batch(comparison)
    assert rows[64][0].relative == pytest.approx(1.0)
    assert rows[64][1].relative == pytest.approx(3.0, rel=1e-3)  # of geometric means
    assert rows[64][1].text == "3.00"  # CIs far apart: significant, no mark
    assert rows[128][1].text == "1.02?"  # single runs: untestable
    assert rows[256][0].text == "*" and rows[256][1].relative is None  # baseline ran out of memory


def test_a_ratio_whose_interval_holds_one_is_marked_not_significant():
    a = machine(V100, [point(64, [95, 100, 105])])
    b = machine(A100, [point(64, [97, 101, 104])])
    comparison = cmp.compare([(Path("a"), a), (Path("b"), b)], "v100")
    rows = cells_by_batch(comparison)
    assert rows[64][1].mark == "~" and rows[64][1].text.endswith("~")
    low, high = rows[64][1].relative_ci95
    assert low < 1 < high
    headers, _ = grids.grid(comparison)  # no energy: no columns of n/a
    assert not [h for h in headers if "samples/J vs baseline" in h]


def test_the_ratio_carries_its_interval(two_machines):
    comparison = cmp.compare(two_machines, baseline="v100")
    rows = cells_by_batch(comparison)
    low, high = rows[64][1].relative_ci95
    assert 2.85 < low < 3.0 < high < 3.15
    assert rows[64][0].relative_ci95 is None  # the baseline against itself
    assert rows[128][1].relative_ci95 is None  # one run each: no interval
    record = next(
        r for r in records.records(comparison) if r["batch_size"] == 64 and not r["baseline"]
    )
    assert (record["relative_ci95_low"], record["relative_ci95_high"]) == (low, high)


def test_a_device_sweep_keeps_each_count_in_its_own_row():
    from dataclasses import replace

    one, two = point(64, [100, 101, 99]), replace(point(64, [190, 191, 189]), devices=2)
    swept = machine(A100, [one, two])
    swept.config = RunConfig(workload="resnet50", steps=20, devices=(1, 2))
    other = machine(V100, [replace(point(64, [50, 51, 49]), devices=4)])  # all of its 4
    comparison = cmp.compare([(Path("a"), swept), (Path("b"), other)], "v100")
    setups = {key[5]: [c.point.devices if c.point else None for c in cells]
              for key, cells in comparison.rows}  # fmt: skip
    # never merged: the sweep's 1 and 2 devices are two rows; an unswept run is the default
    assert setups == {"1 device": [1, None], "2 devices": [2, None], "": [None, 4]}
    headers, body = grids.grid(comparison)
    assert headers[5] == "setup" and [row[5] for row in body] == ["default", "1 device",
                                                                   "2 devices"]  # fmt: skip


def test_energy_and_cost_ratios(two_machines):
    comparison = cmp.compare(two_machines, baseline="v100")
    headers, body = grids.grid(comparison)
    assert headers[-2:] == [f"samples/J vs baseline: {A100}", f"samples/$ vs baseline: {A100}"]
    # (300 / 4.10) / (100 / 3.06); every repeat drew the same joules: a zero-width interval
    assert body[0][-2:] == ["4.00 [4.00-4.00]", "2.24"]
    rows = cells_by_batch(comparison)
    a, b = rows[64]
    # samples per joule: 640/1280 = 0.5 vs 640/320 = 2.0
    assert a.point.energy_summary.samples_per_joule == pytest.approx(0.5)
    assert b.energy_ratio == pytest.approx(4.0)
    assert a.point.energy_summary.mean_power_w == pytest.approx(1280 / (640 / 100), rel=1e-3)
    # samples per dollar: throughput x 3600 / price
    assert a.samples_per_dollar == pytest.approx(100 * 3600 / 3.06, rel=1e-3)
    assert b.cost_ratio == pytest.approx((300 / 4.10) / (100 / 3.06), rel=1e-3)


def test_the_energy_efficiency_ratio_has_its_interval_over_the_repeats():
    """The M2 Max vs V100 study's figure: samples per joule of one machine over the
    other's, with a 95% interval from each repeat's own samples per joule."""

    def drawing(joules: tuple[int, ...]) -> Point:
        made = point(64, [100, 100, 100], joules=0)
        windows = tuple({**e, "per_device_j": {"gpu0": j}}
                        for e, j in zip(made.energy, joules, strict=True))  # fmt: skip
        return dataclasses.replace(made, energy=windows)

    base, other = drawing((1250, 1280, 1310)), drawing((310, 320, 330))
    comparison = cmp.compare(
        [(Path("a"), machine(V100, [base])), (Path("b"), machine(A100, [other]))], "v100"
    )
    _, cell = cells_by_batch(comparison)[64]
    low, high = cell.energy_ratio_ci95
    assert cell.energy_ratio == pytest.approx(4.0, rel=0.01)
    assert low < cell.energy_ratio < high and high / low < 1.3
    record = next(r for r in records.records(comparison) if not r["baseline"])
    assert (record["energy_ratio_ci95_low"], record["energy_ratio_ci95_high"]) == (low, high)
    assert grids.grid(comparison)[1][0][-2] == f"4.00 [{low:.2f}-{high:.2f}]"


def test_mfu_against_the_catalogue_peak(two_machines):
    a, b = cells_by_batch(cmp.compare(two_machines, baseline="v100"))[64]
    assert a.mfu == pytest.approx(100 * 24.5e9 / 15.7e12, rel=1e-3)  # V100 SXM2 fp32: 15.7 TFLOP/s
    assert b.mfu == pytest.approx(300 * 24.5e9 / 19.5e12, rel=1e-3)  # A100 fp32: 19.5 TFLOP/s


def test_max_batch_stars(two_machines):
    comparison = cmp.compare(two_machines, baseline="v100")
    _, body = grids.max_batch_grid(comparison)
    assert body == [["resnet50", "fp32", "contiguous", "none", "200", "*"]]


def test_a_sequence_length_search_is_a_row_of_its_own_beside_the_max_batch(two_machines):
    (_, a), _ = two_machines
    a.max_batch.append(
        MaxBatch("fp32", largest_ok=256, first_failing=384, status="done", axis="seq_len")
    )
    comparison = cmp.compare(two_machines, baseline="v100")
    _, body = grids.max_batch_grid(comparison)
    assert ["resnet50", "fp32", "contiguous", "none", "200", "*"] in body
    batch = a.config.batch_sizes[0]
    assert [f"resnet50 (largest seq len at batch {batch})", "fp32", "contiguous", "none",
            "256", ""] in body  # fmt: skip
    searches = grids.as_dict(comparison)["max_batch"]
    assert {s["search"] for s in searches} == {"largest batch", f"largest seq len at batch {batch}"}


def test_results_that_measured_differently_are_set_apart_not_merged(two_machines):
    other = machine(A100, [point(64, [300])], steps=50)
    comparison = cmp.compare([*two_machines, (Path("c.json"), other)], baseline="v100")
    assert [m.label for m in comparison.machines] == [V100, A100]
    assert [f for f, _ in comparison.machines[1].results] == [Path("b.json")]
    assert comparison.set_apart == [
        "set apart: c.json (resnet50) measured differently from a.json: steps 50 (not 20)"
    ]
    [group] = grids.as_dict(comparison)["set_apart"]  # grouped by reason, the files kept
    assert [group["line"]] == comparison.set_apart and group["count"] == 1
    assert (
        group["files"][0]["file"] == "c.json"
        and group["files"][0]["differs"] == "steps 50 (not 20)"
    )


def test_unlabelled_runs_of_one_machine_pool_and_labelled_runs_are_two_columns():
    before = machine(V100, [point(64, [100, 101, 99])])
    after = machine(V100, [point(64, [120, 121, 119])])
    before.started, after.started = "2026-11-20T10:00:00+00:00", "2026-11-21T10:00:00+00:00"
    comparison = cmp.compare([(Path("a"), before), (Path("b"), after)], V100)
    assert [m.label for m in comparison.machines] == [V100]  # one machine: its repeats pool
    assert cells_by_batch(comparison)[64][0].throughput.n == 6
    # with labels (the user's A/B intent), the labels name two columns
    before.label, after.label = "before", "new driver"
    comparison = cmp.compare([(Path("a"), before), (Path("b"), after)], "before")
    assert [m.label for m in comparison.machines] == [f"{V100} · before", f"{V100} · new driver"]
    assert cells_by_batch(comparison)[64][1].relative == pytest.approx(1.2, rel=1e-3)


def test_runs_of_one_machine_are_one_column_whether_they_add_points_or_repeat_them():
    first = machine(V100, [point(64, [100])])
    second = machine(V100, [point(128, [150])])
    again = machine(V100, [point(64, [110])])  # 64 again: pooled with the first's
    first.started, second.started, again.started = "2026-01-01", "2026-01-02", "2026-01-03"
    loaded = [(Path("c"), again), (Path("a"), first), (Path("b"), second)]
    comparison = cmp.compare(loaded, V100)
    assert [m.label for m in comparison.machines] == [V100]
    assert [f for f, _ in comparison.machines[0].results] == [Path("a"), Path("b"), Path("c")]
    rows = cells_by_batch(comparison)
    assert sorted(rows) == [64, 128]
    assert rows[64][0].point.repeat_throughputs() == pytest.approx([100, 110])
    assert [f for f, _, _ in rows[64][0].runs] == [Path("a"), Path("c")]  # oldest first


@pytest.mark.parametrize(
    ("selector", "message"), [("h100", "matches no machine"), ("a", "matches 2 machines")]
)
def test_the_baseline_must_name_one_machine(two_machines, selector, message):
    with pytest.raises(UsageError, match=message):
        cmp.compare(two_machines, baseline=selector)


def test_outputs_carry_the_same_numbers(two_machines, tmp_path):
    comparison = cmp.compare(two_machines, baseline="v100")
    data = grids.as_dict(comparison)
    record = next(r for r in data["points"] if r["machine"] == A100 and r["batch_size"] == 64)
    assert (
        record["relative_throughput"] == pytest.approx(3.0, rel=1e-3)
        and record["throughput_unit"] == "samples/s"
    )
    markdown = grids.to_markdown(comparison)
    assert "| resnet50 | 64 | fp32 | contiguous | none | 1.00 | 3.00 |" in markdown
    assert grids.to_csv(comparison).count("\n") == 1 + 2 * 3


def test_time_and_cost_to_train(two_machines):
    baseline_point = two_machines[0][1].points[0]
    cost = cmp.training_cost(baseline_point, "resnet50", 90, 3.06)
    hours = 1_281_167 * 90 / 100 / 3600  # ImageNet-1k epochs at 100 samples/s
    assert cost["hours"] == pytest.approx(hours, rel=1e-3)
    assert cost["usd"] == pytest.approx(hours * 3.06, rel=1e-3)


def test_report_files_are_real_images_and_html(two_machines, tmp_path):
    pytest.importorskip("vl_convert")
    from bench.report import page

    written = page.write_report(cmp.compare(two_machines, baseline="v100"), tmp_path / "r")
    names = {p.name for p in written}
    # The names the matplotlib figures had, where a view draws the same (samples per
    # joule is in the energy view's tooltip; dollars per million samples replace samples
    # per dollar).
    for chart in ("relative_throughput", "throughput", "usd_per_m", "max_batch", "energy"):
        assert {f"{chart}.png", f"{chart}.svg"} <= names
        assert (tmp_path / "r" / f"{chart}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        ET.parse(tmp_path / "r" / f"{chart}.svg")  # well-formed XML
    html = (tmp_path / "r" / "report.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "vegaEmbed" in html and "<table>" in html
    assert (
        "![relative_throughput](relative_throughput.png)"
        in (tmp_path / "r" / "report.md").read_text()
    )


def test_report_figures_show_intervals_the_reference_and_readable_numbers(two_machines):
    pytest.importorskip("vl_convert")
    from bench.report import page, tidy, vega, views

    a, b = two_machines[0][1], two_machines[1][1]
    a.points[1] = point(128, [110, 112, 109])
    b.points[1] = point(128, [112, 108, 115])  # within noise of the baseline
    b.max_batch = [MaxBatch("fp32", largest_ok=512, first_failing=None, status="done")]
    t = tidy.tidy(cmp.compare(two_machines, baseline="v100"))
    made = {f.name: f for f in page.figures(t, views.views(t))}
    rows = {r["batch"]: r for r in made["relative_throughput"].spec["datasets"]["points"]}
    assert rows[64]["rel"] == pytest.approx(3.0, rel=1e-2) and "rel_lo" in rows[64]  # whiskers
    assert rows[128]["verdict"] != "faster"  # within noise: no verdict of faster
    svg = {name: vega.render(figure.spec)[0] for name, figure in made.items()}
    assert "stroke-dasharray" in svg["relative_throughput"]  # the baseline's rule at 1
    assert ">at least 512<" in svg["max_batch"]  # a search that hit its limit is not 512
    assert not re.search(r">[0-9.]+e[+-]?[0-9]+<", svg["usd_per_m"])  # never 1.18e+05
    drawn = made["throughput"].spec["datasets"]["points"]
    assert 300 in {round(r["tp"]) for r in drawn}  # absolute samples/s beside the ratios


def test_a_one_machine_report_shows_absolute_figures(two_machines, tmp_path):
    pytest.importorskip("vl_convert")
    from bench.report import page

    written = page.write_report(cmp.compare(two_machines[1:], baseline="a100"), tmp_path)
    names = {p.name for p in written}
    assert "throughput.png" in names and "relative_throughput.png" not in names
    md = (tmp_path / "report.md").read_text()
    assert md.startswith(f"# bench report: 1 machine: {A100}\n")
    assert "| 300 \\[298–302\\] |" in md  # mean [95% interval], samples/s
    assert "relative_throughput" not in md  # not 'left out': one machine has no ratio


def test_the_report_says_which_figures_are_less_sure_than_they_look(two_machines, tmp_path):
    pytest.importorskip("vl_convert")
    from dataclasses import replace

    from bench.report import page

    before, after = two_machines[0][1], two_machines[0][1]
    noisy = replace(before.points[0], noise="3 repeats, spread 9.0% > target 3.5%")
    after = replace(before, points=[noisy], label="after", started="2026-11-22T10:00:00")
    comparison = cmp.compare([two_machines[0], (Path("after.json"), after)], V100)
    assert comparison.title == "2 results from 1 machine"
    page.write_report(comparison, tmp_path)
    md = (tmp_path / "report.md").read_text()
    assert md.startswith(f"# bench report: 2 results from 1 machine, baseline {V100}\n")
    assert f"- {V100} · after, resnet50 batch 64 fp32: noisy: 3 repeats, spread 9.0%" in md


def test_price_catalogue():
    assert catalog.pricing("c7i.2xlarge", None)["usd_per_hour"] == 0.357
    assert catalog.pricing("g5.2xlarge", None)["usd_per_hour"] == 1.212
    assert catalog.pricing(None, 2.5)["source"] == "given on the command line"
    assert catalog.pricing(None, None) is None
    with pytest.raises(UsageError, match="not in the price catalogue"):
        catalog.pricing("x9.huge", None)
    for name, entry in catalog.instances().items():
        assert entry["source"] and entry["date"] and entry["on_demand"] > 0, name


def test_peak_flops_lookup():
    env = {"accelerator": {"accelerator": "NVIDIA H100 80GB HBM3", "accelerator_count": 8}}
    value, source = catalog.peak_flops(env, "bf16")
    assert value == pytest.approx(8 * 989.4e12) and "datasheet" in source

    def gpu(name):
        return {"accelerator": {"accelerator": name, "accelerator_count": 1}}

    assert catalog.peak_flops(gpu("Tesla V100-SXM2-16GB"), "bf16")[0] is None  # no bf16 on Volta
    unknown = (None, "no peak FLOP/s known for 'NVIDIA A10G'; pass --peak-tflops")
    assert catalog.peak_flops(gpu("NVIDIA A10G"), "fp32") == unknown
    cpu = {"cpu": {"flags": ["avx512f", "amx_bf16"], "physical_cores": 4, "max_mhz": 3000}}
    assert catalog.peak_flops(cpu, "fp32")[0] == pytest.approx(4 * 3e9 * 64)
    assert catalog.peak_flops(cpu, "bf16")[0] == pytest.approx(4 * 3e9 * 1024)
    assert catalog.peak_flops({"cpu": {"flags": ["avx512f"]}}, "fp32")[0] is None  # no clock known
    assert catalog.peak_flops({}, "fp32", override_tflops=2.0)[0] == 2e12


def test_cli_compare_json(two_machines, tmp_path):
    from bench import result
    from bench.cli import main

    for path, res in two_machines:
        result.create(res, tmp_path / path.stem)
    out = tmp_path / "c.json"
    assert (
        main(["compare", str(tmp_path), "--baseline", "v100", "--format", "json", "-o", str(out)])
        == 0
    )
    assert json.loads(out.read_text())["baseline"] == V100


def test_one_machine_has_no_ratios_and_several_get_a_baseline_said_first(
    two_machines, tmp_path, capsys
):
    from bench import result
    from bench.cli import main

    result.create(two_machines[0][1], tmp_path / "one" / "a")
    assert main(["compare", str(tmp_path / "one")]) == 0  # one machine: its own baseline
    out = capsys.readouterr().out
    assert "100 [97.5–103]" in out and "110 (one run)" in out  # absolute samples/s
    assert "baseline" not in out  # one machine has no ratios
    result.create(two_machines[1][1], tmp_path / "one" / "b")
    assert main(["compare", str(tmp_path / "one"), "--format", "csv"]) == 0
    err = capsys.readouterr().err.strip()
    # both share the rows of batch 64 and 128 (256 ran out of memory on the V100): a tie,
    # the earliest (the V100's file was written first)
    assert err == (
        f"bench: baseline: {V100} (shares the most rows with the others, 2 of 3; the earliest "
        f"of 2 that do, started {two_machines[0][1].started[:19]}; name another with --baseline)"
    )


def test_terminal_table_keeps_bracketed_labels(tmp_path, capsys):
    from bench import result
    from bench.cli import main

    native = machine(V100, [point(64, [100])])
    image = machine(V100, [point(64, [150])])
    image.label = "[bench:cuda]"  # a label with brackets: rich markup to a terminal
    result.create(native, tmp_path / "native")
    result.create(image, tmp_path / "image")
    assert main(["compare", str(tmp_path), "--baseline", V100]) == 0
    assert "[bench:cuda]" in capsys.readouterr().out  # not swallowed as rich markup


def test_collect_writes_one_row_per_point_with_provenance(two_machines, tmp_path):
    pytest.importorskip("pandas")
    import csv

    from bench import result
    from bench.cli import main

    for path, res in two_machines:
        result.create(res, tmp_path / "in" / path.stem)
    assert main(["collect", str(tmp_path / "in"), "-o", str(tmp_path / "out" / "all")]) == 0
    rows = list(csv.DictReader((tmp_path / "out" / "all.csv").read_text().splitlines()))
    assert len(rows) == 6 and {r["accelerator"] for r in rows} == {V100, A100}
    assert {r["status"] for r in rows} == {"ok", "oom"}
    assert "## Throughput (samples/s)" in (tmp_path / "out" / "all.md").read_text()
    assert (tmp_path / "out" / "all-max-batch.csv").exists()


@pytest.mark.parametrize(
    ("cpu", "dmi", "pricing", "label"),
    [
        ({"model": "Intel(R) Xeon(R) Processor", "affinity_cores": 8}, None, None,
         "Intel(R) Xeon(R) Processor (8 cores)"),
        ({"model": "Intel(R) Xeon(R) Processor", "logical_cores": 4},
         {"sys_vendor": "Amazon EC2", "product_name": "c7i.2xlarge"}, None,
         "Intel(R) Xeon(R) Processor (4 cores) · c7i.2xlarge"),
        ({"model": "AMD EPYC"}, {"product_name": "Google Compute Engine"}, None, "AMD EPYC"),
        ({"model": "AMD EPYC", "affinity_cores": 2}, None, {"instance": "n2-standard-2"},
         "AMD EPYC (2 cores) · n2-standard-2"),
    ],
)  # fmt: skip
def test_cpu_machines_are_told_apart_by_cores_and_instance_type(cpu, dmi, pricing, label):
    from bench.report.machines import machine_label

    env = {"cpu": cpu, "accelerator": {"accelerator": None}, "host": {"dmi": dmi}}
    res = Result(config=RunConfig(workload="tiny"), environment=env, pricing=pricing)
    assert machine_label(res) == label


def test_provenance_records_the_machine_type_and_never_a_serial():
    from bench.run import provenance

    host = provenance.collect()["host"]
    assert "dmi" in host
    assert set(host["dmi"] or {}) <= {"sys_vendor", "product_name"}


# --- the default baseline and the default report folder --------------------------------


def _before_after(before_label="before", after_label="after"):
    before = machine(V100, [point(64, [100, 101, 99])])
    after = machine(V100, [point(64, [120, 121, 119])])
    before.started, after.started = "2026-11-20T10:00:00+00:00", "2026-11-21T10:00:00+00:00"
    before.label, after.label = before_label, after_label
    return before, after


@pytest.mark.parametrize(
    ("labels", "expected", "why"),
    [
        (("before", "after"), f"{V100} · before", "the run labelled before"),
        (("after", "before"), f"{V100} · before", "the run labelled before"),  # not the date
        (
            ("old", "new"),
            f"{V100} · old",
            "shares the most rows with the others, 1 of 1; the earliest of 2 that do, "
            "started 2026-11-20",
        ),
        (("new driver", "baseline"), f"{V100} · baseline", "the run labelled baseline"),
        # unlabelled runs of one machine are one column: tests/report/test_compare_fleet.py
    ],
)
def test_runs_of_one_machine_get_a_baseline_without_being_asked_and_say_which(
    labels, expected, why
):
    before, after = _before_after(*labels)
    # listed newest first: the choice is by label, then by date, never by order
    comparison = cmp.compare([(Path("b"), after), (Path("a"), before)], None)
    assert comparison.baseline.label == expected
    assert comparison.baseline_note.startswith(f"baseline: {expected} ({why}")
    assert "--baseline" in comparison.baseline_note
    assert cmp.compare([(Path("a"), before)], None).baseline_note is None  # one column
    other = next(m.label for m in comparison.machines if m is not comparison.baseline)
    named = cmp.compare([(Path("a"), before), (Path("b"), after)], other)
    assert named.baseline.label == other and named.baseline_note is None


def test_several_machines_take_a_labelled_baseline_else_the_most_comparable(two_machines):
    _a, b = (res for _, res in two_machines)
    b.started = "2026-01-01T00:00:00+00:00"  # the earliest of the two that tie
    chosen = cmp.compare(two_machines, None)
    assert chosen.baseline.label == A100
    assert "shares the most rows with the others, 2 of 3; the earliest of 2" in chosen.baseline_note
    b.label = "baseline"
    comparison = cmp.compare(two_machines, None)
    assert comparison.baseline.label == f"{A100} · baseline"
    assert "the run labelled baseline" in comparison.baseline_note


def test_cli_compare_of_before_and_after_picks_before_and_says_so_on_stderr(tmp_path, capsys):
    from bench import result
    from bench.cli import main

    for res in _before_after():
        result.create(res, tmp_path / "runs" / res.label)
    assert main(["compare", str(tmp_path / "runs"), "--format", "csv"]) == 0
    captured = capsys.readouterr()
    assert captured.err.strip() == (
        f"bench: baseline: {V100} · before (the run labelled before; name another with --baseline)"
    )
    rows = captured.out.splitlines()  # stdout is the CSV alone
    assert rows[0].startswith("workload,") and len(rows) == 3
    assert ",True," in next(r for r in rows if "· before" in r)


def test_cli_report_without_o_writes_beside_the_results_and_prints_the_page(
    tmp_path, capsys, monkeypatch
):
    pytest.importorskip("vl_convert", reason="bench[report] (vl-convert) is not installed")
    from bench import result
    from bench.cli import main

    made = [result.create(res, tmp_path / "results") for res in _before_after()]
    monkeypatch.chdir(tmp_path)
    assert main(["report", "results"]) == 0  # it needed -o
    printed = capsys.readouterr().out.split()
    assert printed[-1] == "results/report/report.html"
    assert (tmp_path / "results" / "report" / "report.md").is_file()
    # Vega's script, made by the first renderer while the results were read: the page's.
    from bench.report import vega

    html = (tmp_path / "results" / "report" / "report.html").read_text()
    assert f"<script>{vega.bundle()}</script>" in html
    assert main(["report", *(str(p.relative_to(tmp_path)) for p in made)]) == 0  # their folder
    assert capsys.readouterr().out.split()[-1] == "results/report/report.html"
    assert main(["compare", "results"]) == 0  # the report beside them is no result to read


H100 = "NVIDIA H100 80GB HBM3"


def _llm_run(accelerator, seq_len, step_s, *, price=None, devices=8, framework="torch"):
    """A llama3-1b run on 8 devices at one sequence length, as bench suite llm makes."""
    point = Point(
        batch_size=8, precision="bf16", step_times_s=((step_s, step_s),), devices=devices,
        memory_format="channels_last" if framework == "jax" else "contiguous",
        peak_memory_bytes=(60 * 2**30,),
        details={"per_sample": {"unit": "tokens", "count": seq_len},
                 "mfu": {"devices": devices, "peak_flops": 8 * 989.4e12}},
        flops_per_sample=seq_len * 6 * 1.2e9,
    )  # fmt: skip
    env = {"accelerator": {"accelerator": accelerator, "accelerator_count": devices}, "cpu": {}}
    pricing = {"usd_per_hour": price, "source": "test"} if price else None
    config = RunConfig(workload="llama3-1b", framework=framework, seq_len=seq_len,
                       precisions=("bf16",))  # fmt: skip
    return Result(config=config, environment=env, points=[point], pricing=pricing)


def test_an_llm_at_several_sequence_lengths_is_one_row_each_not_set_apart():
    runs = [
        (Path(f"{m}-{n}.json"), _llm_run(m, n, 1.0)) for m in (H100, A100) for n in (2048, 8192)
    ]
    comparison = cmp.compare(runs, baseline=A100)
    assert comparison.set_apart == []
    assert [key[5] for key, _ in comparison.rows] == ["2048 tokens", "8192 tokens"]
    assert all(cell.point is not None for _, cells in comparison.rows for cell in cells)


def test_the_llm_table_shows_tokens_per_device_mfu_memory_and_price_per_machine():
    runs = [
        (Path("h100.json"), _llm_run(H100, 8192, 1.0, price=98.32)),
        (Path("a100.json"), _llm_run(A100, 8192, 2.0)),
        (Path("resnet.json"), machine(H100, [point(64, [100])])),  # no row of its own here
    ]
    headers, body = grids.llm_grid(cmp.compare(runs, baseline=A100))
    assert [row[0] for row in body] == ["llama3-1b"]
    cells = dict(zip(headers, body[0], strict=True))
    # 8 sequences of 8192 tokens a second over 8 devices: 8,192 tokens/s per device.
    h100 = next(v for k, v in cells.items() if "H100" in k)
    mfu = 8192 * 8 * 6 * 1.2e9 / (8 * 989.4e12)
    assert h100.startswith("8,192 tokens/s · ") and f"MFU {mfu:.1%}" in h100
    assert "60.00 GiB" in h100
    assert f"${98.32 / (8 * 8192 * 3600) * 1e6:,.3g}/M tokens" in h100
    a100 = next(v for k, v in cells.items() if "A100" in k)
    # No price in the result: bench's catalogue's (p4d.24xlarge, 8 A100s, $32.7726/h).
    assert a100.startswith("4,096 tokens/s")
    assert f"${32.7726 / (8 * 4096 * 3600) * 1e6:,.3g}/M tokens" in a100
    assert "LLM training" in grids.to_markdown(cmp.compare(runs, baseline=A100))


def test_a_decoder_trained_in_torch_and_in_jax_shares_its_rows():
    """GPU against TPU is one command each (torch, JAX): the layout JAX records for its
    inputs (NHWC) means nothing for tokens and must not split the rows."""
    runs = [
        (Path("gpu.json"), _llm_run(H100, 8192, 1.0)),
        (Path("tpu.json"), _llm_run("TPU v5 lite", 8192, 1.0, framework="jax")),
    ]
    comparison = cmp.compare(runs, baseline="h100")  # each machine in one framework: one row
    [(key, cells)] = comparison.rows
    assert key[3] == "n/a" and all(cell.point is not None for cell in cells)


def test_each_ratio_carries_the_verdict_bench_diff_gives_in_the_csv_and_json():
    quiet = [(Path("a.json"), machine(V100, [point(64, [99, 100, 101])]))]
    fast = machine(A100, [point(64, [299, 300, 301])])
    noisy = machine(A100, [point(64, [110, 160, 130])])  # a busy machine: 1.3x, wide
    [_, cell] = cmp.compare([*quiet, (Path("b.json"), fast)], baseline="v100").rows[0][1]
    assert cell.verdict.word == "faster"
    assert cell.verdict.sentence().startswith("3.00x faster (95% CI 2.9")  # verdict.py's own
    comparison = cmp.compare([*quiet, (Path("b.json"), noisy)], baseline="v100")
    [record] = [r for r in records.records(comparison) if not r["baseline"]]
    assert record["significance"] == "~" and record["verdict"] == "cannot tell"
    assert record["verdict_text"] == (
        "1.32x [0.83x–2.10x], cannot tell: this machine's repeats disagree: 110 to 160 samples/s "
        "(repeat 2 fastest, repeat 1 slowest; their steps do not overlap)"
    )


def test_time_and_cost_to_a_target_loss_are_a_table_and_two_curves():
    from bench.report import tidy, views

    fixture = DATA / "result-v12.json"
    comparison = cmp.compare([(fixture, result.load(fixture))], None)
    _, body = grids.loss_grid(comparison)
    [row] = body
    assert re.fullmatch(r"to 5: [\d.]+ s · \$[\d.]+ · [\d.,]+ k tokens · evaluation \d+%", row[-1])
    assert row[-1] in grids.to_markdown(comparison)  # bench compare --format markdown
    [record] = records.records(comparison)
    assert record["target_loss"] == 5 and record["reached_repeats"] >= 1
    curves = tidy.loss_curves(comparison)
    assert len(curves) >= 2 and {"tokens", "wall_s", "loss", "target"} <= set(curves[0])
    if importlib.util.find_spec("altair") is not None:
        shown = {v.id for v in views.views(tidy.tidy(comparison))}
        assert {"loss_tokens", "loss_time"} <= shown


def test_a_run_to_a_target_loss_is_its_own_row_beside_the_same_machines_throughput_runs():
    """The H200's GPT-2 run to a loss (token data, no warm-up) was set apart from its
    synthetic throughput run of the same workload, so its loss curve never reached the
    report: it is a row of its own ('train-to-loss=5'), compared with runs to the same loss."""
    from bench.report import tidy

    fixture = DATA / "result-v12.json"
    to_loss = result.load(fixture)
    assert to_loss.config.train_to_loss == 5
    plain = dataclasses.replace(
        to_loss,
        config=RunConfig(workload=to_loss.config.workload, batch_sizes=(4,), seq_len=64),
        points=[dataclasses.replace(p, loss=()) for p in to_loss.points],
    )
    comparison = cmp.compare([(Path("plain.json"), plain), (fixture, to_loss)], None)
    assert comparison.set_apart == []
    setups = sorted(key[5] for key, _ in comparison.rows)
    assert any("train-to-loss=5" in s for s in setups)
    assert any("train-to-loss" not in s for s in setups)
    assert tidy.loss_curves(comparison)


def test_the_headline_judges_two_decoders_best_points_in_tokens_per_second():
    """Each machine's best decoder point is ranked by tokens/s; its ratio was taken in
    samples/s, so 8,192 tokens at 1.33x the tokens/s of 2,048 read '3.0x slower'."""
    from bench.report import tidy
    from bench.report.words import Commands

    def run(accelerator, seq_len, steps):  # three repeats of 2 s steps, a little noise
        res = _llm_run(accelerator, seq_len, 1.0)
        res.points[0] = dataclasses.replace(res.points[0], step_times_s=steps)
        return res

    fast = ((2.0, 2.0), (2.02, 2.02), (1.98, 1.98))
    x = run(H100, 8192, tuple(tuple(s * 3 / 4 for s in r) for r in fast))
    y = run(A100, 2048, tuple(tuple(s / 4 for s in r) for r in fast))
    comparison = cmp.compare([(Path("x.json"), x), (Path("y.json"), y)], baseline=A100)
    ids = {}
    tidy.points(comparison, Commands(), ids)
    [row] = [r for r in tidy.headline(comparison, ids) if not r["baseline"]]
    assert row["rel"] == pytest.approx(4 / 3, rel=1e-6)  # tokens/s, not 1/3 in samples/s
    assert row["verdict"] == "faster" and row["rel_lo"] < 4 / 3 < row["rel_hi"]
