"""Archives others send (nox -s save / vendor): checked against the hash the user holds,
then unpacked member by member, whatever the Python version's tarfile filters enforce."""

import hashlib
import io
import os
import tarfile

import pytest

from bench.result import archive
from bench.result.archive import ArchiveError


def _tar(path, *members):
    """A tar at path from (TarInfo, bytes or None) pairs, as an attacker would craft it."""
    with tarfile.open(path, "w") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def _file(name, data=b"x"):
    return tarfile.TarInfo(name), data


def _special(name, kind):
    info = tarfile.TarInfo(name)
    info.type = kind
    return info, None


def _link(name, target, kind=tarfile.SYMTYPE):
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info, None


def test_a_plain_archive_unpacks_with_its_folders(tmp_path):
    folder = tarfile.TarInfo("vendor")
    folder.type = tarfile.DIRTYPE
    path = _tar(
        tmp_path / "a.tar",
        _file("manifest.json", b"{}"),
        (folder, None),
        _file("vendor/debs/libc6_2.36-9+deb12u14_amd64.deb", b"deb"),
        _file("vendor/wheels/torch-2.14.1+cpu-cp311-cp311-manylinux_2_28_x86_64.whl", b"w"),
        _file("vendor/debs/libfoo_1%3a2.0~rc1_amd64.deb", b"d"),
    )
    names = archive.extract(path, tmp_path / "out")
    assert len(names) == 5
    assert (tmp_path / "out/vendor/debs/libc6_2.36-9+deb12u14_amd64.deb").read_bytes() == b"deb"
    assert (tmp_path / "out/manifest.json").stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize(
    ("member", "said"),
    [
        (_file("/etc/cron.d/evil"), "not a plain relative path"),
        (_file("../noxfile.py"), "not a plain relative path"),
        (_file("vendor/../../noxfile.py"), "not a plain relative path"),
        (_file("./x/./y"), "not a plain relative path"),
        (_link("vendor", "/"), "a link"),
        (_link("wheels", "../../.."), "a link"),
        (_link("hard", "/etc/passwd", tarfile.LNKTYPE), "a link"),
        (_special("tty", tarfile.CHRTYPE), "not a file or folder"),
        (_special("fifo", tarfile.FIFOTYPE), "not a file or folder"),
        (_file("a//b"), "not a plain relative path"),
        (_file("title\x1b]0;owned\x07.txt"), "is not allowed"),
        (_file("a\nb"), "is not allowed"),
    ],
)
def test_a_crafted_member_is_refused_and_nothing_is_written_outside(tmp_path, member, said):
    path = _tar(tmp_path / "evil.tar", member)
    with pytest.raises(ArchiveError, match=said):
        archive.extract(path, tmp_path / "out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["evil.tar", "out"]


def test_a_link_then_a_file_through_it_writes_nothing_outside(tmp_path):
    """The CVE-2025-4517 family: a link member, then a member written through it."""
    path = _tar(tmp_path / "evil.tar", _link("d", str(tmp_path)), _file("d/pwned", b"!"))
    with pytest.raises(ArchiveError, match="a link"):
        archive.extract(path, tmp_path / "out")
    assert not (tmp_path / "pwned").exists()


def test_sizes_and_counts_are_bounded(tmp_path):
    path = _tar(tmp_path / "big.tar", _file("a", b"0" * 100), _file("b", b"0" * 100))
    with pytest.raises(ArchiveError, match="over the limit"):
        archive.extract(path, tmp_path / "o1", max_member_bytes=99)
    with pytest.raises(ArchiveError, match="over the limit"):
        archive.extract(path, tmp_path / "o2", max_total_bytes=150)
    with pytest.raises(ArchiveError, match="more than 1 members"):
        archive.extract(path, tmp_path / "o3", max_members=1)
    with pytest.raises(ArchiveError, match="not empty"):
        archive.extract(path, tmp_path)  # never into a folder that has files already


def test_an_archive_loads_only_with_the_hash_the_user_holds(tmp_path):
    path = tmp_path / "bench-xeon-0.1.0-abc.tar.gz"
    path.write_bytes(b"archive")
    digest = hashlib.sha256(b"archive").hexdigest()
    assert archive.held(path, digest.upper()) == digest
    with pytest.raises(ArchiveError, match="set BENCH_ARCHIVE_SHA256"):
        archive.held(path, None)
    with pytest.raises(ArchiveError, match="is not a sha256"):
        archive.held(path, "abc; rm -rf /")
    with pytest.raises(ArchiveError, match=f"its sha256 is {digest}, not the"):
        archive.held(path, "0" * 64)


def test_one_member_is_read_without_unpacking(tmp_path):
    path = _tar(tmp_path / "a.tar", _file("manifest.json", b'{"a": 1}'), _file("base.tar"))
    assert archive.read_member(path, "manifest.json") == b'{"a": 1}'
    with pytest.raises(ArchiveError, match="not a file of at most 3 bytes"):
        archive.read_member(path, "manifest.json", max_bytes=3)
    with pytest.raises(ArchiveError, match=r"has no other\.json"):
        archive.read_member(path, "other.json")


@pytest.mark.parametrize(
    ("text", "ok"),
    [("sha256:" + "a" * 64, True), ("sha256:" + "A" * 64, False), ("/:/host", False),
     ("sha256:" + "a" * 63, False), ("sha256:" + "a" * 64 + "\n", False), (None, False)],
)  # fmt: skip
def test_an_image_id_is_checked_before_docker_sees_it(text, ok):
    assert archive.is_image_id(text) is ok


def test_verify_reads_what_lies_beside_an_archive_with_bounds(tmp_path):
    """bench verify read a manifest whole (one linked to /dev/zero took every byte of
    memory), hashed a FIFO named X.tar for ever, and a deeply nested manifest raised."""
    fifo = tmp_path / "x.tar"
    os.mkfifo(fifo)
    (tmp_path / "x.manifest.json").write_text("{}")
    ok, said = archive.verify(fifo)
    assert not ok and said.startswith("UNREADABLE") and "not a regular file" in said
    tar = tmp_path / "y.tar"
    tar.write_bytes(b"tar")
    (tmp_path / "y.manifest.json").symlink_to("/dev/zero")
    ok, said = archive.verify(tar)
    assert not ok and "not a regular file" in said
    (tmp_path / "y.manifest.json").unlink()
    (tmp_path / "y.manifest.json").write_text("[" * 100_000 + "]" * 100_000)
    ok, said = archive.verify(tar)
    assert not ok and "is not a manifest" in said
    (tmp_path / "y.manifest.json").write_text(" " * (archive.MAX_MANIFEST_BYTES + 1))
    ok, said = archive.verify(tar)
    assert not ok and "larger than" in said
