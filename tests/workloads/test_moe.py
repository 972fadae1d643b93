"""Mixtures of experts: the router and its losses against hand-computed values, grouped
and looped expert matmuls alike, dropped tokens, parameter counts of the published
shapes, the active-parameter FLOPs formula, and the refusals."""

import math
from pathlib import Path

import pytest

from bench import registry
from bench.config.run_config import PointConfig
from bench.result import mfu
from bench.util.errors import UsageError
from bench.workloads import moe
from tests.conftest import needs_two_cores

torch = pytest.importorskip("torch")
moe_torch = pytest.importorskip("bench.workloads.moe.torch")

# Three tokens' router probabilities over four experts (no ties in any top-2).
PROBABILITIES = [[0.5, 0.3, 0.1, 0.1], [0.1, 0.6, 0.2, 0.1], [0.3, 0.2, 0.4, 0.1]]


def _logits(shift: float = 0.0):
    return torch.tensor(PROBABILITIES).log() + shift


def test_the_router_takes_each_tokens_top_k_of_the_softmax():
    weights, experts, probabilities = moe_torch.route(_logits(), 2)
    assert experts.tolist() == [[0, 1], [1, 2], [2, 0]]
    assert weights.flatten().tolist() == pytest.approx([0.5, 0.3, 0.6, 0.2, 0.4, 0.3], abs=1e-6)
    assert probabilities.sum(-1).tolist() == pytest.approx([1, 1, 1])
    renormalized, _, _ = moe_torch.route(_logits(), 2, renormalize=True)  # GPT-OSS
    assert renormalized[0].tolist() == pytest.approx([0.625, 0.375])


def test_the_balance_loss_is_switchs_by_hand():
    _, experts, probabilities = moe_torch.route(_logits(), 2)
    # Assignments: experts 0, 1, 2 twice each of six, expert 3 none: f = 1/3, 1/3, 1/3, 0.
    # Mean probabilities P = 0.3, 1.1/3, 0.7/3, 0.1. Loss = 4 x sum f_i P_i = 4 x 0.3.
    loss = moe_torch.balance_loss(probabilities, experts)
    assert float(loss) == pytest.approx(1.2, abs=1e-6)
    even = torch.full((4, 4), 0.25)  # every expert equally likely and equally used
    assert float(moe_torch.balance_loss(even, torch.tensor([[0], [1], [2], [3]]))) == 1.0


def test_the_router_z_loss_is_the_mean_squared_log_sum_exp():
    # log-probabilities shifted by 2: every row's log-sum-exp is 2.
    assert float(moe_torch.z_loss(_logits(2.0))) == pytest.approx(4.0, abs=1e-5)


def _layer(**changes):
    size = moe.SIZES["moe-tiny"]._replace(**changes)
    torch.manual_seed(0)
    model = moe_torch.MoEDecoder(size._replace(layers=1))
    return model.layers["0"].moe


def test_grouped_and_looped_expert_matmuls_give_the_same_output_and_gradients():
    layer = _layer(bias=True)  # biases too, as GPT-OSS's experts have
    with torch.no_grad():
        for p in layer.experts.parameters():
            p.normal_(std=0.1)
    reason = moe_torch.grouped_unavailable(torch.device("cpu"), torch.float32)
    if reason is not None:
        pytest.skip(reason)
    x = torch.randn(2, 16, 64, generator=torch.Generator().manual_seed(1))
    results = []
    for grouped in (True, False):
        layer.zero_grad()
        layer.grouped = grouped
        inputs = x.clone().requires_grad_()
        out = layer(inputs)
        (out.square().sum() + layer.routing.aux_loss).backward()
        grads = [p.grad.clone() for p in layer.parameters()]
        results.append((out.detach(), inputs.grad, grads, layer.experts.path))
    (out_g, in_g, grads_g, path_g), (out_l, in_l, grads_l, path_l) = results
    assert (path_g, path_l) == (moe_torch.GROUPED, moe_torch.LOOP)
    torch.testing.assert_close(out_g, out_l, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(in_g, in_l, rtol=1e-5, atol=1e-5)
    for a, b in zip(grads_g, grads_l, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_the_loop_is_recorded_with_why_where_grouped_mm_cannot_run(monkeypatch):
    monkeypatch.setattr(moe_torch, "grouped_unavailable", lambda device, dtype: "no kernel")
    layer = _layer()
    layer(torch.randn(1, 8, 64))
    record = moe_torch.moe_report(layer)
    assert record["expert_matmuls"] == moe_torch.LOOP and record["why_loop"] == "no kernel"


def test_a_capacity_factor_drops_the_rows_past_each_experts_capacity_and_counts_them():
    layer = _layer(capacity_factor=0.5)
    x = torch.randn(1, 32, 64, generator=torch.Generator().manual_seed(2))
    logits = layer.router(x.reshape(-1, 64))
    _, experts, _ = moe_torch.route(logits, 2)
    counts = torch.bincount(experts.flatten(), minlength=8)
    capacity = math.ceil(0.5 * 64 / 8)  # 64 assignments over 8 experts, halved: 4
    expected = int((counts - counts.clamp(max=capacity)).sum())
    assert expected > 0
    layer(x)
    record = moe_torch.moe_report(layer)
    assert record["dropped_assignments"] == expected and record["assignments"] == 64
    assert max(record["tokens_per_expert"]) == capacity


def test_dropless_routing_drops_nothing_and_reports_the_balance():
    layer = _layer()
    layer(torch.randn(1, 32, 64, generator=torch.Generator().manual_seed(2)))
    record = moe_torch.moe_report(layer)
    tokens = record["tokens_per_expert"]
    assert record["dropped_assignments"] == 0 and sum(tokens) == 64
    assert record["balance_max_over_mean"] == pytest.approx(max(tokens) / (64 / 8))


# --- the shapes: parameter counts, total and active ------------------------------------------


def test_olmoe_counts_its_published_parameters():
    size = moe.SIZES["olmoe-1b-7b"]
    assert moe.parameters(size) == 6_919_161_856  # allenai/OLMoE-1B-7B-0924
    assert moe.active_parameters(size) == 1_282_017_280  # "1.3B active" (1.28B)


def test_gpt_oss_counts_its_model_cards_parameters_but_the_sinks():
    size = moe.SIZES["gpt-oss-20b"]
    # The model card: 20.91B total, 3.61B active (embedding lookup not counted); its
    # attention sinks (64 per layer) are the difference, left out here (docs/llm.md).
    assert moe.parameters(size) + 24 * 64 == pytest.approx(20.91e9, rel=5e-4)
    assert moe.active_non_embedding(size) == pytest.approx(3.61e9, rel=5e-4)


@pytest.mark.parametrize("name", sorted(moe.SIZES))
def test_the_built_model_holds_exactly_the_formulas_parameters(name):
    spec = registry.workload(name)
    with torch.device("meta"):
        model = spec.implementation("torch").build_model(spec, PointConfig(workload=name))
    size = moe.SIZES[name]
    total = sum(p.numel() for p in model.parameters())
    assert total == moe.parameters(size)
    experts_skipped = (size.experts - size.top_k) * sum(
        p.numel() // size.experts for n, p in model.named_parameters() if ".experts." in n
    )
    assert total - experts_skipped == moe.active_parameters(size)


def test_top_k_above_the_experts_is_one_line():
    bad = moe.SIZES["moe-tiny"]._replace(top_k=9)
    with pytest.raises(
        UsageError, match=r"^moe-tiny: top_k 9 must be between 1 and its 8 experts$"
    ):
        moe.check_size("moe-tiny", bad)


# --- FLOPs and MFU on active parameters -------------------------------------------------------

H100 = {"accelerator": {"accelerator": "NVIDIA H100 80GB HBM3", "accelerator_count": 8}}


def test_flops_count_active_parameters_only():
    size = moe.SIZES["olmoe-1b-7b"]
    n = moe.active_non_embedding(size)
    assert n == 1_282_017_280 - 50_304 * 2048
    flops = registry.workload("olmoe-1b-7b").flops(4096)
    assert flops["per_token"] == 6 * n + 12 * 16 * 16 * 128 * 4096
    assert flops["per_sample"] == flops["per_token"] * 4096
    assert flops["formula"].startswith("6N_active+12LHQT")
    assert flops["active_non_embedding_parameters"] == n


def test_mfu_of_a_moe_is_the_active_formula_over_the_peak():
    point = PointConfig(workload="olmoe-1b-7b", batch_size=8, precision="bf16", seq_len=4096)
    record = mfu.record(point, [1.0, 1.0], H100)  # one of eight H100s: 32,768 tokens/s
    per_token = 6 * 1_178_994_688 + 12 * 16 * 16 * 128 * 4096
    assert record["flops_per_token"] == per_token and record["tokens_per_s"] == 8 * 4096
    assert record["value"] == pytest.approx(per_token * 8 * 4096 / 989.4e12)
    assert record["formula"] == mfu.MOE_FORMULA


def test_the_tiny_moe_trains_a_step_with_a_finite_loss_that_includes_the_balance():
    spec = registry.workload("moe-tiny")
    impl = spec.implementation("torch")
    point = PointConfig(workload="moe-tiny", seq_len=16)
    model = impl.build_model(spec, point)
    inputs, targets = impl.make_batch(spec, point, 2, torch.Generator().manual_seed(0))
    total = impl.train_loss(model, inputs, targets)
    plain = impl.loss(model(inputs), targets)
    total.backward()
    assert math.isfinite(float(total.detach()))
    assert abs(float(plain.detach()) - math.log(512)) < 0.5
    # Two layers' balance losses, each about 1 (x 0.01), and their z-losses.
    assert 0.015 < float((total - plain).detach()) < 0.05
    assert all(p.grad is not None for p in model.parameters())


# --- refusals in one line, before any point runs -------------------------------------------


def _refused(capsys, *argv: str) -> str:
    from bench.cli import main

    assert main([*argv, "--device", "cpu"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_expert_parallelism_on_a_dense_workload_is_one_line(capsys):
    err = _refused(capsys, "llama3-tiny", "--expert-parallel", "2", "--devices", "2")
    assert "--expert-parallel: 'llama3-tiny' has no experts to split" in err
    assert "moe-tiny" in err and "olmoe-1b-7b" in err


def test_expert_parallelism_that_does_not_divide_the_experts_is_one_line():
    from bench.config.run_config import RunConfig

    with pytest.raises(
        UsageError,
        match=r"^expert_parallel: 3 does not divide olmoe-1b-7b's 64 experts; use a divisor of 64$",
    ):
        RunConfig(workload="olmoe-1b-7b", expert_parallel=3, devices=(3,))


def test_expert_parallelism_that_does_not_divide_the_ranks_is_one_line(capsys):
    err = _refused(capsys, "moe-tiny", "--expert-parallel", "2", "--devices", "1")
    assert "--expert-parallel: 2 does not divide the 1 rank(s) of a point" in err


@pytest.mark.parametrize("value", ["2", True, 0, 10**9, 2.0])
def test_a_files_expert_parallel_of_the_wrong_type_or_range_is_one_line(value):
    from bench.config.run_config import RunConfig

    with pytest.raises(UsageError, match=r"^expert_parallel: .* must be a whole number from 1"):
        RunConfig.from_dict({"workload": "moe-tiny", "expert_parallel": value})


def test_a_shape_that_cannot_fit_is_refused_with_its_state_and_the_gpus_it_needs(capsys, tmp_path):
    err = _refused(capsys, "gpt-oss-20b", "--memory-limit", "80GiB", "--output-dir", str(tmp_path))
    assert "gpt-oss-20b does not fit on one cpu device" in err
    assert "311.65 GiB in all, 4 GPU(s) of 80 GiB at the very least" in err
    assert not list(tmp_path.iterdir())


# --- a run's record, and expert parallelism over two gloo ranks -----------------------------


@pytest.mark.slow  # a real run in a child: the full tier's
def test_a_run_records_the_experts_load_and_the_formula_in_its_result(tmp_path):
    from tests.conftest import only_result, run_bench

    done = run_bench("moe-tiny", "--device", "cpu", "--steps", "2", "--warmup-steps", "1",
                     "--output-dir", str(tmp_path))  # fmt: skip
    assert done.returncode == 0, done.stderr
    point = only_result(tmp_path)["points"][0]
    record = point["details"]["moe"]
    assert record["assignments"] == 3 * 4 * 64 * 2 * 2  # steps x batch x tokens x layers x k
    assert sum(record["tokens_per_expert"]) == record["assignments"]
    assert record["dropped_assignments"] == 0 and record["exchange"] == "local (one process)"
    assert record["expert_matmuls"] in (moe_torch.GROUPED, moe_torch.LOOP)
    assert point["details"]["mfu"]["formula"] == mfu.MOE_FORMULA


def _rank_losses(rank, world, parallel, init_file, out):
    """One rank of `world`: moe-tiny built as the session builds it (meta device,
    experts over `parallel` ranks, FSDP2, filled), three AdamW steps on its share of one
    batch; rank 0 writes the mean language-model loss of every step and the record."""
    import json

    import torch.distributed as dist

    from bench.parallel import fsdp

    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank,
                            world_size=world)  # fmt: skip
    torch.set_num_threads(1)
    spec = registry.workload("moe-tiny")
    impl = spec.implementation("torch")
    point = PointConfig(workload="moe-tiny", seq_len=16, batch_size=4, devices=world,
                        expert_parallel=parallel)  # fmt: skip
    with torch.device("meta"):
        model = impl.build_model(spec, point)
    fsdp.apply_fsdp(model, world, "cpu")
    fsdp.materialize(model, torch.device("cpu"))
    optimizer = impl.optimizer(model.parameters())
    inputs, targets = impl.make_batch(spec, point, 4, torch.Generator().manual_seed(0))
    share = slice(rank * 4 // world, (rank + 1) * 4 // world)
    losses: list[float] = []
    gradients: list[float] = []
    for _ in range(3):
        optimizer.zero_grad()
        # The language model's loss: the balance loss is each rank's own tokens' (as
        # per-device micro-batches in OLMoE and Megatron), so it is left out here.
        loss = impl.loss(model(inputs[share]), targets[share])
        loss.backward()
        if not losses:  # the first step's gradients, every parameter's, summed whole
            gradients.append(_gradient_sum(model, dist))
        optimizer.step()
        total = loss.detach().clone()
        dist.all_reduce(total)
        losses.append(float(total) / world)
    record = impl.moe_report(model)
    if rank == 0:
        Path(out).write_text(json.dumps({"losses": losses, "grad": gradients, "record": record}))


def _gradient_sum(model, dist) -> float:
    """Sum of |gradient| over the whole model: FSDP2's shards gathered, each rank's own
    experts added up over ranks (a replica's copy counted once)."""
    from torch.distributed.tensor import DTensor

    shared, experts = 0.0, torch.zeros((), dtype=torch.float64)
    for name, parameter in model.named_parameters():
        grad = parameter.grad
        whole = grad.full_tensor() if isinstance(grad, DTensor) else grad
        if ".experts." in name:
            experts += whole.double().abs().sum()
        else:
            shared += float(whole.double().abs().sum())
    if model.applied is not None:
        dist.all_reduce(experts)
        experts /= model.applied["replicas"]
    return shared + float(experts)


def _spawned(tmp_path, world: int, parallel: int) -> dict:
    import json

    out = tmp_path / f"w{world}p{parallel}.json"
    torch.multiprocessing.spawn(
        _rank_losses, args=(world, parallel, str(tmp_path / f"init{world}{parallel}"), str(out)),
        nprocs=world,
    )  # fmt: skip
    return json.loads(out.read_text())


@pytest.mark.slow
@needs_two_cores
def test_two_gloo_ranks_with_expert_parallelism_train_to_the_same_losses_as_one(tmp_path):
    one = _spawned(tmp_path, 1, 1)
    two = _spawned(tmp_path, 2, 2)
    assert two["grad"] == pytest.approx(one["grad"], rel=1e-5)
    assert two["losses"] == pytest.approx(one["losses"], rel=1e-5)
    assert one["losses"][2] < one["losses"][0]  # it learns: the comparison is not vacuous
    record = two["record"]
    assert record["exchange"] == "all_to_all_single over 2 ranks (gloo)"
    assert record["expert_parallel"]["experts_per_rank"] == 4
    # Both ranks' tokens counted: 3 steps x 4 sequences x 16 tokens x 2 layers x top-2.
    assert sum(record["tokens_per_expert"]) == record["assignments"] == 3 * 4 * 16 * 2 * 2
    assert record["all_to_all_s_per_step"] > 0


@pytest.mark.slow
@needs_two_cores
def test_bench_runs_expert_parallel_over_two_cpu_ranks_and_records_the_all_to_all(tmp_path):
    from tests.conftest import only_result, run_bench

    done = run_bench("moe-tiny", "--device", "cpu", "--devices", "2", "--expert-parallel",
                     "2", "--steps", "3", "--warmup-steps", "1", "--output-dir",
                     str(tmp_path))  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = only_result(tmp_path)
    assert result["config"]["expert_parallel"] == 2
    point = result["points"][0]
    assert point["status"] == "ok", point.get("error")
    record = point["details"]["moe"]
    assert record["exchange"].startswith("all_to_all_single over 2 ranks")
    assert 0 < record["all_to_all_share"] < 1
    assert record["balance_max_over_mean"] >= 1


def test_a_peer_announcing_more_rows_than_a_rank_routes_is_stopped_in_one_line(monkeypatch):
    import torch.distributed as dist

    from bench.parallel import expert
    from bench.util.errors import BenchError

    def crafted(output, tensor, *args, **kwargs):  # a peer claims 10**9 rows for expert 0
        output.copy_(torch.tensor([10**9, 0, 0, 0, 0, 0, 0, 0]))

    monkeypatch.setattr(dist, "all_to_all_single", crafted)
    exchange = expert.AllToAll(group=None, parallel=2, backend="gloo")
    rows = torch.zeros(16, 64)
    with pytest.raises(BenchError, match=r"^expert parallelism: a peer announced 1000000000 rows"
                       r" \(smallest count 0\); each rank routes 16, so at most 16"):  # fmt: skip
        exchange(rows, [2] * 8, experts=None, grouped=True)
    monkeypatch.setattr(dist, "all_to_all_single", lambda o, t, *a, **k: o.fill_(-1))
    with pytest.raises(BenchError, match=r"smallest count -1"):
        exchange(rows, [2] * 8, experts=None, grouped=True)
