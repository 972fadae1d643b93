"""The energy tracker with a fake counter over a fake clock, and the real meter where one exists."""

import pytest

from bench.config import PointConfig
from bench.platforms.cpu import CpuPlatform
from bench.result import Point
from bench.trackers.energy import CounterSource, EnergyTracker, PowerPollSource, open_sources
from bench.worker import measure

from .test_timing import FakeClock, FakeSession

WATTS = 250.0


def fake_counter(clock):
    """A cumulative energy counter of a device drawing a constant 250 W."""
    return CounterSource("nvml_counter", {"gpu0": lambda: WATTS * clock.now})


def test_energy_covers_the_measured_window_only():
    clock = FakeClock()
    session = FakeSession(clock, [5.0, 5.0, 1.0, 2.0, 3.0])  # two warm-up steps, three measured
    point = PointConfig(workload="tiny", batch_size=8, warmup_steps=2, steps=3)
    record = measure(
        point, session, CpuPlatform(), clock=clock, energy_sources=([fake_counter(clock)], None)
    )
    energy = record["energy"]
    assert energy["per_device_j"] == {"gpu0": pytest.approx(WATTS * 6.0)}  # not the 10 s of warm-up
    assert energy["window_s"] == pytest.approx(6.0)
    assert energy["sources"] == {"gpu0": "nvml_counter"}
    summary = Point(
        batch_size=8,
        precision="fp32",
        step_times_s=(tuple(record["step_times_s"]),),
        energy=(energy,),
    ).energy_summary
    assert summary.mean_power_w == pytest.approx(WATTS)
    assert summary.per_sample_j == pytest.approx(WATTS * 6.0 / 24)


def test_energy_per_epoch():
    clock = FakeClock()
    session = FakeSession(clock, [3.0, 3.0, 1.0, 1.0, 2.0, 2.0])
    point = PointConfig(workload="tiny", batch_size=8, warmup_steps=0, epochs=3, epoch_samples=16)
    record = measure(
        point, session, CpuPlatform(), clock=clock, energy_sources=([fake_counter(clock)], None)
    )
    assert record["energy"]["epoch_j"] == [pytest.approx(WATTS * t) for t in (6.0, 2.0, 4.0)]
    summary = Point(
        batch_size=8,
        precision="fp32",
        step_times_s=(tuple(record["step_times_s"]),),
        energy=(record["energy"],),
    ).energy_summary
    assert summary.per_epoch_j == pytest.approx(WATTS * 3.0)  # mean of epochs 2..3


def test_no_source_means_null_with_the_reason():
    clock = FakeClock()
    point = PointConfig(workload="tiny", batch_size=8, warmup_steps=0, steps=2)
    record = measure(
        point,
        FakeSession(clock, [1.0, 1.0]),
        CpuPlatform(),
        clock=clock,
        energy_sources=([], "no RAPL here"),
    )
    assert record["energy"] is None and record["energy_unavailable"] == "no RAPL here"


def test_power_polling_integrates_real_samples():
    clock = FakeClock()
    watts = iter([100.0, 100.0, 300.0, 300.0])
    source = PowerPollSource({"gpu0": lambda: next(watts)}, period_s=3600, clock=clock)
    try:
        clock.now += 2.0
        source._sample()  # 100 W -> 100 W over 2 s: 200 J
        clock.now += 2.0
        assert source.read()["gpu0"] == pytest.approx(200 + (100 + 300) / 2 * 2)
    finally:
        source.close()


def test_this_machine_reports_why_energy_is_unavailable_or_reads_it():
    sources, reason = open_sources("cpu")
    if not sources:
        assert reason  # never silently nothing
        pytest.skip(f"no energy meter here: {reason}")
    tracker = EnergyTracker(sources, lambda: None, None)
    with tracker:
        sum(range(10**6))
    assert all(j >= 0 for j in tracker.fields()["energy"]["per_device_j"].values())


def test_real_zeus_meter():
    pytest.importorskip("zeus", reason="zeus is not installed")
    sources, reason = open_sources("cuda")
    if not sources:
        pytest.skip(f"zeus found no meter here: {reason}")
    with EnergyTracker(sources, lambda: None, None) as tracker:
        sum(range(10**6))
    assert tracker.fields()["energy"]["per_device_j"]
