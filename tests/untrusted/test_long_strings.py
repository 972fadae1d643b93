"""Strings just under the reader's bound (256 KiB a string) where bench shows them: a
label of 240 KB held `bench report` past 100 s in the chart renderer and `bench compare`
printed it as one line. A label is read by --label's rule (1 to 80 printable
characters); a CPU model, hostname or framework version, which no option sets, is cut
where it is shown."""

import copy
import json
import time
from pathlib import Path

import pytest

from bench import result
from bench.cli import main
from bench.commands import run_options
from bench.config.bounds import LABEL_MOST, MAX_TEXT
from bench.result import ResultError
from bench.util.errors import UsageError
from tests.conftest import DATA

LONG = 240_000  # under MAX_TEXT, as a hostile file is built to pass the reader's bounds
V16 = json.loads((DATA / "result-v16.json").read_text())
V16.pop("integrity")  # a file someone built: its checksum does not match, a warning


def hostile(folder: Path, count: int, *, label: str | None = None, environment: bool = False):
    """`count` files of the v16 fixture, each with `label` and, with `environment`, a
    CPU model, hostname and torch, torchvision and numpy versions of LONG characters."""
    assert LONG < MAX_TEXT
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        doc = copy.deepcopy(V16)
        doc["label"] = label
        doc["started"] = f"2026-01-{i + 1:02d}T00:00:00+00:00"
        if environment:
            env = doc["environment"]
            env["cpu"]["model"] = f"cpu{i} " + "C" * LONG
            env["host"]["hostname"] = f"h{i}" + "H" * LONG
            for name in ("torch", "torchvision", "numpy"):
                env["framework"][name] = f"{i}." + "T" * LONG
        (folder / f"r{i}.json").write_text(json.dumps(doc))
    return folder


def test_a_label_of_240_kb_is_refused_on_load_by_the_rule_of_label(tmp_path):
    path = hostile(tmp_path, 1, label="L" * LONG) / "r0.json"
    started = time.monotonic()
    with pytest.raises(ResultError) as refused:
        result.load(path)
    assert time.monotonic() - started < 5
    said = str(refused.value)
    assert "result.label: expected 1 to 80 printable characters, or null, found" in said
    assert len(said) < 300 + len(str(path))


@pytest.mark.parametrize(("label", "loads"), [
    ("x" * LABEL_MOST, True), ("x" * (LABEL_MOST + 1), False), ("a\x1b[2Jb", False),
    ("   ", False), ("", False), ("before", True),
])  # fmt: skip
def test_the_reader_takes_the_labels_label_takes(tmp_path, label, loads):
    path = hostile(tmp_path, 1, label=label) / "r0.json"
    if loads:
        assert result.load(path).label == label
        assert run_options.parse_run(["tiny", "--label", label]).label == label
    else:
        with pytest.raises(ResultError, match=r"result\.label: expected 1 to 80 printable"):
            result.load(path)
        with pytest.raises(UsageError, match="is not 1 to 80 printable characters"):
            run_options.parse_run(["tiny", "--label", label])


def test_compare_over_such_files_prints_no_long_line(tmp_path, capsys):
    """The label is refused in one short line; CPU models, hostnames and versions are cut
    where shown."""
    folder = hostile(tmp_path / "env", 3, label="L" * 80, environment=True)
    hostile(tmp_path / "env" / "label", 1, label="L" * LONG)
    main(["compare", str(folder)])
    out = capsys.readouterr()
    lines = (out.out + out.err).splitlines()
    assert lines and max(map(len, lines)) < 2000, max(map(len, lines))
    assert any("result.label: expected 1 to 80 printable characters" in line for line in lines)


@pytest.mark.full
def test_report_over_30_such_files_ends_within_what_security_md_promises(tmp_path):
    """docs/security.md: 30 files at the reader's bounds (CPU model, hostname and
    versions of 240 KB each) reported in 12 to 18 s on 2 cores; the bound here leaves room
    for a busy machine."""
    folder = hostile(tmp_path / "env", 30, label="L" * 80, environment=True)
    started = time.monotonic()
    assert main(["report", str(folder), "-o", str(tmp_path / "out")]) == 0
    assert time.monotonic() - started < 60
