"""The input pipeline timed alone (bench.datasets.feed), with a fake clock and a fake
CPU counter: warm-up apart, images/s, cores, per core, and the cores a device needs."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time

import pytest

from bench.datasets import feed


def _clock(ticks: list[float]):
    times = iter(ticks)
    return lambda: next(times)


def test_warm_up_batches_are_kept_apart_and_the_cpu_is_read_around_the_measured_ones():
    # start at 0; warm-up batches end at 1.0 (workers starting) and 1.1; then the CPU is
    # read, the clock restarts at 1.15 and each measured batch takes 0.2 s
    clock = _clock([0.0, 1.0, 1.1, 1.15, 1.35, 1.55, 1.75, 1.95])
    cpu = _clock([10.0, 11.2])  # 1.2 CPU seconds over the 0.8 s measured: 1.5 cores
    seen, stopped = [], []

    def read(batches):
        seen.append(batches)
        return cpu()

    row = feed.measure(lambda: itertools.repeat("batch"), workers=2, batch_size=10, warmup=2,
                       steps=4, clock=clock, cpu=read, stop=stopped.append)  # fmt: skip
    assert row.warmup_times_s == pytest.approx((1.0, 0.1))
    assert row.batch_times_s == pytest.approx((0.2, 0.2, 0.2, 0.2))
    assert row.images_per_s == pytest.approx(50.0)  # 40 images in 0.8 s
    assert row.cpu_s == pytest.approx(1.2) and row.cores == pytest.approx(1.5)
    assert row.per_core == pytest.approx(40 / 1.2)  # images per CPU second
    assert len(seen) == 2 and stopped == seen[:1]  # CPU read on the live loader, then stopped
    saved = row.to_json()
    assert saved["batch_times_s"] == list(row.batch_times_s) and saved["workers"] == 2


def test_a_cpu_time_that_cannot_be_read_gives_no_cores_and_says_so():
    row = feed.measure(lambda: itertools.repeat(0), workers=1, batch_size=4, warmup=0, steps=2,
                       clock=_clock([0.0, 0.0, 0.5, 1.0]), cpu=lambda b: None)  # fmt: skip
    assert row.cores is None and row.per_core is None
    said = feed.feeding_sentence(feed.DeviceRate(100.0, "given", "the device"), row)
    assert "could not be read here" in said


def test_the_cores_a_device_needs_are_its_rate_over_a_cores():
    row = feed.FeedRow(2, 30, (1.0,), (0.2,) * 10, cpu_s=4.0)  # 150/s on 2 cores
    h100 = feed.DeviceRate(5700.0, "given", "an H100")
    assert feed.cores_needed(h100, row) == pytest.approx(5700 / 75)
    assert feed.feeding_sentence(h100, row) == (
        "an H100's 5,700 images/s needs about 76 of these cores at 75 images/s each "
        "(the fastest loader here: 2 workers)"
    )
    slow = feed.DeviceRate(100.0, "given", "the device")
    assert feed.feeding_sentence(slow, row).startswith(
        "the device's 100 images/s is fed: this loader made 150 images/s on 2.0 cores"
    )


def test_the_fastest_loader_is_the_one_with_most_images_per_second():
    one = feed.FeedRow(1, 10, (), (0.1,) * 4, cpu_s=0.4)
    two = feed.FeedRow(2, 10, (), (0.05,) * 4, cpu_s=0.4)
    assert feed.fastest([one, two]) is two


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc")
def test_a_worker_process_s_cpu_time_counts():
    """A child that spins for about 0.3 s of CPU: counted through its pid, not only
    bench's own process."""
    spin = ("import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n"
            "print('spun', flush=True)\ntime.sleep(30)\n")  # fmt: skip
    child = subprocess.Popen([sys.executable, "-c", spin], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "spun"
        counted = feed.cpu_seconds([child.pid])
        assert counted is not None and counted - time.process_time() >= 0.25
    finally:
        child.kill()
        child.wait()
    assert feed.cpu_seconds([child.pid]) is None  # gone: cannot be read
