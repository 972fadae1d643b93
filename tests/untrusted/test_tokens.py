"""Token files from someone else: thousands of shards under the open-file
limit, a validation file that is (part of) the training data, the bound on what the
held-out check reads, and what a file that is no regular file is called. Each input is
crafted to get past the reader as it was before these checks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bench import datasets, registry
from bench.config.run_config import RunConfig
from bench.datasets import DatasetError, tokens
from tests.fake_data import write_tokens

SEQ = 16  # llama3-tiny windows of 17 tokens


def _run(script: str, *args: str) -> dict:
    """`script` in a fresh Python (its own open-file limit), its last line as JSON."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


# --- shards are opened when read ---------------------------------------------------------

_MANY_SHARDS = """
import json, os, resource, sys
from bench import datasets, registry
from bench.config.run_config import PointConfig, RunConfig
from bench.datasets import DatasetError, tokens
resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
pattern = sys.argv[1]
ref = datasets.DataRef("tokens", pattern)
spec = PointConfig("llama3-tiny", seq_len=16).spec
try:
    file = tokens.TokenFile(ref, 17, 0)
    seen = set()
    for first in range(0, file.windows, 64):  # the seed's order: shards in no order
        rows = file.read(first, min(64, file.windows - first), spec)
        seen.update(rows[:, 0].tolist())
        most = len(os.listdir("/proc/self/fd"))
    facts = file.describe()
    file.close()
    tokens.check(RunConfig("llama3-tiny", data="tokens:" + pattern, seq_len=16, steps=2))
    print(json.dumps({"windows": file.windows, "firsts": len(seen), "open": most,
                      "hashed": sum(s["sha256"] is not None for s in facts["shards"])}))
except DatasetError as error:
    print(json.dumps({"error": str(error)}))
"""


@pytest.mark.parametrize("count", [1_100, 5_000])
def test_thousands_of_shards_train_under_a_low_open_file_limit(tmp_path, count):
    """Every shard was held open for the run: 1,100 shards under `ulimit -n 1024` were
    'cannot be read ([Errno 24] Too many open files)'. Now at most a few are open."""
    for index in range(count):  # two windows each, the first token naming the shard
        ids = np.concatenate([[index % 500], np.arange(33) % 500])
        write_tokens(tmp_path / f"train_{index:06d}.bin", ids)
    got = _run(_MANY_SHARDS, str(tmp_path / "train_*.bin"))
    assert "error" not in got, got["error"]
    assert got["windows"] == 2 * count and got["firsts"] == min(count, 500)
    assert got["hashed"] == count  # every shard hashed for the result, reopened in turn
    assert got["open"] < 256 // 4 + 16  # the cache: a quarter of the limit, and Python's own


_EMFILE = """
import json, os, resource, sys
from bench import datasets, registry
from bench.datasets import DatasetError, tokens
resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
held = []
try:
    while True:
        held.append(os.open(os.devnull, os.O_RDONLY))
except OSError:
    pass
try:
    tokens.TokenFile(datasets.DataRef("tokens", sys.argv[1]), 17, 0)
    print(json.dumps({"error": None}))
except DatasetError as error:
    print(json.dumps({"error": str(error)}))
"""


def test_too_many_open_files_is_named_with_the_limit_and_how_to_raise_it(tmp_path):
    """When the process's descriptors are all taken, the refusal said 'cannot be read
    ([Errno 24] Too many open files)': now it names the limit and `ulimit -n`."""
    path = write_tokens(tmp_path / "train.bin", np.arange(34) % 500)
    message = _run(_EMFILE, str(path))["error"]
    assert message is not None and "\n" not in message
    assert message.startswith(f"data: {path} cannot be opened: too many open files")
    assert "this process may hold 64 open files (ulimit -n 64)" in message
    assert "`ulimit -n 4096`" in message


def test_at_most_the_cache_s_files_are_open_and_a_replaced_shard_is_named(tmp_path, monkeypatch):
    """Shards read in the seed's order keep at most OPEN_FILES descriptors; a shard
    opened again is checked to be the file that was checked (the same inode and size)."""
    for index in range(12):
        write_tokens(tmp_path / f"s_{index:02d}.bin", np.arange(34 * 2) % 500 + index)
    ref = datasets.DataRef("tokens", str(tmp_path / "s_*.bin"))
    spec = registry.workload("llama3-tiny")
    all_open = tokens.TokenFile(ref, 17, 0)
    expected = all_open.read(0, all_open.windows, spec)
    all_open.close()
    monkeypatch.setattr(tokens, "OPEN_FILES", 3)
    file = tokens.TokenFile(ref, 17, 0)
    try:
        assert file.open_files.size == 3
        for first in range(0, file.windows, 5):
            count = min(5, file.windows - first)
            rows = file.read(first, count, spec)  # read in the files' order, given in the run's
            assert (rows == expected[first : first + count]).all()
            assert len(file.open_files) <= 3
        replaced = tmp_path / "s_05.bin"
        write_tokens(tmp_path / "new.bin", np.arange(34 * 2) % 500)  # the same size
        os.replace(tmp_path / "new.bin", replaced)
        with pytest.raises(DatasetError) as caught:
            for first in range(0, file.windows, 5):
                file.read(first, min(5, file.windows - first), spec)
        said = (
            f"data: {replaced} was replaced or rewritten while the run read it (another file "
            "at its path, or new bytes in it); keep a token file unchanged for the whole run"
        )
        assert str(caught.value) == said
    finally:
        file.close()
    assert len(file.open_files) == 0
    # The same file rewritten in place (its inode and size kept): its ctime tells.
    file = tokens.TokenFile(ref, 17, 0)
    try:
        for first in range(0, file.windows, 5):
            file.read(first, min(5, file.windows - first), spec)
        rewritten = tmp_path / "s_07.bin"
        with open(rewritten, "r+b") as inside:
            inside.seek(-4, os.SEEK_END)
            inside.write(inside.read(0) or b"\x01\x00\x01\x00")
        with pytest.raises(DatasetError, match="rewritten while the run read it"):
            for first in range(0, file.windows, 5):
                file.read(first, min(5, file.windows - first), spec)
    finally:
        file.close()


# --- held-out means held out -------------------------------------------------------------

RNG = np.random.default_rng(57)
TRAIN = RNG.integers(0, 512, 17 * 200 + 9)  # not a whole number of windows
HELD_OUT = RNG.integers(0, 512, 17 * 70)


def _config(train: Path, val: Path, **more: object) -> RunConfig:
    fields: dict = {"batch_sizes": (4,), "seq_len": SEQ, "train_to_loss": 3.0, "steps": 60}
    return RunConfig(
        "llama3-tiny", data=f"tokens:{train}", val_data=f"tokens:{val}", **{**fields, **more}
    )


def _refusal(config: RunConfig) -> str:
    with pytest.raises(DatasetError) as caught:
        datasets.check(config)
    message = str(caught.value)
    assert message.startswith("val_data: ") and "\n" not in message, message
    return message


ENDS = "{val} {end} with the same 17 tokens as the training data's {train} ({how}); "
WINDOW = "window {mine} of {val} (its tokens {start} to {stop}) is window {theirs} of the "


@pytest.mark.parametrize(
    ("val_tokens", "said"),
    [
        (TRAIN[: 17 * 80], ENDS.format(
            val="{val}", train="{train}", end="begins",
            how="a copy, a prefix of it, or it with tokens added at the end")),
        (TRAIN[5:], ENDS.format(
            val="{val}", train="{train}", end="ends",
            how="a copy, a suffix of it, or it with tokens added at the start")),
        (np.append(TRAIN, 7), "{val} begins with the same 17 tokens"),
        (np.insert(TRAIN, 0, 7), "{val} ends with the same 17 tokens"),
        (TRAIN[17 * 10 : 17 * 90], WINDOW.format(
            mine=0, val="{val}", start=0, stop=16, theirs=10)),
        (np.concatenate([HELD_OUT[:170], TRAIN[17 * 40 : 17 * 41], HELD_OUT]), WINDOW.format(
            mine=10, val="{val}", start=170, stop=186, theirs=40)),
    ],
    ids=["prefix", "suffix", "plus-a-token", "a-token-before", "middle", "one-window"],
)  # fmt: skip
def test_a_validation_file_that_shares_the_training_windows_is_refused(tmp_path, val_tokens, said):
    """Before, only the same inode or the same bytes (a copy) was refused: a prefix, a
    suffix, the file with one token more, a slice of it, were all a 'held-out' loss."""
    train = write_tokens(tmp_path / "train.bin", TRAIN, "gpt-2")
    val = write_tokens(tmp_path / "val.bin", val_tokens, "gpt-2")
    message = _refusal(_config(train, val))
    assert said.format(val=val, train=train) in message, message
    assert message.endswith("; a validation loss needs tokens held out of training")
    if said.startswith("window"):
        assert f"training data's {train}, which the run trains on;" in message


def test_a_held_out_validation_file_of_many_shards_passes(tmp_path):
    for index in range(3):
        write_tokens(tmp_path / f"train_{index}.bin", np.roll(TRAIN, index), "gpt-2")
    write_tokens(tmp_path / "val_0.bin", HELD_OUT[:600], "gpt-2")
    write_tokens(tmp_path / "val_1.bin", HELD_OUT[600:], "gpt-2")
    datasets.check(_config(tmp_path / "train_*.bin", tmp_path / "val_*.bin"))


def _counted(monkeypatch) -> list[int]:
    """Bytes read with os.pread (token files are read with nothing else)."""
    read = [0]
    pread = os.pread

    def counting(fd: int, size: int, offset: int) -> bytes:
        data = pread(fd, size, offset)
        read[0] += len(data)
        return data

    monkeypatch.setattr(os, "pread", counting)
    return read


def _sparse(path: Path, size: int, ends: bytes = b"") -> Path:
    path.write_bytes(ends)
    os.truncate(path, size)
    if ends:  # the same bytes at the end as at the start
        with path.open("r+b") as file:
            file.seek(size - len(ends))
            file.write(ends)
    return path


@pytest.mark.parametrize("ends", ["same", "different"])
def test_two_large_validation_and_training_files_are_compared_within_the_bound(
    tmp_path, monkeypatch, ends
):
    """Two equal-size 4 GiB sparse files: the old check hashed both whole (34 s; two 1 TiB
    files: hours), and the validation file again for each training shard. Now each file
    is read once and within the bounds: its two end windows, the training windows the
    parent checks anyway, the validation windows one evaluation reads."""
    size = 4 * 2**30
    train = _sparse(tmp_path / "train.bin", size)
    other = RNG.integers(1, 512, 17).astype("<u2").tobytes() if ends == "different" else b""
    val = _sparse(tmp_path / "val.bin", size, other)
    monkeypatch.setattr(tokens, "CHECKED_TOKENS", 17 * 1024)
    read = _counted(monkeypatch)
    message = _refusal(_config(train, val, eval_sequences=64))
    said = "begins with the same 17 tokens" if ends == "same" else "window 1 of"
    assert said in message
    # Headers, four end windows, 1,024 training windows, 64 validation windows.
    assert read[0] <= 4 * 1024 + 4 * 34 + 1024 * 34 + 64 * 34


def test_the_validation_windows_compared_stop_at_the_hashing_bound(tmp_path, monkeypatch):
    """A validation file whose evaluation reads more than MAX_HASHED_BYTES: its first
    windows up to the bound are compared, the rest only checked against the vocabulary."""
    train = write_tokens(tmp_path / "train.bin", TRAIN, "gpt-2")
    val_tokens = np.concatenate([HELD_OUT[: 17 * 64], TRAIN[17 * 3 : 17 * 4]])
    val = write_tokens(tmp_path / "val.bin", val_tokens, "gpt-2")
    config = _config(train, val, eval_sequences=65)
    assert "window 64 of" in _refusal(config)
    monkeypatch.setattr(tokens, "MAX_HASHED_BYTES", 64 * 34)
    datasets.check(config)  # window 64 lies past the bound: not compared


# --- what a file that is no regular file is called ---------------------------------------


def test_a_folder_fifo_or_device_as_a_token_file_is_called_what_it_is(tmp_path):
    """A folder given as a token file was 'not a regular file (a FIFO, a device)'."""
    fifo = tmp_path / "pipe.bin"
    os.mkfifo(fifo)
    cases = [
        (tmp_path, "is a folder; a token file is a file (name a folder's shards with a glob"),
        (fifo, "is a FIFO, not a regular file; a token file is a file"),
        (Path(os.devnull), "is a device, not a regular file; a token file is a file"),
    ]
    for path, said in cases:
        with pytest.raises(DatasetError) as caught:
            tokens.TokenFile(datasets.DataRef("tokens", str(path)), 17, 0)
        assert str(caught.value).startswith(f"data: {path} {said}"), str(caught.value)
