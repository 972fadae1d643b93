"""Faults that lose data or open a hole: signals, dead parents, full disks, hostile or
read-only output folders. Real processes and real file systems wherever this machine
allows (root mounts a small or read-only tmpfs); each skip says what it lacks."""

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench import result
from bench.cli import main
from bench.config.run_config import RunConfig
from bench.result.response import Response, read_answer
from bench.run.runner import Runner
from bench.util import files
from tests.conftest import run_bench
from tests.run.test_runner import FakeChild, ok_response


def _mount_tmpfs(where: Path, options: str) -> None:
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "bench-test", str(where)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.decode().strip()}")


@pytest.fixture
def small_disk(tmp_path):
    """A 256 KiB file system: filled on demand to make writes fail with ENOSPC."""
    disk = tmp_path / "disk"
    _mount_tmpfs(disk, "size=256k")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=False)


@pytest.fixture
def read_only_dir(tmp_path):
    """A folder bench may not write: a read-only mount (as root, whom permissions do not
    stop), or a folder without write permission (as anyone else)."""
    folder = tmp_path / "read-only"
    if os.geteuid() != 0:
        folder.mkdir()
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
        return
    _mount_tmpfs(folder, "ro,size=64k")
    yield folder
    subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(disk: Path) -> Path:
    filler = disk / "filler"
    with contextlib.suppress(OSError), open(filler, "wb", buffering=0) as f:
        while True:  # until ENOSPC
            f.write(b"\0" * 4096)
    return filler


def hidden_files(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if p.name.startswith(".")]


# --- writing files ---------------------------------------------------------------------


def test_a_planted_link_is_never_followed(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    out = tmp_path / "shared"
    out.mkdir()
    target = out / "result.json"
    target.symlink_to(victim)
    files.replace(target, "new")
    assert victim.read_text() == "precious"
    assert not target.is_symlink() and target.read_text() == "new"
    assert files.create(out / "other.json", "x") is True
    (out / "taken.json").symlink_to(victim)
    assert files.create(out / "taken.json", "x") is False and victim.read_text() == "precious"
    assert hidden_files(out) == []


def test_temporary_files_have_unpredictable_names(tmp_path):
    names = set()
    for _ in range(3):
        fd, tmp = files.temp_file(tmp_path, "r.json")
        os.close(fd)
        names.add(tmp.name)
        assert tmp.stat().st_mode & 0o777 == 0o666 & ~_umask()
    assert len(names) == 3 and all(n.startswith(".r.json.") for n in names)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_full_disk_keeps_the_previous_file_and_every_point_in_memory(small_disk):
    def answer(point, n):
        if n == 2:
            fill(small_disk)
        return ok_response()

    runner = Runner(
        RunConfig(workload="tiny", batch_sizes=(4, 8, 16)), small_disk, spawn=FakeChild(answer)
    )
    outcome = runner.run()
    assert [p.batch_size for p in outcome.points] == [4, 8, 16]  # all kept in memory
    assert runner.save_error is not None and "No space" in runner.save_error.strerror
    saved = result.load(runner.path)  # the last complete save, intact
    assert [p.batch_size for p in saved.points] == [4]
    assert hidden_files(small_disk) == []  # no partial temporary files


def test_space_freed_later_saves_everything(small_disk):
    filler = []

    def answer(point, n):
        if n == 2:
            filler.append(fill(small_disk))
        if n == 3:
            filler[0].unlink()
        return ok_response()

    runner = Runner(
        RunConfig(workload="tiny", batch_sizes=(4, 8, 16)), small_disk, spawn=FakeChild(answer)
    )
    runner.run()
    assert runner.save_error is None
    saved = result.load(runner.path)
    assert [p.batch_size for p in saved.points] == [4, 8, 16] and saved.status == "complete"
    assert hidden_files(small_disk) == []


def test_a_disk_still_full_at_the_end_prints_the_result_and_one_line(
    small_disk, monkeypatch, capsys
):
    def fake_worker(point, job, on_progress, timeout_s=None, runtime=None):
        if job == "count_flops":
            return Response(status="ok", flops_per_sample=1.0)
        if point.batch_size == 8:
            fill(small_disk)
        return read_answer(ok_response())

    monkeypatch.setattr("bench.run.launchers.process.spawn_worker", fake_worker)
    code = main(["tiny", "--device", "cpu", "--batch-size", "4,8", "--output-dir", str(small_disk)])
    out, err = capsys.readouterr()
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "could not save" in lines[0] and "No space left" in lines[0]
    printed = json.loads(out[out.index("\n{") :])
    assert [p["batch_size"] for p in printed["points"]] == [4, 8]
    assert hidden_files(small_disk) == []
    # said as it happened, not only at the end
    assert out.count("bench: warning: could not save") == 1


def test_a_stop_on_a_full_disk_exits_as_a_stop_with_the_result_printed(
    small_disk, monkeypatch, capsys
):
    """Ctrl-C while the disk was full exited 1, as a failure: a script waiting for
    130 (or 143) to tell a stop took it for a crash."""

    def fake_worker(point, job, on_progress, timeout_s=None, runtime=None):
        if job == "count_flops":
            return Response(status="ok", flops_per_sample=1.0)
        if point.batch_size == 8:
            fill(small_disk)
        if point.batch_size == 16:
            raise KeyboardInterrupt
        return read_answer(ok_response())

    monkeypatch.setattr("bench.run.launchers.process.spawn_worker", fake_worker)
    args = ["tiny", "--device", "cpu", "--batch-size", "4,8,16", "--output-dir", str(small_disk)]
    code = main(args)
    out, err = capsys.readouterr()
    assert code == 130
    [line] = err.strip().splitlines()
    assert line.startswith("bench: interrupted; could not save") and "No space left" in line
    printed = json.loads(out[out.index("\n{") :])
    assert printed["status"] == "interrupted"
    assert [p["batch_size"] for p in printed["points"]] == [4, 8]


@pytest.mark.parametrize(
    "command",
    [
        ["tiny", "--device", "cpu", "--output-dir", "{ro}"],
        ["compare", "{results}", "--baseline", "x", "--format", "csv", "-o", "{ro}/c.csv"],
        ["report", "{results}", "--baseline", "x", "-o", "{ro}/report"],
        ["collect", "{results}", "-o", "{ro}/summary"],
    ],
)
def test_a_read_only_output_folder_is_refused_before_anything_runs(
    tmp_path, read_only_dir, command
):
    results = tmp_path / "results"
    results.mkdir()
    args = [a.format(ro=read_only_dir, results=results) for a in command]
    started = time.monotonic()
    done = run_bench(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bench: error: "), done.stderr
    assert re.search(r"cannot (write in|create) .*(Read-only|Permission denied)", lines[0])
    assert "--user" in lines[0]
    assert time.monotonic() - started < 30  # refused up front, nothing measured


def test_an_output_folder_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "a-file").write_text("x")
    done = run_bench(
        "tiny", "--device", "cpu", "--output-dir", str(tmp_path / "a-file"), cwd=tmp_path
    )
    assert done.returncode == 2 and "is not a folder" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert done.stdout == ""  # not even the empty line of a progress bar never started


@pytest.mark.slow  # a real run in a child: the full tier's
def test_an_output_folder_under_missing_folders_is_made_as_mkdir_p_never_world_writable(
    tmp_path,
):
    out = tmp_path / "missing" / "deeper" / "out"
    done = run_bench("tiny", "--device", "cpu", "--steps", "2", "--warmup-steps", "1",
                     "--output-dir", str(out), cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert len(list(out.glob("tiny-*.json"))) == 1
    for level in (tmp_path / "missing", tmp_path / "missing" / "deeper", out):
        assert not level.stat().st_mode & 0o002, level


# --- signals and child processes --------------------------------------------------------


def children(pid: int) -> list[int]:
    """Live processes whose parent is `pid` (zombies excluded)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        state, ppid = text[text.rindex(")") + 2 :].split()[:2]
        if int(ppid) == pid and state != "Z":
            found.append(int(stat.parent.name))
    return found


def alive(pid: int) -> bool:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return text[text.rindex(")") + 2] != "Z"


def wait_for(condition, timeout: float = 300, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.1)


def saved_points(out: Path) -> int:
    found = list(out.glob("*.json"))
    if not found:
        return 0
    try:
        return len(json.loads(found[0].read_text())["points"])
    except (ValueError, KeyError):
        return 0


# The first point takes seconds, the second much longer: a signal lands in the second.
LONG_RUN = ("tiny", "--device", "cpu", "--batch-size", "2,512", "--steps", "1000")


def start_bench(tmp_path: Path, prefix: tuple[str, ...] = ()) -> subprocess.Popen:
    return subprocess.Popen(
        [*prefix, sys.executable, "-m", "bench", *LONG_RUN, "--output-dir", "out"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def worker_of(pid: int) -> int:
    found: list[int] = []
    wait_for(lambda: found.extend(children(pid)) or found, 60, "the measuring child")
    return found[0]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
@pytest.mark.slow
@pytest.mark.parametrize(
    ("signum", "code"),
    [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, 130)],
)
def test_a_signal_keeps_finished_points_and_stops_the_child(tmp_path, signum, code):
    bench = start_bench(tmp_path)
    wait_for(lambda: saved_points(tmp_path / "out") == 1, what="the first point")
    child = worker_of(bench.pid)
    bench.send_signal(signum)
    out, err = bench.communicate(timeout=60)
    assert bench.returncode == code, err
    saved = result.load(next((tmp_path / "out").glob("*.json")))
    assert saved.status == "interrupted" and [p.batch_size for p in saved.points] == [2]
    name = signal.Signals(signum).name
    assert f"bench: interrupted ({name}); finished points are saved in out/" in out + err
    assert not alive(child)
    assert hidden_files(tmp_path / "out") == []


@pytest.mark.skipif(os.geteuid() != 0, reason="a new PID namespace needs root (unshare)")
@pytest.mark.slow  # a real run stopped by a real signal, as the three above: the full tier
def test_sigterm_works_when_bench_is_pid_1(tmp_path):
    # docker run without --init: bench is PID 1, and the kernel drops signals to PID 1
    # that have no handler. unshare gives bench a PID namespace of its own.
    shell = start_bench(tmp_path, ("unshare", "--pid", "--fork", "--mount-proc"))
    wait_for(lambda: saved_points(tmp_path / "out") == 1, what="the first point")
    (bench,) = children(shell.pid)
    os.kill(bench, signal.SIGTERM)
    shell.communicate(timeout=60)
    saved = result.load(next((tmp_path / "out").glob("*.json")))
    assert saved.status == "interrupted" and len(saved.points) == 1


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_the_child_dies_with_a_parent_killed_by_sigkill(tmp_path):
    bench = start_bench(tmp_path)
    child = worker_of(bench.pid)
    wait_for(lambda: saved_points(tmp_path / "out") >= 0 and alive(child), what="the child")
    bench.kill()
    bench.communicate(timeout=60)
    wait_for(lambda: not alive(child), 10, "the orphaned child to stop")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
@pytest.mark.slow  # a real child killed mid-point: the full tier
def test_a_child_killed_by_someone_is_an_error_not_out_of_memory(tmp_path):
    bench = start_bench(tmp_path)
    wait_for(lambda: saved_points(tmp_path / "out") == 1, what="the first point")
    os.kill(worker_of(bench.pid), signal.SIGKILL)  # as kill -9 or docker stop would
    bench.communicate(timeout=120)
    assert bench.returncode == 1
    saved = result.load(next((tmp_path / "out").glob("*.json")))
    assert [p.status for p in saved.points] == ["ok", "error"]
    assert "SIGKILL" in saved.points[1].error and "not counted as out of memory" in (
        saved.points[1].error
    )


def test_a_stop_before_the_first_point_says_nothing_finished_and_show_says_so(
    tmp_path, monkeypatch, capsys
):
    """It said 'finished points are saved in F', and bench show F printed nothing."""

    def fake_worker(point, job, on_progress, timeout_s=None, runtime=None):
        if job == "count_flops":
            return Response(status="ok", flops_per_sample=1.0)
        raise KeyboardInterrupt

    monkeypatch.setattr("bench.run.launchers.process.spawn_worker", fake_worker)
    assert main(["tiny", "--device", "cpu", "--output-dir", str(tmp_path)]) == 130
    out = " ".join(capsys.readouterr().out.split())
    assert "bench: interrupted (SIGINT); no point had finished;" in out
    assert "records the stopped run" in out and "finished points" not in out
    [saved] = tmp_path.glob("tiny-*.json")
    assert main(["show", str(saved)]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "tiny, interrupted: no point measured (started 20" in said
