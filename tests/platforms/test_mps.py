"""The Mac's chip as macOS names it (bench/platforms/mps.py), from recorded outputs of the
commands it runs: no Mac here."""

import sys
import types

from bench.platforms import mps

# What an M2 Max with 38 GPU cores and 96 GB answered (system_profiler's JSON abridged).
M2_MAX = {
    ("sysctl", "-n", "machdep.cpu.brand_string"): "Apple M2 Max\n",
    ("sysctl", "-n", "hw.memsize"): "103079215104\n",
    ("system_profiler", "SPDisplaysDataType", "-json"): """{"SPDisplaysDataType": [{
        "_name": "Apple M2 Max", "sppci_cores": "38", "sppci_device_type": "spdisplays_gpu",
        "sppci_model": "Apple M2 Max", "spdisplays_mtlgpufamilysupport": "spdisplays_metal3"}]}""",
}


def test_a_mac_is_named_by_its_chip_gpu_cores_and_unified_memory():
    described = mps.describe_chip(lambda argv: M2_MAX[tuple(argv)])
    assert described["accelerator"] == "Apple M2 Max (38-core GPU)"
    assert described["chip"] == "Apple M2 Max" and described["gpu_cores"] == 38
    assert described["accelerator_memory_bytes"] == [103_079_215_104]
    assert described["memory"] == "unified"


def test_a_command_that_says_nothing_leaves_its_fact_null():
    answers = {**M2_MAX, ("system_profiler", "SPDisplaysDataType", "-json"): '{"other": 1}'}
    described = mps.describe_chip(lambda argv: answers[tuple(argv)])
    assert described["accelerator"] == "Apple M2 Max" and described["gpu_cores"] is None
    described = mps.describe_chip(lambda argv: None)  # every command failed or timed out
    assert described["accelerator"] is None and described["accelerator_memory_bytes"] == [None]
    assert mps.gpu_cores("not json") is None and mps.gpu_cores('{"SPDisplaysDataType": 3}') is None


def test_commands_are_argv_lists_bounded_in_time(monkeypatch):
    monkeypatch.setattr(mps, "COMMAND_TIMEOUT_S", 0.5)
    sleeper = [sys.executable, "-c", "import time; time.sleep(5)"]
    assert mps.command_output(sleeper) is None  # timed out: no fact, no hang
    assert mps.command_output(["/nonexistent/sysctl"]) is None
    assert mps.command_output([sys.executable, "-c", "print(38)"]) == "38\n"


def test_peak_memory_is_what_the_metal_driver_holds_at_the_windows_end(monkeypatch):
    emptied = []
    fake = types.SimpleNamespace(mps=types.SimpleNamespace(
        driver_allocated_memory=lambda: 3 * 2**30, empty_cache=lambda: emptied.append(1),
    ))  # fmt: skip
    monkeypatch.setitem(sys.modules, "torch", fake)
    platform = mps.MpsPlatform()
    platform.reset_peak_memory()  # the cache of what ran before is given back first
    reading = platform.peak_memory()
    assert emptied == [1]
    assert reading.peak_bytes == 3 * 2**30 and reading.kind == "mps_driver_allocated_at_end"


def test_tensorflow_and_jax_on_a_mac_name_what_runs_there_instead(monkeypatch):
    """The M2 Max vs V100 article trained TensorFlow through tensorflow-metal, which bench
    does not drive: the refusal is one line saying so and what does run on the Mac's GPU."""
    from bench import registry
    from bench.frameworks import _xla

    monkeypatch.setattr(_xla, "missing", lambda *a: None)  # as if TensorFlow were installed
    for name in ("tensorflow", "jax"):
        reason = registry.framework(name).unavailable_reason(registry.platform("mps"))
        assert reason is not None and "\n" not in reason
        assert "not mps" in reason and "tensorflow-metal" in reason
        assert "--framework mlx or torch" in reason
