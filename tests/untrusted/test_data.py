"""Datasets from someone else: every file is read with bounds checked before
anything is allocated, only JPEG and PNG reach a decoder, no link leads out of the data
folder, and every refusal is one line naming the file. Each input here is crafted to
get past the reader as it was before these checks."""

from __future__ import annotations

import io
import os
import pickle
import struct
import tarfile
import tracemalloc
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from bench import datasets, registry
from bench.datasets import DatasetError, cifar10, imagenet
from tests.fake_data import write_cifar10, write_imagenet

CNN = registry.workload("cnn-s")
# What reading a small set may take at its peak (Python and NumPy allocations): each
# crafted input below asks for at least 64 MiB, and the old reader allocated it.
PEAK = 16 * 2**20


def _open(data: str) -> datasets.Dataset:
    return datasets.open_dataset(datasets.parse(data), CNN)


def _refusal(action: Callable[[], object]) -> tuple[str, int]:
    """The one-line DatasetError `action` raises, and the peak traced allocation."""
    tracemalloc.start()
    try:
        with pytest.raises(DatasetError) as caught:
            action()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(caught.value)
    assert message.startswith("data: ") and "\n" not in message, message
    return message, peak


@pytest.fixture(scope="module")
def cifar(tmp_path_factory) -> Path:
    return write_cifar10(tmp_path_factory.mktemp("cifar"), per_batch=10, test=10)


def _copy(cifar: Path, where: Path) -> Path:
    where.mkdir()
    for item in cifar.iterdir():
        (where / item.name).write_bytes(item.read_bytes())
    return where


# --- pickles: a batch is at most 10000 x 3072 uint8 and 10000 labels --------------------

# Protocol-2 opcodes, to write pickles no pickler writes.
P2, STOP, POP, NONE = b"\x80\x02", b".", b"0", b"N"
MARK, EMPTY_LIST, APPENDS, EMPTY_DICT, SETITEM = b"(", b"]", b"e", b"}", b"s"
TUPLE1, TUPLE2, TUPLE3, REDUCE = b"\x85", b"\x86", b"\x87", b"R"


def _global(module: str, name: str) -> bytes:
    return b"c" + f"{module}\n{name}\n".encode()


def _bytes(data: bytes) -> bytes:  # BINSTRING: bytes when read with encoding="bytes"
    return b"T" + len(data).to_bytes(4, "little") + data


def _text(text: str) -> bytes:  # BINUNICODE
    data = text.encode()
    return b"X" + len(data).to_bytes(4, "little") + data


def _int(n: int) -> bytes:
    return b"J" + n.to_bytes(4, "little", signed=True)


def _put(i: int) -> bytes:
    return b"r" + i.to_bytes(4, "little")


def _get(i: int) -> bytes:
    return b"j" + i.to_bytes(4, "little")


def _hex_bomb() -> bytes:
    """_codecs.encode(..., 'hex') 20 times over: 64 bytes become 64 MiB."""
    expr = _bytes(b"x" * 64)
    for _ in range(20):
        expr = _get(0) + expr + _text("hex") + TUPLE2 + REDUCE
    return P2 + _global("_codecs", "encode") + _put(0) + POP + expr + STOP


def _copies_of_one_string() -> bytes:
    """One 1 MiB string in the file, encoded to bytes 80 times: 80 MiB."""
    calls = (_get(0) + _get(1) + _text("latin1") + TUPLE2 + REDUCE) * 80
    return (P2 + _global("_codecs", "encode") + _put(0) + POP + _text("\xff" * 2**20)
            + _put(1) + POP + EMPTY_LIST + MARK + calls + APPENDS + STOP)  # fmt: skip


def _nested_labels() -> bytes:
    """Real data, and labels that are ten references to ten references ... (7 deep) to a
    list of ten zeros: 10 million labels once NumPy makes them an array."""
    array = pickle.dumps(np.zeros((7, 3072), np.uint8), protocol=2)[2:-1]
    labels = EMPTY_LIST + MARK + b"K\x00" * 10 + APPENDS + _put(40)  # the array's are < 40
    for depth in range(1, 7):
        labels += POP + EMPTY_LIST + MARK + _get(39 + depth) * 10 + APPENDS + _put(40 + depth)
    return (P2 + EMPTY_DICT + _bytes(b"data") + array + SETITEM + _bytes(b"labels") + labels
            + SETITEM + STOP)  # fmt: skip


@pytest.mark.parametrize(
    ("content", "why"),
    [
        # numpy's _reconstruct asked for the whole array before its data
        (P2 + _global("numpy.core.multiarray", "_reconstruct") + _global("numpy", "ndarray")
         + _int(200_000) + _int(3072) + TUPLE2 + _bytes(b"b") + TUPLE3 + REDUCE + STOP,
         "asks NumPy for a 200000x3072 array"),
        # numpy.ndarray((200000, 3072)) called outright: 4.9 GB of float64
        (P2 + _global("numpy", "ndarray") + _int(200_000) + _int(3072) + TUPLE2 + TUPLE1
         + REDUCE + STOP, "calls numpy.ndarray"),
        # a bytes8 that declares 2 GiB: CPython allocates it before reading
        (P2 + b"\x8e" + (2**31).to_bytes(8, "little") + b"xx" + STOP,
         "expected 2147483648 bytes"),
        # a memo index of 2**24: CPython grows its memo table to twice that
        (P2 + NONE + _put(2**24) + STOP, "memo index 16777216"),
        (_hex_bomb(), "only latin1"),
        (_copies_of_one_string(), "its bytes come to more than 31,768,576"),
        (_nested_labels(), "labels must be a list of 7 whole numbers"),
    ],
    ids=["reconstruct-shape", "ndarray-call", "bytes8-length", "memo-index", "hex-codec",
         "copies-of-a-string", "nested-labels"],
)  # fmt: skip
def test_a_cifar10_batch_that_asks_for_memory_is_refused_before_it_is_allocated(
    cifar, tmp_path, content, why
):
    copy = _copy(cifar, tmp_path / "copy")
    (copy / "data_batch_3").write_bytes(content)
    message, peak = _refusal(lambda: _open(f"cifar10:{copy}"))
    # Bytes pickled as text are refused once they come to more than a batch holds.
    most = 40 * 2**20 if "its bytes" in why else PEAK
    assert peak < most, f"{peak:,} bytes allocated before: {message}"
    assert message.startswith(f"data: {copy}/data_batch_3") and why in message, message


def _string(data: bytes) -> bytes:  # how Python 2 pickles a str
    return b"U" + bytes([len(data)]) + data if len(data) < 256 else _bytes(data)


def _python2_batch(rows: np.ndarray, labels: list[int]) -> bytes:
    """A batch as the official files are: a dict pickled by Python 2's cPickle in
    protocol 2, the array as NumPy reduces it (memo numbered from 1, as cPickle does)."""
    dtype = (_global("numpy", "dtype") + b"q\x06" + _string(b"u1") + b"K\x00K\x01" + TUPLE3
             + REDUCE + b"q\x07" + MARK + b"K\x03" + _string(b"|") + NONE * 3 + _int(-1)
             + _int(-1) + b"K\x00t" + b"b")  # fmt: skip
    array = (_global("numpy.core.multiarray", "_reconstruct") + b"q\x03"
             + _global("numpy", "ndarray") + b"q\x04" + b"K\x00" + TUPLE1 + _string(b"b")
             + TUPLE3 + REDUCE + b"q\x05" + MARK + b"K\x01" + _int(len(rows)) + _int(3072)
             + TUPLE2 + dtype + b"\x89" + _string(rows.tobytes()) + b"t" + b"b")  # fmt: skip
    items = b"".join(b"K" + bytes([label]) for label in labels)
    return (P2 + EMPTY_DICT + b"q\x01" + MARK + _string(b"data") + b"q\x02" + array
            + _string(b"labels") + b"q\x08" + EMPTY_LIST + b"q\x09" + MARK + items + APPENDS
            + b"u" + STOP)  # fmt: skip


def test_batches_as_python_2_pickled_the_official_ones_are_read(tmp_path):
    rng = np.random.default_rng(0)
    folder = tmp_path / cifar10.FOLDER
    folder.mkdir()
    written = {}
    for name in (*cifar10.TRAIN, cifar10.TEST):
        rows = rng.integers(0, 256, (20, 3072), np.uint8)
        labels = [int(x) for x in rng.integers(0, 10, 20)]
        content = _python2_batch(rows, labels)
        official = pickle.loads(content, encoding="bytes")  # NumPy itself reads it alike
        assert np.array_equal(official[b"data"], rows) and official[b"labels"] == labels
        (folder / name).write_bytes(content)
        written[name] = (rows, labels)
    dataset = _open(f"cifar10:{tmp_path}")
    rows, labels = written[cifar10.TEST]
    image, label = dataset.val.sample(3, None)
    pixel = rows[3, [0, 1024, 2048]] / 255  # R, G, B planes
    assert label == labels[3]
    assert image[0, 0] == pytest.approx((pixel - cifar10.MEAN) / cifar10.STD, abs=1e-5)
    assert len(dataset.train) == 100 and dataset.facts["official"] is False


def test_a_cifar10_batch_of_more_rows_than_the_official_is_refused(cifar, tmp_path):
    copy = _copy(cifar, tmp_path / "copy")
    rows = {b"data": np.zeros((10_001, 3072), np.uint8), b"labels": [0] * 10_001}
    (copy / "test_batch").write_bytes(pickle.dumps(rows, protocol=2))
    message, _ = _refusal(lambda: _open(f"cifar10:{copy}"))
    assert message == (
        f"data: {copy}/test_batch is not a CIFAR-10 python batch: it declares a 10001x3072 "
        "uint8 array (30,723,072 bytes); a batch is at most 10000 uint8 rows of 3072 values "
        "(3x32x32)"
    )


def test_a_cifar10_batch_file_over_the_limit_is_refused_before_it_is_read(cifar, tmp_path):
    copy = _copy(cifar, tmp_path / "copy")
    os.truncate(copy / "data_batch_2", 64 * 2**20 + 1)  # sparse: nothing written
    message, peak = _refusal(lambda: _open(f"cifar10:{copy}"))
    assert peak < PEAK
    assert message == (
        f"data: {copy}/data_batch_2 is 67,108,865 bytes; a CIFAR-10 batch is at most "
        "67,108,864 bytes"
    )


# --- the archive: members, headers and the whole unpacked size bounded ------------------


class _Zeros(io.RawIOBase):
    def __init__(self, size: int) -> None:
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[override]
        count = min(len(buffer), self.left)
        buffer[:count] = bytes(count)
        self.left -= count
        return count


def _archive(cifar: Path, path: Path, before: list[tuple[tarfile.TarInfo, int]]) -> Path:
    """cifar-10-python.tar.gz with `before` (members of so many zero bytes) first, then
    the folder and those of its batches that `before` did not replace."""
    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        for info, size in before:
            info.size = size
            tar.addfile(info, _Zeros(size))
        tar.add(cifar, arcname=cifar10.FOLDER, recursive=False)
        for item in sorted(cifar.iterdir()):
            name = f"{cifar10.FOLDER}/{item.name}"
            if all(info.name != name for info, _ in before):
                tar.add(item, arcname=name)
    return path


def _gzip_of_header(name: str, kind: bytes, size: int) -> bytes:
    """A gzipped tar that is one header declaring `size` bytes that never follow."""
    info = tarfile.TarInfo(name)
    info.type, info.size = kind, size
    return zlib.compress(info.tobuf(format=tarfile.GNU_FORMAT), wbits=31)


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda cifar, path: _archive(cifar, path, [(tarfile.TarInfo(
            f"{cifar10.FOLDER}/data_batch_1"), 64 * 2**20 + 1)]),
         f"/{cifar10.FOLDER}/data_batch_1 is 67,108,865 bytes unpacked; a CIFAR-10 batch is "
         "at most 67,108,864 bytes"),
        (lambda cifar, path: path.write_bytes(
            _gzip_of_header("././@LongLink", tarfile.GNUTYPE_LONGNAME, 300 * 2**20)),
         "a header or member asks for 314,572,800 bytes at once; at most 67,108,864"),
        (lambda cifar, path: path.write_bytes(
            _gzip_of_header("padding", tarfile.REGTYPE, 500 * 2**20)),
         "unpacks to more than 419,430,400 bytes"),
    ],
    ids=["batch-member", "long-name-header", "member-past-the-total"],
)  # fmt: skip
def test_an_archive_that_unpacks_too_much_is_refused_before_it_is_unpacked(
    cifar, tmp_path, make, why
):
    archive = tmp_path / cifar10.ARCHIVE
    make(cifar, archive)
    message, peak = _refusal(lambda: _open(f"cifar10:{archive}"))
    assert peak < PEAK, f"{peak:,} bytes allocated before: {message}"
    assert message.startswith(f"data: {archive}") and why in message, message


def test_an_archive_of_too_many_members_is_refused(cifar, tmp_path):
    pads = [(tarfile.TarInfo(f"pad/{i}"), 0) for i in range(64)]
    archive = _archive(cifar, tmp_path / cifar10.ARCHIVE, pads)
    message, _ = _refusal(lambda: _open(f"cifar10:{archive}"))
    assert message == (
        f"data: {archive} has more than 64 members; at most 64 are read (the official "
        "archive has fewer than ten)"
    )


def test_an_archive_file_over_the_limit_is_refused_before_it_is_read(cifar, tmp_path):
    archive = _archive(cifar, tmp_path / cifar10.ARCHIVE, [])
    os.truncate(archive, 256 * 2**20 + 1)  # the real archive, then sparse zeros
    message, _ = _refusal(lambda: _open(f"cifar10:{archive}"))
    assert message == (
        f"data: {archive} is 268,435,457 bytes; the CIFAR-10 archive is at most 268,435,456 bytes"
    )


def test_the_archive_still_reads_with_its_folder_and_other_members(cifar, tmp_path):
    meta = [(tarfile.TarInfo(f"{cifar10.FOLDER}/batches.meta"), 158)]
    archive = _archive(cifar, tmp_path / cifar10.ARCHIVE, meta)
    dataset = _open(f"cifar10:{archive}")
    assert (len(dataset.train), len(dataset.val)) == (50, 10)
    assert dataset.facts == _open(f"cifar10:{cifar}").facts
    for mode in ("w", "w:bz2", "w:xz"):  # as before: any tar that tarfile reads
        other = tmp_path / f"cifar.{mode}.tar"
        with tarfile.open(other, mode) as tar:
            tar.add(cifar, arcname=cifar10.FOLDER)
        assert _open(f"cifar10:{other}").facts == dataset.facts


# --- images: JPEG or PNG only, pixels and bytes capped ----------------------------------


@pytest.fixture
def images(tmp_path) -> Path:
    return write_imagenet(tmp_path / "set", classes=2, train=3, val=1, size=16)


def _sample(root: Path, path: Path) -> tuple[np.ndarray, int]:
    dataset = _open(f"imagenet:{root}")
    split = dataset.train if "train" in path.parts else dataset.val
    return split.sample(split.files.index(str(path)), None)


def _saved(image_format: str) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (16, 16), (200, 30, 30)).save(buffer, image_format)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("image_format", "name", "kind"),
    [
        ("GIF", "img_0.JPEG", "it is a GIF image"),
        ("BMP", "img_0.JPEG", "it is a BMP image"),
        ("TIFF", "img_0.jpg", "it is a TIFF image"),
        ("WEBP", "img_0.JPEG", "it is a WebP image"),
        ("GIF", "a\nb\x1b[2J.JPEG", "it is a GIF image"),
    ],
)
def test_an_image_in_another_format_named_jpeg_is_refused(images, image_format, name, kind):
    path = images / "train" / "n00000001" / name
    path.write_bytes(_saved(image_format))
    message, _ = _refusal(lambda: _sample(images, path))
    shown = str(path).replace("\n", "\\n").replace("\x1b", "\\x1b")
    assert message == (
        f"data: {shown} is not a JPEG that decodes ({kind}); images here are JPEG, or PNG "
        "as one in ImageNet's train/ is"
    )


def test_a_png_named_jpeg_is_read_as_imagenet_has_one(images):
    path = images / "train" / "n00000001" / "n02105855_2933.JPEG"
    path.write_bytes(_saved("PNG"))
    image, label = _sample(images, path)
    assert image.shape == (32, 32, 3) and label == 1


def _png_header(width: int, height: int) -> bytes:
    """A PNG of `width` x `height` 1-bit pixels, without a single pixel's data."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IEND", b"")


def _jpeg_header(width: int, height: int) -> bytes:
    """A real 8x8 JPEG whose frame header claims `width` x `height`."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("L", (8, 8)).save(buffer, "JPEG")
    data = buffer.getvalue()
    at = data.index(b"\xff\xc0") + 5  # SOF0: marker, length, precision, then height, width
    return data[:at] + struct.pack(">HH", height, width) + data[at + 4 :]


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (_png_header(9000, 9000), "is 9000 x 9000 = 81,000,000 pixels"),
        (_jpeg_header(9000, 9000), "is 9000 x 9000 = 81,000,000 pixels"),
        (_png_header(20_000, 10_000), "Image size (200000000 pixels) exceeds limit"),
    ],
    ids=["png", "jpeg", "png-over-pillows-own-cap"],
)
def test_an_image_over_the_pixel_cap_is_refused_from_its_header(images, monkeypatch, content, why):
    from PIL import ImageFile

    def decode(self):
        raise AssertionError("an image over the cap was decoded")

    monkeypatch.setattr(ImageFile.ImageFile, "load", decode)
    path = images / "val" / "n00000000" / "img_0.JPEG"
    path.write_bytes(content)
    assert len(content) < 1000
    message, _ = _refusal(lambda: _sample(images, path))
    assert message.startswith(f"data: {path} ") and why in message, message
    assert message.endswith("; an image here has at most 67,108,864 pixels (8192 x 8192)")


def test_an_image_file_over_the_limit_is_refused_before_it_is_read(images):
    path = images / "train" / "n00000000" / "img_1.JPEG"
    os.truncate(path, 64 * 2**20 + 1)  # the JPEG, then sparse zeros a decoder would skip
    message, _ = _refusal(lambda: _sample(images, path))
    assert message == f"data: {path} is 67,108,865 bytes; an image here is at most 67,108,864 bytes"


def test_too_many_classes_or_images_are_refused_while_listing(images, monkeypatch):
    monkeypatch.setattr(imagenet, "MAX_CLASSES", 1, raising=False)
    message, _ = _refusal(lambda: _open(f"imagenet:{images}"))
    assert message == (f"data: {images}/train has more than 1 class folders; at most 1 are read")
    monkeypatch.setattr(imagenet, "MAX_CLASSES", 2)
    monkeypatch.setattr(imagenet, "MAX_FILES", 5, raising=False)
    message, _ = _refusal(lambda: _open(f"imagenet:{images}"))
    assert message == f"data: {images}/train holds more than 5 images; at most 5 a split are read"


# --- links: none out of the data folder -------------------------------------------------


def _outside(tmp_path: Path) -> Path:
    """A folder beside the data: a readable file a link could lead to."""
    outside = write_imagenet(tmp_path / "outside", classes=1, train=1, val=1, size=16)
    return outside / "train" / "n00000000"


def _link_image(images: Path, outside: Path) -> Path:
    link = images / "train" / "n00000000" / "secret.JPEG"
    link.symlink_to(outside / "img_0.JPEG")
    return link


def _link_class(images: Path, outside: Path) -> Path:
    link = images / "train" / "n00000009"
    link.symlink_to(outside, target_is_directory=True)
    return link


def _link_split(images: Path, outside: Path) -> Path:
    link = images / "val"
    for item in sorted(link.rglob("*"), reverse=True):
        item.unlink() if item.is_file() else item.rmdir()
    link.rmdir()
    link.symlink_to(outside.parent, target_is_directory=True)
    return link


@pytest.mark.parametrize("make", [_link_image, _link_class, _link_split])
def test_an_imagenet_link_out_of_the_data_folder_is_refused(images, tmp_path, make):
    link = make(images, _outside(tmp_path))
    message, _ = _refusal(lambda: _open(f"imagenet:{images}"))
    assert message == (
        f"data: {link} leads outside {images} (to {link.resolve()}); links must stay "
        "inside the data folder"
    )


def test_a_cifar10_link_out_of_the_data_folder_is_refused(cifar, tmp_path):
    copy = _copy(cifar, tmp_path / "copy")
    (copy / "data_batch_3").unlink()
    (copy / "data_batch_3").symlink_to(cifar / "data_batch_3")
    message, _ = _refusal(lambda: _open(f"cifar10:{copy}"))
    target = (cifar / "data_batch_3").resolve()
    assert message == (
        f"data: {copy}/data_batch_3 leads outside {copy} (to {target}); links must stay "
        "inside the data folder"
    )


def test_links_inside_the_data_folder_are_followed(images, cifar, tmp_path):
    link = images / "val" / "n00000001" / "again.JPEG"
    link.symlink_to(Path("..", "..", "train", "n00000001", "img_0.JPEG"))
    assert _sample(images, link)[1] == 1
    (images / "train" / "n00000009").symlink_to(images / "train" / "n00000000")
    assert _open(f"imagenet:{images}").classes == 3
    holder = tmp_path / "holder"
    (holder / "store").mkdir(parents=True)
    _copy(cifar, holder / "store" / "batches")
    (holder / cifar10.FOLDER).symlink_to(holder / "store" / "batches")
    assert len(_open(f"cifar10:{holder}").train) == 50
