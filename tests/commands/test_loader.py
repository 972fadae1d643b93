"""`bench loader`: the input pipeline alone on a generated ImageNet-layout folder, each
worker count timed, a table and a JSON file; bad input one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.cli import main
from bench.frameworks._torch_data import split_loader
from tests.fake_data import write_imagenet


@pytest.fixture(scope="module")
def imagenet(tmp_path_factory) -> Path:
    # Photos of ImageNet's usual size (about 500x375 after the shorter side), few of them.
    return write_imagenet(tmp_path_factory.mktemp("imagenet"), classes=2, train=24, val=2,
                          size=375)  # fmt: skip


def test_each_worker_count_is_timed_with_its_batches_kept(imagenet, tmp_path, capsys):
    code = main(["loader", "tiny", "--data", f"imagenet:{imagenet}", "--num-workers", "0,1",
                 "--batch-size", "8", "--steps", "4", "--warmup-steps", "1",
                 "--device-rate", "5700", "--output-dir", str(tmp_path)])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    assert "loader: tiny on imagenet:" in out and "images/s" in out
    assert "the device's 5,700 images/s needs about" in out
    (made,) = tmp_path.glob("loader-tiny-*.json")
    doc = json.loads(made.read_text())
    assert doc["kind"] == "bench-loader" and [r["workers"] for r in doc["rows"]] == [0, 1]
    for row in doc["rows"]:
        assert len(row["batch_times_s"]) == 4 and len(row["warmup_times_s"]) == 1
        assert row["images_per_s"] == pytest.approx(8 * 4 / sum(row["batch_times_s"]))
        assert row["cores"] > 0 and row["images_per_s_per_core"] > 0
    fastest = max(doc["rows"], key=lambda r: r["images_per_s"])
    assert doc["device"]["at_workers"] == fastest["workers"]
    assert doc["device"]["cores_needed"] == pytest.approx(5700 / fastest["images_per_s_per_core"])


def test_the_prefetch_factor_is_the_loaders_and_recorded(imagenet, tmp_path, capsys):
    code = main(["loader", "tiny", "--data", f"imagenet:{imagenet}", "--num-workers", "1",
                 "--prefetch-factor", "3", "--batch-size", "8", "--steps", "2",
                 "--output-dir", str(tmp_path)])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    (made,) = tmp_path.glob("loader-tiny-*.json")
    assert json.loads(made.read_text())["prefetch_factor"] == 3


def test_uint8_batches_are_timed_and_recorded(imagenet, tmp_path, capsys, monkeypatch):
    """--input-dtype uint8: the loader sends the crop's bytes (what a run's device then
    normalises), and the JSON says so."""
    from bench.frameworks import _torch_data

    sent = []
    real = _torch_data.split_loader
    monkeypatch.setattr(
        _torch_data, "split_loader", lambda *a, **k: sent.append(k) or real(*a, **k)
    )
    code = main(["loader", "tiny", "--data", f"imagenet:{imagenet}", "--num-workers", "0",
                 "--input-dtype", "uint8", "--batch-size", "8", "--steps", "2",
                 "--output-dir", str(tmp_path)])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    assert [k["raw"] for k in sent] == [True]
    (made,) = tmp_path.glob("loader-tiny-*.json")
    assert json.loads(made.read_text())["input_dtype"] == "uint8"


def test_it_times_the_batches_a_run_trains_on(imagenet):
    """The loader bench loader times is the training path's: the same images, in the
    same order, augmented alike, whatever the worker count."""
    from bench import datasets, registry

    split = datasets.open_dataset(
        datasets.parse(f"imagenet:{imagenet}"), registry.workload("tiny")
    ).train
    batches = [
        next(iter(split_loader(split, 8, seed=3, epoch=0, train=True, workers=w, pin_memory=False)))
        for w in (0, 1)
    ]
    assert batches[0][0].shape == (8, 3, 16, 16)
    assert (batches[0][0] == batches[1][0]).all() and (batches[0][1] == batches[1][1]).all()


@pytest.mark.parametrize(("args", "said"), [
    (["--data", "synthetic"], "the loader reads labelled images"),
    (["--data", "imagenet:{missing}"], "data: "),
    (["--steps", "100"], "training images, fewer than 2 + 100 batches of 16"),
    (["--num-workers", "0,x"], "--num-workers: 'x' is not allowed"),
    (["--num-workers", "999"], "--num-workers: from 0 to 256 workers"),
    (["--batch-size", "0"], "--batch-size: at least 1 image"),
    (["--device-rate", "0"], "--device-rate: "),
    (["--prefetch-factor", "4", "--num-workers", "0,1"], "--prefetch-factor: from 1 to 1024"),
    (["--device-rate", "{missing}.json"], "--device-rate: "),
])  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(imagenet, tmp_path, capsys, args, said):
    argv = ["loader", "tiny", "--data", f"imagenet:{imagenet}", "--steps", "2",
            "--output-dir", str(tmp_path)]  # fmt: skip
    argv += [a.format(missing=tmp_path / "missing") for a in args]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and said in err, err
    assert not list(tmp_path.glob("loader-*.json"))


def test_a_synthetic_result_gives_the_device_rate_and_names_its_machine(imagenet, tmp_path):
    from bench.commands.loader import device_rate
    from bench.result import io
    from tests.conftest import DATA

    tiny = DATA / "tiny-cpu.json"
    rate = device_rate(str(tiny), "tiny")
    best = max(p.throughput.value for p in io.load(tiny).points if p.throughput)
    assert rate.images_per_s == best and rate.source == str(tiny) and rate.name
    with pytest.raises(Exception, match="is a run of tiny, not resnet50"):
        device_rate(str(tiny), "resnet50")
