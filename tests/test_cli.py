"""The command line as a user meets it: exit codes and one-line errors."""

import json

import pytest

from tests.conftest import ROOT, run_bench


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["resnet51"], "unknown workload 'resnet51' (did you mean 'resnet50'?); choose from: bert"),
        (
            ["tiny", "--device", "cpu", "--batch-size", "-8"],
            "--batch-size: -8 is not allowed; use a positive whole number",
        ),
        (
            ["tiny", "--device", "cpu", "--batch-size", "8,x"],
            "batch-size: 'x' is not allowed; use whole numbers",
        ),
        (
            ["tiny", "--device", "cpu", "--label", "a\x1b[2Jb"],
            "label: 'a\\x1b[2Jb' is not 1 to 80 printable characters",
        ),
        (
            ["tiny", "--device", "cpu", "--max-batch-step", "0"],
            "--max-batch-step: 0 is not allowed; use a positive whole number",
        ),
        (
            ["tiny", "--device", "cpu", "--precision", "fp64"],
            "precision: 'fp64' is not allowed; use one or more of fp32, tf32, fp16, bf16",
        ),
        (
            ["tiny", "--device", "cpu", "--precision", "tf32"],
            "precision 'tf32' is not available on cpu",
        ),
        (
            ["tiny", "--device", "tpu9"],
            "unknown device 'tpu9' (did you mean 'tpu'?); choose from: auto",
        ),
        (
            ["tiny", "--device", "cpu", "--memory-limit", "lots"],
            "memory-limit: 'lots' is not a size",
        ),
        (
            ["tiny", "--device", "cpu", "--repeats", "many"],
            "repeats: 'many' is not allowed; use a positive whole number or auto",
        ),
        (
            ["tiny", "--device", "cpu", "--seq-len", "128"],
            "--seq-len: workload 'tiny' takes no sequence length",
        ),
        (
            ["llama3-tiny", "--device", "cpu", "--seq-len", "64,128"],
            "'64,128' is not allowed; one sequence length a run",
        ),
        # figures the result stores: a run that saved them was a file bench then refused
        (
            ["tiny", "--device", "cpu", "--peak-tflops", "0"],
            "peak-tflops: '0' is not allowed; use a positive number from 1e-12 to 1e21",
        ),
        (["tiny", "--device", "cpu", "--price-per-hour", "1e30"], "price-per-hour: '1e30' is"),
        (["tiny", "--device", "cpu", "--timeout", "1e30"], "timeout: '1e30' is not allowed"),
        (["tiny", "--steps", "5", "--epochs", "2"], "--steps: not used with --epochs"),
        (["tiny", "--bogus"], "unrecognized arguments: --bogus"),
        (["tiny,resnet51"], "unknown workload 'resnet51' (did you mean 'resnet50'?)"),
        (["tiny,tiny"], "workload: 'tiny,tiny' is not a list of distinct workloads"),
        (["tiny,"], "workload: 'tiny,' is not a list of distinct workloads"),
        (["tiny,cnn-s", "--json"], "--json prints one result: give one workload"),
        # every config is checked before the first runs: bert-base would run, tiny not
        (
            ["bert-base,tiny", "--device", "cpu", "--seq-len", "64"],
            "--seq-len: workload 'tiny' takes no sequence length",
        ),
        (["show", "does-not-exist.json"], "does-not-exist.json: no such file or folder"),
        (["compare", ".", "-o", "c.md"], "-o writes --format markdown, csv or json"),
    ],
)
def test_bad_input_is_one_clear_line_and_exit_2(tmp_path, args, message):
    done = run_bench(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("bench: error: ") and message in lines[0]
    assert not list(tmp_path.glob("results/*.json"))  # nothing half-made was saved


def test_unreadable_result_file(tmp_path):
    (tmp_path / "broken.json").write_text('{"schema_version": 1, "points": "many"}')
    done = run_bench("show", "broken.json", cwd=tmp_path)
    assert done.returncode == 2
    assert "broken.json" in done.stderr and "Traceback" not in done.stderr


def test_unavailable_device_says_how_to_fix_it(tmp_path):
    done = run_bench("tiny", "--device", "cuda", cwd=tmp_path)
    if done.returncode == 0:
        pytest.skip("this machine has a CUDA device")
    assert done.returncode == 2
    assert "device 'cuda' is not available" in done.stderr and "--gpus all" in done.stderr


def test_list_shows_workloads_with_parameter_counts():
    done = run_bench("list")
    assert done.returncode == 0, done.stderr
    for text in ("resnet50", "25,557,032", "cnn-s", "122,570", "bert-base", "devices", "cpu"):
        assert text in done.stdout
    assert "default batch" in done.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["resnet5"], "unknown workload 'resnet5' (did you mean 'resnet50'?)"),
        (["shw", "x.json"], "unknown command or workload 'shw' (did you mean 'show'?)"),
        (["tiny", "--framework", "tourch"], "unknown framework 'tourch' (did you mean 'torch'?)"),
        (["qwerty"], "unknown workload 'qwerty'; choose from"),  # nothing near: no guess
    ],
)
def test_a_near_miss_gets_a_did_you_mean(args, message):
    done = run_bench(*args)
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_show_takes_a_folder_and_prints_every_result_in_it(tmp_path):
    import shutil

    from tests.conftest import DATA

    for name in ("result-v3.json", "result-v4.json"):
        shutil.copy(DATA / name, tmp_path / name)
    done = run_bench("show", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "result-v3.json" in done.stdout and "result-v4.json" in done.stdout
    assert done.stdout.count("tiny · torch") == 2


def test_version():
    done = run_bench("--version")
    assert done.returncode == 0 and done.stdout.startswith("bench ")


def test_an_unknown_instance_is_refused_before_measuring(tmp_path):
    done = run_bench("tiny", "--device", "cpu", "--instance", "x9.huge", cwd=tmp_path)
    assert done.returncode == 2
    assert "instance: 'x9.huge' is not in the price catalogue" in done.stderr
    assert not list(tmp_path.glob("results/*.json"))


@pytest.mark.full  # a real run of seconds: the fast tier keeps its 8 minutes
def test_a_label_names_the_run_in_its_file_and_table(tmp_path):
    done = run_bench(
        "tiny", "--device", "cpu", "--steps", "2", "--label", "before",
        "--output-dir", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    saved = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert saved["label"] == "before"
    assert "tiny · torch" in done.stdout and "· before" in done.stdout


@pytest.mark.slow
def test_several_workloads_run_in_turn_one_result_each(tmp_path):
    done = run_bench(
        "run", "tiny,cnn-s", "--device", "cpu", "--steps", "2", "--batch-size", "8",
        "--output-dir", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    saved = sorted(json.loads(p.read_text())["config"]["workload"] for p in tmp_path.glob("*.json"))
    assert saved == ["cnn-s", "tiny"]
    assert "workload 1/2: tiny" in done.stdout and "workload 2/2: cnn-s" in done.stdout


@pytest.mark.parametrize("width", [80, 100, 160])
def test_tables_fit_the_terminal_and_never_cut_a_number(width):
    from rich.console import Console

    from bench import result
    from bench.report.table import tables
    from tests.conftest import DATA

    loaded = result.load(DATA / "result-v4.json")
    console = Console(width=width, record=True)
    for table in tables(loaded, console.width):
        console.print(table)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= width
    throughput = f"{loaded.points[1].throughput.value:,.1f}"
    assert throughput in text  # whole, not folded over two lines or cut with '…'
    assert "…" not in text
    if width == 80:
        assert "left out at this width: step p95 (ms)" in text
    if width == 160:
        assert "left out" not in text


# --- a bare install: what an extra brings is named, never a traceback ----------------------


def test_list_lists_every_workload_and_marks_one_whose_library_is_missing(monkeypatch, capsys):
    """timm (bench[zoo]) missing: nasnet-large is listed, marked with the extra; the
    listing of the others goes on (it stopped at nasnet-large with an error)."""
    import sys

    from bench import registry
    from bench.cli import main

    monkeypatch.setitem(sys.modules, "timm", None)  # `import timm` fails, find_spec is None
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name in registry.workloads():
        assert name in out
    assert "needs: pip" in out and "'bench[zoo]')" in out
    # Counts are the declared ones (checked against the built models by test_workloads):
    # nasnet-large's shows without timm, and the others keep theirs.
    assert "88,753,150" in out and "25,557,032" in out


def test_a_workload_names_the_extra_its_implementation_needs(monkeypatch):
    import sys

    from bench import registry
    from bench.util.errors import UsageError

    spec = registry.workload("nasnet-large")
    monkeypatch.setitem(sys.modules, "timm", None)
    missing = registry.missing_extras(spec, "torch")
    assert missing is not None and missing.modules == ["timm"] and missing.extras == ["zoo"]
    with pytest.raises(UsageError) as raised:
        registry.require_installed("nasnet-large", "torch")
    assert str(raised.value) == "nasnet-large (torch) needs timm: pip install 'bench[zoo]'"
    # what the framework itself brings (torchvision with torch) is not the workload's
    assert registry.missing_extras(registry.workload("resnet50"), "torch") is None
    monkeypatch.delitem(sys.modules, "timm")
    if registry._installed("timm"):
        assert registry.missing_extras(spec, "torch") is None


def test_a_missing_extra_is_named_in_one_line(monkeypatch):
    import sys

    from bench import registry

    for name in ("scipy", "pandas", "sky"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(registry.MissingExtra, match=r"^bench diff needs scipy: pip install "
                       r"'bench\[report\]'$"):  # fmt: skip
        registry.require("bench diff", "scipy")
    with pytest.raises(registry.MissingExtra, match=r"^x needs pandas, sky: pip install "
                       r"'bench\[fleet,report\]'$"):  # fmt: skip
        registry.require("x", "pandas", "sky")
    registry.require("x", "rich")  # installed: nothing raised


def test_the_extras_table_agrees_with_pyproject_and_every_message_names_a_real_extra():
    import re
    import tomllib

    from bench import registry

    root = ROOT
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    module = {
        "skypilot": "sky", "pyyaml": "yaml", "nvidia-ml-py": "pynvml",
        "vl-convert-python": "vl_convert",
    }  # fmt: skip
    declared = {}
    for extra, requirements in extras.items():
        if extra in ("dev", "docs", "xeon"):  # tools; a shared library (libiomp5), not a module
            continue
        for requirement in requirements:
            name = re.match(r"[A-Za-z0-9_.-]+", requirement).group().lower()
            declared[module.get(name, name.replace("-", "_"))] = extra
    assert declared == registry.EXTRAS
    named = set()
    for source in (root / "bench").rglob("*.py"):
        named |= set(re.findall(r"bench\[([a-z0-9-]+)\]", source.read_text()))
    assert named and named <= set(extras), named - set(extras)


@pytest.mark.parametrize(
    ("args", "hidden", "message"),
    [
        (["diff", "{a}", "{a}"], "scipy", "bench diff needs scipy: pip install 'bench[report]'"),
        (["collect", "{a}", "-o", "{tmp}/s"], "pandas",
         "bench collect needs pandas: pip install 'bench[report]'"),
        (["report", "{a}"], "vl_convert",
         "bench report needs vl_convert: pip install 'bench[report]'"),
    ],
)  # fmt: skip
def test_a_command_whose_extra_is_missing_says_which_in_one_line(
    tmp_path, monkeypatch, capsys, fixture_v1, args, hidden, message
):
    import sys

    from bench.cli import main

    monkeypatch.setitem(sys.modules, hidden, None)
    argv = [a.format(a=fixture_v1, tmp=tmp_path) for a in args]
    assert main(argv) == 2  # it was a ModuleNotFoundError traceback for bench diff
    assert capsys.readouterr().err.strip() == f"bench: error: {message}"


def test_verify_takes_a_folder_as_show_does_and_skips_a_suites_state(tmp_path, capsys):
    """bench verify results/ said 'UNREADABLE: ... Is a directory: 3', and a suite's
    folder failed on the suite's own state file."""
    from bench import result
    from bench.cli import main
    from tests.report.test_compare import V100, machine, point

    folder = tmp_path / "suite-quick"
    saved = result.create(machine(V100, [point(64, [100])]), folder)
    (folder / "suite-quick.json").write_text('{"kind": "bench-suite-state", "done": {}}')
    assert main(["verify", str(tmp_path)]) == 0
    assert capsys.readouterr().out.split() == [f"{saved}:", "ok"]
    (folder / "broken.json").write_text("{")
    assert main(["verify", str(folder)]) == 1
    assert "broken.json: UNREADABLE" in capsys.readouterr().out


def test_list_on_an_80_column_terminal_keeps_every_name_and_count_whole(monkeypatch):
    """At 80 columns eight columns cut 'llama3-1b' to 'llama3…' and the counts."""
    import io

    from rich.console import Console

    from bench import registry
    from bench.cli import main
    from bench.commands import results

    screen = Console(file=io.StringIO(), width=80)
    monkeypatch.setattr(results, "console_for", lambda *a: screen)
    assert main(["list"]) == 0
    out = screen.file.getvalue()
    assert "…" not in out and max(map(len, out.splitlines())) <= 80
    for name in registry.workloads():
        assert f"│ {name} " in out
    assert "1,235,814,400" in out and "a wider terminal" in out
