import json
import math
import os

import pytest

from bench import result
from bench.config.run_config import RunConfig
from bench.result import SCHEMA_VERSION, MaxBatch, Point, Probe, Result, ResultError
from tests.conftest import DATA


def sample_result() -> Result:
    config = RunConfig(workload="tiny", batch_sizes=(8, 16))
    return Result(
        config=config,
        environment={"host": {"hostname": "h"}},
        points=[
            Point(
                batch_size=8,
                precision="fp32",
                step_times_s=((0.1, 0.2), (0.1, 0.1)),
                warmup_times_s=((1.0,), (1.0,)),
                peak_memory_bytes=(100, 120),
                memory_kind="host_peak_rss",
                flops_per_sample=1e6,
                parameters=5354,
            ),
            Point(
                batch_size=16, precision="fp32", status="oom", error="RuntimeError: can't allocate"
            ),
        ],
        max_batch=[
            MaxBatch(
                precision="fp32",
                largest_ok=8,
                first_failing=9,
                status="done",
                probes=[Probe(8, "ok"), Probe(9, "oom", "no memory")],
            )
        ],
        command=["bench", "tiny"],
    )


def test_round_trip_keeps_raw_data_and_rederives_statistics(tmp_path):
    original = sample_result()
    path = result.create(original, tmp_path)
    loaded = result.load(path)
    assert loaded.points == original.points
    assert loaded.max_batch == original.max_batch
    assert loaded.config == original.config
    data = json.loads(path.read_text())
    assert data["schema_version"] == SCHEMA_VERSION
    first = data["points"][0]
    assert first["step_times_s"] == [[0.1, 0.2], [0.1, 0.1]]
    assert first["throughput"]["unit"] == "samples/s"
    assert first["throughput"]["value"] == pytest.approx(math.sqrt(16 / 0.3 * 16 / 0.2))
    assert first["peak_memory"] == {"value": 120, "unit": "B", "kind": "host_peak_rss"}
    assert first["achieved_flops"]["unit"] == "FLOP/s"
    assert data["points"][1]["status"] == "oom" and data["points"][1]["throughput"] is None


def test_stored_statistics_are_not_trusted_on_load(tmp_path):
    path = result.create(sample_result(), tmp_path)
    data = json.loads(path.read_text())
    data["points"][0]["throughput"]["value"] = 1e9  # tampered derived figure
    path.write_text(json.dumps(data))
    assert result.load(path).points[0].throughput.value == pytest.approx(
        math.sqrt(16 / 0.3 * 16 / 0.2)
    )


def test_create_never_overwrites(tmp_path):
    first = result.create(sample_result(), tmp_path)
    before = first.read_bytes()
    second = result.create(sample_result(), tmp_path)
    assert first != second and first.read_bytes() == before
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


@pytest.mark.parametrize("fixture", sorted(p.name for p in DATA.glob("result-v*.json")))
def test_every_schema_fixture_still_loads(fixture):
    loaded = result.load(DATA / fixture)
    stored = json.loads((DATA / fixture).read_text())
    assert loaded.config.workload == stored["config"]["workload"]
    assert loaded.environment["framework"]["name"] == "torch"
    for point in loaded.points:
        assert point.status == "ok" and point.throughput.value > 0
    for search in loaded.max_batch:
        assert search.status == "done" and search.largest_ok


def test_a_sequence_workload_reports_tokens_per_second():
    """The v7 fixture is a real gpt2 run at --seq-len 32: tokens/s = samples/s x 32."""
    data = json.loads((DATA / "result-v7.json").read_text())
    loaded = result.load(DATA / "result-v7.json")
    for stored, point in zip(data["points"], loaded.points, strict=True):
        assert point.details["per_sample"] == {"unit": "tokens", "count": 32}
        value, unit = point.unit_throughput
        assert unit == "tokens/s" and value == pytest.approx(32 * point.throughput.value)
        # Stored by an older bench (the arithmetic mean of the repeats), re-derived on load
        # as the geometric mean: within 0.1% for these close repeats.
        assert stored["unit_throughput"]["unit"] == "tokens/s"
        assert stored["unit_throughput"]["value"] == pytest.approx(value, rel=1e-3)


def test_fixture_v1_has_the_documented_fields(fixture_v1):
    data = json.loads(fixture_v1.read_text())
    assert data["schema_version"] == 1
    point = data["points"][0]
    for key in ("batch_size", "precision", "status", "throughput", "step_times_s"):
        assert key in point
    assert set(point["throughput"]) >= {"value", "unit"}
    env = data["environment"]
    for key in ("bench", "host", "cpu", "accelerator", "framework", "env"):
        assert key in env


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not a bench result (invalid JSON"),
        ("[]", "not a bench result (no schema_version)"),
        ('{"schema_version": 99}', "schema version 99 is newer than this bench reads"),
        ('{"schema_version": 1, "points": []}', "missing field 'config'"),
    ],
)
def test_unreadable_files_are_named_with_the_reason(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ResultError) as error:
        result.load(path)
    assert str(path) in str(error.value) and message in str(error.value)


def test_bad_point_fields_are_named(tmp_path, fixture_v1):
    data = json.loads(fixture_v1.read_text())
    data["points"][1]["status"] = "great"
    data["points"][0]["step_times_s"] = [[0.1, -1]]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ResultError, match=r"points\[0\]\.step_times_s\[0\]"):
        result.load(path)


def test_missing_file_is_a_usage_error(tmp_path):
    with pytest.raises(ResultError, match="no such result file"):
        result.load(tmp_path / "missing.json")


def test_a_version_1_file_migrates_with_energy_marked_unmeasured():
    loaded = result.load(DATA / "result-v1.json")
    assert loaded.schema_version == SCHEMA_VERSION and loaded.pricing is None
    for point in loaded.points:
        assert point.energy == () and "schema 1" in point.energy_unavailable


def test_fixture_v2_keeps_its_pricing():
    loaded = result.load(DATA / "result-v2.json")
    assert loaded.pricing["instance"] == "c7i.2xlarge" and loaded.pricing["usd_per_hour"] == 0.357


def test_scaling_compares_with_the_one_device_point_of_every_same_axis():
    # Two ranks with IPEX were once set against one process without it (0.83x, 42%).
    def point(devices, optimize, allocator, step_s):
        return Point(batch_size=64, precision="fp32", devices=devices, optimize=optimize,
                     allocator=allocator, step_times_s=((step_s,) * 4,))  # fmt: skip

    points = [point(1, None, "tcmalloc", 0.033), point(1, "ipex", "tcmalloc", 0.109),
              point(1, "ipex", "system", 0.05), point(2, "ipex", "tcmalloc", 0.040),
              point(2, None, "jemalloc", 0.02)]  # fmt: skip
    run = Result(config=RunConfig(workload="tiny"), environment={}, points=points)
    assert run.single_device(points[3]) is points[1]
    assert run.scaling_efficiency(points[3]) == pytest.approx(0.109 / (2 * 0.040))
    assert run.scaling_efficiency(points[4]) is None  # no one-device jemalloc point


# --- crafted files: refused on load in one line, or read without a crash -----------------


def _crafted(tmp_path, change, fixture="result-v9.json", name="crafted.json"):
    """A fixture changed by `change` (its checksum dropped: no 'edited' warning)."""
    data = json.loads((DATA / fixture).read_text())
    data.pop("integrity", None)
    change(data)
    path = tmp_path / name
    path.write_text(json.dumps(data).replace('"@@5000 digits@@"', "9" * 5000))
    return path


def _refused(path, field):
    """load names the file and `field`; `bench show` says so in one line, exit status 2."""
    with pytest.raises(ResultError) as error:
        result.load(path)
    message = str(error.value)
    assert message.startswith(f"{path}: ") and field in message, message
    return message


def _bench(capsys, *argv):
    """bench in this process: its exit status, stdout and stderr."""
    from bench.cli import main

    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda d: d.update(status=[]), "result.status"),
        (lambda d: d["points"][0].update(status=[]), "points[0].status"),
        (lambda d: d["points"][0].update(precision=[]), "points[0].precision"),
        (lambda d: d["points"][0].update(status=["ok"]), "points[0].status"),
        (lambda d: d.update(command=[[]]), "result.command[0]"),
    ],
)
def test_a_list_where_text_is_expected_is_named_not_a_crash(tmp_path, capsys, change, field):
    # Naming the first bad item of a list once ran next() over a value that was no list
    # of items at all: StopIteration, a traceback.
    path = _crafted(tmp_path, change)
    _refused(path, field)
    code, _, err = _bench(capsys, "show", str(path))
    assert code == 2 and len(err.splitlines()) == 1 and field in err


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["points"][0].update(batch_size="@@5000 digits@@"), "more than 4300 digits"),
        (lambda d: d["environment"]["host"].update(x="@@5000 digits@@"), "more than 4300 digits"),
        (lambda d: d["config"].update(seed=2**70), "config.seed: a whole number beyond 64 bits"),
        (lambda d: d["environment"].update(x=[1, -(10**4000)]),
         "environment.x[1]: a whole number beyond 64 bits"),
        (lambda d: d["points"][0].update(batch_size=2**40), "points[0].batch_size"),
        (lambda d: d["config"].update(steps=2**40), "config.steps"),
    ],
)  # fmt: skip
def test_whole_numbers_too_long_to_print_or_count_are_refused(tmp_path, capsys, change, message):
    path = _crafted(tmp_path, change)
    _refused(path, message)
    code, _, err = _bench(capsys, "show", str(path))
    assert code == 2 and len(err.splitlines()) == 1


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda d: d["points"][0].update(step_times_s=[[1e308, 1e308]]), "step_times_s[0][0]"),
        (lambda d: d["points"][0].update(step_times_s=[[0.1, 1e-300]]), "step_times_s[0][1]"),
        (lambda d: d["points"][0].update(step_times_s=[[5e-324]]), "step_times_s[0][0]"),
        (lambda d: d["points"][0].update(flops_per_sample=1e300), "points[0].flops_per_sample"),
        (lambda d: d["points"][0].update(energy=[{"window_s": 1.0, "per_device_j": {"g": 1e308},
         "sources": {"g": "x"}, "epoch_j": None}]), "points[0].energy[0].per_device_j"),
        (lambda d: d.update(pricing={"usd_per_hour": 1e-300}), "pricing.usd_per_hour"),
        (lambda d: d.update(peak_tflops=float("inf")), "result.peak_tflops"),
        (lambda d: d["config"].update(timeout_s=float("inf")), "config.timeout_s"),
    ],
)  # fmt: skip
def test_figures_that_overflow_the_statistics_are_refused(tmp_path, capsys, change, field):
    # 1e308 s steps once overflowed fsum (OverflowError); 1e-300 s made throughput inf.
    path = _crafted(tmp_path, change)
    _refused(path, field)
    for command in (["show"], ["compare"], ["diff", str(DATA / "result-v9.json")]):
        code, _, err = _bench(capsys, *command, str(path))
        assert code == 2 and err.count("bench: error:") == 1, err


def test_energy_of_a_repeat_without_steps_is_no_division_by_zero(tmp_path, capsys):
    window = {"window_s": 2.0, "per_device_j": {"gpu0": 300.0}, "sources": {"gpu0": "nvml"},
              "epoch_j": None}  # fmt: skip
    point = Point(batch_size=8, precision="fp32", step_times_s=((), (0.1, 0.1)),
                  energy=(window, window))  # fmt: skip
    assert point.energy_summary.per_sample_j == pytest.approx(300 / 16)  # the 2nd repeat's
    assert Point(batch_size=8, precision="fp32", step_times_s=((),),
                 energy=(window,)).energy_summary is None  # fmt: skip
    path = _crafted(tmp_path, lambda d: d["points"][0].update(step_times_s=[[]], energy=[window]))
    for command in ("show", "compare"):
        code, _out, err = _bench(capsys, command, str(path))
        assert code == 0 and not err, err


def test_epoch_times_of_fewer_repeats_than_steps_are_no_index_error():
    steps = (0.1,) * 4
    point = Point(batch_size=8, precision="fp32", step_times_s=(steps, steps),
                  epoch_times_s=((0.2, 0.2),))  # fmt: skip
    assert point.repeat_throughputs() == [pytest.approx(16 / 0.2), pytest.approx(80)]
    fewer = Point(batch_size=2, precision="fp32", step_times_s=((0.1,),),
                  epoch_times_s=((0.2, 0.2, 0.2),))  # fmt: skip
    assert fewer.throughput is None  # 2 samples cannot fill three epochs: no figure, not 0


def test_node_lists_that_are_not_field_names_are_refused(tmp_path, capsys):
    # `nodes_differ` is joined into a note under the table: [1, [2]] was a TypeError there.
    path = _crafted(tmp_path, lambda d: d["environment"].update(nodes_differ=[1, [2]]))
    _refused(path, "environment.nodes_differ[0]")
    path = _crafted(tmp_path, lambda d: d["environment"].update(nodes_differ=["cpu.model"]))
    code, out, _ = _bench(capsys, "show", str(path))
    assert code == 0 and "the machines of this run differ in: cpu.model" in out


def test_a_price_without_its_figure_is_refused(tmp_path, capsys):
    # compare read pricing["usd_per_hour"]: a KeyError for {"foo": 1}.
    path = _crafted(tmp_path, lambda d: d.update(pricing={"foo": 1}))
    _refused(path, "pricing: missing field 'usd_per_hour'")
    for command in ("compare", "show"):
        code, _, err = _bench(capsys, command, str(path))
        assert code == 2 and len(err.splitlines()) == 1


def test_a_sweep_of_billions_of_points_is_refused_in_one_line(tmp_path, capsys):
    from bench.util.errors import UsageError
    from tests.untrusted.test_fuzz_results import deadline

    with deadline(10), pytest.raises(UsageError, match=r"sweep: 10,000,000,000 points"):
        RunConfig(workload="tiny", batch_sizes=range(1, 100_001), devices=range(1, 100_001))
    path = _crafted(tmp_path, lambda d: d["config"].update(
        batch_sizes=list(range(1, 100_001)), devices=list(range(1, 100_001))))  # fmt: skip
    with deadline(10):
        message = _refused(path, "sweep: 20,000,000,000 points (100000 batch_sizes x 100000 "
                                 "devices x 2 optimizations) is more than 10,000")  # fmt: skip
        code, _, err = _bench(capsys, "rerun", str(path))
    assert code == 2 and err.strip() == f"bench: error: {message}"


def test_scaling_and_ladder_lookups_take_time_linear_in_the_points():
    """Each point's one-device point, and each rung's point, were searched for among all
    points: 20,000 points took minutes. Now by an index of the points' axes."""
    from bench.report.table import ladder_rows, scaling_notes
    from tests.untrusted.test_fuzz_results import deadline

    n = 10_000
    one = [Point(batch_size=b, precision="fp32", step_times_s=((0.2,),)) for b in range(1, n + 1)]
    two = [Point(batch_size=b, precision="fp32", devices=2, step_times_s=((0.1,),))
           for b in range(1, n + 1)]  # fmt: skip
    rungs = [{"rung": f"batch {b}", "point": {"batch_size": b, "precision": "fp32",
                                              "memory_format": "contiguous"},
              "kept": True, "why": ""} for b in range(n, 0, -1)]  # fmt: skip
    run = Result(config=RunConfig(workload="tiny"), points=one + two, ladder=rungs)
    with deadline(20):
        notes = scaling_notes(run)
        rows = ladder_rows(run)
        efficiencies = run.scaling_efficiencies()
    assert efficiencies == [None] * n + [pytest.approx(1.0)] * n
    assert len(notes) == n and notes[0].startswith("batch 1 fp32 on 2 devices: 2.00x")
    assert rows[0][1].value == pytest.approx(n / 0.2) and rows[-1][2] == pytest.approx(1 / n)
    assert run.single_device(two[5]) is one[5] and run.scaling_efficiency(two[5]) == pytest.approx(
        1.0
    )


def test_only_regular_files_of_bounded_size_are_read(tmp_path, monkeypatch):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)  # opening it would wait for a writer forever
    with pytest.raises(ResultError, match=r"pipe\.json: not a regular file"):
        result.load(fifo)
    monkeypatch.setattr(result.io, "MAX_RESULT_BYTES", 1000)
    path = tmp_path / "big.json"
    path.write_text(" " * 1001)
    with pytest.raises(ResultError, match=r"big\.json: larger than 0 MiB"):
        result.load(path)


def test_a_busy_record_bench_wrote_with_float_noise_above_zero_loads(tmp_path, capsys):
    """busy.others_cpus is a difference of CPU times over a window: where nothing else ran
    it is 0 or float rounding (1e-16 CPUs), as a real run wrote it; both load. What makes
    no record still does not (negative, beyond 1e21, text)."""
    record = {"window_s": 0.35, "load_average": 1.5, "others_cpus": 4.3e-16,
              "steal_cpus": 0.0, "cpu_mhz": None, "governors": None, "throttle": None}  # fmt: skip
    path = _crafted(tmp_path, lambda d: d["points"][0].update(busy=[record]))
    assert result.load(path).points[0].busy[0]["others_cpus"] == 4.3e-16
    code, _out, err = _bench(capsys, "show", str(path))
    assert code == 0 and not err, err
    for bad in (-0.5, 1e22, "many"):
        busy = [{**record, "others_cpus": bad}]
        crafted = _crafted(tmp_path, lambda d, b=busy: d["points"][0].update(busy=b))
        with pytest.raises(ResultError, match=r"busy"):
            result.load(crafted)


def test_a_decoder_under_jax_shows_no_memory_format_and_an_image_workload_still_does(tmp_path):
    """JAX records its only layout (NHWC, channels_last) for every point; a token
    sequence has no layout, so a decoder's label and tables leave it out. The JSON field
    stays, and an image workload still shows it."""
    from bench.report.table import max_batch_table, notes, points_table, takes_images

    def run(workload: str) -> Result:
        ok = Point(batch_size=1, precision="bf16", memory_format="channels_last",
                   step_times_s=((0.1, 0.1),))  # fmt: skip
        failed = Point(batch_size=2, precision="bf16", memory_format="channels_last",
                       status="oom", error="RESOURCE_EXHAUSTED")  # fmt: skip
        search = MaxBatch(precision="bf16", memory_format="channels_last", largest_ok=1,
                          first_failing=2, status="done", probes=[Probe(1, "ok")])  # fmt: skip
        config = RunConfig(workload=workload, framework="jax")
        return Result(config=config, points=[ok, failed], max_batch=[search])

    decoder, images = run("llama3-tiny"), run("tiny")
    assert not takes_images(decoder) and takes_images(images)
    assert decoder.points[0].label_for(images=False) == "batch 1 bf16"
    assert "memory format" not in [str(c.header) for c in points_table(decoder).columns]
    assert "memory format" not in [str(c.header) for c in max_batch_table(decoder).columns]
    assert notes(decoder) == "batch 2 bf16: oom: RESOURCE_EXHAUSTED"
    assert "memory format" in [str(c.header) for c in points_table(images).columns]
    assert "memory format" in [str(c.header) for c in max_batch_table(images).columns]
    assert notes(images) == "batch 2 bf16 channels_last: oom: RESOURCE_EXHAUSTED"
    assert images.points[0].label == "batch 1 bf16 channels_last"
    path = result.create(decoder, tmp_path)
    loaded = result.load(path)
    assert json.loads(path.read_text())["points"][0]["memory_format"] == "channels_last"
    assert loaded.points[0].memory_format == "channels_last"
    assert "memory format" not in [str(c.header) for c in points_table(loaded).columns]
