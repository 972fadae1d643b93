"""The README's first commands, run as a new user runs them.

The commands are read from README.md itself: the first ```bash block of its Quickstart
and of its Install (without Docker) sections, so an edit that breaks one fails here.
They run in a fresh venv made for this test (nothing cached from an earlier run: no
venv, no pip cache, no results), with pip pinned by constraints.txt, in a fresh copy
of this checkout for `pip` and in an empty folder for the rest, each under a time
limit. A command this test cannot run is skipped with its reason printed: Docker's
unless a daemon answers, and never one that builds an image; nox's (the test suite
itself). Any other command fails the test until it is taught to run or skip it.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT

SECTIONS = ("Quickstart", "Install (without Docker)")
# Seconds a command may take here (2 cores): the install reads PyTorch from the local
# mirror (about 45 s); `bench suite quick` trains three small models (about 30 s alone,
# twice that beside another pytest-xdist worker, as nox -s tests runs it).
LIMIT_S = {"pip": 240, "bench": 180}
# What the copy of the checkout leaves out: what a fresh clone would not have.
_NOT_IN_A_CLONE = shutil.ignore_patterns(
    ".git", ".nox", ".venv", "__pycache__", "*.egg-info", ".pytest_cache", ".ruff_cache",
    ".mypy_cache",
)  # fmt: skip
_ROOT_ONLY = {"build", "dist", "results"}  # ignored at the top only (docs/results is kept)


def readme_commands(text: str) -> dict[str, list[list[str]]]:
    """Each section's first ```bash block, as argv lists: comments dropped, a line ending
    in a backslash joined to the next. A missing section or block is an error."""
    found = {}
    for section in SECTIONS:
        heading = f"\n## {section}\n"
        if heading not in text:
            raise AssertionError(f"README.md has no '## {section}' section")
        body = text.split(heading, 1)[1].split("\n## ", 1)[0]
        if "```bash\n" not in body:
            raise AssertionError(f"README.md has no ```bash block under '## {section}'")
        block = body.split("```bash\n", 1)[1].split("```", 1)[0]
        lines = block.replace("\\\n", " ").splitlines()
        found[section] = [argv for argv in (shlex.split(s, comments=True) for s in lines) if argv]
    return found


def docker_answers() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        done = subprocess.run(["docker", "info"], capture_output=True, timeout=15, check=False)
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0


def why_not_run(argv: list[str], docker: bool) -> str | None:
    """Why this test does not run a README command (None: it runs it)."""
    builds = "builds a Docker image (minutes, and not a test's to do); never run here"
    daemon = "" if docker else "; no Docker daemon answers here either"
    if argv[0] == "make":  # every target drives Docker through nox (Makefile)
        return f"{builds}{daemon}"
    if argv[0] == "nox":
        if any("build" in word or word == "base" for word in argv):
            return f"{builds}{daemon}"
        return (
            "a nox session: lint and tests are this test suite itself (nox -s lint tests runs it)"
        )
    if argv[0] == "docker":
        if argv[1:2] == ["build"]:
            return f"{builds}{daemon}"
        return None if docker else "no Docker daemon answers here"
    if argv[0] in ("pip", "bench"):
        return None
    raise AssertionError(
        f"README command {shlex.join(argv)!r} is new to tests/project/test_readme.py: teach it "
        "to run the command (with a time limit) or to skip it, with the reason"
    )


def test_the_readme_blocks_are_found_and_each_command_is_run_or_skipped_with_a_reason():
    """Cheap, in the fast tier with the rest: the blocks parse and nothing is left out."""
    commands = readme_commands((ROOT / "README.md").read_text())
    assert set(commands) == set(SECTIONS)
    for section, block in commands.items():
        assert block, section
        ran = [argv for argv in block if why_not_run(argv, docker=False) is None]
        assert any(argv[0] == "bench" for argv in ran), f"{section}: no bench command runs"
    # bench itself is installed as the README's install says: with the torch extra only.
    installs = [argv for block in commands.values() for argv in block if argv[0] == "pip"]
    own = [argv for argv in installs if any(word.startswith(".") for word in argv)]
    assert own and all(".[torch]" in argv for argv in own), installs


def _copy_checkout(to: Path) -> Path:
    def ignore(folder: str, names: list[str]) -> set[str]:
        top = _ROOT_ONLY if Path(folder) == ROOT else set()
        return set(_NOT_IN_A_CLONE(folder, names)) | (top & set(names))

    shutil.copytree(ROOT, to, ignore=ignore, symlinks=True)
    return to


@pytest.mark.readme
def test_the_readme_quickstart_and_install_run_verbatim_on_a_bare_install(tmp_path, capsys):
    commands = readme_commands((ROOT / "README.md").read_text())
    docker = docker_answers()
    checkout = _copy_checkout(tmp_path / "checkout")
    venv = tmp_path / "venv"
    said: list[str] = []
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
        # As if the venv were activated, with no other environment on PATH (a bench from
        # elsewhere would hide a missing install step) and none of bench's settings.
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("BENCH_", "PYTHON", "VIRTUAL_ENV", "CONDA"))}  # fmt: skip
        env.update(
            PATH=os.pathsep.join([str(venv / "bin"), "/usr/local/bin", "/usr/bin", "/bin"]),
            VIRTUAL_ENV=str(venv),
            PIP_CONSTRAINT=str(checkout / "constraints.txt"),  # the versions the tests pin
            PIP_NO_CACHE_DIR="1",
            PIP_DISABLE_PIP_VERSION_CHECK="1",
        )
        for section, block in commands.items():
            empty = tmp_path / f"work-{len(said)}"
            empty.mkdir()
            for argv in block:
                line = shlex.join(argv)
                reason = why_not_run(argv, docker)
                if reason is not None:
                    said.append(f"README {section}: skipped `{line}`: {reason}")
                    continue
                program = shutil.which(argv[0], path=env["PATH"])
                assert (program and Path(program).is_relative_to(venv)) or argv[0] == "docker", (
                    f"`{line}`: {argv[0]} is not in the venv ({program}): an install step is "
                    "missing from the README"
                )
                limit = LIMIT_S.get(argv[0], 60)
                started = time.monotonic()
                try:
                    done = subprocess.run(
                        argv, cwd=checkout if argv[0] == "pip" else empty, env=env,
                        capture_output=True, text=True, timeout=limit,
                    )  # fmt: skip
                except subprocess.TimeoutExpired:
                    pytest.fail(f"README {section}: `{line}` took over {limit} s")
                took = time.monotonic() - started
                said.append(f"README {section}: ran `{line}` in {took:.0f} s")
                output = done.stdout + done.stderr
                assert done.returncode == 0, f"`{line}` exited {done.returncode}:\n{output[-3000:]}"
                assert "Traceback" not in output, f"`{line}`:\n{output[-3000:]}"
    finally:
        with capsys.disabled():
            print("", *said, sep="\n")
        shutil.rmtree(venv, ignore_errors=True)  # gigabytes: not kept for pytest's last runs
