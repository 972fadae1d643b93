"""The all-to-all of expert parallelism is timed by what the platform says: its timing
events where it has them (Platform.torch_timing_event), else the host's clock. Fake
clocks, no process group."""

from __future__ import annotations

import pytest

from bench import registry
from bench.config.run_config import PointConfig
from bench.parallel import expert

pytest.importorskip("torch")


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def exchange(self, seconds: float):
        """An all-to-all that takes `seconds` on this clock."""

        def run() -> None:
            self.now += seconds

        return run


class FakeEvent:
    """torch.cuda.Event's shape: record, synchronize, elapsed_time in ms."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock, self.at, self.synchronized = clock, None, False

    def record(self) -> None:
        self.at = self.clock.now

    def synchronize(self) -> None:
        self.synchronized = True

    def elapsed_time(self, end: FakeEvent) -> float:
        return (end.at - self.at) * 1000


def test_the_platforms_timing_events_time_the_all_to_all_read_after_the_steps():
    clock = FakeClock()
    made: list[FakeEvent] = []

    def event() -> FakeEvent:
        made.append(FakeEvent(clock))
        return made[-1]

    exchange = expert.AllToAll(group=None, parallel=2, backend="nccl", timing_event=event)
    exchange._timed(clock.exchange(0.25))
    exchange._timed(clock.exchange(0.5))
    assert len(made) == 4 and exchange.seconds == 0  # recorded, not read: no sync per step
    assert exchange.elapsed() == pytest.approx(0.75)
    assert all(e.synchronized for e in made[1::2])  # each end, once read
    assert exchange.elapsed() == pytest.approx(0.75)  # read once: not counted twice


def test_without_timing_events_the_host_clock_times_it(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(expert.time, "perf_counter", lambda: clock.now)
    exchange = expert.AllToAll(group=None, parallel=2, backend="gloo")
    exchange._timed(clock.exchange(0.125))
    assert exchange.seconds == pytest.approx(0.125) and exchange.elapsed() == pytest.approx(0.125)


def test_the_moe_workload_hands_the_all_to_all_its_platforms_timing_event(monkeypatch):
    import torch.distributed as dist

    spec = registry.workload("moe-tiny")
    impl = spec.implementation("torch")
    platform = type(registry.platform("cpu"))
    sentinel = object()
    monkeypatch.setattr(platform, "torch_timing_event", lambda self: sentinel)
    monkeypatch.setattr(dist, "is_initialized", lambda: True)
    given = {}

    def apply(model, parallel, device_type, param_dtype=None, timing_event=None):
        given.update(parallel=parallel, device_type=device_type, timing_event=timing_event)
        return {"kind": expert.NAME}

    monkeypatch.setattr(expert, "apply_expert_parallel", apply)
    point = PointConfig(workload="moe-tiny", seq_len=16, batch_size=4, devices=2,
                        expert_parallel=2)  # fmt: skip
    model = impl.build_model(spec, point)
    assert given == {"parallel": 2, "device_type": "cpu", "timing_event": sentinel}
    assert model.applied == {"kind": expert.NAME}
