"""bench.run.cost: a probe's seconds and memory predicted from the probes before it."""

import dataclasses

import pytest

from bench.config.run_config import PointConfig
from bench.result import Point
from bench.run import cost
from bench.run.cost import CostModel, cold_compile_s, format_seconds

GIB = 2**30


def point(batch, precision="fp32", steps=3, warmup=2, **axes):
    return PointConfig(workload="tiny", batch_size=batch, precision=precision, steps=steps,
                       warmup_steps=warmup, **axes)  # fmt: skip


def measured(config, step_s, peak=None, status="ok"):
    if status != "ok":
        return Point(config.batch_size, config.precision, status=status, error=status)
    return Point(config.batch_size, config.precision, memory_format=config.memory_format,
                 step_times_s=((step_s,) * config.steps,), warmup_times_s=((step_s,) * 2,),
                 peak_memory_bytes=(peak,), flops_per_sample=2e6)  # fmt: skip


def test_one_short_timing_prices_every_batch_and_its_own_kind_first():
    model = CostModel()
    assert model.child_s(point(32)) is None  # nothing to go by yet
    model.learn(point(32), measured(point(32), 0.5), child_s=10.0)  # 5 steps + 7.5 s start-up
    # batch 256 in fp32: eight times the work at the rate batch 32 reached
    assert model.step_s(point(256)) == 4.0 and model.child_s(point(256)) == 7.5 + 5 * 4.0
    # bf16, never run: priced at what was measured, until its own probe says otherwise
    assert model.step_s(point(64, "bf16")) == 1.0
    model.learn(point(32, "bf16"), measured(point(32, "bf16"), 0.2), child_s=8.5)
    assert model.step_s(point(64, "bf16")) == pytest.approx(0.4)
    # a compiler never run: the plain start-up and the prior of a cold compile
    guess = model.start_s(point(64, compile="inductor"))
    assert guess == (7.5 + cold_compile_s(2e6, model.cores), False)


def test_a_compiled_probe_is_priced_with_its_cold_compile_until_one_ran():
    """The issue's 2-core search priced a bf16 channels_last inductor probe of ResNet-50 at
    a plain child's start-up (about 10 s): it took 221 s and ran into its cap."""
    (tiny, tiny_s), (resnet50, resnet50_s) = cost.COLD_COMPILE
    assert cold_compile_s(tiny, cost.COLD_COMPILE_CORES) == pytest.approx(tiny_s)
    assert cold_compile_s(resnet50, cost.COLD_COMPILE_CORES) == pytest.approx(resnet50_s)
    assert cold_compile_s(None, 2) == pytest.approx(tiny_s)  # FLOPs unknown: the small one
    assert cold_compile_s(1e6, 2) < cold_compile_s(1e9, 2) < cold_compile_s(1e11, 2)
    # the machine: fewer cores, a longer compile; more, a shorter one, up to a limit
    assert cold_compile_s(resnet50, 1) == pytest.approx(2 * resnet50_s)
    assert cold_compile_s(resnet50, 4) == pytest.approx(resnet50_s / 2)
    assert cold_compile_s(resnet50, 64) == cold_compile_s(resnet50, cost.COLD_MAX_CORES)
    model = CostModel(cores=cost.COLD_COMPILE_CORES)
    plain = dataclasses.replace(point(32), workload="resnet50")
    flops = resnet50  # the count of the first probe: the model's size
    model.learn(plain, dataclasses.replace(measured(plain, 12.8), flops_per_sample=flops), 74.0)
    compiled = dataclasses.replace(plain, precision="bf16", memory_format="channels_last",
                                   compile="inductor")  # fmt: skip
    start = 74.0 - 5 * 12.8
    assert model.start_s(compiled) == (pytest.approx(start + resnet50_s), False)
    assert model.child_s(compiled) > resnet50_s > model.child_s(plain)
    # once a child of that compiler ran, its own start-up: the compile as it was here
    model.learn(compiled, dataclasses.replace(measured(compiled, 2.0), flops_per_sample=flops),
                child_s=60.0)  # fmt: skip
    assert model.start_s(compiled) == (pytest.approx(50.0), True)
    assert model.start_s(plain) == (pytest.approx(start), True)


def test_steps_that_fit_a_time_in_seconds():
    model = CostModel()
    model.learn(point(32), measured(point(32), 0.5), child_s=10.0)
    group = [point(32), point(64)]  # 0.5 + 1.0 s a step, 15 s of start-up
    # 3 repeats in 90 s: 30 s a repeat, 15 s start-up, 1 warm-up step: 9 steps
    assert model.steps_that_fit(group, 90.0, warmup=1, repeats=3, most=20) == 9
    assert model.steps_that_fit(group, 900.0, warmup=1, repeats=3, most=20) == 20
    assert model.steps_that_fit(group, 40.0, warmup=1, repeats=3, most=20) is None
    assert CostModel().steps_that_fit(group, 1.0, warmup=1, repeats=3, most=20) == 20


def test_memory_past_the_device_and_past_an_oom_is_left_out_with_the_reason():
    model = CostModel(limit_bytes=20 * GIB)
    for batch in (32, 64):
        config = point(batch)
        model.learn(config, measured(config, 0.1, peak=GIB + batch * 100 * 2**20), 2.0)
    assert model.left_out(point(128)) is None  # 13.5 GiB predicted: fits
    assert model.left_out(point(256)) == (
        "memory: about 26.00 GiB predicted (batch 32: 4.12 GiB, batch 64: 7.25 GiB), above "
        "90% of the 20.00 GiB this device has"
    )
    assert model.left_out(point(256, "bf16")) is None  # another kind: nothing to go by
    model.learn(point(64, "bf16"), measured(point(64, "bf16"), 0, status="oom"), 2.0)
    assert model.left_out(point(128, "bf16")).startswith("memory: batch 64 of the same precision")
    assert model.left_out(point(32, "bf16")) is None


def test_a_kind_past_its_time_cap_is_left_out_at_larger_batches():
    model = CostModel()
    channels_last = dataclasses.replace(point(64), memory_format="channels_last")
    model.ran_past(channels_last, 30.0)
    bigger = dataclasses.replace(channels_last, batch_size=128)
    assert model.left_out(bigger) == "time: batch 64 of the same kind ran past its cap of 30 s"
    assert model.left_out(point(128)) is None


def test_seconds_as_people_say_them():
    assert [format_seconds(s) for s in (45, 150, 720, 9000)] == ["45 s", "2.5 min", "12 min",
                                                                  "2.5 h"]  # fmt: skip
