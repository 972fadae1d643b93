"""The energy tracker with a fake counter over a fake clock, and the real meter where one exists."""

import json
import sys

import pytest

from bench import registry
from bench.child.worker import measure
from bench.config.run_config import PointConfig, RunConfig
from bench.platforms.cpu import CpuPlatform
from bench.result import Point
from bench.trackers.energy import (
    BatchedCounterSource,
    CounterSource,
    EnergyTracker,
    PowerPollSource,
    apple_counters,
    counter_coverage,
    open_sources,
)
from tests.trackers.test_timing import FakeClock, FakeSession

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
    sources, reason = open_sources(registry.platform("cpu"))
    if not sources:
        assert reason  # never silently nothing
        pytest.skip(f"no energy meter here: {reason}")
    tracker = EnergyTracker(sources, lambda: None, None)
    with tracker:
        sum(range(10**6))
    assert all(j >= 0 for j in tracker.fields()["energy"]["per_device_j"].values())


class _FakeZeusGpus:
    def __len__(self) -> int:
        return 1

    def supportsGetTotalEnergyConsumption(self, i: int) -> bool:
        return True

    def getTotalEnergyConsumption(self, i: int) -> float:
        return 5000.0  # mJ


def _fake_zeus(monkeypatch) -> None:
    import sys
    import types

    def no_rapl():
        raise RuntimeError("no RAPL here")

    device = types.SimpleNamespace(get_gpus=_FakeZeusGpus, get_cpus=no_rapl)
    monkeypatch.setitem(sys.modules, "zeus", types.ModuleType("zeus"))
    monkeypatch.setitem(sys.modules, "zeus.device", device)


def test_the_platform_names_its_energy_counter_and_why_there_is_none(monkeypatch):
    _fake_zeus(monkeypatch)

    class Counted(CpuPlatform):
        name = "counted"
        energy_counter = "some_counter"

    sources, reason = open_sources(Counted())
    assert reason is None and [s.kind for s in sources] == ["some_counter"]
    assert sources[0].read() == {"gpu0": 5.0}
    assert open_sources(registry.platform("cpu")) == (
        [], "zeus found no energy counter for cpu"
    )  # fmt: skip
    # a missing library names the extra that brings it; NVML is no CPU's counter
    monkeypatch.setitem(sys.modules, "zeus", None)
    monkeypatch.setitem(sys.modules, "zeus.device", None)
    assert open_sources(registry.platform("cpu")) == (
        [], "zeus is not installed (pip install 'bench[energy]')"
    )  # fmt: skip
    assert open_sources(registry.platform("tpu")) == (
        [], "Cloud TPUs expose no energy or power counter to the VM"
    )  # fmt: skip


def test_real_zeus_meter():
    pytest.importorskip("zeus", reason="zeus is not installed")
    sources, reason = open_sources(registry.platform("cuda"))
    if not sources:
        pytest.skip(f"zeus found no meter here: {reason}")
    with EnergyTracker(sources, lambda: None, None) as tracker:
        sum(range(10**6))
    assert tracker.fields()["energy"]["per_device_j"]


def _point_with_power(mean_w: float, before_w: float | None, limit_w: float = 700.0) -> Point:
    """One repeat of 10 steps of batch 8 over a 2 s window at `mean_w`."""
    before = {"gpu0": {"draw_w": before_w, "limit_w": limit_w}} if before_w is not None else None
    return Point(
        batch_size=8,
        precision="bf16",
        step_times_s=((0.2,) * 10,),
        energy=(
            {
                "window_s": 2.0,
                "per_device_j": {"gpu0": 2.0 * mean_w},
                "sources": {},
                "epoch_j": None,
            },
        ),
        power_before=(before,),
    )


@pytest.mark.parametrize(
    ("mean_w", "before_w", "verdict"),
    [
        (560.0, 74.0, "ok"),
        (60.0, 74.0, "repeat 1 gpu0 mean 60 W is below its 74 W before work"),
        (800.0, 74.0, "repeat 1 gpu0 mean 800 W is above its 700 W limit"),
        (720.0, 74.0, "ok"),  # within the 5% the counter's averaging may add
        (560.0, None, None),  # no reading before the work: nothing to check against
    ],
)
def test_mean_power_must_lie_between_the_draw_before_work_and_the_limit(mean_w, before_w, verdict):
    assert _point_with_power(mean_w, before_w).energy_summary.power_check == verdict


def test_a_suspect_power_reading_is_said_under_the_table():
    from bench.report.table import energy_note
    from bench.result import Result

    result = Result(RunConfig(workload="resnet50"))
    result.points.append(_point_with_power(800.0, 74.0))
    note = energy_note(result)
    assert note is not None and "energy of batch 8 bf16 is suspect" in note
    assert "800 W is above its 700 W limit" in note


def test_power_readings_survive_a_round_trip_and_bad_ones_are_refused(tmp_path):
    from bench.result import Result, ResultError, load

    result = Result(RunConfig(workload="resnet50"))
    result.points.append(_point_with_power(560.0, 74.0))
    path = tmp_path / "r.json"
    path.write_text(json.dumps(result.to_json()))
    assert load(path).points[0].energy_summary.power_check == "ok"
    data = result.to_json()
    data["points"][0]["power_before"] = [{"gpu0": {"draw_w": "lots"}}]
    path.write_text(json.dumps(data))
    with pytest.raises(ResultError, match="power_before"):
        load(path)


class FakeNvml:
    """The slice of nvidia-ml-py that bench reads; one GPU whose VM refuses ECC."""

    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 1, 2, 0

    class NVMLError(Exception):
        pass

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        pass

    def nvmlDeviceGetCount(self):
        return 1

    def nvmlDeviceGetHandleByIndex(self, i):
        return f"handle{i}"

    def nvmlDeviceGetEnforcedPowerLimit(self, h):
        return 700_000  # mW

    def nvmlDeviceGetPowerManagementDefaultLimit(self, h):
        return 700_000

    def nvmlDeviceGetPowerUsage(self, h):
        return 74_398

    def nvmlDeviceGetMaxClockInfo(self, h, kind):
        return {1: 1980, 2: 2619}[kind]

    def nvmlDeviceGetClockInfo(self, h, kind):
        return 345

    def nvmlDeviceGetTemperature(self, h, sensor):
        return 36

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        return 1

    def nvmlDeviceGetPersistenceMode(self, h):
        return 1

    def nvmlDeviceGetEccMode(self, h):
        raise self.NVMLError("Not Supported")


def test_nvml_facts_and_power_readings_with_a_refused_field(monkeypatch):
    import sys

    from bench.platforms import cuda

    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml())
    facts = cuda._nvml_facts()
    assert facts["power_limit_w"] == [700.0]
    assert facts["max_sm_clock_mhz"] == [1980] and facts["max_memory_clock_mhz"] == [2619]
    assert facts["clock_limit_reasons_at_start"] == [1]
    assert facts["ecc_enabled"] == [None]  # refused: null, and the rest still read
    readings = cuda.PLATFORM.power_readings()
    assert readings == {"gpu0": {"draw_w": pytest.approx(74.398), "limit_w": 700.0}}


def test_no_nvml_means_no_facts_and_no_readings(monkeypatch):
    import sys

    from bench.platforms import cuda

    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    assert cuda._nvml_facts() is None
    assert cuda.PLATFORM.power_readings() == {}


# Apple Silicon's IOReport counters (bench.trackers.energy.counter_coverage), as recorded
# readings: (seconds, cumulative joules) polled every 0.1 s while a device draws 20 W.
def _polled(seconds: float, publish_every: float | None) -> list[tuple[float, float]]:
    """What a poll every 0.1 s reads of a 20 W device's counter that publishes every
    `publish_every` s (0: on every read; None: never in these seconds)."""
    readings = []
    for i in range(round(seconds / 0.1) + 1):
        t = i * 0.1
        if publish_every is None:
            published = 0.0
        elif publish_every == 0:
            published = t
        else:
            published = (t // publish_every) * publish_every
        readings.append((t, 20.0 * published))
    return readings


def test_a_counter_that_moves_on_every_read_covers_even_a_short_window():
    coverage = counter_coverage(_polled(3.0, 0), 1.0, 1.5)
    assert coverage.reason is None and coverage.updates == 5
    assert coverage.period_s == pytest.approx(0.1)


def test_a_counter_publishing_every_2_s_needs_ten_periods_and_says_how_many_steps():
    readings = _polled(40.0, 2.0)
    short = counter_coverage(readings, 10.3, 11.7, steps=14)  # 1.4 s: no update inside
    assert short.updates == 0 and short.period_s == pytest.approx(2.0)
    assert short.reason == (
        "the counter updated 0 times in 1.4 s; it updates about every 2 s here: "
        "measure at least 200 steps (20 s)"
    )
    assert counter_coverage(readings, 3.1, 9.1).reason is not None  # 6 s: 3 periods
    long = counter_coverage(readings, 10.3, 31.7)  # 21.4 s: over 10 periods
    assert long.reason is None and long.updates == 10  # at 12, 14, ..., 30 s


def test_a_counter_that_never_moves_in_the_window_gives_no_energy():
    coverage = counter_coverage(_polled(5.0, None), 1.0, 4.0, steps=30)
    assert coverage.updates == 0 and coverage.period_s is None
    assert coverage.reason.startswith("the counter updated 0 times in 3 s and no update period")


def test_the_tracker_gives_null_energy_with_the_reason_never_zero():
    clock = FakeClock()
    published = [0.0]
    source = BatchedCounterSource("ioreport_counter", {"gpu": lambda: published[0]},
                                  clock=clock, poll=False)  # fmt: skip
    for _ in range(20):  # warm-up: the counter publishes every 2 s
        clock.now += 0.5
        if clock.now % 2 == 0:
            published[0] = 40.0 * clock.now
        source.read()
    tracker = EnergyTracker([source], lambda: None, None, clock, steps=3)
    with tracker:
        for _ in range(3):
            clock.now += 0.3
            source.read()
    assert tracker.fields()["energy"] is None
    assert tracker.fields()["energy_unavailable"].startswith("the counter updated 0 times in 0.9 s")
    assert tracker.details()["energy_counter"]["period_s"] == pytest.approx(2.0)


def test_apple_counters_read_joules_of_the_fields_this_chip_has():
    class Metrics:  # zeus-apple-silicon's AppleEnergyMetrics: millijoules, None where absent
        cpu_total_mj, gpu_mj, dram_mj, ane_mj = 1500, 2500, None, 0

    counters = apple_counters(Metrics)
    assert sorted(counters) == ["ane", "cpu", "gpu"]
    assert counters["gpu"]() == pytest.approx(2.5) and counters["cpu"]() == pytest.approx(1.5)


def test_on_a_mac_without_zeus_apple_silicon_energy_names_the_apple_extra(monkeypatch):
    import builtins

    real = builtins.__import__

    def without(name, *args, **kwargs):
        if name == "zeus_apple_silicon":
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without)
    sources, reason = open_sources(registry.platform("mps"))
    assert sources == [] and reason == (
        "zeus-apple-silicon is not installed (pip install 'bench[apple]')"
    )


def test_an_epoch_the_counter_did_not_cover_leaves_the_epochs_null_not_the_window():
    clock = FakeClock()
    published = [0.0]
    source = BatchedCounterSource("ioreport_counter", {"gpu": lambda: published[0]},
                                  clock=clock, poll=False)  # fmt: skip

    def run(seconds: float) -> None:  # the counter publishes 30 W every whole second
        for _ in range(round(seconds / 0.25)):
            clock.now += 0.25
            if clock.now % 1 == 0:
                published[0] = 30.0 * clock.now
            source.read()

    run(5.0)  # warm-up: the period is learnt
    tracker = EnergyTracker([source], lambda: None, None, clock)
    with tracker:
        for seconds in (12.0, 0.5, 12.0):  # the second epoch is shorter than 10 periods
            run(seconds)
            tracker.lap()
    energy = tracker.fields()["energy"]
    assert energy["per_device_j"]["gpu"] == pytest.approx(30.0 * 24.0)  # 24.5 s, 1 s stale
    assert energy["epoch_j"] is None
    said = tracker.details()["energy_counter"]["epoch_unavailable"]
    assert said.startswith("the counter updated 0 times in 0.5 s; it updates about every 1 s")
