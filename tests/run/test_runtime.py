"""The child's runtime axes: allocator, OpenMP runtime, NUMA binding (bench.run.runtime)."""

import subprocess

import pytest

from bench.config.run_config import RunConfig
from bench.run import runtime
from bench.util.errors import UsageError
from tests.conftest import ROOT, only_result, run_bench


def _have(axis: str, value: str) -> str:
    try:
        return runtime.library(axis, value) or ""
    except UsageError as missing:
        pytest.skip(str(missing))


def test_nothing_asked_leaves_the_child_as_bench_was_launched():
    base = {"LD_PRELOAD": "/opt/libfoo.so:/usr/lib/libtcmalloc.so.4", "PATH": "/bin"}
    child = runtime.child_runtime(None, None, None, base)
    assert child.env == base and child.prefix == () and child.record == {}


def test_the_system_allocator_drops_an_inherited_one_and_keeps_the_rest():
    base = {"LD_PRELOAD": "/opt/libfoo.so:/usr/lib/libtcmalloc.so.4 /x/libjemalloc.so.2"}
    child = runtime.child_runtime("system", None, None, base)
    assert child.env["LD_PRELOAD"] == "/opt/libfoo.so"
    assert child.record == {"allocator": "system", "ld_preload": "/opt/libfoo.so",
                            "settings": None}  # fmt: skip
    alone = runtime.child_runtime("system", None, None, {"LD_PRELOAD": "/a/libtcmalloc.so.4"})
    assert "LD_PRELOAD" not in alone.env


@pytest.mark.os_packages
def test_tcmalloc_and_intel_openmp_are_preloaded_with_run_cpus_settings():
    # Every library this test preloads, asked first: a machine with TCMalloc and without
    # jemalloc skips, naming the package, rather than failing halfway.
    tcmalloc, iomp = _have("allocator", "tcmalloc"), _have("openmp", "intel")
    jemalloc = _have("allocator", "jemalloc")
    child = runtime.child_runtime("tcmalloc", "intel", None, {"KMP_BLOCKTIME": "50"})
    assert child.env["LD_PRELOAD"] == f"{tcmalloc}:{iomp}"
    assert child.env["KMP_AFFINITY"] == "granularity=fine,compact,1,0"
    assert child.env["KMP_BLOCKTIME"] == "50"  # the user's own setting wins
    assert child.record["settings"] == "KMP_AFFINITY=granularity=fine,compact,1,0 KMP_BLOCKTIME=50"
    gnu = runtime.child_runtime("jemalloc", "gnu", None, {"LD_PRELOAD": iomp})
    assert gnu.env["LD_PRELOAD"] == jemalloc  # Intel OpenMP dropped
    assert gnu.env["OMP_PROC_BIND"] == "CLOSE" and "oversize_threshold:1" in gnu.env["MALLOC_CONF"]


def test_a_missing_library_is_one_line_naming_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setattr(runtime, "_library_dirs", lambda: [tmp_path])
    with pytest.raises(UsageError, match=r"allocator 'jemalloc': libjemalloc.so.2 is not "
                       r"installed here .*apt-get install libjemalloc2"):  # fmt: skip
        runtime.check(("system", "jemalloc"), (None,))
    with pytest.raises(UsageError, match=r"pip install intel-openmp"):
        runtime.check((None,), ("intel",))
    runtime.check(("system",), ("gnu",))  # nothing to preload: nothing to find


def test_numa_binding_says_why_it_was_not_applied(monkeypatch):
    assert runtime.child_runtime(None, None, "off", {}).record == {"numa": "off"}
    monkeypatch.setattr(runtime.shutil, "which", lambda name: None)
    child = runtime.child_runtime(None, None, "on", {})
    assert child.prefix == () and child.record["numa_binding"] is None
    assert "numactl is not installed" in child.record["numa_reason"]


def test_the_axes_are_swept_and_checked_like_the_others():
    config = RunConfig(workload="tiny", allocators=("system", "tcmalloc"), numas=("on", "off"))
    points = list(config.points())
    assert [(p.allocator, p.numa) for p in points] == [
        ("system", "on"), ("system", "off"), ("tcmalloc", "on"), ("tcmalloc", "off")
    ]  # fmt: skip
    assert all(p.openmp is None for p in points)
    with pytest.raises(UsageError, match="allocator: 'mimalloc' is not allowed; choose from"):
        RunConfig(workload="tiny", allocators=("mimalloc",))
    with pytest.raises(UsageError, match="allocators: the max-batch search takes one value"):
        RunConfig(workload="tiny", allocators=("system", "tcmalloc"), find_max_batch=True)


@pytest.mark.slow
def test_each_point_child_really_ran_with_its_runtime(tmp_path):
    """The child's own record: what it had mapped (/proc/self/maps), not what was asked."""
    _have("allocator", "tcmalloc")
    done = run_bench(
        "tiny", "--device", "cpu", "--steps", "2", "--warmup-steps", "1",
        "--allocator", "system,tcmalloc", "--output-dir", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    system, tcmalloc = only_result(tmp_path)["points"]
    assert system["allocator"] == "system" and "libtcmalloc" not in system["runtime"]["loaded"]
    assert tcmalloc["allocator"] == "tcmalloc" and "libtcmalloc" in tcmalloc["runtime"]["loaded"]
    assert "tcmalloc" in done.stdout  # the table's runtime column


def test_a_missing_library_stops_the_run_before_anything_is_measured(tmp_path, monkeypatch, capsys):
    from bench.cli import main

    monkeypatch.setattr(runtime, "_library_dirs", lambda: [tmp_path])
    code = main(["tiny", "--device", "cpu", "--openmp", "intel", "--output-dir", str(tmp_path)])
    assert code == 2 and "pip install intel-openmp" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.json"))


def test_a_bad_value_from_the_environment_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_ALLOCATOR", "fast")
    done = run_bench("tiny", "--device", "cpu", cwd=tmp_path)
    assert done.returncode == 2
    assert "allocator: 'fast' is not allowed; use one or more of system, tcmalloc" in done.stderr


def test_numa_nodes_are_read_in_node_order_with_ranges_and_cpu_less_nodes(tmp_path):
    from bench.util import numa

    for name, cpulist in {"node0": "0-3,8-11", "node10": "", "node2": "4-7,12"}.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "cpulist").write_text(cpulist + "\n")
    (tmp_path / "node3").mkdir()  # no cpulist: not a node that can be read
    (tmp_path / "possible").write_text("0-10\n")
    assert numa.node_cpus(tmp_path) == {
        0: [0, 1, 2, 3, 8, 9, 10, 11],
        2: [4, 5, 6, 7, 12],
        10: [],
    }
    assert list(numa.node_cpus(tmp_path)) == [0, 2, 10]
    assert numa.node_cpus(tmp_path / "absent") == {}


# --- NUMA auto: bind where it helps and may, else unbound, silently ----------------------


def _machine(monkeypatch, nodes, numactl="/usr/bin/numactl", stderr=None, sys_nice=None):
    """A machine of `nodes` NUMA nodes whose numactl binds, or fails with `stderr`."""
    calls = []

    def run(argv, **kwargs):
        calls.append(argv)
        return subprocess.CompletedProcess(argv, 1 if stderr else 0, "", stderr or "")

    monkeypatch.setattr(runtime, "node_cpus", lambda: nodes)
    monkeypatch.setattr(runtime.shutil, "which", lambda name: numactl)
    monkeypatch.setattr(runtime.subprocess, "run", run)
    monkeypatch.setattr(runtime, "_bind_cpus", lambda: ("0,1", "0,1"))
    monkeypatch.setattr(runtime, "has_sys_nice", lambda: sys_nice)
    return calls


def _said_after_the_run(record):
    """What bench prints under the table about this point's runtime."""
    from bench.report.table import notes
    from bench.result import Point, Result

    point = Point(batch_size=8, precision="fp32", numa=record.get("numa"), runtime=record)
    return notes(Result(config=RunConfig(workload="tiny"), points=[point])) or ""


TWO_NODES = {0: [0], 1: [1]}


@pytest.mark.parametrize(
    ("nodes", "stderr", "sys_nice", "note"),
    [
        ({0: [0, 1]}, None, None, "not bound (single node)"),
        ({}, None, None, "not bound (single node)"),  # the kernel shows no nodes
        (TWO_NODES, "set_mempolicy: Operation not permitted", False, "not bound (no SYS_NICE)"),
    ],
)
def test_numa_auto_runs_unbound_where_it_cannot_help_or_may_not_and_says_nothing(
    monkeypatch, nodes, stderr, sys_nice, note
):
    calls = _machine(monkeypatch, nodes, stderr=stderr, sys_nice=sys_nice)
    child = runtime.child_runtime(None, None, "auto", {})
    assert child.prefix == ()
    assert child.record == {"numa": "auto", "numa_binding": None, "numa_note": note}
    assert "NUMA" not in _said_after_the_run(child.record)  # no warning: nothing was asked
    assert len(calls) == (0 if len(nodes) < 2 else 1)  # one node: numactl not even tried


def test_numa_auto_binds_on_several_nodes_where_the_container_may(monkeypatch):
    _machine(monkeypatch, TWO_NODES)
    child = runtime.child_runtime(None, None, "auto", {})
    assert child.prefix == ("/usr/bin/numactl", "-C", "0,1", "-m", "0,1")
    assert child.record == {"numa": "auto", "numa_binding": "numactl -C 0,1 -m 0,1"}


def test_numa_on_that_cannot_bind_still_warns(monkeypatch):
    _machine(monkeypatch, {0: [0, 1]}, stderr="set_mempolicy: Operation not permitted",
             sys_nice=False)  # fmt: skip
    child = runtime.child_runtime(None, None, "on", {})  # asked for: tried on one node too
    assert child.prefix == () and child.record["numa_binding"] is None
    assert "--cap-add SYS_NICE" in child.record["numa_reason"]
    said = _said_after_the_run(child.record)
    assert "NUMA binding asked for, not applied" in said and "SYS_NICE" in said


def test_sys_nice_is_read_from_the_effective_capabilities(tmp_path):
    status = tmp_path / "status"
    status.write_text("Name:\tpython\nCapEff:\t00000000a80425fb\n")  # Docker's default set
    assert runtime.has_sys_nice(status) is False
    status.write_text(f"CapEff:\t{0xA80425FB | 1 << 23:016x}\n")  # with --cap-add SYS_NICE
    assert runtime.has_sys_nice(status) is True
    assert runtime.has_sys_nice(tmp_path / "absent") is None


def test_numa_auto_is_a_value_configs_and_result_files_take(tmp_path):
    from bench import result
    from bench.result import Point, Result

    config = RunConfig(workload="tiny", numas=("auto", "off"))
    assert [p.numa for p in config.points()] == ["auto", "off"]
    record = {"numa": "auto", "numa_binding": None, "numa_note": "not bound (single node)"}
    point = Point(batch_size=16, precision="fp32", step_times_s=((0.1, 0.1),), numa="auto",
                  runtime=record)  # fmt: skip
    path = result.create(Result(config=config, points=[point]), tmp_path)
    loaded = result.load(path)
    assert loaded.points[0].numa == "auto" and loaded.points[0].runtime == record


def test_the_xeon_launcher_defaults_to_numa_auto():
    launcher = ROOT / "images" / "common" / "xeon-launcher.sh"
    assert 'export BENCH_NUMA="${BENCH_NUMA:-auto}"' in launcher.read_text().splitlines()


@pytest.mark.parametrize("image", ["xeon", "xeon-ipex"])
def test_the_image_toml_runtime_says_what_the_launcher_sets(image):
    import tomllib

    root = ROOT / "images"
    launcher = (root / "common" / "xeon-launcher.sh").read_text()
    meta = tomllib.loads((root / image / "image.toml").read_text())
    for axis, value in meta["runtime"].items():
        assert f'BENCH_{axis.upper()}="${{BENCH_{axis.upper()}:-{value}}}"' in launcher, axis


@pytest.mark.full  # a real run of seconds: the fast tier keeps its 8 minutes
def test_a_run_with_numa_auto_on_this_machine_is_silent_about_numa(tmp_path):
    """The bench:xeon default on whatever machine runs the tests: no NUMA warning, and
    the point says whether it was bound and, if not, why."""
    done = run_bench(
        "tiny", "--device", "cpu", "--steps", "2", "--warmup-steps", "1", "--numa", "auto",
        "--output-dir", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "NUMA" not in done.stdout + done.stderr
    (point,) = only_result(tmp_path)["points"]
    assert point["numa"] == "auto"
    assert point["runtime"]["numa_binding"] or point["runtime"]["numa_note"].startswith(
        "not bound ("
    )
