"""The measurement loop, timed with a fake clock and a fake session (no framework)."""

import math

import pytest

from bench.child.worker import measure
from bench.config.run_config import PointConfig
from bench.frameworks.base import Session
from bench.platforms.cpu import CpuPlatform
from bench.result import Point
from bench.trackers.timing import EventTimer, StepTimer


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.now


class FakeSession(Session):
    """Each step 'takes' the next duration on the fake clock; loss counts down."""

    def __init__(self, clock: FakeClock, durations: list[float]) -> None:
        self.clock, self.durations = clock, list(durations)
        self.steps = 0
        self.syncs_before_read: list[bool] = []
        self.pending = False  # device work queued and not yet synchronised
        self.parameters, self.details = 1, {}
        self.platform = CpuPlatform()

    def step(self):
        self.clock.now += self.durations.pop(0)
        self.steps += 1
        self.pending = True
        return 10.0 - self.steps

    def loss_value(self, handle):
        return float(handle)

    def synchronize(self) -> None:
        self.pending = False

    def count_flops(self):
        return None


class SyncCheckingClock(FakeClock):
    def __init__(self) -> None:
        super().__init__()
        self.session: FakeSession | None = None
        self.unsynced_reads = 0

    def __call__(self) -> float:
        if self.session is not None and self.session.pending:
            self.unsynced_reads += 1
        return super().__call__()


def test_warmup_is_kept_apart_and_steps_are_exact():
    clock = SyncCheckingClock()
    session = FakeSession(clock, [5.0, 4.0, 1.0, 2.0, 3.0])
    clock.session = session
    point = PointConfig(workload="tiny", batch_size=8, warmup_steps=2, steps=3)
    record = measure(point, session, CpuPlatform(), clock=clock)
    assert record["warmup_times_s"] == [5.0, 4.0]
    assert record["step_times_s"] == [1.0, 2.0, 3.0]
    assert record["epoch_times_s"] is None
    assert clock.unsynced_reads == 0, "the clock was read with device work still queued"
    assert (record["loss_first"], record["loss_last"]) == (9.0, 5.0)
    assert record["memory_kind"] == "host_peak_rss"


def test_epoch_mode_times_each_epoch_and_summarises_epochs_two_to_n():
    clock = FakeClock()
    # 3 epochs x 2 steps; epoch 1 is slow (start-up), as the M2 Max vs V100 study observed.
    session = FakeSession(clock, [3.0, 3.0, 1.0, 1.0, 1.0, 1.5])
    point = PointConfig(workload="tiny", batch_size=8, warmup_steps=0, epochs=3, epoch_samples=20)
    assert point.steps_per_epoch == 2  # the partial batch is dropped
    record = measure(point, session, CpuPlatform(), clock=clock)
    assert record["epoch_times_s"] == [6.0, 2.0, 2.5]
    assert record["step_times_s"] == [3.0, 3.0, 1.0, 1.0, 1.0, 1.5]
    p = Point(
        batch_size=8,
        precision="fp32",
        step_times_s=(tuple(record["step_times_s"]),),
        epoch_times_s=(tuple(record["epoch_times_s"]),),
    )
    # 16 samples per epoch over the mean of epochs 2..3 (2.25 s)
    assert p.throughput.value == pytest.approx(16 / 2.25)
    assert p.epoch_time.mean == pytest.approx(2.25)


def test_point_statistics_come_from_raw_times():
    p = Point(batch_size=10, precision="fp32", step_times_s=((0.1, 0.1), (0.2, 0.2)))
    # repeat throughputs 100 and 50 samples/s: their geometric mean, inside its interval
    assert p.repeat_throughputs() == [pytest.approx(100.0), pytest.approx(50.0)]
    assert p.throughput.value == pytest.approx(math.sqrt(100.0 * 50.0))
    assert p.throughput.unit == "samples/s"
    assert p.throughput.ci95_low < 75 < p.throughput.ci95_high
    assert p.step_time.median == pytest.approx(0.15)
    assert Point(batch_size=1, precision="fp32", status="oom").throughput is None


class FakeDevice:
    """A stream: the host enqueues work and events; the device runs them in order."""

    def __init__(self, launch_s: float) -> None:
        self.host = 0.0  # the host's clock
        self.free_at = 0.0  # when the device finishes the work queued so far
        self.launch_s = launch_s  # host time to enqueue one step
        self.syncs = 0

    def enqueue(self, seconds: float) -> None:
        self.host += self.launch_s
        self.free_at = max(self.free_at, self.host) + seconds

    def synchronize(self) -> None:
        self.syncs += 1
        self.host = max(self.host, self.free_at)


class FakeEvent:
    def __init__(self, device: FakeDevice) -> None:
        self.device, self.at = device, None

    def record(self) -> None:  # happens on the device after the work queued before it
        self.at = max(self.device.host, self.device.free_at)

    def elapsed_time(self, end: "FakeEvent") -> float:
        return (end.at - self.at) * 1e3  # milliseconds, as torch.cuda.Event


class EventSession(FakeSession):
    def __init__(self, device: FakeDevice, durations: list[float]) -> None:
        super().__init__(FakeClock(), durations)
        self.device = device

    def step(self):
        self.device.enqueue(self.durations.pop(0))
        self.steps += 1
        return 10.0 - self.steps

    def synchronize(self) -> None:
        self.device.synchronize()

    def timer(self, clock=None):
        return EventTimer(self.synchronize, lambda: FakeEvent(self.device))


def test_device_events_time_steps_without_waiting_inside_the_window():
    device = FakeDevice(launch_s=0.001)  # the host launches far faster than steps run
    session = EventSession(device, [0.5, 0.5, 0.2, 0.3, 0.4])
    point = PointConfig(workload="tiny", batch_size=8, warmup_steps=2, steps=3)
    record = measure(point, session, CpuPlatform())
    # (the first step of a window also holds its own 1 ms launch, after the sync)
    assert record["step_times_s"] == pytest.approx([0.201, 0.3, 0.4])
    assert record["warmup_times_s"] == pytest.approx([0.501, 0.5])
    assert record["details"]["step_clock"] == "device_events"
    # one sync at each edge of the warm-up and of the measured window, none between
    assert device.syncs == 4, "the host waited for the device inside a window"


def test_device_events_count_the_time_a_slow_host_leaves_the_device_idle():
    device = FakeDevice(launch_s=0.3)  # launch-bound: each step waits for the host
    session = EventSession(device, [0.1, 0.1, 0.1])
    point = PointConfig(workload="tiny", batch_size=8, warmup_steps=0, steps=3)
    record = measure(point, session, CpuPlatform())
    # steps come one per 0.3 s of launching, the device idle in between: the times say
    # so (the first also holds its own launch), and throughput is not flattered
    assert record["step_times_s"] == pytest.approx([0.4, 0.3, 0.3])


def test_host_clock_timer_is_named_in_the_details():
    clock = FakeClock()
    session = FakeSession(clock, [1.0, 1.0])
    point = PointConfig(workload="tiny", batch_size=8, warmup_steps=0, steps=2)
    record = measure(point, session, CpuPlatform(), clock=clock)
    assert record["details"]["step_clock"] == "host_clock_after_sync"


def test_ranks_meet_only_at_the_window_s_ends_and_each_step_is_timed_on_the_rank_s_clock():
    from bench.trackers.timing import RankTimer

    now = [0.0]
    calls = []
    durations = iter([0.2, 0.3, 0.4])

    def step():
        now[0] += next(durations)
        return "loss"

    timer = RankTimer(lambda: calls.append("barrier"), lambda: calls.append("local"),
                      clock=lambda: now[0])  # fmt: skip
    times, results = timer.steps(step, 3, lambda i: calls.append(f"after {i}"))
    assert times == pytest.approx([0.2, 0.3, 0.4]) and results == ["loss"] * 2  # first, last
    assert calls.count("barrier") == 2 and calls[0] == calls[-1] == "barrier"
    assert timer.kind == "host_clock_per_rank"


@pytest.mark.parametrize("kind", ["host", "ranks", "events", "completions"])
def test_a_timer_lets_each_step_s_result_go_but_the_first_and_the_last(kind):
    """A training loop drops each loss as the next step begins; holding them all pinned
    memory between the steps' temporaries and slowed a small model's CPU step by 3-5%."""
    import gc
    import weakref

    from bench.trackers.timing import CompletionTimer, EventTimer, RankTimer, StepTimer

    class Loss:
        pass

    class Event:
        def record(self):
            pass

        def elapsed_time(self, end):
            return 1.0

    timer = {
        "host": lambda: StepTimer(lambda: None),
        "ranks": lambda: RankTimer(lambda: None, lambda: None),
        "events": lambda: EventTimer(lambda: None, Event),
        "completions": lambda: CompletionTimer(lambda: None, lambda loss: None),
    }[kind]()
    made = []

    def step():
        made.append(weakref.ref(loss := Loss()))
        return loss

    _, kept = timer.steps(step, 5, lambda i: None)
    gc.collect()
    alive = [i for i, ref in enumerate(made) if ref() is not None]
    assert alive == [0, 4] and kept == [made[0](), made[4]()]
    _, every = timer.steps(step, 3, lambda i: None, keep_all=True)  # an epoch's mean loss
    assert len(every) == 3 and all(isinstance(x, Loss) for x in every)


class Handle:
    """A step's result on the fake device: ready once the device has run it."""

    def __init__(self, device: FakeDevice, value: float) -> None:
        self.device, self.value, self.done_at = device, value, device.free_at

    def __float__(self) -> float:
        return self.value


class CompletionSession(EventSession):
    def step(self):
        super().step()
        return Handle(self.device, 10.0 - self.steps)

    def wait(self, handle: Handle) -> None:
        self.device.host = max(self.device.host, handle.done_at)

    def timer(self, clock=None):
        from bench.trackers.timing import CompletionTimer

        return CompletionTimer(self.synchronize, self.wait, lambda: self.device.host)


def test_completion_timer_keeps_the_next_step_queued_so_launches_cost_the_device_nothing():
    """JAX has no device events: synchronising around every step left the device idle
    while the host launched the next (bench measured 0.93x a bare jax.jit loop on an
    H200). Timed at completions with the next step queued, a step is its device time."""
    durations = [0.5, 0.5, 0.2, 0.3, 0.4]
    point = PointConfig(workload="tiny", batch_size=8, warmup_steps=2, steps=3)
    device = FakeDevice(launch_s=0.05)
    record = measure(point, CompletionSession(device, durations), CpuPlatform())
    # (the first step of a window also holds its own launch, from an idle device)
    assert record["step_times_s"] == pytest.approx([0.25, 0.3, 0.4])
    assert record["details"]["step_clock"] == "host_clock_at_completion"
    assert (record["loss_first"], record["loss_last"]) == (9.0, 5.0)
    synced = FakeDevice(launch_s=0.05)
    session = CompletionSession(synced, durations)
    session.timer = lambda clock=None: StepTimer(session.synchronize, lambda: synced.host)
    record = measure(point, session, CpuPlatform())
    assert record["step_times_s"] == pytest.approx([0.25, 0.35, 0.45])  # launches counted


def test_completion_timer_s_steps_add_up_to_the_window_when_the_host_is_slow():
    device = FakeDevice(launch_s=0.3)  # launch-bound: the device idles between steps
    point = PointConfig(workload="tiny", batch_size=8, warmup_steps=0, steps=3)
    record = measure(point, CompletionSession(device, [0.1, 0.1, 0.1]), CpuPlatform())
    assert sum(record["step_times_s"]) == pytest.approx(1.0)  # 3 launches + the last step
