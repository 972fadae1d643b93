"""Files someone else can put where bench reads: a suite's state in a shared output
folder, a result file given to `bench rerun`, a result file built to be slow to read,
a lock file made first by another user, and secrets in the values bench records."""

import contextlib
import io
import json
import os
import secrets
import stat
import tempfile
from pathlib import Path

import pytest

from bench import result
from bench.cli import main
from bench.commands import rerun, running, suite
from bench.config.run_config import RunConfig
from bench.report import collect
from bench.result import Result, ResultError
from bench.run import provenance
from bench.util import files
from bench.util.errors import BenchError
from tests.commands.test_suite import two_runs  # noqa: F401  (a fixture: a preset 'mini' of two runs)
from tests.conftest import DATA, ROOT, run_bench

OTHER_UID = 12345  # a user who is not the one running the tests
STRANGER_UID = 12346  # the user bench runs as, when a test runs it as a non-root user
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to emulate another user")


def _one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in text, text
    return lines[0]


def _as_another_user(fn) -> tuple[int, str]:
    """fn() in a forked child running as STRANGER_UID (not root, so files of OTHER_UID
    are another user's to it): its exit status (a BenchError's) and message."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        os.close(read)
        code, text, stderr = 0, "", io.StringIO()
        try:
            os.setgroups([])
            os.setgid(STRANGER_UID)
            os.setuid(STRANGER_UID)
            with contextlib.redirect_stderr(stderr):
                code = fn() or 0
        except BenchError as error:
            code, text = error.exit_code, str(error)
        except BaseException as error:  # what a user would see as a traceback
            code, text = 99, f"Traceback: {type(error).__name__}: {error}"
        os.write(write, json.dumps([code, (stderr.getvalue() + text).strip()]).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    code, text = json.loads(data)
    return code, text


@pytest.fixture
def shared_folder():
    """A folder like /tmp or nox's ./results as root: writable by all, sticky."""
    folder = Path(tempfile.mkdtemp(prefix="bench-shared-"))
    folder.chmod(0o1777)
    yield folder
    import shutil

    shutil.rmtree(folder)


# --- item 3: a suite's state file -------------------------------------------------------


@pytest.fixture
def out(two_runs):  # noqa: F811
    """The output folder of the preset 'mini' (tests/commands/test_suite.py's two_runs)."""
    return two_runs


def _keys(out: Path) -> list[str]:
    """The suite 'mini''s runs as its state file names them (the command line of each)."""
    options = ["--device", "cpu", "--output-dir", str(out)]
    return [" ".join([*run, *options]) for run in suite.suites()["mini"].runs]


def _result_file(folder: Path, status: str, **config) -> Path:
    res = Result(config=RunConfig(**{"workload": "tiny", **config}), status=status)
    return result.create(res, folder)


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def runs(monkeypatch):
    """bench run's runner replaced: each run recorded and saved as a complete result."""
    calls = []

    def run_and_print(config, parsed, resume=None, runner_class=None, preflighted=False):
        calls.append((config, resume))
        path = Path(resume) if resume else _result_file(parsed.output_dir, "complete")
        return 0, result.load(path), path

    monkeypatch.setattr(running, "run_and_print", run_and_print)
    return calls


def _plant(out: Path, done: dict, sha256: dict | None = None) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    state = {"kind": "bench-suite-state", "suite": "mini", "done": done}
    if sha256 is not None:
        state["sha256"] = sha256
    path = out / "suite-mini.json"
    path.write_text(json.dumps(state))
    return path


def _suite(out: Path) -> int:
    return main(["suite", "mini", "--device", "cpu", "--output-dir", str(out)])


def test_a_suite_state_naming_a_file_outside_its_folder_is_refused(out, runs, tmp_path, capsys):
    """A planted state printed '(going on with /elsewhere/forged.json)' and went on with
    it; now the state is refused in one line naming it and the entry."""
    forged = _result_file(tmp_path / "elsewhere", "interrupted")
    state = _plant(out, {_keys(out)[0]: str(forged)})
    code = _suite(out)
    line = _one_line(capsys.readouterr().err)
    assert code == 2 and not runs, runs
    assert str(state) in line and "outside" in line and str(forged) in line, line

    # a link inside the folder that leads out is outside too
    link = out / "link.json"
    link.symlink_to(forged)
    _plant(out, {_keys(out)[0]: str(link)}, {_keys(out)[0]: _sha256(forged)})
    assert _suite(out) == 2 and not runs
    assert "outside" in _one_line(capsys.readouterr().err)


def test_a_planted_complete_skips_no_run(out, runs, capsys):
    """A state saying 'complete' skipped the run as 'done before' whatever its file; now
    only a file inside, the user's own, with the sha256 recorded, skips it."""
    first, second = _keys(out)
    out.mkdir(parents=True)
    edited = _result_file(out, "complete")
    theirs = _result_file(out, "complete")
    os.chown(theirs, OTHER_UID, OTHER_UID)
    _plant(out, {first: str(edited), second: str(theirs)},
           {first: "0" * 64, second: _sha256(theirs)})  # fmt: skip
    assert _suite(out) == 0
    captured = capsys.readouterr()
    assert len(runs) == 2 and "done before" not in captured.out, captured.out
    warnings = captured.err.strip().splitlines()
    assert len(warnings) == 2 and all("running it again" in w for w in warnings), warnings
    assert "sha256" in warnings[0] and f"uid {OTHER_UID}" in warnings[1], warnings


def test_a_suite_state_of_the_previous_version_still_resumes_and_records_sha256(out, runs, capsys):
    """A state without sha256 (bench before this one): a file inside the folder that is
    the user's own is hashed now and the run skipped; the next state records sha256."""
    first, second = _keys(out)
    out.mkdir(parents=True)
    done = _result_file(out, "complete")
    _plant(out, {first: str(done)})
    assert _suite(out) == 0
    assert "1/2: done before" in capsys.readouterr().out.replace("\n", "")
    assert len(runs) == 1
    state = json.loads((out / "suite-mini.json").read_text())
    assert state["sha256"][first] == _sha256(done)
    assert state["sha256"][second] == _sha256(Path(state["done"][second]))
    assert _suite(out) == 0 and len(runs) == 1  # both done before, by their sha256


def test_a_suite_state_that_is_not_a_state_is_one_line(out, runs, capsys):
    first, _ = _keys(out)
    for done, sha256, what in (
        ({first: 7}, None, "done"),
        ({first: str(out / "x.json")}, {first: "not-a-digest"}, "sha256"),
    ):
        _plant(out, done, sha256)
        assert _suite(out) == 2 and not runs
        assert what in _one_line(capsys.readouterr().err)


def test_a_suite_state_naming_a_path_no_file_can_have_is_one_line(out, runs, capsys):
    """The review's: a NUL byte in a recorded path ended in 'ValueError: embedded null
    byte' from os.path.realpath (a lone surrogate, in UnicodeEncodeError)."""
    first, _ = _keys(out)
    for recorded in (f"{out}/a\u0000b.json", f"{out}/a\ud800b.json"):
        state = _plant(out, {first: recorded})
        assert _suite(out) == 2 and not runs
        line = _one_line(capsys.readouterr().err)
        assert str(state) in line and "not a path" in line, line


@as_root
def test_another_users_suite_state_in_a_shared_folder_is_one_line(
    out, runs, shared_folder, monkeypatch
):
    """Another user's suite-NAME.json in a sticky folder ended in a PermissionError
    traceback (bench could not replace it after the first run); now one line at once."""
    presets = suite.suites()  # read here: the preset file is in root's own tmp_path
    monkeypatch.setattr(suite, "suites", lambda: presets)
    assert _suite(out) == 0  # as root first: the modules the child cannot read, imported
    shared = shared_folder / "out"
    shared.mkdir(mode=0o777)
    shared.chmod(0o1777)
    state = _plant(shared, {})
    os.chown(state, OTHER_UID, OTHER_UID)
    code, text = _as_another_user(lambda: _suite(shared))
    assert code == 2 and "Traceback" not in text, text
    assert str(state) in text and f"uid {OTHER_UID}" in text and "--output-dir" in text, text
    assert not list(shared.glob("tiny-*.json"))  # nothing ran

    state.chmod(0o600)  # and one it cannot even read
    code, text = _as_another_user(lambda: _suite(shared))
    assert code == 2 and "Traceback" not in text and str(state) in text, text


def test_a_suite_state_that_cannot_be_written_is_one_line(out, runs, monkeypatch, capsys):
    def full(path, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(suite.files, "replace", full)
    assert _suite(out) == 1
    line = _one_line(capsys.readouterr().err)
    assert "suite-mini.json" in line and "No space left on device" in line, line


# --- item 4: bench rerun FILE -------------------------------------------------------------


@pytest.fixture
def reruns(monkeypatch):
    calls = []

    def run_and_print(config, args, resume=None, runner_class=None):
        calls.append(config)
        return 1, None, None  # as a failed run: no drift verdict

    monkeypatch.setattr(rerun, "run_and_print", run_and_print)
    return calls


def test_a_rerun_never_reads_the_data_path_its_file_names(tmp_path, reruns, capsys):
    """config.data = 'tokens:/any/readable/file' was read, its size and sha256 put in the
    new result; now a path comes from --data on the command line only."""
    path = _result_file(tmp_path, "complete", workload="llama3-tiny", data="tokens:/etc/passwd")
    code = main(["rerun", str(path), "--output-dir", str(tmp_path / "out")])
    line = _one_line(capsys.readouterr().err)
    assert code == 2 and not reruns
    assert "--data tokens:PATH" in line and "/etc/passwd" not in line, line

    mine = tmp_path / "mine.bin"
    code = main(["rerun", str(path), "--data", f"tokens:{mine}", "--output-dir", str(tmp_path)])
    assert code == 1 and reruns[0].data == f"tokens:{mine}"
    assert main(["rerun", str(path), "--data", "cifar10:/x", "--output-dir", str(tmp_path)]) == 2
    assert "tokens:PATH" in _one_line(capsys.readouterr().err)

    synthetic = _result_file(tmp_path, "complete")  # synthetic data reruns as before
    assert main(["rerun", str(synthetic), "--output-dir", str(tmp_path)]) == 1
    assert reruns[-1].data == "synthetic"


def test_a_rerun_never_reads_the_validation_path_its_file_names(tmp_path, reruns, capsys):
    """config.val_data = 'tokens:/victim/file' was opened and evaluated (its first tokens
    shown in the refusal, its loss put in the new result); now --val-data only."""
    secret = tmp_path / "victim-secret.bin"
    path = _result_file(
        tmp_path, "complete", workload="llama3-tiny", data="tokens:/x/train.bin",
        train_to_loss=3.0, max_tokens=10_000, val_data=f"tokens:{secret}",
    )  # fmt: skip
    mine = f"tokens:{tmp_path / 'mine.bin'}"
    code = main(["rerun", str(path), "--data", mine, "--output-dir", str(tmp_path / "o")])
    line = _one_line(capsys.readouterr().err)
    assert code == 2 and not reruns
    assert "--val-data tokens:PATH" in line and str(secret) not in line, line
    mine_val = f"tokens:{tmp_path / 'val.bin'}"
    args = ["rerun", str(path), "--data", mine, "--val-data", mine_val]
    assert main([*args, "--output-dir", str(tmp_path / "o")]) == 1
    assert reruns[0].val_data == mine_val
    synthetic = _result_file(tmp_path, "complete")
    assert main(["rerun", str(synthetic), "--val-data", mine_val]) == 2


def test_a_rerun_caps_threads_and_workers_at_what_this_machine_has(tmp_path, reruns, capsys):
    cpus = len(os.sched_getaffinity(0))
    path = _result_file(tmp_path, "complete", threads=4096, data="loader", workers=(4000,))
    assert main(["rerun", str(path), "--output-dir", str(tmp_path)]) == 1
    assert reruns[0].threads == cpus and reruns[0].workers == (cpus,)
    out = capsys.readouterr().out.replace("\n", " ")
    assert "4096 threads" in out and "4000 loader workers" in out and "capped" in out, out


@pytest.mark.parametrize(("field", "value", "said"), [
    ("threads", 4, "threads: 2147483647 is not allowed"),
    ("workers", (4,), r"workers\[0\]: expected a list, each a whole number from 0 to 4096"),
])  # fmt: skip
def test_a_crafted_thread_or_worker_count_is_refused_on_load(tmp_path, field, value, said):
    path = _result_file(tmp_path, "complete", data="loader", **{field: value})
    data = json.loads(path.read_text())
    data["config"][field] = 2_147_483_647 if field == "threads" else [2_147_483_647]
    path.write_text(json.dumps(data))
    with pytest.raises(ResultError, match=said):
        result.load(path)


# --- item 5: a file of millions of values --------------------------------------------------


def test_a_file_of_millions_of_empty_objects_is_refused_fast_and_read_once(tmp_path, monkeypatch):
    """A 16 MiB [{},{},...] took 3.9 s and 467 MB to refuse, and bench report read it a
    second time to see whether it was a comparison; now it is refused before parsing."""
    path = tmp_path / "r" / "objects.json"
    path.parent.mkdir()
    count = (16 * 2**20 - 2) // 3
    path.write_bytes(b"[" + b",".join([b"{}"] * count) + b"]")
    zeros = tmp_path / "r" / "zeros.json"  # 10 MiB: more values than bench's largest x 4
    zeros.write_bytes(b"[" + b"0," * (5 * 2**20) + b"0]")
    keys = tmp_path / "r" / "keys.json"  # a key costs as much as a value: 8.4 M took 1.2 GB
    keys.write_bytes(b"{" + b",".join(b'"%x":0' % i for i in range(2_200_000)) + b"}")
    other = tmp_path / "r" / "other.json"  # JSON, not a result: parsed once, not twice
    other.write_text(json.dumps({"kind": "notes", "x": [0.5] * 100_000}))
    opened: list[str] = []
    real_open, real_loads = os.open, json.loads

    def counting_open(name, *args, **kwargs):
        opened.append(os.fspath(name))
        return real_open(name, *args, **kwargs)

    parsed = []

    def counting_loads(*args, **kwargs):
        parsed.append(1)
        return real_loads(*args, **kwargs)

    with pytest.raises(ResultError, match=r"more than 1,048,576 objects and lists\)$"):
        result.load(path)
    for refused in (zeros, keys):
        with pytest.raises(ResultError, match=r"more than 4,194,304 values\)$"):
            result.load(refused)
    monkeypatch.setattr(os, "open", counting_open)
    monkeypatch.setattr(json, "loads", counting_loads)
    with pytest.raises(BenchError, match="no result files"):
        collect.load_all([tmp_path / "r"])
    assert len(parsed) == 1  # other.json's, once: the refused files were never parsed
    # each read once: refused, not read again to see whether it is a bench output
    files = (path, zeros, keys, other)
    assert [opened.count(str(p)) for p in files] == [1, 1, 1, 1], opened


def test_real_result_files_load_far_below_the_bound_on_values(capsys):
    from bench.result import io

    # Not the goldens of every fixture's refusals and re-saves (tests/result/test_io_golden.py):
    # they are no result, and grow with each schema version's fixture.
    goldens = ("refusals.json", "resaved.json")
    found = sorted([*(p for p in DATA.glob("*.json") if p.name not in goldens),
                    *(ROOT / "docs" / "results").rglob("*.json")])  # fmt: skip
    counts = {}
    for path in found:
        raw = path.read_bytes()
        counts[path.name] = io.count_values(raw)
        if path.name.startswith("result-") or "docs" in path.parts:
            result.load(path)
    with capsys.disabled():
        print("\nvalues per file:", json.dumps(counts, indent=None))
    assert max(counts.values()) * 100 < io.MAX_VALUES
    assert max(io.count_containers(p.read_bytes()) for p in found) * 100 < io.MAX_CONTAINERS


# --- item 11: secrets in recorded values, and another user's lock file ----------------------


def test_a_hex_secret_is_redacted_wherever_redact_applies(monkeypatch):
    """BENCH_RDZV_TOKEN's recommended form (openssl rand -hex 32) passed as is."""
    for token in (secrets.token_hex(16), secrets.token_hex(32), secrets.token_hex(512)):
        assert provenance.redact(token) == provenance.REDACTED
        assert provenance.redact(f"--label={token}") == provenance.REDACTED
        assert provenance.redact(token.upper()) == provenance.REDACTED
        env = provenance.speed_env({"NCCL_IB_TOKEN": token, "OMP_NUM_THREADS": "8"})
        assert env == {"NCCL_IB_TOKEN": provenance.REDACTED, "OMP_NUM_THREADS": "8"}
    for other in ("qmhz2k7x4p0c8v3n9w5t1r6y2b8d4f0j", "KQ4TJ3ZLR6XWN2PC7BMD5VYH8GSA3EF2"):
        assert provenance.redact(other) == provenance.REDACTED  # one case, letters and digits
    kept = (
        "GPU-8b1f2c3d-1234-5678-9abc-def012345678",  # a device UUID
        "bench@sha256:" + secrets.token_hex(32),  # an image digest on a command line
        "--xla_gpu_enable_latency_hiding_scheduler=true",
        "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4",
        "results/resnet50-torch-cuda-20250101T000000Z.json",
        "expandable_segments:True,garbage_collection_threshold:0.8",
    )
    for value in kept:
        assert provenance.redact(value) == value
    # the provenance that must stay never goes through redact
    commit, digest, lock = secrets.token_hex(20), secrets.token_hex(32), secrets.token_hex(32)
    monkeypatch.setenv("BENCH_GIT_COMMIT", commit)
    monkeypatch.setenv("BENCH_IMAGE_DIGEST", f"sha256:{digest}")
    monkeypatch.setenv("BENCH_LOCK_SHA256", lock)
    recorded = provenance.collect()
    assert recorded["bench"]["git_commit"] == commit
    assert (
        recorded["image"]["digest"] == f"sha256:{digest}"
        and recorded["image"]["lock_sha256"] == lock
    )


def test_a_lock_file_another_user_cannot_open_is_one_line_naming_it(tmp_path, monkeypatch):
    """Emulated: os.open of the lock raises PermissionError (as for a non-root user when
    another user made .NAME.lock first)."""
    lock = tmp_path / ".suite-mini.json.lock"
    lock.touch()
    os.chown(lock, OTHER_UID, OTHER_UID) if os.geteuid() == 0 else None
    real_open = os.open

    def refused(name, *args, **kwargs):
        if Path(name) == lock:
            raise PermissionError(13, "Permission denied", str(name))
        return real_open(name, *args, **kwargs)

    monkeypatch.setattr(os, "open", refused)
    with pytest.raises(BenchError) as error:
        files.FileClaim(tmp_path / "suite-mini.json").hold("busy")
    line = _one_line(str(error.value))
    assert str(lock) in line and "--output-dir" in line, line
    if os.geteuid() == 0:
        assert f"uid {OTHER_UID}" in line, line


@as_root
def test_a_lock_file_another_user_made_first_in_a_shared_folder_is_one_line(shared_folder):
    """Real: a non-root bench in a sticky folder where another user made .NAME.lock."""
    lock = shared_folder / ".suite-mini.json.lock"
    lock.touch(mode=0o644)
    os.chown(lock, OTHER_UID, OTHER_UID)
    target = shared_folder / "suite-mini.json"
    code, text = _as_another_user(lambda: files.FileClaim(target).hold("busy"))
    assert code != 0 and "Traceback" not in text and "\n" not in text, text
    assert str(lock) in text and f"uid {OTHER_UID}" in text and "--output-dir" in text, text


def test_a_lock_held_by_another_user_says_whose_it_is(tmp_path):
    import fcntl

    lock = tmp_path / ".r.json.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if os.geteuid() == 0:
            os.chown(lock, OTHER_UID, OTHER_UID)
        with pytest.raises(BenchError) as error:
            files.FileClaim(tmp_path / "r.json").hold("r.json: another bench is writing it")
    finally:
        os.close(fd)
    line = _one_line(str(error.value))
    assert line.startswith("r.json: another bench is writing it")
    if os.geteuid() == 0:
        assert f"{lock} belongs to uid {OTHER_UID}" in line, line
    assert stat.S_ISREG(lock.stat().st_mode)


def test_a_label_that_looks_like_a_credential_is_refused_in_one_line():
    # A label is stored in the result as given (redact() sees only the command line).
    secret = secrets.token_hex(32)
    done = run_bench("tiny", "--device", "cpu", "--label", secret, "--steps", "1")
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert "--label: label: it looks like a credential, and a label is stored" in line
    assert secret not in done.stderr
