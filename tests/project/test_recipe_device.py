"""The recipe "add a device" (docs/contributing.md, docs/architecture.md's "Where to
add"), followed to the letter: one new module in bench/platforms/ of a copy of bench,
a Platform (here the host CPU under another name), and nothing else. Discovery lists
it, `--device NAME` chooses it, and a point trains one step through it in its own child
process (which imports the copy too)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

PLATFORM = '''"""The host CPU under another name: a platform written from the recipe."""

from bench.platforms.cpu import CpuPlatform


class WidgetPlatform(CpuPlatform):
    name = "widget"
    auto_priority = -1  # --device auto keeps the real CPU


PLATFORM = WidgetPlatform()
'''


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("recipe")
    shutil.copytree(ROOT / "bench", root / "bench", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "bench" / "platforms" / "widget.py").write_text(PLATFORM)
    return root


def _bench(copy: Path, *args: str) -> subprocess.CompletedProcess:
    """The copy's bench as a user runs it; its children inherit PYTHONPATH."""
    return subprocess.run(
        [sys.executable, "-m", "bench", *args],
        cwd=copy,
        env={**os.environ, "PYTHONPATH": str(copy)},
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_new_platform_is_listed(copy):
    done = _bench(copy, "list")
    assert done.returncode == 0, done.stderr
    assert any(line.split()[1:2] == ["widget"] for line in done.stdout.splitlines())


def test_an_unknown_device_is_offered_the_new_one(copy):
    done = _bench(copy, "run", "tiny", "--device", "widgit")
    assert done.returncode == 2
    assert "unknown device 'widgit' (did you mean 'widget'?)" in done.stderr


@pytest.mark.slow  # a real run in a child: the full tier's
def test_device_name_trains_a_step_through_it(copy, tmp_path):
    one_step = ("--steps", "1", "--warmup-steps", "0", "--batch-size", "8")
    done = _bench(
        copy, "run", "tiny", "--device", "widget", *one_step, "--output-dir", str(tmp_path)
    )
    assert done.returncode == 0, done.stderr
    (path,) = tmp_path.glob("*.json")
    result = json.loads(path.read_text())
    (point,) = result["points"]
    assert result["config"]["device"] == "widget"
    assert point["status"] == "ok" and len(point["step_times_s"][0]) == 1


def test_bench_run_help_sends_to_the_list_that_names_the_new_device(copy):
    """The --device help names no platform by hand (it would miss the new one): it
    points to `bench list`, which lists it (test above)."""
    done = _bench(copy, "run", "--help")
    assert "a device that `bench list` lists" in " ".join(done.stdout.split())
