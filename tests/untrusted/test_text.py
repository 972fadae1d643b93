"""Text and numbers bench did not write itself: result files from other people, a child's
error messages, the environment, the command line. Shown as text, validated, never
executed, never leaking secrets."""

import json
import os
import re

import pytest

from bench import result
from bench.cli import main
from bench.result import ResultError
from bench.run import provenance
from bench.util.text import csv_cell, markdown, plain
from tests.conftest import DATA, run_bench
from tests.report.test_compare import V100, machine, point
from tests.untrusted.test_fuzz_results import _inert_page

HOSTILE = (
    "[red]x[/red] [link=https://evil.example]click[/link] [/oops] "
    "<img src=x onerror=alert(1)> | `=cmd` \x1b]52;c;cHduZWQ=\x07\x1b[2J $\\alpha$"
)


# --- secrets ---------------------------------------------------------------------------


def test_only_allow_listed_variables_are_recorded_and_credentials_are_redacted():
    env = {
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "db_password": "hunter2",
        "TF_VAR_db_password": "hunter2",  # Terraform, not TensorFlow
        "BENCH_API_TOKEN": "t0ken",
        "TORCH_HOME": "/home/me/.cache",
        "OMP_NUM_THREADS": "8",
        "XLA_FLAGS": "--xla_gpu_enable_triton_gemm=false",
        "CUDA_VISIBLE_DEVICES": "GPU-8b1f2c3d-1234-5678-9abc-def012345678",
        "LD_PRELOAD": "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4",
        "NCCL_SOCKET_IFNAME": "eth0",
        "CUDA_CACHE_URL": "https://me:s3cret@cache.example/x",
        "MKL_TOKEN": "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "TPU_NAME": "AKIAIOSFODNN7EXAMPLE",
        "NCCL_X": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    }
    recorded = provenance.speed_env(env)
    assert set(recorded) == {
        "OMP_NUM_THREADS", "XLA_FLAGS", "CUDA_VISIBLE_DEVICES", "LD_PRELOAD",
        "NCCL_SOCKET_IFNAME", "CUDA_CACHE_URL", "MKL_TOKEN", "TPU_NAME", "NCCL_X",
    }  # fmt: skip
    for name in ("CUDA_CACHE_URL", "MKL_TOKEN", "TPU_NAME", "NCCL_X"):
        assert recorded[name] == provenance.REDACTED
    assert recorded["CUDA_VISIBLE_DEVICES"].startswith("GPU-8b1f")  # a UUID is not a secret
    assert "hunter2" not in json.dumps(recorded) and "s3cret" not in json.dumps(recorded)


@pytest.mark.slow  # a real run in a child: the full tier's
def test_a_real_run_writes_no_secret(tmp_path):
    env = {
        **os.environ,
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "TF_VAR_db_password": "hunter2",
        "OMP_WAIT_POLICY": "https://u:hunter3@x.example",
    }
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "bench", "tiny", "--device", "cpu", "--steps", "2",
         "--warmup-steps", "1", "--batch-size", "2", "--output-dir", "out"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = next((tmp_path / "out").glob("*.json")).read_text()
    for secret in ("wJalrXUtnFEMI", "hunter2", "hunter3"):
        assert secret not in text


# --- text from files and children --------------------------------------------------------


def test_hostile_text_is_shown_as_text(tmp_path, capsys):
    from rich.console import Console

    out = Console(width=400, force_terminal=True, color_system=None, file=None)
    with out.capture() as captured:
        out.print(plain(HOSTILE))
    shown = captured.get()
    assert "[red]x[/red]" in shown and "[/oops]" in shown  # as typed, no MarkupError
    assert "\x1b" not in shown and "\\x1b]52" in shown  # escapes made visible
    md = markdown(HOSTILE)
    assert "<img" not in md and "&lt;img" in md and "\\|" in md and "\\[link" in md
    assert csv_cell("=cmd()") == "'=cmd()" and csv_cell("-1.5") == "'-1.5" and csv_cell(2) == 2


def test_a_hostile_result_file_prints_as_text_everywhere(tmp_path, capsys):
    pytest.importorskip("pandas")
    pytest.importorskip("vl_convert")
    bad = point(64, [100])
    hostile = machine(HOSTILE, [bad])
    hostile.points[0] = type(bad)(**{**bad.__dict__, "precision": "fp32"})
    hostile.points.append(
        type(bad)(batch_size=128, precision="fp32", status="error", error=HOSTILE)
    )
    result.create(hostile, tmp_path / "in" / "hostile")
    result.create(machine(V100, [point(64, [50]), point(128, [60])]), tmp_path / "in" / "v100")
    for path in (tmp_path / "in").rglob("*.json"):
        assert main(["show", str(path)]) == 0
    assert main(["compare", str(tmp_path / "in"), "--baseline", V100]) == 0
    assert main(["compare", str(tmp_path / "in"), "--baseline", V100, "--format", "markdown"]) == 0
    assert (
        main(["report", str(tmp_path / "in"), "--baseline", V100, "-o", str(tmp_path / "r")]) == 0
    )
    assert main(["collect", str(tmp_path / "in"), "-o", str(tmp_path / "c" / "all")]) == 0
    shown = capsys.readouterr().out
    assert "[red]x[/red]" in shown and "\x1b" not in shown
    for report in (tmp_path / "r" / "report.md", tmp_path / "c" / "all.md"):
        text = report.read_text()
        assert "<img" not in text and "\x1b" not in text and "\\[red\\]" in text
    _inert_page((tmp_path / "r" / "report.html").read_text())  # no element of the file's


# --- result files validated on load -------------------------------------------------------


def _fixture_with(change) -> dict:
    data = json.loads((DATA / "result-v2.json").read_text())
    change(data)
    return data


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda d: d["points"][0].update(step_times_s=[[0.1, 0]]), r"points[0].step_times_s[0]"),
        (lambda d: d["points"][0].update(step_times_s=[[0.1, 1e999]]), "step_times_s[0]"),
        (lambda d: d["points"][0].update(batch_size="64"), "points[0].batch_size"),
        (lambda d: d["points"][0].update(batch_size=True), "points[0].batch_size"),
        (lambda d: d["points"][0].update(devices=0), "points[0].devices"),
        (lambda d: d["points"][0].update(error=["x"]), "points[0].error"),
        (lambda d: d["points"][0].update(flops_per_sample=-1), "points[0].flops_per_sample"),
        (lambda d: d["points"][0].update(energy=[{"window_s": 1}]), "points[0].energy[0]"),
        (lambda d: d["points"][0].update(busy=[{"others_cpus": "lots"}]), "points[0].busy[0]"),
        (lambda d: d["points"][0].update(busy=[{"throttle": {"gpu0": [1]}}]), "points[0].busy"),
        (lambda d: d["points"][0].update(ranks=[{"mean_step_s": ["x"]}]), "points[0].ranks[0]"),
        (lambda d: d["points"][0].update(ranks=[{"slowest_rank": -1}]), "points[0].ranks[0]"),
        (lambda d: d.update(status="owned"), "result.status"),
        (lambda d: d["config"].update(find_max_batch="yes"), "config.find_max_batch"),
        (lambda d: d.update(command="rm -rf /"), "result.command"),
        (lambda d: d.update(peak_tflops=float("nan")), "result.peak_tflops"),
        (lambda d: d["environment"]["accelerator"].update(accelerator_count="8"),
         "environment.accelerator.accelerator_count"),
        (lambda d: d.update(pricing={"usd_per_hour": -3}), "pricing.usd_per_hour"),
        (lambda d: d.update(max_batch=[{"precision": "fp32", "probes": [{"batch_size": 0,
         "status": "ok"}]}]), "max_batch[0].probes[0].batch_size"),
    ],
)  # fmt: skip
def test_every_field_a_reader_uses_is_checked_on_load(tmp_path, change, field):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_fixture_with(change)))
    with pytest.raises(ResultError) as error:
        result.load(path)
    message = str(error.value)
    assert message.startswith(f"{path}: invalid result (") and field in message, message
    done = run_bench("show", str(path))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr


def test_a_deeply_nested_file_is_one_line(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text('{"schema_version": 2, "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(ResultError, match="nested"):
        result.load(path)
    path.write_text('{"schema_version": 2, "x": ' + "[" * 40 + "]" * 40 + "}")
    with pytest.raises(ResultError, match="nested deeper than 32"):
        result.load(path)


def test_a_comparison_lying_in_the_results_folder_is_skipped(tmp_path, capsys):
    result.create(machine(V100, [point(64, [100])]), tmp_path / "r")
    result.create(machine("NVIDIA H100", [point(64, [300])]), tmp_path / "r")
    out = tmp_path / "r" / "comparison.json"
    assert main(["compare", str(tmp_path / "r"), "--baseline", V100, "--format", "json",
                 "-o", str(out)]) == 0  # fmt: skip
    assert json.loads(out.read_text())["kind"] == "bench-comparison"
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "r"), "--baseline", V100]) == 0
    assert f"skipped {out}: a bench output" in capsys.readouterr().err


def test_an_unreadable_subfolder_is_named_in_a_warning(tmp_path, capsys, monkeypatch):
    result.create(machine(V100, [point(64, [100])]), tmp_path / "r")
    locked = tmp_path / "r" / "locked"
    locked.mkdir()
    if os.geteuid() != 0:
        locked.chmod(0)
    else:  # root reads any folder: make the listing fail as it would for anyone else
        real = os.scandir

        def scandir(path="."):
            if os.fspath(path) == str(locked):
                raise PermissionError(13, "Permission denied", str(locked))
            return real(path)

        monkeypatch.setattr(os, "scandir", scandir)
    try:
        assert main(["compare", str(tmp_path / "r"), "--baseline", V100]) == 0
    finally:
        locked.chmod(0o755)
    err = capsys.readouterr().err
    assert f"cannot read folder {locked} (Permission denied)" in err


# --- numbers on the command line --------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--batch-size", "٣٢"], "batch-size: '٣٢' is not allowed"),
        (["--steps", "１６"], "argument --steps: '１６' is not allowed"),
        (["--steps", "1_000"], "'1_000' is not allowed"),
        (["--seed", "99999999999999999999"], "at most 2147483647"),
        (["--memory-limit", "1e30"], "memory-limit: '1e30' is too large"),
        (["--memory-limit", "1e400"], "memory-limit: '1e400' is too large"),
        (["--timeout", "nan"], "argument --timeout: 'nan' is not allowed"),
        (["--price-per-hour", "inf"], "'inf' is not allowed"),
        (["--target-rsd", "٠.٥"], "'٠.٥' is not allowed"),
    ],
)
def test_numbers_that_do_not_fit_or_are_not_ascii_are_refused(tmp_path, args, message):
    done = run_bench("tiny", "--device", "cpu", *args, cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], done.stderr


# --- file names, CSV and HTML: control characters never pass raw -------------------------

TITLE = "\x1b]0;owned\x07"  # ESC ] 0 ; ... BEL: a terminal takes it as its new title
RAW = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _in_process(capsys, *argv):
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def test_file_names_with_terminal_escapes_are_shown_escaped(tmp_path, capsys):
    folder = tmp_path / "r"
    good = result.create(machine(V100, [point(64, [100])]), folder)
    named = good.rename(folder / f"good{TITLE}.json")
    bad = folder / f"bad{TITLE}.json"
    bad.write_text('{"schema_version": 2, "points": "x"')  # cut short
    code, out, err = _in_process(capsys, "show", str(folder))
    assert code == 0 and not RAW.search(out + err), (out, err)
    assert f"set apart: {folder}/bad\\x1b]0;owned\\x07.json: not a bench result" in err
    code, _, err = _in_process(capsys, "show", str(bad))  # named itself: an error
    assert code == 2 and err.startswith(f"bench: error: {folder}/bad\\x1b]0;owned\\x07.json: ")
    assert len(err.splitlines()) == 1 and not RAW.search(err)
    edited = json.loads(named.read_text())
    edited["label"] = "x"
    named.write_text(json.dumps(edited))  # now its checksum no longer matches: a warning
    code, out, err = _in_process(capsys, "show", str(named), str(named))
    assert code == 0 and "good\\x1b]0;owned\\x07.json" in out + err
    assert not RAW.search(out + err)


def test_one_corrupt_file_in_a_folder_is_set_apart_and_the_rest_read(tmp_path, capsys):
    pytest.importorskip("pandas")
    result.create(machine(V100, [point(64, [100])]), tmp_path / "r")
    result.create(machine("NVIDIA H100", [point(64, [300])]), tmp_path / "r")
    bad = tmp_path / "r" / "corrupt.json"
    bad.write_text('{"schema_version": 9, "points": [{"batch_size": "@@"}')
    for argv in (["show"], ["compare", "--baseline", V100],
                 ["collect", "-o", str(tmp_path / "c" / "all")]):  # fmt: skip
        code, _out, err = _in_process(capsys, argv[0], str(tmp_path / "r"), *argv[1:])
        assert code == 0, err
        assert f"bench: warning: set apart: {bad}: not a bench result (invalid JSON" in err
    assert len((tmp_path / "c" / "all.csv").read_text().splitlines()) == 3  # header, 2 points
    code, _, err = _in_process(capsys, "collect", str(bad), "-o", str(tmp_path / "c" / "x"))
    assert code == 2 and err.startswith(f"bench: error: {bad}: not a bench result")


def test_control_characters_never_reach_csv_or_html(tmp_path, capsys):
    pytest.importorskip("pandas")
    pytest.importorskip("vl_convert")
    assert csv_cell(f"{TITLE}=1+1") == "\\x1b]0;owned\\x07=1+1"
    assert csv_cell("=1+1") == "'=1+1" and csv_cell("\t=1") == "'\t=1" and csv_cell(1.5) == 1.5
    bad = point(64, [100])
    hostile = machine(V100, [type(bad)(**{**bad.__dict__, "precision": f"fp32{TITLE}"}),
                             point(128, [90], status="error")])  # fmt: skip
    hostile.points[1] = type(bad)(**{**hostile.points[1].__dict__, "error": f"=cmd{TITLE}"})
    path = result.create(hostile, tmp_path / "in")
    assert _in_process(capsys, "collect", str(path), "-o", str(tmp_path / "c" / "all"))[0] == 0
    code, csv_text, _ = _in_process(capsys, "compare", str(path), "--format", "csv")
    assert code == 0
    assert _in_process(capsys, "report", str(path), "-o", str(tmp_path / "r"))[0] == 0
    for name, text in (
        ("compare csv", csv_text),
        ("collect csv", (tmp_path / "c" / "all.csv").read_text()),
        ("report.html", (tmp_path / "r" / "report.html").read_text()),
        ("report.md", (tmp_path / "r" / "report.md").read_text()),
    ):
        assert not RAW.search(text.replace("\r\n", "\n")), name
        assert "\\x1b" in text.replace("\\\\", "\\"), name  # made visible
    assert "'=cmd\\x1b]0;owned\\x07" in (tmp_path / "c" / "all.csv").read_text()


def test_a_lone_surrogate_is_shown_escaped_so_a_strict_stream_can_print_it():
    # A file name that is no UTF-8 reaches Python as a lone surrogate (surrogateescape).
    shown = plain("results/r\udcff.json").plain
    assert shown == "results/r\\udcff.json"
    shown.encode("utf-8")  # would raise UnicodeEncodeError before


def test_a_files_words_in_headers_labels_and_progress_never_reach_a_terminal_raw(tmp_path, capsys):
    """A unit of a file's point went raw into bench show's header (escape sequences,
    and rich markup: '[link=...]' became a hyperlink, '[/x]' a traceback); a rerun
    file's compiler went raw into the progress line; a 16 MiB label held show for 53 s."""
    import io

    from rich.console import Console

    from bench.config.bounds import MAX_TEXT
    from bench.config.run_config import RunConfig
    from bench.report.live import LiveReporter
    from bench.util.errors import UsageError

    for unit in (HOSTILE, "[/x]tokens"):
        hostile = machine(V100, [point(64, [100])])
        hostile.points[0].details["per_sample"] = {"unit": unit, "count": 128}
        path = result.create(hostile, tmp_path / unit[:4].replace("/", "_"))
        code, out, _ = _in_process(capsys, "show", str(path))
        assert code == 0 and not RAW.search(out) and "evil" not in out, out
        assert "throughput" in out
    with pytest.raises(UsageError, match="is not a compiler's name"):
        RunConfig(workload="tiny", compilers=("x\x1b]8;;evil\x1b\\",))
    screen = Console(file=io.StringIO(), force_terminal=True, width=120)
    with LiveReporter(screen) as live:
        live.start(f"batch 8 {TITLE}", 2)
        live.progress("measure\x1b[2J", 1, 2)
    assert TITLE not in screen.file.getvalue() and "\x1b[2J" not in screen.file.getvalue()
    data = _fixture_with(lambda d: d.update(label="L" * (MAX_TEXT + 1)))
    (tmp_path / "long.json").write_text(json.dumps(data))
    with pytest.raises(ResultError, match="label: text of more than 262,144 characters"):
        result.load(tmp_path / "long.json")


def test_a_file_name_forges_no_second_line_and_reorders_no_text(tmp_path, capsys):
    """A newline in a file's name wrote a second 'bench: error: ...' line under bench's
    own; right-to-left overrides and zero-width marks passed into names unseen."""
    folder = tmp_path / "r"
    forged = folder / "x\nbench: error: your GPU is broken\u202e.json"
    folder.mkdir()
    forged.write_text('{"schema_version": 2, "points": "x"')
    code, _, err = _in_process(capsys, "show", str(forged))
    assert code == 2 and len(err.splitlines()) == 1 and "\\x0abench: error" in err
    assert "\u202e" not in err and "\\u202e" in err
    result.create(machine(V100, [point(64, [100])]), folder)
    code, _, err = _in_process(capsys, "show", str(folder))  # set apart: one warning line
    assert code == 0 and len(err.splitlines()) == 1 and err.startswith("bench: warning: ")
