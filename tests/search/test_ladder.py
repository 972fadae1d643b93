"""bench ladder: the Xeon CPU study's climb, decided by a fake child with known speeds."""

import dataclasses

import pytest

from bench import result
from bench.config.run_config import RunConfig
from bench.report.table import ladder_table
from bench.result import Point
from bench.run import runtime
from bench.run.runner import Runner
from bench.search.ladder import LadderRunner, verdict
from bench.util.errors import UsageError
from tests.conftest import ROOT, run_bench
from tests.run.test_runner import FakeChild, ok_response

RATE = {32: 100.0, 64: 120.0, 128: 110.0, 256: 90.0}  # samples/s in fp32: best at 64
GAIN = {"bf16": 2.0, "channels_last": 0.9, "inductor": 1.0, "tcmalloc": 1.1, "ipex": 1.25}


def speed(point) -> float:
    rate = RATE[point.batch_size]
    for axis in (
        point.precision,
        point.memory_format,
        point.compile,
        point.allocator,
        point.optimize,
    ):
        rate *= GAIN.get(axis, 1.0)
    return rate


def answer(point, n):
    jitter = 1 + 0.005 * (n % 3 - 1)  # three repeats within +-0.5%
    return ok_response(step_s=point.batch_size / (speed(point) * jitter))


@pytest.fixture
def libraries(tmp_path, monkeypatch):
    """TCMalloc and Intel OpenMP 'installed' (the fake child preloads nothing)."""
    libs = tmp_path / "lib"
    libs.mkdir()
    for name in ("libtcmalloc.so.4", "libiomp5.so"):
        (libs / name).write_bytes(b"")
    monkeypatch.setattr(runtime, "_library_dirs", lambda: [libs])


def climb(tmp_path, **config):
    config = RunConfig(workload="tiny", batch_sizes=(32, 64, 128, 256), repeats=3, **config)
    runner = LadderRunner(config, tmp_path, spawn=FakeChild(answer))
    return runner, runner.run()


def test_each_change_is_kept_only_when_faster_beyond_noise(tmp_path, libraries):
    runner, outcome = climb(tmp_path)
    rungs = [(r["rung"], r["kept"]) for r in outcome.ladder]
    assert rungs == [
        ("baseline", True),  # batch 128 fp32, the study's start
        ("batch 32", False),
        ("batch 64", True),  # 120 > 110
        ("batch 256", False),
        ("input pipeline", None),  # synthetic data: no loader to feed
        ("bf16", True),  # on top of batch 64
        ("channels_last", False),  # slower
        ("compile (inductor)", False),  # the same speed: within noise
        ("TCMalloc + Intel OpenMP", True),  # on top of bf16 at batch 64
        ("IPEX (ipex.optimize)", None),  # not installed here
    ]
    assert outcome.ladder[-1]["why"].startswith(
        "skipped: --optimize ipex: intel-extension-for-pytorch is not installed"
    )
    start = outcome.ladder[0]["point"]  # the study's start, whatever the launcher's defaults
    assert (start["precision"], start["allocator"], start["openmp"]) == ("fp32", "system", "gnu")
    last = outcome.ladder[-2]["point"]
    assert (last["batch_size"], last["precision"], last["memory_format"], last["compile"]) == (
        64, "bf16", "contiguous", None
    )  # fmt: skip
    assert (last["allocator"], last["openmp"]) == ("tcmalloc", "intel")
    # the file holds the ladder and every measured rung; it loads back
    saved = result.load(runner.path)
    assert saved.ladder == outcome.ladder and len(saved.points) == 8


def test_a_change_that_does_not_apply_is_skipped_with_its_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(runtime, "_library_dirs", lambda: [tmp_path])  # no TCMalloc here
    _, outcome = climb(tmp_path)
    skipped = outcome.ladder[-2]
    assert skipped["kept"] is None and skipped["why"].startswith("skipped: allocator 'tcmalloc'")
    assert len(outcome.points) == 7  # nothing measured for it (nor for IPEX)


def test_ipex_is_the_last_rung_where_it_is_installed(tmp_path, libraries, fake_ipex):
    _, outcome = climb(tmp_path)
    rung = outcome.ladder[-1]
    assert (rung["rung"], rung["kept"]) == ("IPEX (ipex.optimize)", True)
    assert rung["why"].startswith("1.25x [")
    assert (rung["point"]["optimize"], rung["point"]["allocator"]) == ("ipex", "tcmalloc")
    assert outcome.points[-1].optimize == "ipex" and len(outcome.points) == 9


def test_the_table_shows_speed_over_the_baseline(tmp_path, libraries):
    from rich.console import Console

    _, outcome = climb(tmp_path)
    console = Console(width=200, record=True)
    console.print(ladder_table(outcome))
    text = console.export_text()
    bf16 = next(line for line in text.splitlines() if line.startswith("│ bf16"))
    # 240 samples/s over the baseline's 110
    assert "240.00" in bf16 and "2.18" in bf16 and "yes" in bf16


def test_a_decoders_climb_reads_in_tokens_per_second_and_says_where_it_stopped():
    """An H100's GPT-2 ladder, cut short by its lease: tokens/s (the LLM figure), not
    sequences/s, and a line saying the rest was not measured."""

    from rich.console import Console

    h100 = ROOT / "docs/results/h100-80gb-hbm3"
    climb = result.load(h100 / "gpt2-torch-cuda-20261127T132012Z.json")
    console = Console(width=220, record=True)
    console.print(ladder_table(climb))
    text = console.export_text()
    assert "tokens/s" in text and "samples/s" not in text
    compiled = next(line for line in text.splitlines() if line.startswith("│ compile"))
    assert "434,142" in compiled and "426,897–441,509" in compiled and "8.34" in compiled
    assert "interrupted: the rungs after the last one shown were not measured" in text


def _point(values):
    steps = tuple((8 / v,) * 3 for v in values)
    return Point(batch_size=8, precision="fp32", step_times_s=steps)


def test_the_verdict_says_how_it_decided():
    kept, why = verdict(_point([200, 201, 202]), _point([100, 101, 99]))
    assert kept and why == "2.01x [1.96–2.07] the best so far"
    kept, why = verdict(_point([100, 104, 97]), _point([100, 101, 99]))
    assert not kept and why.endswith("not faster beyond noise")
    kept, why = verdict(_point([50, 51, 49]), _point([100, 101, 99]))
    assert not kept and why.endswith("the best so far: slower")
    kept, why = verdict(_point([120]), _point([100]))
    assert kept and "untested" in why


def test_the_command_sweeps_the_studys_batches_by_default(monkeypatch):
    from bench.cli import main

    seen = {}

    def run_and_print(config, args, resume=None, runner_class=None):
        seen["config"], seen["runner"] = config, runner_class
        return 0, None, None

    monkeypatch.setattr("bench.commands.running.run_and_print", run_and_print)
    assert main(["ladder", "tiny", "--device", "cpu"]) == 0
    assert seen["config"].batch_sizes == (32, 64, 128, 256) and seen["config"].repeats == 3
    assert seen["runner"] is LadderRunner
    assert (
        main(["ladder", "tiny", "--device", "cpu", "--batch-size", "8,16", "--repeats", "1"]) == 0
    )
    assert seen["config"].batch_sizes == (8, 16) and seen["config"].repeats == 1


def test_options_the_ladder_sets_are_refused_in_one_line(tmp_path):
    done = run_bench("ladder", "tiny", "--device", "cpu", "--precision", "bf16", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "bench: error: --precision: the ladder sets it, rung by rung; to sweep it yourself, "
        "use bench run"
    )


def test_the_report_draws_the_climb(tmp_path, libraries):
    pytest.importorskip("vl_convert")
    from pathlib import Path

    from bench.report import compare, page, tidy, vega, views

    _, outcome = climb(tmp_path)
    t = tidy.tidy(compare.compare([(Path("l.json"), outcome)], None))
    [ladder] = [f for f in page.figures(t, views.views(t)) if f.name == "ladder"]
    rows = ladder.spec["datasets"]["ladder"]
    speedups = [f"{r['speedup']:.2f}x" for r in rows]
    assert speedups[0] == "1.00x" and "2.18x" in speedups  # the start; bf16 at batch 64
    assert sum(r["kept_text"] == "left out" for r in rows) == 4  # 32, 256, channels_last, compile
    svg, _ = vega.render(ladder.spec)
    assert ">kept<" in svg and ">left out<" in svg and ">throughput / the first rung<" in svg
    # without 128 among the batches, the climb starts from the first one given
    config = RunConfig(workload="tiny", batch_sizes=(32, 64), repeats=3)
    other = LadderRunner(config, tmp_path / "b", spawn=FakeChild(answer)).run()
    assert other.ladder[0]["why"] == "the start: batch 32, fp32"


def test_an_interrupted_climb_goes_on_without_measuring_again(tmp_path, libraries):
    from bench.util.errors import UsageError

    config = RunConfig(workload="tiny", batch_sizes=(32, 64, 128, 256), repeats=3)

    def stop_at_bf16(point, n):
        if point.precision == "bf16":
            raise KeyboardInterrupt
        return answer(point, n)

    first = LadderRunner(
        config, tmp_path, spawn=FakeChild(stop_at_bf16), command=["bench", "ladder"]
    )
    with pytest.raises(KeyboardInterrupt):
        first.run()
    assert len(result.load(first.path).points) == 4  # the baseline and the batch sweep
    child = FakeChild(answer)
    again = LadderRunner(config, tmp_path, spawn=child, command=["bench", "ladder"])
    again.resume(first.path)
    outcome = again.run()
    measured = [p for p, job in child.calls if job == "measure"]
    assert len(measured) == 4 * 3  # bf16, channels_last, compile, TCMalloc: 3 repeats each
    _, fresh = climb(tmp_path / "fresh")
    assert outcome.ladder == fresh.ladder and again.path == first.path
    plain = Runner(config, tmp_path / "plain", spawn=FakeChild(answer), command=["bench", "run"])
    plain.run()
    with pytest.raises(UsageError, match="not a bench ladder result; bench ladder cannot go on"):
        LadderRunner(config, tmp_path, command=["bench", "ladder"]).resume(plain.path)


def test_a_batch_predicted_past_the_memory_is_skipped_with_the_cost_models_reason(
    tmp_path, libraries
):
    # Peaks that double with the batch (ResNet-50 in fp32 on a 24 GiB VM: batch 256 took
    # 21.7 GiB): batch 256's line through 64 and 128 is 32 GiB, past 90% of 20 GiB.
    def peaked(point, n):
        return {**answer(point, n), "peak_memory_bytes": point.batch_size * 2**27}

    config = RunConfig(
        workload="tiny", batch_sizes=(32, 64, 128, 256), repeats=3, memory_limit_bytes=20 * 2**30
    )
    child = FakeChild(peaked)
    outcome = LadderRunner(config, tmp_path, spawn=child).run()
    rung = next(r for r in outcome.ladder if r["rung"] == "batch 256")
    assert rung["kept"] is None
    assert rung["why"].startswith("skipped: memory: about 32.00 GiB predicted (batch 64: ")
    assert 256 not in {point.batch_size for point, job in child.calls if job == "measure"}
    assert [r["rung"] for r in outcome.ladder][:6] == [
        "baseline", "batch 32", "batch 64", "batch 256", "input pipeline", "bf16",
    ]  # fmt: skip


GPU_GAIN = {"tf32": 1.6, "bf16": 2.4, "channels_last": 1.1, "inductor": 1.2,
            "inductor:reduce-overhead": 1.35, "fused": 1.05}  # fmt: skip


def gpu_speed(point) -> float:
    rate = RATE[point.batch_size]
    for axis in (point.precision, point.memory_format, point.compile, point.optimize):
        rate *= GPU_GAIN.get(axis, 1.0)
    return rate


@pytest.fixture
def fake_cuda(monkeypatch):
    """The CUDA platform as the parent sees it on a machine with one 80 GiB GPU, without
    a GPU, PyTorch's CUDA or NVML: the children are fakes."""
    from bench.platforms import cuda

    gib = 2**30
    monkeypatch.setattr(cuda.CudaPlatform, "unavailable_reason", lambda self: None)
    monkeypatch.setattr(cuda.CudaPlatform, "devices_here", lambda self: 1)
    monkeypatch.setattr(cuda.CudaPlatform, "memory_per_rank", lambda self, ranks: 80 * gib)
    return cuda.PLATFORM


def gpu_climb(tmp_path, answer, **config):
    config = RunConfig(workload="tiny", device="cuda", batch_sizes=(32, 64, 128, 256),
                       **{"repeats": 3, **config})  # fmt: skip
    child = FakeChild(answer)
    return LadderRunner(config, tmp_path, spawn=child).run(), child


def test_a_gpu_climbs_its_own_rungs_each_a_lever_set_by_hand(tmp_path, fake_cuda):
    def answer(point, n):
        jitter = 1 + 0.005 * (n % 3 - 1)
        return ok_response(step_s=point.batch_size / (gpu_speed(point) * jitter))

    outcome, child = gpu_climb(tmp_path, answer)
    assert [(r["rung"], r["kept"]) for r in outcome.ladder] == [
        ("baseline", True),
        ("batch 32", False),
        ("batch 64", True),
        ("batch 256", False),
        ("input pipeline", None),  # synthetic data
        ("tf32", True),  # fp32 on tensor cores
        ("bf16", True),  # on top of tf32: replaces it
        ("channels_last", True),
        ("compile (inductor)", True),
        ("CUDA graphs (inductor:reduce-overhead)", True),
        ("fused optimizer", True),
        ("flash attention", None),  # a decoder's levers: tiny takes none
        ("chunked loss", None),
        ("vocabulary padded to 64", None),
        ("batch 128 (doubled on top)", False),  # here as slow as in the sweep: stops
    ]  # before: the CPU study's rungs (TCMalloc, IPEX) and no tf32, CUDA graphs or fused
    assert outcome.ladder[-2]["why"] == (
        "skipped: pad_vocab: 'tiny' does not take it; it applies to gpt2, gpt2-medium, "
        "llama3-1b, llama3-8b, llama3-tiny"
    )
    # the host's runtime is not a GPU rung: left as launched (it read 'system gnu-omp')
    assert (outcome.ladder[0]["point"]["allocator"], outcome.ladder[0]["point"]["openmp"]) == (
        None, None
    )  # fmt: skip
    top = outcome.ladder[-5]["point"]
    assert (top["batch_size"], top["precision"], top["memory_format"], top["compile"],
            top["optimize"]) == (64, "bf16", "channels_last", "inductor:reduce-overhead",
                                 "fused")  # fmt: skip
    # each rung is a point like any other: a child of the device with its levers
    measured = {(p.precision, p.compile, p.optimize) for p, job in child.calls
                if job == "measure"}  # fmt: skip
    assert ("bf16", "inductor:reduce-overhead", "fused") in measured
    assert all(p.device == "cuda" for p, _ in child.calls)


def test_a_gpu_rung_that_cannot_run_says_why_in_one_line(tmp_path, fake_cuda):
    """A V100: no TF32 or bf16 tensor cores; its children refuse both in one line, and the
    climb goes on from fp32."""

    def v100(point, n):
        if point.precision in ("tf32", "bf16"):
            return {"status": "error",
                    "error": f"{point.precision} needs compute capability 8.0 or newer; "
                             "this GPU is 7.0"}  # fmt: skip
        return ok_response(step_s=point.batch_size / gpu_speed(point))

    outcome, _ = gpu_climb(tmp_path, v100, repeats=1)
    rungs = {r["rung"]: r for r in outcome.ladder}
    assert rungs["tf32"]["kept"] is False
    assert (
        rungs["tf32"]["why"] == "error: tf32 needs compute capability 8.0 or newer; this GPU is 7.0"
    )
    assert "\n" not in rungs["bf16"]["why"] and rungs["bf16"]["kept"] is False
    assert rungs["fused optimizer"]["point"]["precision"] == "fp32"
    assert rungs["fused optimizer"]["kept"] is True


def test_a_gpu_doubles_its_best_batch_after_the_rungs_while_faster(tmp_path, fake_cuda):
    # bf16 frees memory and runs larger batches faster than the fp32 sweep found (an
    # H100's GPT-2: batch 32 held 38.7 GiB in fp32, 15.7 compiled in bf16)
    gain = {128: 1.3, 256: 1.5}

    def answer(point, n):
        jitter = 1 + 0.005 * (n % 3 - 1)
        if point.precision != "bf16" or point.batch_size <= 64:
            return ok_response(step_s=point.batch_size / (gpu_speed(point) * jitter))
        if point.batch_size not in gain:
            return {"status": "oom", "error": "CUDA out of memory. Tried to allocate 2.00 GiB"}
        at_64 = gpu_speed(dataclasses.replace(point, batch_size=64))
        return ok_response(step_s=point.batch_size / (at_64 * gain[point.batch_size] * jitter))

    outcome, _ = gpu_climb(tmp_path, answer)
    doubled = [(r["rung"], r["kept"]) for r in outcome.ladder if "doubled" in r["rung"]]
    assert doubled == [
        ("batch 128 (doubled on top)", True),
        ("batch 256 (doubled on top)", True),
        ("batch 512 (doubled on top)", False),
    ]
    assert outcome.ladder[-1]["why"].startswith("oom: CUDA out of memory")
    assert outcome.ladder[-2]["point"]["precision"] == "bf16"
    # a doubling past --max-batch-limit is not tried; the CPU's ladder never doubles
    outcome, _ = gpu_climb(tmp_path / "limited", answer, max_batch_limit=128)
    assert [r["rung"] for r in outcome.ladder if "doubled" in r["rung"]] == [
        "batch 128 (doubled on top)"
    ]


def test_a_rung_the_framework_cannot_run_is_skipped_in_one_line_before_any_child():
    from bench.config.run_config import PointConfig
    from bench.search.ladder import not_applicable, steps

    tf = PointConfig(workload="tiny", framework="tensorflow", device="cuda", batch_size=64)
    rungs = dict(steps("tensorflow", "cuda"))
    why = not_applicable(tf, rungs["CUDA graphs (xla:reduce-overhead)"])
    assert why is not None and why.startswith("compile: 'xla:reduce-overhead'") and "\n" not in why
    why = not_applicable(tf, rungs["fused optimizer"])
    assert why == "--optimize fused: not in tensorflow; it has none"
    # a decoder has no image to lay out: its ladder skips channels_last (it ran a child
    # that measured the same thing again), an image model's tries it
    decoder = PointConfig(workload="gpt2", device="cpu", batch_size=4)
    cpu_rungs = dict(steps("torch", "cpu"))
    why = not_applicable(decoder, cpu_rungs["channels_last"])
    assert why == "gpt2 takes tokens: no image tensor to lay out channels last"
    # a decoder trains with its own AdamW (fused already): the fused-SGD rung would measure
    # the same thing again (an H100's GPT-2 ladder read 1.00x [0.96-1.04] for it)
    gpu_decoder = PointConfig(workload="gpt2", device="cuda", batch_size=4)
    why = not_applicable(gpu_decoder, dict(steps("torch", "cuda"))["fused optimizer"])
    assert why is not None and why.startswith("optimize: fused changes nothing on gpt2")
    assert "\n" not in why
    image = PointConfig(workload="tiny", device="cuda", batch_size=4)
    assert not_applicable(image, dict(steps("torch", "cuda"))["fused optimizer"]) is None
    with pytest.raises(
        UsageError, match=r"^optimize: fused changes nothing on gpt2: it trains with its own"
    ):
        PointConfig(workload="gpt2", optimize="fused")
    assert (
        not_applicable(PointConfig(workload="tiny", device="cpu"), cpu_rungs["channels_last"])
        is None
    )
    # what each platform climbs: the CPU the Xeon study's rungs, a Mac's the plain three
    assert [name for name, _ in steps("torch", "cpu")][-2:] == [
        "TCMalloc + Intel OpenMP", "IPEX (ipex.optimize)"
    ]  # fmt: skip
    assert [name for name, _ in steps("torch", "mps")] == [
        "bf16", "channels_last", "compile (inductor)"
    ]  # fmt: skip
