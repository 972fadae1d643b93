"""bench suite: presets validated before anything runs, one result per run, resumable."""

import hashlib
import json
from pathlib import Path

import pytest

from bench import result
from bench.cli import main
from bench.commands import suite
from tests.conftest import run_bench


@pytest.fixture
def two_runs(tmp_path, monkeypatch):
    presets = tmp_path / "suites.toml"
    presets.write_text(
        '[mini]\ndescription = "two small runs"\nruns = [\n'
        '  ["tiny", "--batch-size", "8,16", "--steps", "3", "--warmup-steps", "1"],\n'
        '  ["tiny", "--batch-size", "32", "--steps", "3", "--warmup-steps", "1"],\n]\n'
    )
    monkeypatch.setattr(suite, "SUITES_FILE", presets)
    return tmp_path / "out"


def test_every_shipped_preset_parses_into_valid_runs():
    for preset in suite.suites().values():
        assert preset.description and preset.runs
        for run in preset.runs:
            from bench.commands.run_options import config_from_args, parse_run

            config_from_args(parse_run([*run, "--device", "cpu"]))


@pytest.mark.slow
def test_a_suite_runs_each_run_into_its_own_result_and_goes_on_after_a_stop(two_runs, capsys):
    assert main(["suite", "mini", "--device", "cpu", "--output-dir", str(two_runs)]) == 0
    state = json.loads((two_runs / "suite-mini.json").read_text())
    assert state["kind"] == "bench-suite-state" and len(state["done"]) == 2
    first, second = state["done"].values()
    # as if the second run had been stopped before its one point was measured
    stopped = Path(second)
    data = json.loads(stopped.read_text())
    data["points"], data["status"] = [], "interrupted"
    stopped.write_text(json.dumps(data))
    # and recorded so, as bench records a stopped run (the state holds each file's sha256)
    key = next(k for k, v in state["done"].items() if v == second)
    state["sha256"][key] = hashlib.sha256(stopped.read_bytes()).hexdigest()
    (two_runs / "suite-mini.json").write_text(json.dumps(state))
    capsys.readouterr()
    assert main(["suite", "mini", "--device", "cpu", "--output-dir", str(two_runs)]) == 0
    out = capsys.readouterr().out.replace("\n", "")  # long paths wrap
    assert "1/2: done before" in out and f"going on with {second}" in out
    assert result.load(second).status == "complete" and len(result.load(second).points) == 1
    assert len(list(two_runs.glob("tiny-*.json"))) == 2  # no third file
    assert result.load(first).status == "complete"


def test_a_bad_run_or_name_is_one_line_before_anything_runs(two_runs):
    done = run_bench("suite", "quik")
    assert done.returncode == 2 and "unknown suite 'quik' (did you mean 'quick'?)" in done.stderr
    bad = run_bench("suite", "quick", "--device", "cpu", "--batch-size", "0")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "suite quick, run 'tiny --batch-size 16,32 --repeats 3'" in bad.stderr
    assert "batch_size: 0 is not allowed" in bad.stderr or "batch-size" in bad.stderr


def test_suite_list_names_every_preset():
    done = run_bench("suite", "list")
    assert done.returncode == 0
    for name in ("quick", "cifar-cnn", "tpu-vs-gpu", "gpu-memory-ladder", "cpu-ladder"):
        assert name in done.stdout


@pytest.mark.slow
def test_a_matrix_runs_each_run_per_value_and_compare_gives_each_its_column(
    tmp_path, monkeypatch, capsys
):
    """The memory ladder's mechanism: one run per emulated card, labelled with its size,
    and bench compare lines the largest batches up by card, one column each (results
    of max-batch searches alone are not set apart for their different caps)."""
    presets = tmp_path / "suites.toml"
    presets.write_text(
        '[ladder]\ndescription = "max batch per card"\n'
        'runs = [["tiny", "--find-max-batch", "--max-batch-limit", "16", "--steps", "2",'
        ' "--warmup-steps", "1"]]\n'
        'matrix = { "--memory-limit" = ["1GiB", "4GiB"] }\n'
    )
    monkeypatch.setattr(suite, "SUITES_FILE", presets)
    out = tmp_path / "out"
    runs = suite.suites()["ladder"].runs
    assert [run[-4:] for run in runs] == [
        ("--memory-limit", "1GiB", "--label", "memory-limit 1GiB"),
        ("--memory-limit", "4GiB", "--label", "memory-limit 4GiB"),
    ]
    assert main(["suite", "ladder", "--device", "cpu", "--output-dir", str(out)]) == 0
    capsys.readouterr()
    assert main(["compare", str(out), "--baseline", "4GiB"]) == 0
    shown = capsys.readouterr()
    table = shown.out.replace("\n", " ")
    assert "set apart" not in table
    assert shown.err == ""  # the suite's own state file beside its results: nothing to say
    # Each card its column, by label (a long CPU name's label wraps in the header,
    # 'Intel(R) Xeon(R) Processor (2 cores) · memory-limit' over '1GiB').
    assert table.count("memory-limit") == 2 and "1GiB" in table and "4GiB" in table
    loaded = [result.load(p) for p in out.glob("tiny-*.json")]
    assert sorted(r.config.memory_limit_bytes for r in loaded) == [2**30, 4 * 2**30]
    assert all(r.max_batch[0].status == "done" for r in loaded)


@pytest.mark.slow
def test_a_suite_in_an_empty_folder_makes_its_results_folder_with_its_parents(
    two_runs, tmp_path, monkeypatch, capsys
):
    """`bench suite quick` in an empty folder: results/suite-quick is made, results too,
    as `bench tiny` makes results (it was refused: 'results does not exist')."""
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    monkeypatch.delenv("BENCH_OUTPUT_DIR", raising=False)
    assert main(["suite", "mini", "--device", "cpu"]) == 0
    folder = empty / "results" / "suite-mini"
    assert (folder / "suite-mini.json").is_file() and len(list(folder.glob("tiny-*.json"))) == 2
    out = capsys.readouterr().out.replace("\n", "")
    assert "compare them: bench compare results/suite-mini" in out


def test_an_output_folder_is_made_with_every_missing_parent_none_writable_by_all(
    tmp_path, monkeypatch
):
    import os

    from bench.util import files
    from bench.util.errors import UsageError

    monkeypatch.chdir(tmp_path)
    old = os.umask(0)
    try:
        made = files.require_writable_dir(Path("a/b/c"), "output-dir")
    finally:
        os.umask(old)
    assert made.is_dir()
    for level in ("a", "a/b", "a/b/c"):  # mkdir -p would leave the parents 0777 here
        assert (tmp_path / level).stat().st_mode & 0o777 == 0o755, level
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(UsageError, match=r"^output-dir: a-file/x/y cannot be created: .*"
                       r"a-file is not a folder$"):  # fmt: skip
        files.require_writable_dir(Path("a-file/x/y"), "output-dir")
    assert not (tmp_path / "a-file" / "x").exists()


def test_a_second_suite_of_one_name_in_one_folder_is_refused_while_the_first_runs(two_runs, capsys):
    """Two suites writing one state file would lose each other's finished runs."""
    import subprocess
    import sys

    from bench.util import files

    two_runs.mkdir(parents=True)
    state = two_runs / "suite-mini.json"
    holder = subprocess.Popen(  # another process holds the suite's claim, as a running suite
        [sys.executable, "-c", "import sys, time; from bench.util import files; "
         f"c = files.FileClaim({str(state)!r}); assert c.acquire(); print('held', flush=True); "
         "time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        code = main(["suite", "mini", "--output-dir", str(two_runs), "--device", "cpu"])
        err = capsys.readouterr().err
        assert code == 2 and "suite mini is running in" in err, err
        assert not list(two_runs.glob("tiny-*.json"))  # nothing ran
    finally:
        holder.kill()
        holder.wait()
    assert files.FileClaim(state).acquire()  # free again once that process ended


def test_a_run_that_needs_a_missing_extra_stops_the_suite_before_its_first_run(
    tmp_path, monkeypatch, capsys
):
    """bench suite zoo on the README's [torch] install ran resnet50, then stopped at
    nasnet-large for timm: 9 of 11 runs never started, one half-done folder left."""
    import sys

    presets = tmp_path / "suites.toml"
    presets.write_text(
        '[two]\ndescription = "a run, then one that needs timm"\nruns = [\n'
        '  ["tiny", "--steps", "3"],\n  ["nasnet-large", "--steps", "1"],\n]\n'
    )
    monkeypatch.setattr(suite, "SUITES_FILE", presets)
    monkeypatch.setitem(sys.modules, "timm", None)
    assert main(["suite", "two", "--device", "cpu", "--output-dir", str(tmp_path / "out")]) == 2
    said = capsys.readouterr().err
    assert said.startswith("bench: error: suite two, run 'nasnet-large --steps 1 --device cpu")
    assert said.endswith(": nasnet-large (torch) needs timm: pip install 'bench[zoo]'\n")
    assert not (tmp_path / "out").exists()  # nothing ran, nothing was made
    out = str(tmp_path / "r")  # bench run A,B alike
    assert main(["run", "tiny,nasnet-large", "--device", "cpu", "--output-dir", out]) == 2
    assert "nasnet-large (torch) needs timm" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_the_closing_hint_is_a_command_that_works_where_the_user_is(monkeypatch):
    monkeypatch.delenv("BENCH_IMAGE", raising=False)
    assert suite._closing_hint("results/suite-quick").startswith(
        "compare them: bench compare results/suite-quick"
    )
    monkeypatch.setenv("BENCH_IMAGE", "bench:xeon")  # make quickstart: the host has no bench
    hint = suite._closing_hint("/results/suite-quick")
    assert hint.startswith('compare them: make run ARGS="compare /results/suite-quick"')
    assert "bench report results/suite-quick" in hint and "bench compare" not in hint
