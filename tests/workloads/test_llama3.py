"""Llama 3 decoders: published parameter counts, the FLOPs formula, the input checks,
and (slow) two CPU ranks sharded by FSDP2 through torchrun."""

import json
import math
import os
import subprocess
import sys

import pytest

from bench import registry
from bench.config.run_config import PointConfig
from bench.util.errors import UsageError
from bench.workloads import llama3

torch = pytest.importorskip("torch")

PUBLISHED = {"llama3-1b": 1_235_814_400, "llama3-8b": 8_030_261_248}


@pytest.mark.parametrize(("name", "published"), PUBLISHED.items())
def test_parameter_counts_equal_the_published_on_the_meta_device(name, published):
    spec = registry.workload(name)
    with torch.device("meta"):
        model = spec.implementation("torch").build_model(spec, PointConfig(workload=name))
    assert all(p.device.type == "meta" for p in model.parameters())  # nothing allocated
    count = sum(p.numel() for p in model.parameters())
    assert abs(count - published) / published < 0.005
    assert count == published


def test_the_1b_ties_its_output_to_the_embedding_and_the_8b_does_not():
    assert llama3.SIZES["llama3-1b"].tied and not llama3.SIZES["llama3-8b"].tied
    assert llama3.SIZES["llama3-1b"].head_dim == 64 and llama3.SIZES["llama3-8b"].head_dim == 128


def test_flops_per_token_is_6n_plus_attention_not_halved_for_causal():
    size = llama3.SIZES["llama3-8b"]
    # N: every matmul weight (the output layer included), not the embedding lookup.
    assert llama3.non_embedding_parameters(size) == 8_030_261_248 - 128_256 * 4096
    n = llama3.non_embedding_parameters(size)
    assert llama3.flops_per_token(size, 8192) == 6 * n + 12 * 32 * 32 * 128 * 8192
    tied = llama3.SIZES["llama3-1b"]  # its output layer is a matmul too, shared or not
    assert llama3.non_embedding_parameters(tied) == 1_235_814_400
    flops = registry.workload("llama3-8b").flops(2048)
    assert flops["per_token"] == 6 * n + 12 * 32 * 32 * 128 * 2048
    assert flops["per_sample"] == flops["per_token"] * 2048
    assert flops["formula"].startswith("6N+12LHQT") and "NOT halved" in flops["formula"]


def test_the_tiny_model_trains_a_step_with_a_finite_loss():
    spec = registry.workload("llama3-tiny")
    impl = spec.implementation("torch")
    point = PointConfig(workload="llama3-tiny", seq_len=16)
    torch.manual_seed(0)
    model = impl.build_model(spec, point)
    inputs, targets = impl.make_batch(spec, point, 2, torch.Generator().manual_seed(0))
    assert inputs.shape == (2, 16) and torch.equal(inputs[:, 1:], targets[:, :-1])
    loss = impl.loss(model(inputs), targets)
    loss.backward()
    value = float(loss.detach())
    assert math.isfinite(value) and abs(value - math.log(512)) < 0.5
    assert all(p.grad is not None for p in model.parameters())


def test_a_sequence_longer_than_the_model_takes_is_one_usage_line():
    with pytest.raises(UsageError, match=r"seq_len: 257 is longer than llama3-tiny's maximum 256"):
        PointConfig(workload="llama3-tiny", seq_len=257)


def test_the_cli_refuses_a_too_long_sequence_in_one_line_with_status_2(capsys):
    from bench.cli import main

    assert main(["llama3-tiny", "--device", "cpu", "--seq-len", "100000"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "maximum 256" in err


# --- MFU: the formula's FLOPs over the catalogue's peak -----------------------------------

H100 = {"accelerator": {"accelerator": "NVIDIA H100 80GB HBM3", "accelerator_count": 8}}


def test_mfu_is_the_formula_over_the_peak_of_the_devices_that_trained():
    from bench.result import mfu

    point = PointConfig(workload="llama3-8b", batch_size=8, precision="bf16", seq_len=8192)
    record = mfu.record(point, [2.0, 2.0], H100)  # one device of the eight: 8192 x 8 tokens
    tokens_per_s = 8 * 8192 / 2.0
    assert record["tokens_per_s"] == tokens_per_s and record["devices"] == 1
    per_token = llama3.flops_per_token(llama3.SIZES["llama3-8b"], 8192)
    assert record["flops_per_token"] == per_token
    assert record["value"] == pytest.approx(per_token * tokens_per_s / 989.4e12)
    assert record["reason"] is None and "H100" in record["peak_source"]


def test_mfu_of_one_process_over_several_devices_divides_by_all_of_their_peaks():
    from bench.result import mfu

    # JAX spreads one process (one rank) over every local device: 8 GPUs trained it.
    point = PointConfig(workload="llama3-8b", batch_size=8, precision="bf16", seq_len=8192)
    record = mfu.record(point, [2.0, 2.0], H100, devices=8)
    per_token = llama3.flops_per_token(llama3.SIZES["llama3-8b"], 8192)
    assert record["devices"] == 8 and "x 8 device(s)" in record["peak_source"]
    assert record["tokens_per_s_per_device"] == record["tokens_per_s"] / 8
    assert record["value"] == pytest.approx(per_token * record["tokens_per_s"] / (8 * 989.4e12))


def test_mfu_is_null_with_the_reason_on_a_cpu_without_a_known_peak():
    from bench.result import mfu

    point = PointConfig(workload="llama3-tiny", batch_size=4, precision="bf16")
    cpu = {"cpu": {"flags": ["sse2"], "physical_cores": 2, "max_mhz": 3000}}
    record = mfu.record(point, [0.1, 0.1], cpu)
    assert record["value"] is None and "no known bf16 FLOPs/cycle" in record["reason"]
    assert record["tokens_per_s"] == pytest.approx(4 * 64 / 0.1)
    assert mfu.record(PointConfig(workload="tiny"), [0.1], cpu) is None  # counted by running


def test_the_runner_takes_the_formula_and_starts_no_child_to_count(tmp_path):
    from bench.config.run_config import RunConfig
    from bench.run.runner import Runner

    def spawn(point, job, progress):
        raise AssertionError(f"no {job} child for a formula workload")

    runner = Runner(RunConfig(workload="llama3-8b", seq_len=2048), output_dir=tmp_path,
                    spawn=spawn)  # fmt: skip
    point = PointConfig(workload="llama3-8b", batch_size=8, seq_len=2048)
    expected = registry.workload("llama3-8b").flops(2048)["per_sample"]
    assert runner._flops_per_sample(point) == expected


# --- FSDP2 over two gloo ranks through torchrun (the full tier) ---------------------------


@pytest.mark.slow
def test_two_cpu_ranks_train_the_tiny_llama_sharded_by_fsdp2_in_bf16(tmp_path):
    from tests.conftest import only_result, run_bench

    done = run_bench(
        "llama3-tiny", "--device", "cpu", "--devices", "2", "--steps", "3",
        "--warmup-steps", "1", "--precision", "bf16", "--output-dir", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (point,) = only_result(tmp_path)["points"]
    assert point["status"] == "ok" and point["devices"] == 2
    assert point["unit_throughput"]["unit"] == "tokens/s" and point["unit_throughput"]["value"] > 0
    assert all(math.isfinite(loss) for loss in point["loss_first"] + point["loss_last"])
    details = point["details"]
    assert details["sharding"] == "fsdp2" and details["autocast_dtype"] is None
    fsdp = details["data_parallel"]["fsdp"]
    assert details["data_parallel"]["kind"] == "FSDP2" and fsdp["units"] == 3  # 2 blocks + root
    assert fsdp["param_dtype"] == "torch.bfloat16" and fsdp["reduce_dtype"] == "torch.float32"
    assert details["mfu"]["tokens_per_s"] > 0 and details["mfu"]["devices"] == 2
    assert details["mfu"]["formula"].startswith("6N+12LHQT")
    assert details["mfu"]["value"] is None or details["mfu"]["value"] > 0
    assert point["parameters"] == 164_160  # the whole model, counted over the shards


@pytest.mark.slow
def test_two_cpu_ranks_learn_a_token_file_and_record_it(tmp_path):
    """A periodic sequence in llm.c's format: each token says which comes next, so the
    loss falls far within 21 steps (6.2 to about 5 in one process); on random tokens
    nothing can be learnt and it stays near ln(512) = 6.24."""
    import hashlib

    from tests.conftest import only_result, run_bench
    from tests.fake_data import periodic_tokens, write_tokens

    path = write_tokens(tmp_path / "train.bin", periodic_tokens(65 * 400), "gpt-2")
    done = run_bench(
        "llama3-tiny", "--device", "cpu", "--devices", "2", "--data", f"tokens:{path}",
        "--steps", "20", "--warmup-steps", "1", "--output-dir", str(tmp_path / "out"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (point,) = only_result(tmp_path / "out")["points"]
    assert point["status"] == "ok" and point["devices"] == 2
    (first,), (last,) = point["loss_first"], point["loss_last"]
    assert first > 5.5 and last < first - 0.5, (first, last)
    dataset = point["details"]["dataset"]
    assert dataset["kind"] == "tokens" and dataset["file"] == "train.bin"
    assert dataset["format"] == "llm.c magic 20240520 version 1" and dataset["windows"] == 400
    assert dataset["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    # AdamW's fused kernel on FSDP2's DTensor shards of CPU parameters.
    assert point["details"]["optimizer"] == (
        "AdamW(lr=0.0003, betas=(0.9, 0.95), weight_decay=0.1, fused=True)"
    )


def test_decoders_train_with_adamw_fused_where_the_device_has_it_else_foreach():
    from bench.workloads import _torch

    point = PointConfig(workload="llama3-tiny", batch_size=2, seq_len=16)
    session = registry.framework("torch").prepare(point, registry.platform("cpu"))
    assert session.details["optimizer"] == (
        "AdamW(lr=0.0003, betas=(0.9, 0.95), weight_decay=0.1, fused=True)"
    )
    assert math.isfinite(session.loss_value(session.step()))
    for name in ("gpt2", "gpt2-medium", "llama3-1b", "llama3-8b"):
        assert registry.workload(name).implementation("torch").optimizer is _torch.adamw
    with torch.device("meta"):  # no fused kernel for meta tensors: foreach
        optimizer = _torch.adamw(torch.nn.Linear(2, 2).parameters())
    assert optimizer.defaults["foreach"] and not optimizer.defaults["fused"]
    assert optimizer.defaults["betas"] == (0.9, 0.95) and optimizer.defaults["eps"] == 1e-8


# --- activation checkpointing: the same numbers, fewer activations kept --------------------


@pytest.mark.parametrize(("mode", "wrapped"), [("none", 0), ("selective", 1), ("full", 2)])
def test_activation_checkpointing_recomputes_blocks_to_the_same_gradients(mode, wrapped):
    from bench.parallel.checkpoint import apply_ac

    spec = registry.workload("llama3-tiny")
    impl = spec.implementation("torch")
    point = PointConfig(workload="llama3-tiny", seq_len=16)
    inputs, targets = impl.make_batch(spec, point, 2, torch.Generator().manual_seed(0))
    torch.manual_seed(0)
    plain = impl.build_model(spec, point)
    torch.manual_seed(0)
    checkpointed = impl.build_model(spec, point)
    assert apply_ac(checkpointed, mode) == wrapped
    for model in (plain, checkpointed):
        impl.loss(model(inputs), targets).backward()
    grads = [p.grad for p in checkpointed.parameters()]
    for reference, grad in zip((p.grad for p in plain.parameters()), grads, strict=True):
        torch.testing.assert_close(grad, reference)


def test_an_unknown_checkpointing_mode_is_named():
    from bench.parallel.checkpoint import apply_ac

    with pytest.raises(ValueError, match="choose from: none, selective, full"):
        apply_ac(torch.nn.Module(), "some")


def test_activation_checkpointing_is_a_sweep_axis_of_the_llama3_workloads():
    from bench.config.run_config import RunConfig
    from bench.result import Point

    config = RunConfig(workload="llama3-tiny", activation_checkpointings=("none", "full"))
    modes = [p.activation_checkpointing for p in config.points()]
    assert modes == ["none", "full"]
    label = Point(batch_size=4, precision="bf16", activation_checkpointing="full").label
    assert label == "batch 4 bf16 ac=full"
    with pytest.raises(UsageError, match="'tiny' has no transformer blocks to checkpoint"):
        PointConfig(workload="tiny", activation_checkpointing="full")
    with pytest.raises(UsageError, match="choose from: none, selective, full"):
        PointConfig(workload="llama3-tiny", activation_checkpointing="some")
    with pytest.raises(
        UsageError, match="not available with tensorflow; it applies to jax and torch"
    ):
        PointConfig(workload="gpt2", framework="tensorflow", activation_checkpointing="full")


def test_a_checkpointed_session_trains_and_says_what_it_wrapped():
    point = PointConfig(workload="llama3-tiny", batch_size=2, seq_len=16,
                        activation_checkpointing="selective")  # fmt: skip
    session = registry.framework("torch").prepare(point, registry.platform("cpu"))
    assert math.isfinite(session.loss_value(session.step()))
    assert session.details["activation_checkpointing"] == {"mode": "selective", "blocks": 1}
    assert "sharding" not in session.details or session.details["sharding"] is None


TIED_UNDER_FSDP2 = """
import json, sys, torch, torch.distributed as dist
from bench.parallel import fsdp
from bench.workloads.llama3 import Size
from bench.workloads.llama3.torch import Llama

dist.init_process_group("gloo")
torch.manual_seed(0)
with torch.device("meta"):  # tied, as the 1B: the output layer is the sharded embedding
    model = Llama(Size(64, 2, 4, 2, 192, tied=True, max_seq_len=128, vocab=512))
fsdp.apply_fsdp(model, dist.get_world_size(), "cpu", torch.bfloat16, torch.float32)
fsdp.materialize(model, torch.device("cpu"))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
tokens = torch.randint(0, 512, (2, 33), generator=torch.Generator().manual_seed(dist.get_rank()))
losses = []
for _ in range(4):
    optimizer.zero_grad()
    loss = torch.nn.functional.cross_entropy(
        model(tokens[:, :-1]).flatten(0, 1).float(), tokens[:, 1:].flatten())
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
shard = model.embedding.weight.to_local().shape[0]
with open(f"{sys.argv[1]}/rank{dist.get_rank()}.json", "w") as out:  # each its own file
    json.dump({"rank": dist.get_rank(), "losses": losses, "shard_rows": shard}, out)
"""


@pytest.mark.slow
def test_a_tied_llama_trains_under_fsdp2_with_its_embedding_sharded(tmp_path):
    script = tmp_path / "tied.py"
    script.write_text(TIED_UNDER_FSDP2)
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
         str(script), str(tmp_path)],
        capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert sorted(r["rank"] for r in ranks) == [0, 1]
    for rank in ranks:
        assert rank["shard_rows"] == 256  # half of the 512-token vocabulary each
        assert all(math.isfinite(v) for v in rank["losses"])
        assert rank["losses"][-1] < rank["losses"][0]


def test_the_table_shows_mfu_over_every_repeat_where_a_peak_is_known():
    from bench.config.run_config import RunConfig
    from bench.report.table import points_table
    from bench.result import Point, Result

    def point(peak):
        return Point(batch_size=8, precision="bf16", step_times_s=((2.0, 2.0), (1.0, 1.0)),
                     flops_per_sample=1e15, details={"mfu": {"peak_flops": peak}})  # fmt: skip

    known, unknown, crafted = point(1e16), point(None), point(float("inf"))
    assert known.mfu == pytest.approx(1e15 * known.throughput.value / 1e16)
    assert unknown.mfu is None and crafted.mfu is None
    table = points_table(Result(config=RunConfig(workload="llama3-tiny"), points=[known, unknown]))
    headers = [str(c.header) for c in table.columns]
    assert "MFU" in headers
    cells = [str(cell) for cell in table.columns[headers.index("MFU")].cells]
    assert cells == [f"{known.mfu:.1%}", ""]


def test_without_a_catalogue_peak_the_table_reads_mfu_from_peak_tflops():
    from bench.config.run_config import RunConfig
    from bench.report.table import points_table
    from bench.result import Point, Result

    point = Point(
        batch_size=8,
        precision="bf16",
        step_times_s=((1.0,),),
        flops_per_sample=1e12,
        details={"mfu": {"peak_flops": None, "reason": "no known bf16 FLOPs/cycle"}},
    )
    run = Result(config=RunConfig(workload="llama3-tiny"), points=[point], peak_tflops=16.0)
    table = points_table(run)
    headers = [str(c.header) for c in table.columns]
    assert [str(c) for c in table.columns[headers.index("MFU")].cells] == ["50.0%"]


def test_the_table_shows_tokens_per_s_per_device_beside_the_global_figure():
    """LLM figures are quoted per GPU (torchtitan's TPS/GPU): over several devices the
    table adds the column, each point's tokens/s over the devices that trained it (the
    ranks, or the count a one-process JAX run records)."""
    from bench.config.run_config import RunConfig
    from bench.report.table import points_table
    from bench.result import Point, Result

    def point(devices, recorded=None):
        details = {"per_sample": {"unit": "tokens", "count": 1000}}
        if recorded:
            details["mfu"] = {"devices": recorded, "peak_flops": None}
        return Point(batch_size=8, precision="bf16", step_times_s=((1.0, 1.0),),
                     devices=devices, details=details)  # fmt: skip

    one, ranks, jax = point(1), point(4), point(1, recorded=8)
    assert [p.devices_trained for p in (one, ranks, jax)] == [1, 4, 8]
    table = points_table(Result(config=RunConfig(workload="llama3-tiny"), points=[one, ranks, jax]))
    headers = [str(c.header) for c in table.columns]
    cells = [str(c) for c in table.columns[headers.index("per device\n(tokens/s)")].cells]
    assert cells == ["8,000", "2,000", "1,000"]  # 8 samples x 1000 tokens per second
    alone = points_table(Result(config=RunConfig(workload="llama3-tiny"), points=[one]))
    assert "per device\n(tokens/s)" not in [str(c.header) for c in alone.columns]


@pytest.mark.parametrize(
    "framework",
    ["torch", pytest.param("jax", marks=pytest.mark.full),
     pytest.param("tensorflow", marks=pytest.mark.full)],
)  # fmt: skip
def test_gpt2_trains_with_the_same_adamw_in_every_framework(framework):
    """The same workload does the same work whichever framework runs it."""
    from bench.workloads import _optim

    impl = registry.workload("gpt2").implementation(framework)  # imports the framework
    assert hasattr(impl, "optimizer")
    if framework == "torch":
        got = impl.optimizer(torch.nn.Linear(2, 2).parameters()).defaults
        assert (got["lr"], got["betas"], got["weight_decay"], got["eps"]) == (
            _optim.LR, _optim.BETAS, _optim.WEIGHT_DECAY, _optim.EPS)  # fmt: skip
    else:
        assert impl.optimizer()[1] == "AdamW(lr=0.0003, betas=(0.9, 0.95), weight_decay=0.1)"
