"""The cache of result files already checked (bench.result.checked): a second read of a
folder skips the checks of the bytes that passed them, and of nothing else."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from bench import result
from bench.cli import main
from bench.report.collect import load_all
from bench.result import checked, integrity, io
from bench.result.validate import validate
from tests.conftest import DATA
from tests.untrusted.test_local import OTHER_UID, as_root

FIXTURES = ("result-v1.json", "result-v20.json", "tiny-cpu.json", "moe-tiny-cpu.json")


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """The user's cache home in tmp_path; the cache file's path."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "bench" / "checked" / checked.NAME


@pytest.fixture
def results(tmp_path) -> Path:
    """A folder of results: an old schema (migrated on every load), current ones sealed
    'ok', and one edited after bench wrote it."""
    folder = tmp_path / "results"
    folder.mkdir()
    for name in FIXTURES:
        shutil.copy(DATA / name, folder / name)
    edited = json.loads((DATA / "tiny-cpu.json").read_text())
    edited["points"][0]["step_times_s"][0][0] *= 2  # a figure changed, the checksum kept
    (folder / "edited.json").write_text(json.dumps(edited, indent=1))
    return folder


@pytest.fixture
def validated(monkeypatch) -> list[int]:
    """How many documents were validated, and their checksums computed: one each."""
    calls = [0, 0]

    def counting_validate(data):
        calls[0] += 1
        return validate(data)

    def counting_digest(data):
        calls[1] += 1
        return digest(data)

    digest = integrity.digest
    monkeypatch.setattr(io, "validate", counting_validate)
    monkeypatch.setattr(integrity, "digest", counting_digest)
    return calls


def _loaded(folder: Path) -> dict[str, tuple[dict, str]]:
    """Each file's Result as JSON, and its integrity verdict."""
    return {path.name: (res.to_json(), res.integrity) for path, res in load_all([folder])}


def _uncached(folder: Path, validated: list[int] | None = None) -> dict[str, tuple[dict, str]]:
    """_loaded, each file read alone by result.load (no cache), uncounted in `validated`."""
    counted = list(validated or [])
    found = {
        path.name: (res.to_json(), res.integrity)
        for path in sorted(folder.iterdir())
        for res in [result.load(path)]
    }
    if validated is not None:
        validated[:] = counted
    return found


def _keys(cache: Path) -> set[str]:
    return {line.split(" ")[0] for line in cache.read_text().splitlines()[1:]}


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_second_load_skips_the_checks_and_gives_the_same_results(
    cache, results, validated, capsys
):
    first = _loaded(results)
    assert validated == [5, 4]  # five documents; the v1 file has no checksum to compute
    assert cache.is_file() and _keys(cache) == {_sha(p) for p in results.iterdir()}
    warned = capsys.readouterr().err
    validated[:] = [0, 0]
    second = _loaded(results)
    assert validated == [0, 0]  # nothing checked again
    assert "edited.json was changed after bench wrote it" in warned
    assert capsys.readouterr().err == warned  # said again, from the cached verdict
    assert second == first == _uncached(results)
    assert first["edited.json"][1] == integrity.EDITED and first["result-v1.json"][1] == "absent"


def test_the_cache_file_is_the_user_s_alone(cache, results):
    load_all([results])
    assert os.stat(cache.parent).st_mode & 0o777 == 0o700
    assert os.stat(cache).st_uid == os.geteuid()


def test_a_file_changed_by_one_byte_after_it_was_checked_is_checked_again(cache, results):
    load_all([results])
    path = results / "tiny-cpu.json"
    text = path.read_text()
    assert text.count('"batch_size": 16') == 1
    path.write_text(text.replace('"batch_size": 16', '"batch_size": 10', 1))  # still valid
    assert load_all([results])  # now the cache knows these bytes too
    path.write_text(text.replace('"batch_size": 16', '"batch_size": -6', 1))  # invalid
    unreadable: list[tuple[Path, str]] = []
    loaded = load_all([results], unreadable)
    assert [p.name for p, _ in unreadable] == ["tiny-cpu.json"]
    assert "batch_size" in unreadable[0][1] and len(loaded) == 4


def test_a_file_that_failed_its_checks_is_refused_again(cache, results):
    bad = json.loads((DATA / "tiny-cpu.json").read_text())
    bad["points"][0]["batch_size"] = -6
    (results / "bad.json").write_text(json.dumps(bad))
    hostile = results / "hostile.json"
    hostile.write_text("[" * 200 + "]" * 200)  # deeper than the bounds allow
    for _ in range(2):
        unreadable: list[tuple[Path, str]] = []
        load_all([results], unreadable)
        assert sorted(p.name for p, _ in unreadable) == ["bad.json", "hostile.json"]
        assert "nested deeper than" in dict(unreadable)[hostile]
        assert not _keys(cache) & {_sha(results / "bad.json"), _sha(hostile)}


def test_verdicts_of_other_code_are_not_trusted(cache, results, validated, monkeypatch):
    load_all([results])
    old = cache.read_text()
    monkeypatch.setattr(checked, "fingerprint", lambda: "0" * 64)  # another bench's checks
    validated[:] = [0, 0]
    assert _loaded(results) == _uncached(results, validated)
    assert validated == [5, 4]
    assert cache.read_text() != old and cache.read_text().startswith(checked.HEADER + "0" * 64)


def test_a_byte_of_the_checking_code_changed_is_another_fingerprint(tmp_path):
    root = tmp_path / "bench"
    for package in checked.FINGERPRINTED:
        shutil.copytree(Path(checked.__file__).parent.parent / package, root / package)
    before = checked.code_fingerprint(root)
    assert before is not None and before == checked.code_fingerprint(root)
    source = root / "result" / "validate.py"
    source.write_bytes(source.read_bytes().replace(b"MAX_ITEMS", b"MAX_ITEMz", 1))
    assert checked.code_fingerprint(root) not in (before, None)
    shutil.rmtree(root / "config")
    assert checked.code_fingerprint(root) is None  # source not found: no cache


@pytest.mark.parametrize("damage", ["garbage", "truncated", "malformed", "oversized"])
def test_a_damaged_cache_file_is_ignored(cache, results, validated, monkeypatch, damage):
    load_all([results])
    header, *lines = cache.read_text().splitlines()
    if damage == "garbage":
        content = b"\x00\xff garbage \xfe" * 100
    elif damage == "truncated":  # as a disk full or a crash might leave it
        content = "\n".join([header, lines[0], lines[1][:40]]).encode()
    elif damage == "malformed":  # every line of a wrong shape, one of them for a terminal
        keys = [line.split(" ")[0] for line in lines]
        wrong = [f"{lines[0]} extra", keys[1], lines[2].replace(" ", "  "), f"{keys[3]} fine",
                 lines[4][1:], lines[0].replace(" ", "\t"), "\x1b[31m red \x1b[0m"]  # fmt: skip
        content = "\n".join([header, *wrong]).encode()
    else:
        content = cache.read_bytes()
        monkeypatch.setattr(checked, "MAX_BYTES", len(content) - 1)  # its last newline over
    cache.write_bytes(content)
    validated[:] = [0, 0]
    trusted = checked.Checked.open()._known
    assert _loaded(results) == _uncached(results, validated)
    assert len(trusted) == (damage == "truncated")  # its one whole line, no more
    assert validated[0] == 5 - len(trusted)


@pytest.mark.parametrize("how", ["others may write it", "a link", "a file"])
def test_an_unsafe_cache_folder_is_not_used(cache, results, validated, tmp_path, how):
    folder = cache.parent
    folder.parent.mkdir(parents=True)
    if how == "a link":
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        folder.symlink_to(tmp_path / "elsewhere")
    elif how == "a file":
        folder.write_text("")
    else:
        folder.mkdir()
        folder.chmod(0o770)
    for _ in range(2):
        validated[:] = [0, 0]
        assert _loaded(results) == _uncached(results, validated)  # read, without the cache
        assert validated == [5, 4]
    assert checked.Checked.open().path is None
    assert not (tmp_path / "elsewhere" / checked.NAME).exists()
    assert not (folder.is_dir() and (folder / checked.NAME).exists())


@as_root
def test_a_cache_folder_of_another_user_is_not_used(cache, results, validated):
    load_all([results])
    os.chown(cache.parent, OTHER_UID, OTHER_UID)  # theirs now: they could plant verdicts
    validated[:] = [0, 0]
    assert _loaded(results) == _uncached(results, validated)
    assert validated == [5, 4]
    os.chown(cache.parent, 0, 0)
    os.chown(cache, OTHER_UID, OTHER_UID)  # the folder mine, the file another's
    assert checked.Checked.open()._known == {}


def test_without_a_cache_home_files_are_read_without_a_cache(results, validated, monkeypatch):
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", "relative")  # no absolute home: no cache home
    for _ in range(2):
        validated[:] = [0, 0]
        assert _loaded(results) == _uncached(results, validated)
        assert validated == [5, 4]


def test_a_cache_that_cannot_be_written_fails_nothing(cache, results, monkeypatch):
    def full(path, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(checked.files, "replace", full)
    assert _loaded(results) == _uncached(results)
    assert not cache.exists()


def test_past_its_bound_the_cache_drops_the_oldest(cache, results, monkeypatch):
    monkeypatch.setattr(checked, "MAX_ENTRIES", 2)
    for name in ("edited.json", "moe-tiny-cpu.json", "tiny-cpu.json", "moe-tiny-cpu.json"):
        load_all([results / name])
    assert _keys(cache) == {_sha(results / "moe-tiny-cpu.json"), _sha(results / "tiny-cpu.json")}


def test_validation_only_checks(results):
    """What the cache relies on: validate changes nothing of a document, so skipping it
    gives the same Result."""
    for path in results.iterdir():
        data = result.read_document(path)
        data = io.migrate(data, data["schema_version"])
        before = copy.deepcopy(data)
        assert validate(data) is data and data == before


def test_bench_verify_never_trusts_the_cache(cache, results, capsys):
    """A verdict planted in the cache (as only its owner could) is believed by a report,
    never by bench verify, which always computes the checksum again, nor by the readers
    of one file (result.load: a run's resume, rerun, diff)."""
    edited = results / "edited.json"
    load_all([results])
    lines = cache.read_text().replace(f"{_sha(edited)} edited", f"{_sha(edited)} ok")
    cache.write_text(lines)
    assert dict(load_all([results]))[edited].integrity == integrity.OK  # the planted verdict
    capsys.readouterr()
    assert main(["verify", str(edited), str(results)]) == 1
    said = capsys.readouterr().out.splitlines()
    assert sum(f"{edited}: EDITED" in line for line in said) == 2
    assert result.load(edited).integrity == integrity.EDITED
