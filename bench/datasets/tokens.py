"""Pre-tokenized text for decoders: one file of token ids, as nanoGPT and llm.c write them.

`tokens:PATH` reads either published format, told apart by the file's first bytes:
  llm.c    a header of 256 little-endian int32 (magic, version, token count, zeros), then
           the tokens (dev/data/data_common.py): magic 20240520 version 1 holds uint16
           tokens (GPT-2's tokenizer), magic 20240801 version 7 uint32 (Llama 3's).
  nanoGPT  no header: the whole file is uint16 tokens (data/*/prepare.py's train.bin).
`tokens-u32:PATH` is a file of uint32 tokens with no header (a vocabulary above 65,536,
such as Llama 3's 128,256, written the nanoGPT way). A file that starts with llm.c's
header is read as its header says under either name. (A headerless uint16 file whose
first two tokens happen to spell a magic number is refused; its header check fails.)

The file may come from anyone (bench.datasets.untrusted): a regular file of at most
MAX_BYTES, never read whole; the header's fields are checked, and the length must be
exactly the header's count of tokens (without a header: a whole number of tokens).
Windows are read with pread, not through a memory map: a file that shrinks while the
run reads it (a shared folder, another job rewriting it) is a short read and one line,
where a map would kill the process with SIGBUS. Every token of every batch is checked
to be below the workload's vocabulary before it reaches the device, where an id past
the embedding table would be an index error, or none at all.

A glob may name up to MAX_SHARDS files, far more than a process may hold open (1,024 by
default), so a shard is open only while it is read: each is checked when found, then
opened again when a batch reads it, at most OPEN_FILES at a time (the least recently
read closed first), and each time checked to be the file that was checked (the same
inode and size): a shard replaced or cut during the run is one line.

The tokens are cut into W windows of seq_len + 1 that do not overlap (the last partial
window is not read). Run window k is file window (a*k + c) mod W, with a (coprime to W)
and c drawn from the seed: every window once per W, none listed in memory. Step s of a
global batch B takes run windows s*B .. s*B + B - 1, each of R ranks its slice of B/R,
so the ranks together train the batches one process would. A window's first seq_len
tokens are the inputs, its last seq_len the targets (the workload's token_batch).
"""

from __future__ import annotations

import bisect
import glob
import hashlib
import itertools
import math
import os
import resource
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np

from bench.datasets import DataRef, DatasetError
from bench.datasets.untrusted import open_file, shown

if TYPE_CHECKING:
    from bench.config.run_config import PointConfig, RunConfig
    from bench.workloads.base import WorkloadSpec

DESCRIPTION = (
    "token ids: an llm.c .bin file (its 1 KiB header, then uint16 or uint32 tokens) or "
    "nanoGPT's train.bin (uint16 tokens, no header); tokens-u32:PATH for uint32 tokens "
    "with no header"
)
MAX_BYTES = 2**40  # 1 TiB: ~550 billion uint16 tokens, far past any one file people ship
HEADER_INTS = 256  # llm.c's header: 256 int32
HEADER_BYTES = HEADER_INTS * 4
# llm.c's (magic, version) -> token type, as dev/data/data_common.py writes them.
LLMC: dict[tuple[int, int], np.dtype] = {
    (20240520, 1): np.dtype("<u2"),
    (20240801, 7): np.dtype("<u4"),
}
MAGICS = {magic for magic, _ in LLMC}
RAW: dict[str, np.dtype] = {"tokens": np.dtype("<u2"), "tokens-u32": np.dtype("<u4")}
# The file is hashed for the result up to this size; each point's child would read a
# larger one whole (a nanoGPT OpenWebText train.bin is 17 GB), so it is named instead.
MAX_HASHED_BYTES = 256 * 2**20
HASH_CHUNK = 2**22
# Training windows the parent reads before a --train-to-loss run (a 10B-token budget is
# not read twice): its first 64 million tokens.
CHECKED_TOKENS = 2**26
MAX_SHARDS = 100_000  # files one glob may name (FineWeb 10B: 103; 100B: 1,029)
# Shards open at once, at most (and at most a quarter of the open-file limit, which
# torch, NCCL and a validation file share): FineWeb 10B's 103 shards all stay open, as
# any glob of up to 128 does; past that a batch reopens most shards it reads (measured:
# 512 windows from 1,029 shards in 10 ms on the host, 2 ms with every shard open).
OPEN_FILES = 128
DIGEST_BYTES = 16  # blake2b of a window: equal windows found, two unequal never confused


@dataclass(frozen=True)
class Layout:
    name: str  # for the result and for errors
    dtype: np.dtype
    offset: int  # bytes before the first token
    count: int  # tokens


def _layout(kind: str, head: bytes, size: int, where: str) -> Layout:
    """The file's format from its first bytes, its fields checked against its size."""
    ints = np.frombuffer(head[: len(head) - len(head) % 4], "<i4")
    if len(ints) and int(ints[0]) in MAGICS:
        magic = int(ints[0])
        if len(ints) < 3:
            raise DatasetError(
                f"data: {where} starts with llm.c's magic {magic} but is {size:,} bytes, "
                f"shorter than its {HEADER_BYTES:,}-byte header"
            )
        version, count = int(ints[1]), int(ints[2])
        dtype = LLMC.get((magic, version))
        if dtype is None:
            raise DatasetError(
                f"data: {where} has llm.c's magic {magic} with version {version}; llm.c "
                "writes version 1 after 20240520 (uint16 tokens) and 7 after 20240801 (uint32)"
            )
        expected = HEADER_BYTES + count * dtype.itemsize
        if size < HEADER_BYTES or count <= 0 or size != expected:
            raise DatasetError(
                f"data: {where}: its llm.c header says {count:,} tokens of {dtype.itemsize} "
                f"bytes, {max(expected, 0):,} bytes with the header; the file is {size:,} bytes"
            )
        name = f"llm.c magic {magic} version {version}"
        return Layout(name, dtype, HEADER_BYTES, count)
    dtype = RAW[kind]
    if size % dtype.itemsize:
        raise DatasetError(
            f"data: {where} is {size:,} bytes, not a whole number of {dtype.itemsize}-byte "
            f"tokens; {kind}:PATH reads {DESCRIPTION}"
        )
    return Layout(f"raw {dtype.name} (no header)", dtype, 0, size // dtype.itemsize)


def shard_paths(ref: DataRef) -> list[str]:
    """The file PATH names, or every file its glob matches, sorted by name (llm.c's
    fineweb_train_000001.bin, ...): read in that order, each checked as one file is."""
    if os.path.isdir(ref.path):
        raise DatasetError(
            f"data: {shown(ref.path)} is a folder; a token file is a file (name a folder's "
            f"shards with a glob: {ref.kind}:{shown(os.path.join(ref.path, '*.bin'))})"
        )
    if os.path.lexists(ref.path) or not glob.has_magic(ref.path):
        return [ref.path]
    found = sorted(glob.glob(ref.path))
    if not found:
        raise DatasetError(f"data: {ref.kind}:{shown(ref.path)} matches no file")
    if len(found) > MAX_SHARDS:
        raise DatasetError(
            f"data: {ref.kind}:{shown(ref.path)} matches {len(found):,} files; at most "
            f"{MAX_SHARDS:,} shards"
        )
    return found


def open_files_allowed() -> int:
    """OPEN_FILES, or a quarter of this process's open-file limit where that is less."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return OPEN_FILES
    return max(1, min(OPEN_FILES, soft // 4))


class OpenFiles:
    """The shards open at one time: at most `size`, the least recently read closed first
    (holding every shard open met the open-file limit at about 1,000 shards)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.files: OrderedDict[_Shard, BinaryIO] = OrderedDict()
        self.last: tuple[_Shard, int] | None = None  # the shard read last: most reads

    def __len__(self) -> int:
        return len(self.files)

    def keep(self, shard: _Shard, file: BinaryIO) -> int:
        """Hold `file` (the shard's, just opened) open, closing the least recently read."""
        while len(self.files) >= self.size:
            self.files.popitem(last=False)[1].close()
            self.last = None
        self.files[shard] = file
        return file.fileno()

    def fd(self, shard: _Shard) -> int:
        """The shard's descriptor, opened again (and checked) if it was closed."""
        if self.last is not None and self.last[0] is shard:
            return self.last[1]
        file = self.files.get(shard)
        if file is None:
            fd = self.keep(shard, shard.reopen())
        else:
            self.files.move_to_end(shard)
            fd = file.fileno()
        self.last = (shard, fd)
        return fd

    def close(self) -> None:
        self.last = None
        while self.files:
            self.files.popitem()[1].close()


def _identity(info: os.stat_result) -> tuple[int, int, int]:
    """Which file this is: its device and inode, and its ctime, which no user can set
    back (a file deleted and another made at its path may get the same inode number)."""
    return info.st_dev, info.st_ino, info.st_ctime_ns


class _Shard:
    """One file of token ids, its header checked against its size when found; read
    through `files`, which opens it again (checked to be this file) when it was closed."""

    def __init__(self, kind: str, path: str, files: OpenFiles) -> None:
        self.path, self.where, self.files = path, shown(path), files
        file = open_file(path, MAX_BYTES, "a token file")
        try:
            info = os.fstat(file.fileno())
            self.size, self.identity = info.st_size, _identity(info)
            head = os.pread(file.fileno(), HEADER_BYTES, 0)
            self.layout = _layout(kind, head, self.size, self.where)
        except BaseException:
            file.close()
            raise
        files.keep(self, file)

    def reopen(self) -> BinaryIO:
        """The file at the shard's path again, refused unless it is the one checked."""
        file = open_file(self.path, MAX_BYTES, "a token file")
        info = os.fstat(file.fileno())
        if _identity(info) != self.identity:
            file.close()
            raise DatasetError(
                f"data: {self.where} was replaced or rewritten while the run read it "
                "(another file at its path, or new bytes in it); keep a token file unchanged "
                "for the whole run"
            )
        if info.st_size != self.size:
            file.close()
            raise DatasetError(self._changed(info.st_size))
        return file

    def _changed(self, now: int) -> str:
        return (
            f"data: {self.where} changed while the run read it: {self.size:,} bytes "
            f"when opened, {now:,} now; keep a token file unchanged for the whole run"
        )

    def pread(self, offset: int, size: int) -> bytes:
        """`size` bytes at `offset`, or one line if the file no longer holds them."""
        fd = self.files.fd(self)
        data = os.pread(fd, size, offset)
        if len(data) != size:
            raise DatasetError(self._changed(os.fstat(fd).st_size))
        return data

    def ends(self, window: int) -> list[tuple[str, bytes]]:
        """The digests of its first and last `window` tokens (none if it holds fewer):
        what a copy, a prefix, a suffix, or the file with tokens added shares with it."""
        count, itemsize = self.layout.count, self.layout.dtype.itemsize
        if count < window:
            return []
        size, offset = window * itemsize, self.layout.offset
        return [
            (end, hashlib.blake2b(self.pread(at, size), digest_size=DIGEST_BYTES).digest())
            for end, at in (("begins", offset), ("ends", offset + (count - window) * itemsize))
        ]

    def sha256(self) -> str:
        digest = hashlib.sha256()
        for offset in range(0, self.size, HASH_CHUNK):
            digest.update(self.pread(offset, min(HASH_CHUNK, self.size - offset)))
        return digest.hexdigest()


class TokenFile:
    """A token file (or the shards a glob names, in order, as one run of windows), open
    for reading, in windows of `window` tokens in the seed's order (`shuffle` False: in
    the file's order, as a validation split is read)."""

    def __init__(self, ref: DataRef, window: int, seed: int, shuffle: bool = True) -> None:
        self.ref, self.window, self.where = ref, window, shown(ref.path)
        self.shards: list[_Shard] = []
        self.open_files = OpenFiles(open_files_allowed())
        try:
            for path in shard_paths(ref):
                self.shards.append(_Shard(ref.kind, path, self.open_files))
                self._same_format(self.shards[0], self.shards[-1])
        except BaseException:
            self.close()
            raise
        self.layout = self.shards[0].layout
        self.size = sum(shard.size for shard in self.shards)
        self.starts = list(itertools.accumulate(
            (shard.layout.count // window for shard in self.shards), initial=0))  # fmt: skip
        self.windows = self.starts[-1]
        self.window_bytes = window * self.layout.dtype.itemsize
        rng = np.random.default_rng([seed, self.windows])
        self.stride, self.start = 1, 0
        if self.windows > 1 and shuffle:
            self.stride = int(rng.integers(1, self.windows))
            while math.gcd(self.stride, self.windows) != 1:
                self.stride = int(rng.integers(1, self.windows))
            self.start = int(rng.integers(self.windows))

    @staticmethod
    def _same_format(first: _Shard, shard: _Shard) -> None:
        if shard.layout.dtype != first.layout.dtype:
            raise DatasetError(
                f"data: {shard.where} is {shard.layout.name} ({shard.layout.dtype.name} tokens); "
                f"{first.where}, the first shard, is {first.layout.name} "
                f"({first.layout.dtype.name}): the shards of one run are one tokenizer's"
            )

    @property
    def tokens(self) -> int:
        return sum(shard.layout.count for shard in self.shards)

    def positions(self, first: int, count: int) -> np.ndarray:
        """File windows of run windows first .. first + count - 1 (Python integers: no
        overflow however large the file)."""
        return np.array(
            [(self.stride * k + self.start) % self.windows for k in range(first, first + count)],
            np.int64,
        )

    def need(self, batch_size: int, seq_len: int) -> None:
        """Refuse a file with fewer windows than one global batch takes."""
        if self.windows < batch_size:
            raise DatasetError(
                f"data: {self.where} holds {self.tokens:,} tokens: {self.windows:,} "
                f"windows of {self.window} (seq_len {seq_len} + 1); a batch of {batch_size} "
                f"takes {batch_size} windows ({batch_size * self.window:,} tokens)"
            )

    def locate(self, position: int) -> tuple[_Shard, int]:
        """The shard holding file window `position`, and the window within it."""
        index = bisect.bisect_right(self.starts, position) - 1
        return self.shards[index], position - self.starts[index]

    def read(self, first: int, count: int, spec: WorkloadSpec) -> np.ndarray:
        """Run windows first .. first + count - 1 as int64, every token checked to be below
        the workload's vocabulary."""
        return self.read_at(self.positions(first, count), spec)

    def read_at(self, positions: np.ndarray, spec: WorkloadSpec) -> np.ndarray:
        """File windows `positions`, as `read`. With more shards than stay open they are
        read in the files' order (each shard opened once a call), then put back."""
        count = len(positions)
        where = [self.locate(int(p)) for p in positions]
        size = self.window_bytes
        order = None
        if len(self.shards) > self.open_files.size:
            order = np.argsort(positions, kind="stable")
        chosen = where if order is None else [where[i] for i in order.tolist()]
        data = b"".join(shard.pread(shard.layout.offset + w * size, size) for shard, w in chosen)
        rows = np.frombuffer(data, self.layout.dtype).reshape(count, self.window)
        if order is not None:
            rows = rows[np.argsort(order)]  # the run's order again
        if rows.size and int(rows.max()) >= spec.num_classes:
            row, column = np.unravel_index(int(np.argmax(rows >= spec.num_classes)), rows.shape)
            shard, window = where[row]
            index = window * self.window + int(column)
            raise DatasetError(
                f"data: {shard.where}: token {int(rows[row, column]):,} (the file's token "
                f"{index:,}) is not below {spec.name}'s vocabulary of {spec.num_classes:,}; "
                "tokenize the text for this model"
            )
        return rows.astype(np.int64)

    def batch(
        self, step: int, batch_size: int, spec: WorkloadSpec, rank: int = 0, ranks: int = 1
    ) -> np.ndarray:
        """Step `step`'s windows for `rank`: its slice of the GLOBAL batch `batch_size`."""
        share = batch_size // ranks
        return self.read(step * batch_size + rank * share, share, spec)

    def describe(self, hashed: bool = True) -> dict[str, Any]:
        """What the result records: the file, its format and size, its checksum where cheap
        (several shards: each shard's, where all of them together are cheap)."""
        facts: dict[str, Any] = {
            "kind": self.ref.kind,
            "file": Path(self.shards[0].path).name,
            "bytes": self.size,
            "format": self.layout.name,
            "token_dtype": self.layout.dtype.name,
            "tokens": self.tokens,
            "window_tokens": self.window,
            "windows": self.windows,
            "sha256": None,
        }
        cheap = self.size <= MAX_HASHED_BYTES
        if len(self.shards) > 1:
            facts["file"] = f"{Path(self.ref.path).name} ({len(self.shards)} shards)"
            facts["shards"] = [
                {"file": Path(s.path).name, "bytes": s.size, "tokens": s.layout.count,
                 "sha256": s.sha256() if cheap and hashed else None}
                for s in self.shards
            ]  # fmt: skip
        if not cheap:
            facts["sha256_skipped"] = (
                f"{self.size:,} bytes, over {MAX_HASHED_BYTES:,}: not read whole by each point"
            )
        elif not hashed:
            facts["sha256_skipped"] = "hashed by rank 0"
        elif len(self.shards) == 1:
            facts["sha256"] = self.shards[0].sha256()
        return facts

    def close(self) -> None:
        self.open_files.close()


def digests(rows: np.ndarray) -> np.ndarray:
    """Each window's (row's) blake2b digest, to compare windows without keeping them."""
    rows = np.ascontiguousarray(rows, np.int64)
    kind = f"S{DIGEST_BYTES}"
    if not rows.size:
        return np.array([], kind)
    data, step = rows.data.cast("B"), rows.shape[1] * rows.itemsize
    return np.array(
        [hashlib.blake2b(data[i : i + step], digest_size=DIGEST_BYTES).digest()
         for i in range(0, len(data), step)],
        kind,
    )  # fmt: skip


@dataclass(frozen=True)
class Trained:
    """The training windows the parent read before a run (its first, in its order), as
    digests, sorted, each with its file window: what the validation windows are
    compared with (bench.datasets.loss_target), without keeping the windows."""

    digests: np.ndarray
    windows: np.ndarray

    @classmethod
    def of(cls, digests: np.ndarray, windows: np.ndarray) -> Trained:
        order = np.argsort(digests, kind="stable")
        return cls(digests[order], np.asarray(windows, np.int64)[order])

    def find(self, digests: np.ndarray) -> tuple[int, int] | None:
        """The first of `digests` that a trained window has: its index there, and that
        window's position in the training file; None when none is."""
        if not len(self.digests) or not len(digests):
            return None
        at = np.minimum(np.searchsorted(self.digests, digests), len(self.digests) - 1)
        hits = np.flatnonzero(self.digests[at] == digests)
        if not len(hits):
            return None
        first = int(hits[0])
        return first, int(self.windows[at[first]])


def for_point(point: PointConfig) -> TokenFile:
    """The point's token file, checked to hold at least one global batch of windows."""
    ref = point.tokens
    if ref is None:
        raise DatasetError("data: this point does not train on a token file")
    seq_len = point.spec.input_shape(point.seq_len)[0]
    file = TokenFile(ref, seq_len + 1, point.seed)
    try:
        file.need(point.batch_size, seq_len)
    except DatasetError:
        file.close()
        raise
    return file


def check(
    config: RunConfig, then: Callable[[RunConfig, TokenFile, Trained], None] | None = None
) -> None:
    """In the parent, before any child: the header, the length, and every token of every
    window the run's points will train on (they share one order: the seed's); with
    train_to_loss, the training windows of at most CHECKED_TOKENS (each child checks
    every batch it reads), then `then` with the open file and those windows' digests
    (the validation file's check, bench.datasets.loss_target.check, which imports this
    module): each window is read once, for both."""
    points = list(config.points())
    file = for_point(max(points, key=lambda p: p.batch_size))
    taken = max(p.batch_size * (p.warmup_steps + p.measured_steps) for p in points)
    spec = points[0].spec
    end = min(taken, file.windows)  # past W the windows come round again
    if points[0].train_to_loss is not None:
        end = min(end, max(1, CHECKED_TOKENS // file.window))
    chunk = max(1, 2**22 // file.window)  # about 4 million tokens at a time
    seen: list[np.ndarray] = []
    windows: list[np.ndarray] = []
    try:
        for first in range(0, end, chunk):
            positions = file.positions(first, min(chunk, end - first))
            rows = file.read_at(positions, spec)
            if then is not None:
                seen.append(digests(rows))
                windows.append(positions)
        if then is not None:
            then(config, file, Trained.of(np.concatenate(seen), np.concatenate(windows)))
    finally:
        file.close()
