"""The input pipeline's levers as sweep axes (--num-workers, --prefetch-factor): a sweep of
two worker counts is two points, each recording its own; the resume check tells them
apart; the ladder climbs them on data a loader feeds, each rung kept only when faster
beyond noise, and skips them in one line on synthetic data; tune searches them there;
a result file of schema 18 reads its config's one value at every point."""

import json

import pytest

from bench import result
from bench.commands import tune
from bench.commands.run_options import config_from_args, parse_run
from bench.config.run_config import RunConfig
from bench.result import Point
from bench.result.migrations import MIGRATIONS
from bench.run.runner import Runner
from bench.search import ladder
from bench.search.ladder import LadderRunner
from tests.conftest import ROOT
from tests.run.test_runner import FakeChild, ok_response
from tests.search.test_ladder import answer as plain_answer
from tests.search.test_ladder import speed

FIXTURE_V8 = ROOT / "tests" / "data" / "result-v8.json"
FIXTURE_V18 = ROOT / "tests" / "data" / "result-v18.json"


def test_a_sweep_of_two_worker_counts_is_two_points_each_recording_its_own(tmp_path):
    config = config_from_args(parse_run(["tiny", "--data", "loader", "--num-workers", "0,1",
                                         "--batch-size", "8"]))  # fmt: skip
    assert config.workers == (0, 1)
    assert [p.num_workers for p in config.points()] == [0, 1]
    child = FakeChild(lambda point, n: ok_response(0.1 if point.num_workers else 0.2))
    runner = Runner(config, tmp_path, spawn=child)
    runner.run()
    measured = [p.num_workers for p, job in child.calls if job == "measure"]
    assert measured == [0, 1]  # each point a child of its own, with its own workers
    saved = json.loads(runner.path.read_text())
    assert saved["config"]["workers"] == [0, 1]
    assert [p["num_workers"] for p in saved["points"]] == [0, 1]
    assert [p.num_workers for p in result.load(runner.path).points] == [0, 1]


def test_a_prefetch_sweep_needs_workers_at_every_point():
    config = RunConfig("tiny", data="loader", workers=(1,), prefetch_factors=(None, 4))
    assert [(p.num_workers, p.prefetch_factor) for p in config.points()] == [(1, None), (1, 4)]
    with pytest.raises(Exception, match=r"prefetch_factor: .* needs --num-workers"):
        RunConfig("tiny", data="loader", workers=(0, 1), prefetch_factors=(4,))


def test_the_resume_check_treats_two_worker_counts_as_two_points():
    config = RunConfig("tiny", data="loader", workers=(0, 2), batch_sizes=(8,))
    none, two = config.points()
    measured = Point(batch_size=8, precision="fp32", num_workers=0)
    assert Runner._same(measured, none) and not Runner._same(measured, two)


def test_an_interrupted_worker_sweep_measures_only_the_count_it_lacks(tmp_path):
    config = RunConfig("tiny", data="loader", workers=(0, 2), batch_sizes=(8,))
    first = Runner(config, tmp_path, spawn=FakeChild(lambda p, n: ok_response()))
    first.run()
    partial = json.loads(first.path.read_text())
    partial["points"], partial["status"] = partial["points"][:1], "interrupted"
    first.path.write_text(json.dumps(partial))
    child = FakeChild(lambda p, n: ok_response(0.2))
    again = Runner(config, tmp_path, spawn=child)
    again.resume(first.path)
    again.run()
    assert [p.num_workers for p, job in child.calls if job == "measure"] == [2]


def _v18_document() -> dict:
    """result-v8.json (cnn-s on cifar10 with one loader worker) brought to schema 18 by
    the steps before 18 -> 19: a file as bench 18 wrote it."""
    doc = json.loads(FIXTURE_V8.read_text())
    for version in range(8, 18):
        doc = MIGRATIONS[version](doc)
    doc.pop("integrity", None)
    return doc


def test_a_v18_file_s_points_read_its_config_s_workers_and_prefetch(tmp_path):
    doc = _v18_document()
    assert doc["schema_version"] == 18 and doc["config"]["num_workers"] == 1
    assert all("num_workers" not in p for p in doc["points"])
    doc["config"]["prefetch_factor"] = 4
    path = tmp_path / "v18.json"
    path.write_text(json.dumps(doc))
    loaded = result.load(path)
    assert loaded.config.workers == (1,) and loaded.config.prefetch_factors == (4,)
    assert {(p.num_workers, p.prefetch_factor) for p in loaded.points} == {(1, 4)}
    assert not hasattr(loaded.config, "num_workers")
    # the fixtures as written: v8's one worker, v18's none, at every point
    assert {p.num_workers for p in result.load(FIXTURE_V8).points} == {1}
    assert {p.num_workers for p in result.load(FIXTURE_V18).points} == {0}


FEED = {0: 1.0, 1: 1.5, 2: 1.5}  # one worker feeds the step; a second adds nothing


def fed(point, n):
    jitter = 1 + 0.005 * (n % 3 - 1)
    rate = speed(point) * FEED[point.num_workers] * (1.3 if point.prefetch_factor else 1.0)
    return ok_response(step_s=point.batch_size / (rate * jitter))


def test_on_data_a_loader_feeds_the_ladder_keeps_a_worker_rung_only_when_faster(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(ladder, "loader_workers", lambda: (1, 2))
    config = RunConfig(workload="tiny", data="loader", batch_sizes=(64, 128), repeats=3)
    outcome = LadderRunner(config, tmp_path, spawn=FakeChild(fed)).run()
    rungs = {r["rung"]: r for r in outcome.ladder}
    assert list(rungs)[:5] == ["baseline", "batch 64", "loader workers 1", "loader workers 2",
                               "prefetch 4"]  # fmt: skip
    assert rungs["loader workers 1"]["kept"] is True
    assert rungs["loader workers 2"]["kept"] is False  # the same speed: within noise
    assert rungs["loader workers 2"]["why"].endswith("not faster beyond noise")
    assert rungs["prefetch 4"]["kept"] is True  # on top of one worker
    point = rungs["prefetch 4"]["point"]
    assert (point["num_workers"], point["prefetch_factor"]) == (1, 4)
    # every rung a point of its own: the workers' rungs were measured, not taken as the base's
    assert {(p.num_workers, p.prefetch_factor) for p in outcome.points} >= {
        (0, None), (1, None), (2, None), (1, 4)}  # fmt: skip


def test_the_prefetch_rung_is_skipped_where_no_worker_was_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(ladder, "loader_workers", lambda: (1,))
    config = RunConfig(workload="tiny", data="loader", batch_sizes=(128,), repeats=3)
    outcome = LadderRunner(config, tmp_path, spawn=FakeChild(plain_answer)).run()
    rung = next(r for r in outcome.ladder if r["rung"] == "prefetch 4")
    assert rung["kept"] is None and "no loader workers kept" in rung["why"]


def test_on_synthetic_data_the_input_pipeline_is_one_skipped_rung(tmp_path):
    config = RunConfig(workload="tiny", batch_sizes=(128,), repeats=1)
    outcome = LadderRunner(config, tmp_path, spawn=FakeChild(plain_answer)).run()
    skipped = [r for r in outcome.ladder if r["rung"] in ("input pipeline",)
               or r["rung"].startswith(("loader workers", "prefetch"))]  # fmt: skip
    assert len(skipped) == 1 and skipped[0]["kept"] is None
    assert skipped[0]["why"].startswith("skipped: --data synthetic: no loader to feed")


def test_tune_searches_the_workers_only_where_a_loader_feeds(monkeypatch):
    monkeypatch.setattr(ladder, "loader_workers", lambda: (1, 2))
    real = tune.default_axes(RunConfig("tiny", data="loader"), set())
    assert real["workers"] == (0, 1, 2) and "prefetch_factors" not in real  # needs workers
    given = tune.default_axes(RunConfig("tiny", data="loader", workers=(2,)), {"--num-workers"})
    assert "workers" not in given and given["prefetch_factors"] == (None, ladder.PREFETCH)
    synthetic = tune.default_axes(RunConfig("tiny"), set())
    assert "workers" not in synthetic and "prefetch_factors" not in synthetic


def test_tune_s_winner_command_names_the_data_and_the_workers():
    from bench.search.tune_outcome import command_line

    config = RunConfig("tiny", data="loader", workers=(0, 2), batch_sizes=(8,))
    best = Point(batch_size=8, precision="fp32", num_workers=2, prefetch_factor=4)
    line = command_line(best, config)
    assert "--data loader" in line and "--num-workers 2 --prefetch-factor 4" in line
    assert "--num-workers" not in command_line(Point(batch_size=8, precision="fp32"), config)


# --- the batch's dtype, pinned memory and the device's decode (schema 20) ---------------

IMAGENET = {"workload": "cnn-s", "data": "imagenet:/x", "epochs": 1}


def test_a_sweep_of_dtypes_and_pinning_is_a_point_each_recording_its_own(tmp_path):
    config = config_from_args(parse_run(["cnn-s", "--data", f"imagenet:{tmp_path}", "--epochs",
                                         "1", "--input-dtype", "float32,uint8",
                                         "--pin-memory", "off", "--batch-size", "8"]))  # fmt: skip
    assert (config.input_dtypes, config.pin_memories, config.decodes) == (
        ("float32", "uint8"), ("off",), ("cpu",))  # fmt: skip
    points = [(p.input_dtype, p.pin_memory, p.decode) for p in config.points()]
    assert points == [("float32", "off", "cpu"), ("uint8", "off", "cpu")]
    float32, uint8 = config.points()
    measured = Point(batch_size=8, precision="fp32", input_dtype="uint8", pin_memory="off")
    assert Runner._same(measured, uint8) and not Runner._same(measured, float32)


def test_a_v19_file_s_points_read_its_config_s_dtype_and_pinning(tmp_path):
    doc = MIGRATIONS[18](_v18_document())  # cnn-s on cifar10, as bench 19 wrote it
    assert doc["schema_version"] == 19 and doc["config"]["workers"] == [1]
    doc["config"]["input_dtype"], doc["config"]["pin_memory"] = "uint8", "off"
    assert all("input_dtype" not in p for p in doc["points"])
    path = tmp_path / "v19.json"
    path.write_text(json.dumps(doc))
    loaded = result.load(path)
    assert (loaded.config.input_dtypes, loaded.config.pin_memories) == (("uint8",), ("off",))
    assert loaded.config.decodes == ("cpu",)
    assert {(p.input_dtype, p.pin_memory, p.decode) for p in loaded.points} == {
        ("uint8", "off", "cpu")}  # fmt: skip
    # an older file, which knew no such levers, reads their defaults
    assert {(p.input_dtype, p.pin_memory, p.decode) for p in result.load(FIXTURE_V8).points} == {
        ("float32", None, "cpu")}  # fmt: skip


def uint8_helps(point, n):
    jitter = 1 + 0.005 * (n % 3 - 1)
    rate = speed(point) * (1.4 if point.input_dtype == "uint8" else 1.0)
    return ok_response(step_s=point.batch_size / (rate * jitter))


def test_on_a_dataset_the_ladder_keeps_uint8_when_faster_and_skips_what_the_cpu_lacks(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(ladder, "loader_workers", lambda: (1,))
    config = RunConfig(**IMAGENET, batch_sizes=(128,), repeats=3)
    outcome = LadderRunner(config, tmp_path, spawn=FakeChild(uint8_helps)).run()
    rungs = {r["rung"]: r for r in outcome.ladder}
    assert [r for r in rungs if r in ("input uint8", "pin memory on", "decode on the device")] == [
        "input uint8", "pin memory on", "decode on the device"]  # fmt: skip
    assert (
        rungs["input uint8"]["kept"] is True
        and rungs["input uint8"]["point"]["input_dtype"] == "uint8"
    )
    # where the platform says the lever does not apply: skipped in its one line
    pin, decode = rungs["pin memory on"], rungs["decode on the device"]
    assert pin["kept"] is None and pin["why"].startswith("skipped: pin_memory: cpu has no copy")
    assert decode["kept"] is None
    assert decode["why"].startswith("skipped: decode: cpu has no JPEG decoder of its own")
    assert {p.decode for p in outcome.points} == {"cpu"}  # never run where it cannot


def test_the_ladder_skips_uint8_in_one_line_where_no_dataset_of_images_feeds(tmp_path):
    config = RunConfig(workload="tiny", data="loader", batch_sizes=(128,), repeats=1)
    outcome = LadderRunner(config, tmp_path, spawn=FakeChild(plain_answer)).run()
    rungs = {r["rung"]: r for r in outcome.ladder}
    assert rungs["input uint8"]["kept"] is None
    assert "input_dtype: uint8 is a dataset's pixels" in rungs["input uint8"]["why"]
    assert "decode: device decodes a dataset's JPEG files" in rungs["decode on the device"]["why"]


def test_on_a_gpu_the_pin_rung_tries_what_the_platform_does_not_by_default():
    cpu = dict(ladder.feed_rungs(next(iter(RunConfig(**IMAGENET).points()))))
    gpu = dict(ladder.feed_rungs(next(iter(RunConfig(**IMAGENET, device="cuda").points()))))
    assert cpu["pin memory on"] == {"pin_memory": "on"}
    assert gpu["pin memory off"] == {"pin_memory": "off"}  # CUDA pins by default


def test_tune_searches_dtype_pinning_and_decode_only_where_they_apply(monkeypatch):
    monkeypatch.setattr(ladder, "loader_workers", lambda: (1,))
    cpu = tune.default_axes(RunConfig(**IMAGENET), set())
    assert cpu["input_dtypes"] == ("float32", "uint8")
    assert "pin_memories" not in cpu and "decodes" not in cpu  # the CPU has neither
    loader = tune.default_axes(RunConfig("tiny", data="loader"), set())
    assert not {"input_dtypes", "decodes", "pin_memories"} & set(loader)
    from bench.frameworks import _torch_decode

    monkeypatch.setattr(_torch_decode, "missing", lambda: None)  # a CUDA torchvision
    gpu = tune.default_axes(RunConfig(**IMAGENET, device="cuda"), set())
    assert gpu["pin_memories"] == (None, "off") and gpu["decodes"] == ("cpu", "device")
    monkeypatch.setattr(_torch_decode, "missing", lambda: "decode: no nvJPEG here")
    assert "decodes" not in tune.default_axes(RunConfig(**IMAGENET, device="cuda"), set())
