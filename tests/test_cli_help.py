"""Golden --help texts and exit codes: moving code between modules changes neither.

Regenerate after a deliberate change: BENCH_GOLDEN=write python -m pytest tests/test_cli_help.py
"""

from __future__ import annotations

import os

import pytest

from bench.cli import main
from tests.conftest import DATA

GOLDEN = DATA / "help"
COMMANDS = (
    "run", "list", "show", "rerun", "suite", "ladder", "tune", "collect", "compare", "report",
    "diff", "verify", "fleet", "loader",
)  # fmt: skip
FLEET_ACTIONS = ("plan", "launch", "status", "down", "collect")
HELPS = [(), *((c,) for c in COMMANDS), *(("fleet", a) for a in FLEET_ACTIONS)]
BAD = {
    "no-command": [],
    "typo": ["shw", "x"],
    "bad-option": ["run", "--no-such-option"],
    "bad-batch": ["run", "mlp", "--batch-size", "x"],
    "show-nothing": ["show"],
    "fleet-no-action": ["fleet"],
    "rerun-missing": ["rerun", "/nonexistent/result.json"],
}


def _call(argv: list[str], capsys) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def _compare(name: str, text: str) -> None:
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("BENCH_GOLDEN") == "write":
        path.write_text(text)
    assert text == path.read_text(), f"{path} differs"


@pytest.fixture(autouse=True)
def _columns(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")


@pytest.mark.parametrize("words", HELPS, ids=lambda w: "-".join(w) or "bench")
def test_help_text_is_unchanged(words, capsys):
    code, out, err = _call([*words, "--help"], capsys)
    _compare("-".join(words) or "bench", f"exit {code}\n{out}{err}")


@pytest.mark.parametrize("name", BAD)
def test_bad_input_exit_code_is_unchanged(name, capsys):
    code, _, err = _call(BAD[name], capsys)
    _compare(f"bad-{name}", f"exit {code}\n{err}")


def test_every_command_of_bench_help_has_its_golden_help():
    """A new command is pinned too: it needs its name here and its text recorded."""
    from bench.cli import build_parser

    parser = build_parser()
    listed = next(a for a in parser._actions if a.dest == "command").choices
    assert set(listed) == set(COMMANDS)
    assert all((GOLDEN / f"{c}.txt").is_file() for c in COMMANDS)
