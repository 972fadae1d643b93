"""A busy machine is recorded per repeat and flagged, from real /proc readings."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.result import Point
from bench.result.derive import busy_why as verdict
from bench.trackers.busy import BusyTracker, system_cpu_s, tree_cpu_s

linux_only = pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="reads /proc")


def test_quiet_short_and_missing_records_are_not_flagged():
    assert verdict(None) is None
    assert verdict({"window_s": 2, "others_cpus": 0.1, "steal_cpus": 0.0, "throttle": {}}) is None
    # one stray clock tick in a short window is not a busy machine
    assert verdict({"window_s": 0.1, "others_cpus": 0.9}) is None
    assert verdict({"window_s": 2, "others_cpus": None, "throttle": {"gpu0": []}}) is None


def test_a_gpu_at_its_power_cap_is_not_a_busy_machine_but_heat_is():
    # An H200 training at full load (680 of its 700 W) reports power_cap: every heavy
    # point read 'busy machine' on the GPU campaign before this rule.
    assert verdict({"window_s": 2, "throttle": {"gpu0": ["power_cap"]}}) is None
    why = verdict({"window_s": 2, "throttle": {"gpu0": ["power_cap", "hw_thermal"]}})
    assert why == "gpu0 clocks held back (hw_thermal)"


def test_others_steal_and_throttled_gpus_are_each_named():
    record = {
        "window_s": 3.0,
        "others_cpus": 1.5,
        "steal_cpus": 0.5,
        "throttle": {"gpu1": ["sw_thermal"], "gpu0": []},
    }
    why = verdict(record)
    assert "other processes kept 1.50 CPUs busy" in why
    assert "the hypervisor stole 0.50 CPUs" in why
    assert "gpu1 clocks held back (sw_thermal)" in why and "gpu0" not in why


def test_a_point_names_the_repeats_that_ran_on_a_busy_machine():
    quiet = {"window_s": 2, "others_cpus": 0.0}
    loud = {"window_s": 2, "others_cpus": 1.0}
    point = Point(batch_size=8, precision="fp32", busy=(quiet, loud, None))
    assert point.busy_note == "repeat 2: other processes kept 1.00 CPUs busy"
    assert Point(batch_size=8, precision="fp32", busy=(quiet,)).busy_note is None


def _running(pid: int) -> bool:
    """Alive and not a zombie (where no init reaps the shell's orphan, it stays one)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@linux_only
def test_cpu_time_of_a_child_counts_as_ours_and_a_stranger_as_others(tmp_path):
    """On any machine, quiet or not (pytest-xdist's other workers are strangers too): each
    spinner burns one CPU-second, however long that takes, and the test asks where the
    tracker counted it rather than whether the rest of the machine was idle."""
    go = tmp_path / "go"
    spin = (
        "import os, time\n"
        f"while not os.path.exists({str(go)!r}): time.sleep(0.01)\n"
        "start = time.process_time()\n"
        "while time.process_time() - start < 1.0: pass"
    )
    ours = subprocess.Popen([sys.executable, "-c", spin])  # a child: part of our tree
    before = system_cpu_s()
    with BusyTracker(os.getpid(), lambda: {}) as tracker:
        go.touch()
        ours.wait()
    busy = system_cpu_s()[0] - before[0]  # everyone's, around the tracker's window
    window = tracker.record["window_s"]
    # the child's second was taken out of the others' (without, others = all of busy)
    assert tracker.record["others_cpus"] * window <= busy - 0.9, (busy, tracker.record)
    # the same work in a process outside the tree (started by a shell that exits)
    go.unlink()
    env = {**os.environ, "PY": sys.executable, "SCRIPT": spin}
    shell = '"$PY" -c "$SCRIPT" >/dev/null 2>&1 & echo $!'  # not our pipe: run() returns
    done = subprocess.run(["sh", "-c", shell], env=env, check=True, capture_output=True, text=True)
    stranger = int(done.stdout)
    start = tree_cpu_s(os.getpid())
    with BusyTracker(os.getpid(), lambda: {}) as tracker:
        go.touch()  # it spins only now, inside the window
        while _running(stranger) and tracker.clock() - tracker.start < 60:
            time.sleep(0.05)  # until its CPU-second is spent
    assert tree_cpu_s(os.getpid()) - start < 0.5  # not ours: we slept
    window = tracker.record["window_s"]
    assert tracker.record["others_cpus"] * window >= 0.9, tracker.record  # counted as others
    assert "other processes kept" in verdict(tracker.record)


def test_a_failing_throttle_reading_loses_nothing():
    def broken():
        raise RuntimeError("NVML went away")

    with BusyTracker(os.getpid(), broken) as tracker:
        pass
    assert tracker.record["throttle"] is None and tracker.record["window_s"] >= 0
