"""The child's runtime axes: allocator, OpenMP runtime, NUMA binding (bench.runtime)."""

import pytest

from bench import runtime
from bench.config import RunConfig
from bench.errors import UsageError

from .conftest import only_result, run_bench


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


def test_tcmalloc_and_intel_openmp_are_preloaded_with_run_cpus_settings():
    tcmalloc, iomp = _have("allocator", "tcmalloc"), _have("openmp", "intel")
    child = runtime.child_runtime("tcmalloc", "intel", None, {"KMP_BLOCKTIME": "50"})
    assert child.env["LD_PRELOAD"] == f"{tcmalloc}:{iomp}"
    assert child.env["KMP_AFFINITY"] == "granularity=fine,compact,1,0"
    assert child.env["KMP_BLOCKTIME"] == "50"  # the user's own setting wins
    assert child.record["settings"] == "KMP_AFFINITY=granularity=fine,compact,1,0 KMP_BLOCKTIME=50"
    gnu = runtime.child_runtime("jemalloc", "gnu", None, {"LD_PRELOAD": iomp})
    assert gnu.env["LD_PRELOAD"] == _have("allocator", "jemalloc")  # Intel OpenMP dropped
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
    from bench import numa

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
