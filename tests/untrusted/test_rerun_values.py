"""A rerun file's values reach a child only through the checks the command line's do: a
compiler named like an option ('--privileged' passed the name check and reached torch)
and a timeout no child can meet (1e-9 s: every point timed out) are one line, exit 2,
and no child."""

import json
from pathlib import Path

import pytest

from bench import result
from bench.cli import main
from bench.commands import rerun
from bench.config.run_config import RunConfig
from bench.result import Result
from bench.util.errors import UsageError
from tests.untrusted.test_local import _one_line


def _sent(folder: Path, **config) -> Path:
    """A result file whose config someone edited (its checksum dropped, as an editor's)."""
    path = result.create(Result(config=RunConfig(workload="tiny"), status="complete"), folder)
    data = json.loads(path.read_text())
    data.pop("integrity", None)
    data["config"].update(config)
    path.write_text(json.dumps(data))
    return path


@pytest.fixture
def reruns(monkeypatch):
    calls = []
    monkeypatch.setattr(rerun, "run_and_print", lambda config, *a, **k: calls.append(config))
    return calls


@pytest.mark.parametrize(("config", "said"), [
    ({"compilers": ["--privileged"]}, "compile: '--privileged' is not a compiler's name"),
    ({"compilers": ["inductor:-x"]}, "compile: 'inductor:-x' is not a compiler's name"),
    ({"timeout_s": 1e-9}, "config.timeout_s: expected seconds from 1 to 315,360,000"),
    ({"timeout_s": 0.5}, "config.timeout_s: expected seconds from 1 to 315,360,000"),
])  # fmt: skip
def test_a_rerun_file_value_the_command_line_refuses_is_refused_before_any_child(
    tmp_path, reruns, capsys, config, said
):
    path = _sent(tmp_path, **config)
    code = main(["rerun", str(path), "--output-dir", str(tmp_path / "out")])
    err = [
        line
        for line in capsys.readouterr().err.splitlines()
        if not line.startswith("bench: warning:")
    ]
    assert code == 2 and not reruns
    assert len(err) == 1 and said in _one_line(err[0]), err


@pytest.mark.parametrize("name", ["-x", "--privileged", "inductor:--mode"])
def test_a_compiler_name_may_not_start_with_a_dash(name):
    with pytest.raises(UsageError, match="is not a compiler's name"):
        RunConfig(workload="tiny", compilers=(name,))


def test_a_timeout_under_a_second_is_refused_by_the_config_itself():
    with pytest.raises(UsageError, match=r"timeout_s: 1e-09 is not allowed \(seconds from 1"):
        RunConfig(workload="tiny", timeout_s=1e-9)
    assert RunConfig(workload="tiny", timeout_s=1.0).timeout_s == 1.0
