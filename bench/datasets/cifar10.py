"""CIFAR-10 in its official python format: the pickled batches of cifar-10-python.tar.gz.

PATH is the folder cifar-10-batches-py (data_batch_1..5 and test_batch), a folder that
holds it, or the archive itself (read in place, nothing extracted). The batches are
pickles: they are read by an unpickler that builds NumPy arrays and plain data only, so
a file from anyone cannot run code, and that checks every size a pickle declares before
anything is allocated: a batch is at most 10000 rows of 3x32x32 uint8 values and as many
labels in 0..9 (bench.datasets.untrusted says what else is bounded, and why). Files that
match the official MD5 sums are marked `official` in the result; anything else of the
same layout (a generated test set, of fewer rows) is read alike and recorded as not
official.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import hashlib
import io
import lzma
import math
import os
import pickle
import pickletools
import tarfile
import zlib
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from bench.datasets import DataRef, Dataset, DatasetError
from bench.datasets.recipe import Recipe
from bench.datasets.untrusted import inside, open_file, read_file, reason, shown

DESCRIPTION = (
    "CIFAR-10's python batches: data_batch_1..data_batch_5 and test_batch (the folder "
    "cifar-10-batches-py of cifar-10-python.tar.gz), or that archive"
)
TRAIN = tuple(f"data_batch_{i}" for i in range(1, 6))
TEST = "test_batch"
FOLDER = "cifar-10-batches-py"
ARCHIVE = "cifar-10-python.tar.gz"
# The official files' MD5 sums (as torchvision checks them).
OFFICIAL_MD5 = {
    "data_batch_1": "c99cafc152244af753f735de768cd75f",
    "data_batch_2": "d4bba439e000b95fd0a9bffe97cbabec",
    "data_batch_3": "54ebc095f3ab1f0389bbae665268c751",
    "data_batch_4": "634d18415352ddfa80567beed471001a",
    "data_batch_5": "482c414d41f54cd18b22e5b47cb7c3cb",
    "test_batch": "40351d587109b95175f43aff81a1287e",
}
CLASSES = 10
MEAN = np.array([0.4914, 0.4822, 0.4465], np.float32)
STD = np.array([0.2470, 0.2435, 0.2616], np.float32)
# The DAWNBench-style CIFAR-10 recipe (Page's ResNet, 94% in 24 epochs): SGD with
# Nesterov momentum, a linear warm-up then a linear decay to zero over the run, weight
# decay 5e-4 and light label smoothing; the peak rate scales with the batch.
RECIPE = Recipe(
    lr_per_256=0.4, momentum=0.9, nesterov=True, weight_decay=5e-4,
    label_smoothing=0.2, warmup_fraction=0.2, schedule="linear",
)  # fmt: skip

# What is read is bounded before it is read (bench.datasets.untrusted). An official
# batch is a 31 MB pickle of ROWS rows; the same rows pickled by Python 3 in protocol 2
# (a generated set) take up to twice that, as latin-1 text stored as UTF-8.
ROWS = 10_000  # rows in each official batch: a batch holds at most this many
VALUES = 3 * 32 * 32
MAX_BATCH_BYTES = 64 * 2**20
MAX_PICKLE_OPS = 1_000_000  # an official batch has about 30,000; a generated one 90,000
MAX_ARRAYS = 4  # data, and labels where they are an array
MAX_ENCODED = ROWS * VALUES + 2**20  # bytes pickled as text: the data, the file names
MAX_ARCHIVE_BYTES = 256 * 2**20  # the official archive is 163 MiB
MAX_MEMBERS = 64  # the official archive has fewer than ten
MAX_UNPACKED_BYTES = 6 * MAX_BATCH_BYTES + 16 * 2**20  # all members and their headers
_ALLOWED_ROWS = f"a batch is at most {ROWS} uint8 rows of {VALUES} values (3x32x32)"


class _Refused(Exception):
    """What a batch asks for that no CIFAR-10 batch holds (the message says what)."""


def _dims(shape: tuple[int, ...]) -> str:
    return "x".join(str(n) if n < 10**15 else "(huge)" for n in shape)


class _NDArray:
    """numpy.ndarray, as the argument of _reconstruct: never called, and no state a
    pickle could set."""

    __slots__ = ()

    def __call__(self, *args: Any) -> None:
        raise _Refused(
            "it calls numpy.ndarray, which allocates what it is asked; an array may come "
            "only as NumPy pickles one (its data beside its shape)"
        )


_NDARRAY = _NDArray()
_DTYPES = {"u1", "i1", "u2", "i2", "u4", "i4", "u8", "i8"}


class _DType:
    """numpy.dtype of one of _DTYPES, its byte order set by the pickle's state."""

    def __init__(self, code: Any, align: Any = False, copy: Any = True) -> None:
        if isinstance(code, bytes):
            code = code.decode("ascii", "replace")
        if code not in _DTYPES:
            raise _Refused(
                f"it asks for NumPy type {code!r:.30}; a batch holds uint8 data and integer labels"
            )
        self.dtype = np.dtype(code)

    def __setstate__(self, state: Any) -> None:
        order = state[1] if isinstance(state, tuple) and len(state) > 1 else None
        if isinstance(order, bytes):
            order = order.decode("ascii", "replace")
        if order not in ("|", "<", ">", "="):
            raise _Refused("a NumPy type has no byte order; its state is not NumPy's")
        if order in "<>":
            self.dtype = self.dtype.newbyteorder(order)


class _Array:
    """An array NumPy pickled: built by this module from its state (shape, type, the
    data itself), the size checked first; NumPy is never asked to allocate."""

    def __init__(self) -> None:
        self.array: np.ndarray | None = None

    def __setstate__(self, state: Any) -> None:
        if not (isinstance(state, tuple) and len(state) == 5 and state[0] == 1):
            raise _Refused("an array's state is not NumPy's (version, shape, type, order, data)")
        _, shape, dtype, fortran, data = state
        if not (isinstance(shape, tuple) and 1 <= len(shape) <= 2
                and all(type(n) is int and n >= 0 for n in shape)):  # fmt: skip
            raise _Refused(f"an array's shape is not one or two sizes; {_ALLOWED_ROWS}")
        if not isinstance(dtype, _DType):
            raise _Refused("an array's type is not a NumPy type")
        size = math.prod(shape) * dtype.dtype.itemsize
        if size > ROWS * VALUES:
            raise _Refused(
                f"it declares a {_dims(shape)} {dtype.dtype} array ({size:,} bytes); "
                f"{_ALLOWED_ROWS}"
            )
        if not isinstance(data, bytes) or len(data) != size:
            raise _Refused(
                f"a {_dims(shape)} {dtype.dtype} array holds "
                f"{len(data) if isinstance(data, bytes) else 'no'} bytes of data, not {size:,}"
            )
        flat = np.frombuffer(data, dtype.dtype) if size else np.empty(0, dtype.dtype)
        self.array = flat.reshape(shape, order="F" if fortran else "C")


class _ArraysOnly(pickle.Unpickler):
    """What the official pickles (written by Python 2 with NumPy) are made of, and what
    Python 3 writes for bytes in the same protocol (_codecs.encode); each is this
    module's own stand-in that checks its arguments before it allocates. Nothing of
    NumPy's, or of any other module, runs while a batch is read."""

    def __init__(self, raw: bytes) -> None:
        super().__init__(io.BytesIO(raw), encoding="bytes")
        self.arrays = 0
        self.encoded = 0
        self.allowed = {
            ("_codecs", "encode"): self._encode,
            ("numpy.core.multiarray", "_reconstruct"): self._reconstruct,
            ("numpy._core.multiarray", "_reconstruct"): self._reconstruct,
            ("numpy", "ndarray"): _NDARRAY,
            ("numpy", "dtype"): _DType,
        }

    def find_class(self, module: str, name: str) -> Any:
        found = self.allowed.get((module, name))
        if found is None:
            raise pickle.UnpicklingError(
                f"it asks for {shown(module)[:80]}.{shown(name)[:80]}, not NumPy data"
            )
        return found

    def _encode(self, text: Any, encoding: Any = "utf-8") -> bytes:
        if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
            raise _Refused(
                f"it asks _codecs.encode for {shown(encoding)[:20]!r}; only latin1 text is "
                "encoded (how Python 3 pickles bytes)"
            )
        self.encoded += len(text)
        if self.encoded > MAX_ENCODED:
            raise _Refused(
                f"its bytes come to more than {MAX_ENCODED:,}; a batch holds at most "
                f"{ROWS * VALUES:,} bytes of data and 1 MiB of names"
            )
        return text.encode("latin1")

    def _reconstruct(self, subtype: Any, shape: Any, code: Any) -> _Array:
        if subtype is not _NDARRAY or code not in (b"b", "b"):
            raise _Refused("it reconstructs something other than a NumPy array")
        if shape != (0,):
            sizes = isinstance(shape, tuple) and all(type(n) is int for n in shape)
            dims = _dims(shape) if sizes else "(not a shape)"
            raise _Refused(
                f"it asks NumPy for a {dims} array before its data; NumPy pickles an empty "
                "array, then its shape beside its data"
            )
        self.arrays += 1
        if self.arrays > MAX_ARRAYS:
            raise _Refused(f"it holds more than {MAX_ARRAYS} arrays; a batch holds one or two")
        return _Array()


def _scan(raw: bytes) -> None:
    """Walk the pickle's operations without building anything: a length that runs past
    the end of the file, or a memo index beyond the operations before it, would make
    the unpickler allocate what it declares (CPython allocates a string's declared
    length, and a memo table twice the index, before reading)."""
    for ops, (opcode, arg, _) in enumerate(pickletools.genops(io.BytesIO(raw)), 1):
        if ops > MAX_PICKLE_OPS:
            raise _Refused(f"it has more than {MAX_PICKLE_OPS:,} operations; a batch has fewer")
        if opcode.name in ("PUT", "BINPUT", "LONG_BINPUT") and isinstance(arg, int) and arg > ops:
            raise _Refused(
                f"memo index {arg} after {ops} operations; a pickler numbers its memo in order"
            )


def _labels(found: Any, rows: int, where: str) -> np.ndarray:
    if isinstance(found, _Array) and found.array is not None and found.array.ndim == 1:
        labels = found.array
        if len(labels) != rows or labels.dtype.kind not in "iu":
            raise DatasetError(f"data: {where}: expected {rows} whole-number labels")
        if rows and not (labels.min() >= 0 and labels.max() < CLASSES):
            raise DatasetError(f"data: {where}: labels must lie in 0..{CLASSES - 1}")
        return labels.astype(np.int64)
    if not (isinstance(found, list) and len(found) == rows
            and all(type(label) is int for label in found)):  # fmt: skip
        raise DatasetError(
            f"data: {where}: labels must be a list of {rows} whole numbers in "
            f"0..{CLASSES - 1}, one a row of data"
        )
    if not all(0 <= label < CLASSES for label in found):
        raise DatasetError(f"data: {where}: labels must lie in 0..{CLASSES - 1}")
    return np.array(found, np.int64)


def _batch(name: str, raw: bytes, where: str) -> tuple[np.ndarray, np.ndarray]:
    """(N, 32, 32, 3) uint8 images and (N,) labels from one pickled batch."""
    try:
        _scan(raw)
        content = _ArraysOnly(raw).load()
    except _Refused as refused:
        raise DatasetError(f"data: {where} is not a CIFAR-10 python batch: {refused}") from None
    except Exception as error:  # any malformed pickle: the file and why, in one line
        raise DatasetError(
            f"data: {where} is not a CIFAR-10 python batch ({reason(error)})"
        ) from None
    if not isinstance(content, dict) or b"data" not in content or b"labels" not in content:
        raise DatasetError(f"data: {where} is not a CIFAR-10 python batch (no data and labels)")
    found = content[b"data"]
    data = found.array if isinstance(found, _Array) else None
    if not (data is not None and data.dtype == np.uint8 and data.ndim == 2
            and data.shape[1] == VALUES and len(data) <= ROWS):  # fmt: skip
        what = f"a {_dims(data.shape)} {data.dtype} array" if data is not None else "no array"
        raise DatasetError(f"data: {where}: data is {what}; {_ALLOWED_ROWS}")
    labels = _labels(content[b"labels"], len(data), where)
    # Rows are channel-major (R plane, G, B): to HWC.
    return data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1), labels


class _Capped:
    """An archive's unpacked stream that refuses to go past `limit` bytes, or to read
    more than a batch at once: tarfile reads what a header declares (a long name, a
    pax record) in one call, and skips a member by unpacking all of it."""

    def __init__(self, stream: Any, limit: int, name: str) -> None:
        self.stream, self.limit, self.name = stream, limit, name

    def _reach(self, end: int) -> None:
        if end > self.limit:
            raise DatasetError(
                f"data: {self.name} unpacks to more than {self.limit:,} bytes; at most "
                f"{self.limit:,} are unpacked (the official archive, under 200 MB)"
            )

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            size = self.limit - self.stream.tell() + 1
        if size > MAX_BATCH_BYTES:
            raise DatasetError(
                f"data: {self.name}: a header or member asks for {size:,} bytes at once; at "
                f"most {MAX_BATCH_BYTES:,} (a CIFAR-10 batch)"
            )
        self._reach(self.stream.tell() + size)
        return self.stream.read(size)

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        if whence == os.SEEK_CUR:
            offset += self.stream.tell()
        elif whence != os.SEEK_SET:
            raise io.UnsupportedOperation("seek from the end of an archive")
        self._reach(offset)
        return self.stream.seek(offset)

    def tell(self) -> int:
        return self.stream.tell()


def _unpack(archive: Path, names: tuple[str, ...]) -> dict[str, bytes]:
    """The named batches from the archive, in one pass, each member's size and the
    whole unpacked size bounded before they are read; nothing is extracted."""
    name = shown(archive)
    with contextlib.ExitStack() as stack:
        file = stack.enter_context(open_file(archive, MAX_ARCHIVE_BYTES, "the CIFAR-10 archive"))
        head = file.read(6)
        file.seek(0)
        stream: Any = file  # a plain tar, or unpacked as it is read:
        if head.startswith(b"\x1f\x8b"):
            stream = stack.enter_context(gzip.GzipFile(fileobj=file, mode="rb"))
        elif head.startswith(b"BZh"):
            stream = stack.enter_context(bz2.BZ2File(file))
        elif head.startswith(b"\xfd7zXZ\x00"):
            stream = stack.enter_context(lzma.LZMAFile(file))
        capped = _Capped(stream, MAX_UNPACKED_BYTES, name)
        tar = stack.enter_context(tarfile.open(fileobj=capped, mode="r:"))  # type: ignore[call-overload]
        found: dict[str, bytes] = {}
        for count, member in enumerate(tar, 1):
            if count > MAX_MEMBERS:
                raise DatasetError(
                    f"data: {name} has more than {MAX_MEMBERS} members; at most "
                    f"{MAX_MEMBERS} are read (the official archive has fewer than ten)"
                )
            batch = PurePosixPath(member.name).name
            if not (member.isfile() and batch in names):
                continue
            if member.size > MAX_BATCH_BYTES:
                raise DatasetError(
                    f"data: {name}/{shown(member.name)} is {member.size:,} bytes unpacked; a "
                    f"CIFAR-10 batch is at most {MAX_BATCH_BYTES:,} bytes"
                )
            found[batch] = tar.extractfile(member).read(member.size)
    missing = [n for n in names if n not in found]
    if missing:
        raise DatasetError(f"data: {name} lacks {', '.join(missing)}; expected {DESCRIPTION}")
    return found


def _files(path: Path) -> tuple[dict[str, bytes], str]:
    """Each batch file's bytes, from the folder or the archive, and where they came from.
    Every file read lies inside PATH (a link may lead only to another place in it)."""
    names = (*TRAIN, TEST)
    base = path.resolve()
    for folder in (path, path / FOLDER):
        if folder.is_dir() and all((folder / n).is_file() for n in names):
            for n in names:
                inside(folder / n, base, path)
            return {
                n: read_file(folder / n, MAX_BATCH_BYTES, "a CIFAR-10 batch") for n in names
            }, str(folder)
    archive = path / ARCHIVE if path.is_dir() else path
    if archive.is_file():
        inside(archive, base, path)
        try:
            return _unpack(archive, names), str(archive)
        except (tarfile.TarError, OSError, EOFError, zlib.error, lzma.LZMAError) as error:
            raise DatasetError(
                f"data: {shown(archive)} is not a readable archive ({reason(error)})"
            ) from None
    raise DatasetError(f"data: {path} holds no CIFAR-10 dataset; expected {DESCRIPTION}")


class Arrays:
    """A split held in memory: uint8 HWC images and their labels."""

    mean, std = MEAN, STD

    def __init__(self, name: str, images: np.ndarray, labels: np.ndarray) -> None:
        self.name, self.images, self.labels = name, images, labels

    def __len__(self) -> int:
        return len(self.labels)

    def sample(
        self, index: int, rng: np.random.Generator | None, raw: bool = False
    ) -> tuple[np.ndarray, int]:
        image = self.images[index]
        if rng is not None:  # the standard CIFAR augmentation: pad-4 random crop, flip
            padded = np.pad(image, ((4, 4), (4, 4), (0, 0)), mode="reflect")
            top, left = rng.integers(0, 9, size=2)
            image = padded[top : top + 32, left : left + 32]
            if rng.random() < 0.5:
                image = image[:, ::-1]
        if raw:
            return np.ascontiguousarray(image), int(self.labels[index])
        return (image.astype(np.float32) / 255 - MEAN) / STD, int(self.labels[index])


def open(path: str, spec) -> Dataset:
    if tuple(spec.sample_shape) != (3, 32, 32):
        raise DatasetError(
            f"data: CIFAR-10 images are 3x32x32; {spec.name} takes "
            f"{'x'.join(map(str, spec.sample_shape))} (use a CIFAR workload: cnn-s, "
            "resnet50-cifar)"
        )
    raw, source = _files(Path(path))
    parts = {n: _batch(n, raw[n], f"{source}/{n}") for n in raw}
    train = Arrays(
        "train",
        np.concatenate([parts[n][0] for n in TRAIN]),
        np.concatenate([parts[n][1] for n in TRAIN]),
    )
    if not len(train) or not len(parts[TEST][1]):
        raise DatasetError(f"data: {source} has an empty split; expected {DESCRIPTION}")
    md5 = {n: hashlib.md5(raw[n], usedforsecurity=False).hexdigest() for n in raw}
    digest = hashlib.sha256()
    for n in (*TRAIN, TEST):
        digest.update(raw[n])
    return Dataset(
        ref=DataRef("cifar10", path),
        train=train,
        val=Arrays("val", *parts[TEST]),
        classes=CLASSES,
        facts={"sha256": digest.hexdigest(), "official": md5 == OFFICIAL_MD5},
    )
