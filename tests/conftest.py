import json
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"


def run_bench(
    *args: str, cwd: Path | None = None, timeout: float = 600
) -> subprocess.CompletedProcess:
    """bench as a user runs it: a separate process, its real exit status and output."""
    return subprocess.run(
        [sys.executable, "-m", "bench", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
    )


def only_result(directory: Path) -> dict:
    files = list(directory.glob("*.json"))
    assert len(files) == 1, files
    return json.loads(files[0].read_text())


@pytest.fixture
def fixture_v1() -> Path:
    return DATA / "result-v1.json"
