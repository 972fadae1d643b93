import json
import os

import pytest

from bench import result
from bench.config import RunConfig
from bench.result import SCHEMA_VERSION, MaxBatch, Point, Probe, Result, ResultError

from .conftest import DATA


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
    assert first["throughput"]["value"] == pytest.approx((16 / 0.3 + 16 / 0.2) / 2)
    assert first["peak_memory"] == {"value": 120, "unit": "B", "kind": "host_peak_rss"}
    assert first["achieved_flops"]["unit"] == "FLOP/s"
    assert data["points"][1]["status"] == "oom" and data["points"][1]["throughput"] is None


def test_stored_statistics_are_not_trusted_on_load(tmp_path):
    path = result.create(sample_result(), tmp_path)
    data = json.loads(path.read_text())
    data["points"][0]["throughput"]["value"] = 1e9  # tampered derived figure
    path.write_text(json.dumps(data))
    assert result.load(path).points[0].throughput.value == pytest.approx((16 / 0.3 + 16 / 0.2) / 2)


def test_create_never_overwrites(tmp_path):
    first = result.create(sample_result(), tmp_path)
    before = first.read_bytes()
    second = result.create(sample_result(), tmp_path)
    assert first != second and first.read_bytes() == before
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


@pytest.mark.parametrize("fixture", sorted(p.name for p in DATA.glob("result-v*.json")))
def test_every_schema_fixture_still_loads(fixture):
    loaded = result.load(DATA / fixture)
    workloads = {"result-v7.json": "gpt2", "result-v8.json": "cnn-s", "result-v9.json": "cnn-s"}
    assert loaded.config.workload == workloads.get(fixture, "tiny")
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
        assert stored["unit_throughput"] == {"value": value, "unit": "tokens/s"}


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
