"""Real datasets: the published layouts read safely, errors that name the file, the
shared order and augmentation, and training to a target top-1 in every framework on
small generated datasets in the exact CIFAR-10 and ImageNet layouts."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pickle
import re
import shutil
import tarfile
from pathlib import Path

import numpy as np
import pytest

from bench import datasets, registry
from bench.config.run_config import PointConfig, RunConfig
from bench.datasets import DatasetError, cifar10, pipeline
from bench.datasets.recipe import Recipe
from bench.result import load
from bench.util.errors import UsageError
from tests.conftest import needs_two_cores, only_result, run_bench
from tests.fake_data import write_cifar10, write_imagenet

CNN = registry.workload("cnn-s")


@pytest.fixture(scope="module")
def cifar(tmp_path_factory) -> Path:
    return write_cifar10(tmp_path_factory.mktemp("cifar"), per_batch=200, test=200)


@pytest.fixture(scope="module")
def imagenet(tmp_path_factory) -> Path:
    return write_imagenet(tmp_path_factory.mktemp("imagenet"), classes=4, train=50, val=10)


def _open(data: str):
    return datasets.open_dataset(datasets.parse(data), CNN)


# --- reading the published layouts ------------------------------------------------------


def test_cifar10_reads_the_batches_folder_its_parent_and_the_archive(cifar, tmp_path):
    archive = tmp_path / cifar10.ARCHIVE
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(cifar, arcname=cifar10.FOLDER)
    found = [_open(f"cifar10:{where}") for where in (cifar, cifar.parent, archive, tmp_path)]
    for dataset in found:
        assert len(dataset.train) == 1000 and len(dataset.val) == 200 and dataset.classes == 10
        assert dataset.facts == found[0].facts and dataset.facts["official"] is False
    image, label = found[0].train.sample(0, None)
    assert image.shape == (32, 32, 3) and image.dtype == np.float32 and 0 <= label < 10
    raw = pickle.loads((cifar / "data_batch_1").read_bytes(), encoding="bytes")
    # Rows are channel planes: pixel (0, 0) is R, G, B at offsets 0, 1024, 2048.
    pixel = raw[b"data"][0, [0, 1024, 2048]] / 255
    assert image[0, 0] == pytest.approx((pixel - cifar10.MEAN) / cifar10.STD, abs=1e-5)


def _bad_batch(cifar: Path, tmp_path: Path, name: str, content: bytes) -> Path:
    copy = tmp_path / "copy"
    copy.mkdir()
    for item in cifar.iterdir():
        (copy / item.name).write_bytes(item.read_bytes())
    (copy / name).write_bytes(content)
    return copy


class _Shell:
    def __reduce__(self):
        return (os.system, ("touch pwned",))


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"\x80\x02}q\x00(X", "is not a CIFAR-10 python batch"),  # truncated
        (pickle.dumps({b"labels": [1]}, protocol=2), "no data and labels"),
        (pickle.dumps({b"data": np.zeros((2, 10), np.uint8), b"labels": [1, 2]}, protocol=2),
         "3072 values"),
        (pickle.dumps({b"data": np.zeros((2, 3072), np.uint8), b"labels": [1, 12]}, protocol=2),
         "labels must lie in 0..9"),
        (pickle.dumps(_Shell(), protocol=2), "asks for posix.system, not NumPy data"),
    ],
)  # fmt: skip
def test_a_bad_cifar10_batch_is_one_line_naming_the_file_and_runs_no_code(
    cifar, tmp_path, monkeypatch, content, why
):
    monkeypatch.chdir(tmp_path)
    copy = _bad_batch(cifar, tmp_path, "data_batch_3", content)
    with pytest.raises(DatasetError) as caught:
        _open(f"cifar10:{copy}")
    message = str(caught.value)
    assert f"{copy}/data_batch_3" in message and why in message and "\n" not in message
    assert not (tmp_path / "pwned").exists()


def test_a_missing_cifar10_says_what_layout_was_expected(tmp_path):
    with pytest.raises(DatasetError, match=r"data_batch_1\.\.data_batch_5 and test_batch"):
        _open(f"cifar10:{tmp_path}")
    with pytest.raises(DatasetError, match="CIFAR-10 images are 3x32x32; resnet50 takes"):
        datasets.open_dataset(datasets.parse(f"cifar10:{tmp_path}"), registry.workload("resnet50"))


def test_imagenet_reads_class_folders_and_crops_to_the_workload(imagenet):
    dataset = _open(f"imagenet:{imagenet}")
    assert (len(dataset.train), len(dataset.val), dataset.classes) == (200, 40, 4)
    image, label = dataset.train.sample(7, np.random.default_rng(0))
    assert image.shape == (32, 32, 3) and label == 0
    assert dataset.val.sample(39, None)[1] == 3


def test_imagenet_layout_errors_name_the_folder(tmp_path, imagenet):
    (tmp_path / "train").mkdir()
    with pytest.raises(DatasetError, match=r"train has no class folders"):
        _open(f"imagenet:{tmp_path}")
    (tmp_path / "train" / "n1").mkdir()
    with pytest.raises(DatasetError, match=r"n1 holds no JPEG images"):
        _open(f"imagenet:{tmp_path}")
    with pytest.raises(DatasetError, match="has no val/ folder"):
        _open(f"imagenet:{_no_val(tmp_path, imagenet)}")


def _no_val(tmp_path: Path, imagenet: Path) -> Path:
    copy = tmp_path / "noval"
    (copy / "train").mkdir(parents=True)
    # A copy, not a link: a link out of the data folder is refused.
    shutil.copytree(imagenet / "train" / "n00000000", copy / "train" / "n0")
    return copy


def test_a_jpeg_that_does_not_decode_is_named(tmp_path):
    root = write_imagenet(tmp_path / "set", classes=2, train=4, val=2)
    broken = root / "train" / "n00000001" / "img_2.JPEG"
    broken.write_bytes(broken.read_bytes()[:50])
    dataset = _open(f"imagenet:{root}")
    index = dataset.train.files.index(str(broken))
    with pytest.raises(DatasetError, match=re.escape(f"{broken} is not a JPEG that decodes")):
        dataset.train.sample(index, None)


# --- one order and augmentation for every loader ----------------------------------------


def test_order_and_augmentation_depend_on_seed_and_epoch_not_on_workers(cifar):
    split = _open(f"cifar10:{cifar}").train
    made = [
        list(pipeline.batches(split, 64, seed=1, epoch=2, train=True, workers=workers))
        for workers in (0, 3)
    ]
    assert len(made[0]) == 1000 // 64  # the last partial batch is dropped
    for (a, la), (b, lb) in zip(*made, strict=True):
        assert np.array_equal(a, b) and np.array_equal(la, lb)
    other = next(pipeline.batches(split, 64, seed=1, epoch=3, train=True, workers=0))
    assert not np.array_equal(other[0], made[0][0][0])


def test_evaluation_keeps_every_sample_and_pads_the_last_batch(cifar):
    split = _open(f"cifar10:{cifar}").val
    made = list(pipeline.batches(split, 64, seed=0, epoch=0, train=False, workers=2))
    labels = np.concatenate([lab for _, lab in made])
    assert len(made) == 4 and all(len(images) == 64 for images, _ in made)
    assert (labels >= 0).sum() == 200 and (labels[200:] == -1).all()


def test_ranks_share_every_global_batch_and_the_validation_split_once(cifar):
    dataset = _open(f"cifar10:{cifar}")
    train, val = dataset.train, dataset.val
    whole = pipeline.indices(train, 64, 1, 2, True)
    shares = [pipeline.indices(train, 64, 1, 2, True, rank, 4) for rank in range(4)]
    assert all(len(share) == len(whole) for share in shares)
    for step, batch in enumerate(whole):  # rank r: the r-th quarter of the same batch
        assert np.array_equal(np.concatenate([share[step] for share in shares]), batch)
        assert all(len(share[step]) == 16 for share in shares)
    checked = [pipeline.indices(val, 64, 0, 0, False, rank, 3) for rank in range(3)]
    seen = np.concatenate([b for batches in checked for b in batches])
    assert sorted(seen) == list(range(len(val)))  # 200 samples, each counted once
    assert max(len(b) for batches in checked for b in batches) == 64 // 3


def test_the_schedule_warms_up_then_decays_to_zero_in_numpy_and_jax():
    recipe = Recipe(lr_per_256=0.4, warmup_fraction=0.2, schedule="linear")
    factors = [float(recipe.lr_factor(step, 100)) for step in (0, 19, 20, 60, 100)]
    assert factors == pytest.approx([0.05, 1.0, 1.0, 0.5, 0.0])
    assert recipe.peak_lr(512) == pytest.approx(0.8)
    if importlib.util.find_spec("jax"):
        import jax.numpy as jnp

        cosine = Recipe(lr_per_256=0.1, warmup_fraction=0.1)
        for step in (0, 5, 10, 55, 99):
            assert float(cosine.lr_factor(jnp.asarray(step), 100, jnp)) == pytest.approx(
                float(cosine.lr_factor(step, 100)), rel=1e-4, abs=1e-7
            )


# --- configuration ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"train_to": 0.9}, "train_to: needs a real dataset"),
        ({"data": "cifar10:/d"}, "epochs: training on a dataset needs --epochs"),
        ({"data": "cifar10:/d", "epochs": 2, "warmup_steps": 3}, "warmup_steps: on a dataset"),
        ({"data": "cifar10:/d", "epochs": 2, "epoch_samples": 100}, "epoch_samples: an epoch"),
        ({"data": "cifar10:/d", "epochs": 2, "train_to": 0}, "train_to: 0 is not allowed"),
        ({"data": "mnist:/d", "epochs": 2}, "dataset 'mnist' is not known"),
        ({"data": "cifar10:", "epochs": 2}, "names no folder"),
    ],
)
def test_dataset_options_are_checked_with_one_line(fields, message):
    with pytest.raises(UsageError, match=message):
        RunConfig("cnn-s", **fields)


def test_a_dataset_point_starts_in_epoch_one_without_warm_up():
    config = RunConfig("cnn-s", data="imagenet:/d", epochs=3, train_to=0.5, workers=(2,))
    point = next(config.points())
    assert point.warmup_steps == 0 and point.epoch_samples is None
    assert point.dataset == datasets.DataRef("imagenet", "/d")
    assert PointConfig.from_dict(point.to_dict()) == point


# --- training to a target in every framework --------------------------------------------


FRAMEWORKS = [f for f in ("torch", "tensorflow", "jax") if importlib.util.find_spec(
    {"torch": "torch", "tensorflow": "tensorflow", "jax": "flax"}[f])]  # fmt: skip


@pytest.mark.parametrize("framework", FRAMEWORKS)
# Real training to a target: the full tier's (a few epochs in a child, ~50 s on 2 cores).
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["cifar10", "imagenet"])
def test_cnn_s_trains_to_a_target_on_real_data(framework, kind, cifar, imagenet, tmp_path):
    """A target reached within a few epochs, with the curve, time, cost and the input
    wait recorded, through each framework's own loader with two workers."""
    where = cifar if kind == "cifar10" else imagenet
    done = run_bench(
        "run", "cnn-s", "--framework", framework, "--data", f"{kind}:{where}",
        "--train-to", "0.5", "--max-epochs", "4", "--batch-size", "20", "--num-workers", "2",
        "--price-per-hour", "3.6", "--output-dir", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr + done.stdout
    assert "accuracy: to 50.0% top-1" in done.stdout
    data = only_result(tmp_path)
    (point,) = load(next(tmp_path.glob("*.json"))).points
    reached = point.to_accuracy
    assert reached.reached == 1 and reached.curve[-1] >= 0.5 > max(reached.curve[:-1], default=0)
    epochs = point.accuracy[0]["epochs"]
    assert reached.time_to_target_s == pytest.approx(
        sum(e["train_s"] + e["eval_s"] for e in epochs)
    )
    assert reached.cost_to_target(3.6) == pytest.approx(reached.time_to_target_s / 1000)
    steps = len(point.step_times_s[0])
    assert steps == len(epochs) * ((1000 if kind == "cifar10" else 200) // 20)
    assert len(point.input_wait_s[0]) == steps and 0 < point.input_wait_fraction < 1
    # Beside it, the same point on synthetic data (20 measured steps): their ratio.
    assert len(point.synthetic_step_times_s) == 20 and point.synthetic_ratio > 0
    details = data["points"][0]["details"]
    assert details["dataset"]["kind"] == kind and details["loader_workers"] == 2
    assert details["recipe"]["total_steps"] == 4 * steps // len(epochs)
    assert epochs[-1]["samples"] == (200 if kind == "cifar10" else 40)


@pytest.mark.slow
@needs_two_cores
def test_two_ranks_train_to_a_target_and_count_the_whole_validation_split(cifar, tmp_path):
    pytest.importorskip("torch")
    done = run_bench(
        "run", "cnn-s", "--device", "cpu", "--devices", "2", "--data", f"cifar10:{cifar}",
        "--train-to", "0.5", "--max-epochs", "4", "--batch-size", "20", "--num-workers", "1",
        "--output-dir", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr + done.stdout
    (point,) = load(next(tmp_path.glob("*.json"))).points
    assert point.devices == 2 and point.to_accuracy.reached == 1
    epochs = point.accuracy[0]["epochs"]
    assert all(e["samples"] == 200 for e in epochs)  # both ranks' shares, added up
    assert len(point.step_times_s[0]) == len(epochs) * (1000 // 20)  # global batches
    assert point.ranks[0]["world_size"] == 2


@pytest.mark.full  # a real run of seconds: the fast tier keeps its 8 minutes
def test_a_broken_jpeg_in_a_run_is_one_line_naming_it(tmp_path):
    root = write_imagenet(tmp_path / "set", classes=2, train=10, val=2)
    broken = root / "train" / "n00000000" / "img_3.JPEG"
    broken.write_bytes(b"not a jpeg")
    done = run_bench(
        "run", "cnn-s", "--data", f"imagenet:{root}", "--epochs", "1", "--batch-size", "4",
        "--num-workers", "1", "--output-dir", str(tmp_path / "out"),
    )  # fmt: skip
    assert done.returncode != 0
    point = only_result(tmp_path / "out")["points"][0]
    assert point["status"] == "error"
    assert point["error"].startswith(f"data: {broken} is not a JPEG that decodes (")
    assert "\n" not in point["error"] and str(broken) in done.stdout + done.stderr


# --- token files for decoders (nanoGPT and llm.c) ------------------------------------------


LLAMA_TINY = registry.workload("llama3-tiny")


def _tokens(path: Path, kind: str = "tokens", seq_len: int = 15, seed: int = 0):
    from bench.datasets.tokens import TokenFile

    return TokenFile(datasets.DataRef(kind, str(path)), seq_len + 1, seed)


@pytest.mark.parametrize(
    ("layout", "kind", "format_name", "dtype"),
    [
        ("nanogpt", "tokens", "raw uint16 (no header)", "uint16"),
        ("gpt-2", "tokens", "llm.c magic 20240520 version 1", "uint16"),
        ("llama-3", "tokens", "llm.c magic 20240801 version 7", "uint32"),
        ("u32", "tokens-u32", "raw uint32 (no header)", "uint32"),
        ("gpt-2", "tokens-u32", "llm.c magic 20240520 version 1", "uint16"),  # the header wins
    ],
)
def test_nanogpt_and_llmc_token_files_give_the_same_windows(
    tmp_path, layout, kind, format_name, dtype
):
    from tests.fake_data import write_tokens

    ids = np.arange(1000) % 500
    file = _tokens(write_tokens(tmp_path / "train.bin", ids, layout), kind)
    assert file.windows == 1000 // 16
    windows = file.read(0, file.windows, LLAMA_TINY)
    assert windows.dtype == np.int64 and windows.shape == (62, 16)
    # Every window once, each a run of 16 consecutive tokens of the file.
    assert sorted(windows[:, 0].tolist()) == sorted((np.arange(62) * 16 % 500).tolist())
    assert all((np.diff(w) % 500 == 1).all() for w in windows)
    described = file.describe()
    assert described["format"] == format_name and described["token_dtype"] == dtype
    assert described["tokens"] == 1000 and described["file"] == "train.bin"
    assert described["sha256"] == hashlib.sha256((tmp_path / "train.bin").read_bytes()).hexdigest()


def test_token_windows_follow_the_seed_and_ranks_share_each_global_batch(tmp_path):
    from tests.fake_data import write_tokens

    path = write_tokens(tmp_path / "t.bin", np.arange(16 * 97) % 512)
    one, again, other = _tokens(path), _tokens(path), _tokens(path, seed=1)
    assert sorted(one.positions(0, 97).tolist()) == list(range(97))  # each window once
    assert (one.positions(97, 97) == one.positions(0, 97)).all()  # then round again
    assert (one.batch(3, 8, LLAMA_TINY) == again.batch(3, 8, LLAMA_TINY)).all()
    assert not (one.batch(0, 8, LLAMA_TINY) == other.batch(0, 8, LLAMA_TINY)).all()
    ranks = [one.batch(3, 8, LLAMA_TINY, rank, 2) for rank in (0, 1)]
    assert (np.concatenate(ranks) == one.batch(3, 8, LLAMA_TINY)).all()
    assert not set(ranks[0][:, 0]) & set(ranks[1][:, 0])  # disjoint windows


def test_a_token_file_that_shrinks_during_the_run_is_one_line_not_a_crash(tmp_path):
    """Another job truncating the file mid-run: a memory map would kill the child with
    SIGBUS on the next batch; the file's reads say what happened instead."""
    from tests.fake_data import write_tokens

    path = write_tokens(tmp_path / "t.bin", np.arange(16 * 97) % 512)
    file = _tokens(path)
    file.batch(0, 8, LLAMA_TINY)
    os.truncate(path, 16 * 10 * 2)  # ten windows left of 97
    with pytest.raises(DatasetError, match="changed while the run read it: 3,104 bytes when "
                       "opened, 320 now; keep a token file unchanged"):  # fmt: skip
        for step in range(13):  # every window is read once in 97 / 8 steps
            file.batch(step, 8, LLAMA_TINY)
    with pytest.raises(DatasetError, match="changed while the run read it"):
        file.describe()


def test_a_token_file_over_the_hashing_limit_is_named_not_hashed(tmp_path, monkeypatch):
    from bench.datasets import tokens
    from tests.fake_data import write_tokens

    monkeypatch.setattr(tokens, "MAX_HASHED_BYTES", 100)
    described = _tokens(write_tokens(tmp_path / "t.bin", np.zeros(64))).describe()
    assert described["sha256"] is None and "over 100: not read whole" in described["sha256_skipped"]


def _header(magic: int, version: int, count: int) -> bytes:
    header = np.zeros(256, "<i4")
    header[:3] = magic, version, count
    return header.tobytes()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (_header(20240520, 2, 3) + b"\0" * 6, "version 2; llm.c writes version 1 after 20240520"),
        (_header(20240801, 1, 3) + b"\0" * 12, "version 1; llm.c writes version 1 after"),
        (_header(20240520, 1, 4) + b"\0" * 6, "header says 4 tokens of 2 bytes, 1,032 bytes"),
        (_header(20240520, 1, -1), "header says -1 tokens"),
        (_header(20240520, 1, 3) + b"\0" * 7, "header says 3 tokens"),  # a byte too many
        (_header(20240520, 1, 3)[:100], "1,030 bytes with the header; the file is 100 bytes"),
        (_header(20240520, 1, 3)[:8], "is 8 bytes, shorter than its 1,024-byte header"),
        (b"\1\2\3", "is 3 bytes, not a whole number of 2-byte tokens"),
    ],
    ids=["version", "magic-version", "count", "negative", "extra", "cut", "stub", "odd"],
)
def test_a_token_file_with_a_bad_header_or_length_is_one_line(tmp_path, content, message):
    path = tmp_path / "bad.bin"
    path.write_bytes(content)
    with pytest.raises(DatasetError, match=re.escape(message)) as refused:
        _tokens(path)
    assert str(refused.value).startswith(f"data: {path}") and "\n" not in str(refused.value)


def test_a_token_at_or_past_the_vocabulary_is_named_before_it_reaches_the_device(tmp_path):
    from tests.fake_data import write_tokens

    ids = np.arange(16 * 8) % 500
    ids[16 * 5 + 3] = 512  # llama3-tiny's vocabulary is 0..511
    file = _tokens(write_tokens(tmp_path / "t.bin", ids))
    message = "token 512 (the file's token 83) is not below llama3-tiny's vocabulary of 512"
    with pytest.raises(DatasetError, match=re.escape(message)):
        file.read(0, file.windows, LLAMA_TINY)


def _run_tokens(capsys, workload: str, path: Path, *more: str) -> str:
    from bench.cli import main

    code = main([workload, "--device", "cpu", "--data", f"tokens:{path}", "--steps", "2", *more])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    return err


def test_the_cli_refuses_a_token_past_the_vocabulary_before_any_point_runs(tmp_path, capsys):
    from tests.fake_data import write_tokens

    ids = np.arange(65 * 28) % 500  # (5 warm-up + 2 steps) x batch 4: every window trained
    ids[65 * 3] = 60_000
    path = write_tokens(tmp_path / "t.bin", ids)
    err = _run_tokens(capsys, "llama3-tiny", path, "--output-dir", str(tmp_path / "out"))
    assert "token 60,000 (the file's token 195) is not below llama3-tiny's vocabulary" in err
    assert not (tmp_path / "out").exists()


def test_the_parent_reads_every_window_the_run_trains_on_and_no_other(tmp_path):
    from bench.datasets import tokens
    from tests.fake_data import write_tokens

    config = RunConfig("llama3-tiny", data=f"tokens:{tmp_path / 't.bin'}", steps=2)
    ids = np.arange(65 * 40) % 500
    path = write_tokens(tmp_path / "t.bin", ids)
    taken = set(_tokens(path, seq_len=64).positions(0, 28).tolist())  # 7 steps x batch 4
    ids[65 * min(set(range(40)) - taken) + 7] = 512
    write_tokens(path, ids)
    tokens.check(config)  # the bad token lies in a window no step reads
    ids[65 * max(taken) + 64] = 512
    write_tokens(path, ids)
    with pytest.raises(
        DatasetError, match=f"token 512 \\(the file's token {65 * max(taken) + 64:,}"
    ):
        tokens.check(config)


@pytest.mark.parametrize(
    ("count", "more", "message"),
    [
        (50, (), "holds 50 tokens: 0 windows of 65 (seq_len 64 + 1); a batch of 4 takes 4"),
        (65 * 3, (), "holds 195 tokens: 3 windows of 65"),
        (65 * 3, ("--seq-len", "16", "--batch-size", "12"), "11 windows of 17 (seq_len 16 + 1)"),
    ],
)
def test_a_token_file_shorter_than_one_batch_of_windows_is_refused(
    tmp_path, capsys, count, more, message
):
    from tests.fake_data import write_tokens

    path = write_tokens(tmp_path / "short.bin", np.arange(count) % 500)
    assert message in _run_tokens(capsys, "llama3-tiny", path, *more)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"workload": "cnn-s"},
            "tokens:PATH holds token ids for a decoder; workload 'cnn-s' is "
            "image-classification; choose one of",
        ),
        ({"workload": "bert-base"}, "workload 'bert-base' is masked-lm"),
        (
            {"workload": "gpt2", "framework": "tensorflow"},
            "'tokens:/t.bin' is not available with tensorflow",
        ),
        ({"workload": "gpt2", "workers": (2,)}, "num_workers: only applies with a loader"),
        ({"workload": "gpt2", "train_to": 0.5}, "train_to: needs a real dataset"),
    ],
)
def test_only_decoders_in_torch_and_jax_take_a_token_file(fields, message):
    with pytest.raises(UsageError, match=re.escape(message)):
        RunConfig(data="tokens:/t.bin", **fields)


def test_a_token_point_runs_steps_with_warm_up_not_epochs():
    point = next(RunConfig("llama3-tiny", data="tokens-u32:/t.bin").points())
    assert point.warmup_steps == 5 and point.epochs is None and point.dataset is None
    assert point.tokens == datasets.DataRef("tokens-u32", "/t.bin")
    assert PointConfig.from_dict(point.to_dict()) == point
    with pytest.raises(UsageError, match="'tokens:' names no file; use tokens:PATH"):
        RunConfig("llama3-tiny", data="tokens:")
