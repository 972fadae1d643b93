"""Every command of `bench --help` on a bare install (`pip install '.[torch]'`): what
needs an extra says which, in one line; nothing ends in a traceback.

The bare install is simulated: a sitecustomize.py on PYTHONPATH makes every optional
module that bench[torch] does not bring unimportable in bench and in every child it
starts (`sys.modules[name] = None`: `import` fails, `find_spec` says None), so this runs
in the test environment in seconds. tests/project/test_readme.py does it for real, in a fresh
venv with only bench[torch] installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import registry
from bench.cli import build_parser, commands
from tests.conftest import ROOT

# What `pip install '.[torch]'` does not bring.
HIDDEN = sorted(module for module, extra in registry.EXTRAS.items() if extra != "torch")
SMALL = ("--device", "cpu", "--steps", "2", "--warmup-steps", "1")

# bench COMMAND ... on a bare install: (argv, exit status, what it must say). {result}
# is a result file of `bench tiny` made on the bare install; {tmp} an empty folder.
AUDIT: dict[str, tuple[list[str], int, str]] = {
    "run": (["run", "tiny", *SMALL], 0, "result: "),
    "list": (["list"], 0, "'bench[zoo]')"),  # nasnet-large: listed, marked
    "show": (["show", "{result}"], 0, "samples/s"),
    "rerun": (["rerun", "{result}"], 0,
              "drift: no verdict here (the drift verdict needs scipy: pip install "
              "'bench[report]'"),
    "collect": (["collect", "{result}", "-o", "{tmp}/summary"], 2,
                "bench collect needs pandas, tabulate: pip install 'bench[report]'"),
    "compare": (["compare", "{result}"], 0, "throughput"),
    "report": (["report", "{result}"], 2,
               "bench report needs altair, vl_convert: pip install 'bench[report]'"),
    "diff": (["diff", "{result}", "{result}"], 2,
             "bench diff needs scipy: pip install 'bench[report]'"),
    "verify": (["verify", "{result}"], 0, ": ok"),
    "suite": (["suite", "list"], 0, "quick: "),  # bench suite quick: tests/project/test_readme.py
    # The climb skips each rung whose library is missing (bench.search.ladder); its torch.compile
    # rung takes minutes on 2 cores: the parse and checks only here.
    "ladder": (["ladder", "tiny", "--compile"], 2, "--compile: the ladder sets it"),
    "tune": (["tune", "tiny", "--budget", "30s", "--device", "cpu"], 0, "not ranked: could not"),
    "fleet": (["fleet", "plan", str(ROOT / "fleets" / "xeon-vs-a10g.toml")], 2,
              "bench fleet plan needs yaml: pip install 'bench[fleet]'"),
    # The pipeline timed alone needs torch and Pillow, both in bench[torch]: a dataset
    # that is not there is refused in one line (tests/commands/test_loader.py times one).
    "loader": (["loader", "tiny", "--data", "imagenet:{tmp}/missing"], 2, "data: "),
}  # fmt: skip


def bare_env(root: Path) -> dict[str, str]:
    """The environment of a bench that sees none of HIDDEN (nor do its children)."""
    site = root / "bare-site"
    site.mkdir(parents=True, exist_ok=True)
    (site / "sitecustomize.py").write_text(
        "import sys\n"
        f"for _name in {HIDDEN!r}:\n"
        "    if _name not in sys.modules:\n"
        "        sys.modules[_name] = None\n"
    )
    return {**os.environ, "PYTHONPATH": str(site), "COLUMNS": "200"}


def bare_bench(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bench", *args],
        capture_output=True, text=True, cwd=cwd, env=env, timeout=300,
    )  # fmt: skip


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], Path, Path]:
    """The bare environment, a folder to run in, and a result made there."""
    root = tmp_path_factory.mktemp("bare")
    env = bare_env(root)
    work = root / "work"
    work.mkdir()
    done = bare_bench("tiny", *SMALL, env=env, cwd=work)
    assert done.returncode == 0, done.stderr
    (made,) = (work / "results").glob("*.json")
    return env, work, made


def test_the_simulated_bare_install_hides_the_extras(bare):
    env, work, _ = bare
    probe = (
        "import importlib.util as u, json; print(json.dumps({m: bool(u.find_spec(m)) for m in %r}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe % ([*HIDDEN, "torch", "torchvision"])],
        capture_output=True, text=True, env=env, cwd=work, check=True,
    )  # fmt: skip
    seen = json.loads(done.stdout)
    assert not any(seen[m] for m in HIDDEN) and seen["torch"] and seen["torchvision"]


def test_the_audit_covers_every_command_of_bench_help():
    parser = build_parser()
    listed = next(a for a in parser._actions if a.dest == "command").choices
    assert set(listed) == set(commands(parser)) == set(AUDIT)


@pytest.mark.parametrize("command", list(AUDIT))
def test_a_command_on_a_bare_install_runs_or_names_its_extra_in_one_line(bare, command, tmp_path):
    env, work, made = bare
    args, status, said = AUDIT[command]
    argv = [a.format(result=made, tmp=tmp_path) for a in args]
    done = bare_bench(*argv, env=env, cwd=work)
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    assert done.returncode == status, done.stderr
    if status == 2:
        assert done.stderr.strip() == f"bench: error: {said}" or (
            len(done.stderr.strip().splitlines()) == 1 and said in done.stderr
        ), done.stderr
    else:
        assert said in " ".join((done.stdout + done.stderr).split()), done.stdout


def test_running_a_workload_whose_library_is_missing_is_one_line_exit_2(bare, tmp_path):
    env, _, _ = bare
    done = bare_bench("nasnet-large", *SMALL, "--output-dir", str(tmp_path), env=env, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        "bench: error: nasnet-large (torch) needs timm: pip install 'bench[zoo]'"
    )
    assert not list(tmp_path.glob("*.json"))  # refused before anything ran


@pytest.mark.parametrize("framework", ["tensorflow", "jax"])
def test_a_framework_that_is_not_installed_is_named_with_its_extra(bare, framework, tmp_path):
    env, _, _ = bare
    done = bare_bench("tiny", "--framework", framework, env=env, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"pip install 'bench[{framework}]'" in done.stderr
