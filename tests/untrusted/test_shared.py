"""Folders another local user can reach first: a compiler's cache (torch.compile's
Inductor runs the Python it finds in TORCHINDUCTOR_CACHE_DIR, by default
/tmp/torchinductor_<user>) and the report's output folder (a link planted at
results/report leads bench's writes into a folder of the victim's)."""

import dataclasses
import io
import os
import subprocess
import sys
import tempfile
import types
from pathlib import Path
from typing import ClassVar

import pytest

from bench import result
from bench.cli import main
from bench.config.run_config import RunConfig
from bench.run import compiler_cache
from bench.run.launchers import process, torchrun
from bench.util.errors import UsageError
from tests.untrusted.test_local import OTHER_UID, _one_line, as_root

# --- item 1: compiler caches ------------------------------------------------------------


class _Exited:
    """Stands in for subprocess.Popen: records the environment a child is given, and the
    child exits at once without a word (the launcher then reports an error point)."""

    envs: ClassVar[list[dict[str, str]]] = []

    def __init__(self, args, **kwargs):
        self.envs.append(kwargs["env"])
        self.pid, self.returncode = os.getpid(), 1
        self.stdin, self.stdout = io.StringIO(), io.StringIO()

    def wait(self, timeout=None):
        return 1

    def kill(self):
        pass

    def send_signal(self, signum):
        pass


@pytest.fixture
def child_env(monkeypatch, tmp_path):
    """The environment each launcher gives its child, with this process's environment
    as a user's shell would set it: HOME and XDG_CACHE_HOME in tmp_path, TMPDIR a folder
    anyone may write (as /tmp is), no cache variable of its own."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home" / ".cache"))
    shared_tmp = tmp_path / "tmp"
    shared_tmp.mkdir(mode=0o777)
    shared_tmp.chmod(0o1777)
    monkeypatch.setenv("TMPDIR", str(shared_tmp))
    for name in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "JAX_COMPILATION_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    launching = types.SimpleNamespace(**{**vars(subprocess), "Popen": _Exited})
    for launcher in (process, torchrun):  # their Popen alone: PyTorch's own calls go on
        monkeypatch.setattr(launcher, "subprocess", launching)
    _Exited.envs = []
    point = next(iter(RunConfig(workload="tiny").points()))

    def launched(launcher: str) -> dict[str, str]:
        if launcher == "process":
            process.spawn_worker(point, "measure", lambda *a: None)
        else:
            torchrun.spawn_ranks(dataclasses.replace(point, devices=2), "measure", lambda *a: None)
        return _Exited.envs[-1]

    return launched


def _private(folder: str) -> bool:
    st = os.lstat(folder)
    return os.path.isabs(folder) and st.st_mode & 0o777 == 0o700 and st.st_uid == os.geteuid()


@pytest.mark.parametrize("launcher", ["process", "torchrun"])
def test_every_child_gets_compiler_caches_only_the_user_can_write(child_env, launcher, tmp_path):
    env = child_env(launcher)
    caches = tmp_path / "home" / ".cache" / "bench" / "compile"
    assert env["TORCHINDUCTOR_CACHE_DIR"] == str(caches / "inductor")
    assert env["TRITON_CACHE_DIR"] == str(caches / "triton")
    # Inductor's precompiled headers go to TMPDIR/torchinductor_<user> whatever the rest
    # says: the shared TMPDIR is replaced by a private one
    assert env["TMPDIR"] == str(caches / "tmp")
    assert all(_private(env[n]) for n in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "TMPDIR"))
    assert "JAX_COMPILATION_CACHE_DIR" not in env  # bench never turns JAX's cache on


@as_root
@pytest.mark.slow  # a real run in a child: the full tier's
def test_pytorch_in_a_child_never_uses_a_cache_folder_another_user_planted(child_env, tmp_path):
    """The issue's attack: another user makes TMPDIR/torchinductor_<user> (0777) first.
    PyTorch, in the environment bench gives its child, looks elsewhere for everything."""
    pytest.importorskip("torch")
    planted = tmp_path / "tmp" / "torchinductor_root"
    planted.mkdir(mode=0o777)
    planted.chmod(0o777)
    os.chown(planted, OTHER_UID, OTHER_UID)
    env = child_env("process")
    asked = subprocess.run(
        [sys.executable, "-c", "from torch._inductor.runtime.cache_dir_utils import cache_dir, "
         "default_cache_dir, triton_cache_dir; print(cache_dir()); print(default_cache_dir()); "
         "print(triton_cache_dir(0))"],
        env=env, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert len(asked) == 3 and not any(str(planted) in path for path in asked), asked
    assert all(path.startswith(str(tmp_path / "home" / ".cache" / "bench")) for path in asked)
    assert os.listdir(planted) == []


def _planted(tmp_path: Path, how: str) -> Path:
    """A cache folder another user could write: open to all, a link, or another user's."""
    victim = tmp_path / "victim"
    victim.mkdir(exist_ok=True)
    folder = tmp_path / f"cache-{how}"
    if how == "mode 0777":
        folder.mkdir()
        folder.chmod(0o777)
    elif how == "a link":
        folder.symlink_to(victim)
    elif how == "another user's":
        folder.mkdir(mode=0o700)
        os.chown(folder, OTHER_UID, OTHER_UID)
    elif how == "in a folder open to all":
        (tmp_path / "open").mkdir()
        (tmp_path / "open").chmod(0o777)
        folder = tmp_path / "open" / "cache"
        folder.mkdir(mode=0o700)
    return folder


WHAT_IS_WRONG = {
    "mode 0777": "can be written by others (mode 0777)",
    "a link": "is a link",
    "another user's": f"belongs to uid {OTHER_UID}",
    "in a folder open to all": "which others can write (mode 0777, not sticky)",
}


@as_root
@pytest.mark.parametrize("how", list(WHAT_IS_WRONG))
@pytest.mark.parametrize(
    "name", ["TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "JAX_COMPILATION_CACHE_DIR"]
)
def test_a_cache_folder_another_user_could_write_is_refused_in_one_line(
    child_env, monkeypatch, tmp_path, how, name
):
    folder = _planted(tmp_path, how)
    monkeypatch.setenv(name, str(folder))
    with pytest.raises(UsageError) as refused:
        child_env("process")
    said = _one_line(str(refused.value))
    assert said.startswith(f"{name}: {folder} ") and WHAT_IS_WRONG[how] in said
    assert f"give {name} a folder of your own (mode 0700), or unset it" in said
    assert _Exited.envs == []  # no child started
    assert os.listdir(tmp_path / "victim") == []


@pytest.mark.parametrize("launcher", ["process", "torchrun"])
def test_a_user_s_own_cache_folders_are_kept_and_a_shared_tmpdir_replaced(
    child_env, monkeypatch, tmp_path, launcher
):
    mine = {"TORCHINDUCTOR_CACHE_DIR": tmp_path / "mine" / "inductor",
            "TRITON_CACHE_DIR": tmp_path / "mine" / "triton",
            "JAX_COMPILATION_CACHE_DIR": tmp_path / "mine" / "jax"}  # fmt: skip
    for name, folder in mine.items():
        folder.mkdir(parents=True, mode=0o755)
        folder.chmod(0o755)  # readable by others, written by no one else: fine
        monkeypatch.setenv(name, str(folder))
    env = child_env(launcher)
    assert {name: env[name] for name in mine} == {n: str(f) for n, f in mine.items()}
    # TMPDIR, open to all as /tmp is, holds Inductor's precompiled headers: replaced
    assert env["TMPDIR"] == str(tmp_path / "home" / ".cache" / "bench" / "compile" / "tmp")
    (tmp_path / "mine" / "tmp").mkdir(mode=0o700)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "mine" / "tmp"))  # the user's own: kept
    assert child_env(launcher)["TMPDIR"] == str(tmp_path / "mine" / "tmp")


def test_a_planted_link_in_bench_s_own_cache_folder_is_refused(child_env, tmp_path):
    caches = tmp_path / "home" / ".cache" / "bench" / "compile"
    caches.mkdir(parents=True)
    (tmp_path / "victim").mkdir()
    (caches / "inductor").symlink_to(tmp_path / "victim")
    with pytest.raises(UsageError) as refused:
        child_env("process")
    said = _one_line(str(refused.value))
    assert said.startswith(f"compiler cache: {caches / 'inductor'} is a link; ")
    assert "remove it (bench makes it again, 0700)" in said


def test_without_a_cache_home_children_share_a_private_temporary_folder(
    child_env, monkeypatch, tmp_path
):
    """Docker as a user without a home (HOME=/, not writable): a fresh 0700 folder."""
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "a-file"))  # nothing below a file
    monkeypatch.setattr(compiler_cache, "_fallback", None)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    first, second = child_env("process"), child_env("torchrun")
    root = Path(first["TORCHINDUCTOR_CACHE_DIR"]).parent
    assert root.parent == tmp_path / "tmp" and root.name.startswith("bench-compile-")
    assert _private(str(root)) and _private(first["TORCHINDUCTOR_CACHE_DIR"])
    assert first["TRITON_CACHE_DIR"] == str(root / "triton") and first["TMPDIR"] == str(
        root / "tmp"
    )
    assert {n: second[n] for n in compiler_cache.FOLDERS} == {
        n: first[n] for n in compiler_cache.FOLDERS
    }


@as_root
def test_a_run_is_refused_before_any_child_when_its_cache_folder_is_planted(
    child_env, monkeypatch, tmp_path, capsys
):
    folder = _planted(tmp_path, "another user's")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(folder))
    monkeypatch.chdir(tmp_path)
    code = main(["tiny", "--device", "cpu", "--compile", "inductor", "--batch-size", "8",
                 "--steps", "3", "--output-dir", str(tmp_path / "out")])  # fmt: skip
    said = _one_line(capsys.readouterr().err)
    assert code == 2 and said.startswith(f"bench: error: TORCHINDUCTOR_CACHE_DIR: {folder} ")
    assert f"belongs to uid {OTHER_UID}" in said
    assert _Exited.envs == [] and not (tmp_path / "out").exists()


# --- item 3: the report's output folder -------------------------------------------------


@pytest.fixture
def results_and_victim(tmp_path, monkeypatch):
    """Two results in tmp_path/results, and a folder of the victim's with a file in it."""
    pytest.importorskip("vl_convert")
    from tests.report.test_compare import _before_after

    for res in _before_after():
        result.create(res, tmp_path / "results")
    victim = tmp_path / "victim_docs"
    victim.mkdir()
    (victim / "notes.md").write_text("mine\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "results", victim


def _untouched(victim: Path) -> bool:
    return os.listdir(victim) == ["notes.md"] and (victim / "notes.md").read_text() == "mine\n"


def test_a_report_folder_planted_as_a_link_is_refused(results_and_victim, capsys):
    results, victim = results_and_victim
    (results / "report").symlink_to(victim)  # by another user who can write results/
    assert main(["report", "results"]) == 2
    said = _one_line(capsys.readouterr().err)
    assert said.startswith(f"bench: error: output: results/report is a link (to {victim}); ")
    assert "bench writes no output through a link" in said
    assert _untouched(victim)


def test_a_report_folder_given_with_o_that_is_a_link_is_refused(results_and_victim, capsys):
    results, victim = results_and_victim
    (results.parent / "out").symlink_to(victim)
    assert main(["report", "results", "-o", "out"]) == 2
    assert "output: out is a link" in _one_line(capsys.readouterr().err)
    assert _untouched(victim)


@as_root
def test_a_report_folder_of_another_user_is_refused(results_and_victim, capsys):
    results, victim = results_and_victim
    (results / "report").mkdir()
    os.chown(results / "report", OTHER_UID, OTHER_UID)
    assert main(["report", "results"]) == 2
    said = _one_line(capsys.readouterr().err)
    assert said.startswith(f"bench: error: output: results/report belongs to uid {OTHER_UID}")
    assert os.listdir(results / "report") == [] and _untouched(victim)


def test_a_link_at_a_report_file_s_name_is_replaced_not_written_through(
    results_and_victim, capsys, monkeypatch
):
    """report.md planted as a link to a victim's file: bench replaces the link (atomic
    rename), the victim's file keeps its text."""
    from bench.report import views

    monkeypatch.setattr(views, "bundle", lambda: "/* vega bundle */")  # seconds to make
    results, victim = results_and_victim
    (results / "report").mkdir()
    (results / "report" / "report.md").symlink_to(victim / "notes.md")
    assert main(["report", "results"]) == 0
    assert not (results / "report" / "report.md").is_symlink()
    assert (results / "report" / "report.md").read_text().startswith("#")
    assert _untouched(victim)


def test_the_compiler_cache_folder_bench_sets_is_not_recorded_as_a_speed_setting():
    """It holds the user's home path and differs between users, not between speeds."""
    from bench.run import provenance

    env = {"TORCHINDUCTOR_CACHE_DIR": "/home/alice/.cache/bench/compile/inductor",
           "TORCHINDUCTOR_FREEZING": "1"}  # fmt: skip
    assert provenance.speed_env(env) == {"TORCHINDUCTOR_FREEZING": "1"}


def test_a_cache_folder_under_a_link_reaches_the_child_by_its_real_path(
    child_env, monkeypatch, tmp_path
):
    """A link above the folder (in a folder others can write, where it could be repointed
    between bench's check and the child's use) never reaches the child: the checked real
    path does. Found by review: the link's target was checked, its name handed on."""
    real = tmp_path / "mine"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(real)
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "link" / "inductor"))
    env = child_env("process")
    assert env["TORCHINDUCTOR_CACHE_DIR"] == str(real.resolve() / "inductor")


def test_a_cache_home_others_may_write_falls_back_to_a_private_folder(
    child_env, monkeypatch, tmp_path
):
    """~/.cache 0775 (a umask of 002, user-private groups): not refused, and no cache
    there either: the run's private temporary folder serves."""
    home = tmp_path / "cache"
    home.mkdir()
    home.chmod(0o775)
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    monkeypatch.setattr(compiler_cache, "_fallback", None)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # the fixture's, 1777
    env = child_env("process")
    root = Path(env["TORCHINDUCTOR_CACHE_DIR"]).parent
    assert root.name.startswith("bench-compile-") and _private(str(root))


def test_a_report_folder_anyone_can_write_is_refused(results_and_victim, capsys):
    """The user's own folder, mode 0777: anyone could swap report.html for their own
    between bench's write and the reader's open. A group's write is allowed."""
    results, _ = results_and_victim
    (results / "report").mkdir()
    (results / "report").chmod(0o777)
    assert main(["report", "results"]) == 2
    said = _one_line(capsys.readouterr().err)
    assert "output: results/report can be written by anyone (mode 0777)" in said
    assert not any((results / "report").iterdir())
    (results / "report").chmod(0o775)
    assert main(["report", "results"]) == 0
