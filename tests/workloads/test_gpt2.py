"""GPT-2 on the decoders' path: FLOPs by the same formula as the Llamas (nanoGPT's
count), FSDP2 over ranks with its GPT-2 initialisation, activation checkpointing in
torch and JAX."""

from __future__ import annotations

import math

import pytest

from bench import registry
from bench.config.run_config import PointConfig
from bench.workloads import gpt2

torch = pytest.importorskip("torch")


def test_flops_per_token_use_nanogpt_s_non_embedding_count():
    from bench.workloads.gpt2.torch import GPT2

    size = gpt2.SIZES["gpt2"]
    with torch.device("meta"):
        model = GPT2(gpt2.VOCAB, size)
    every = sum(p.numel() for p in model.parameters())
    # nanoGPT's get_num_params(non_embedding=True): all but the position embedding (the
    # token embedding is the output layer's matmul, tied).
    assert gpt2.non_embedding_parameters(size) == every - model.positions.weight.numel()
    assert gpt2.non_embedding_parameters(size) == 123_653_376
    flops = registry.workload("gpt2").flops(1024)
    assert flops["per_token"] == 6 * 123_653_376 + 12 * 12 * 12 * 64 * 1024 == 855_166_464
    assert flops["per_sample"] == flops["per_token"] * 1024
    assert flops["formula"].startswith("6N+12LHQT")
    medium = gpt2.SIZES["gpt2-medium"]
    assert gpt2.non_embedding_parameters(medium) == 354_823_168 - 1024 * 1024


def test_a_model_built_on_the_meta_device_gets_gpt2_s_initialisation():
    """What FSDP2 does to it (bench.parallel.fsdp.materialize): storage, then init_weights,
    never PyTorch's default initialisation (N(0, 1) embeddings, LayerNorm left empty)."""
    from bench.parallel import fsdp
    from bench.workloads.gpt2.torch import GPT2

    with torch.device("meta"):
        model = GPT2(512, gpt2.Size(64, 2, 4))
    fsdp.materialize(model, torch.device("cpu"))
    for name, parameter in model.named_parameters():
        if "norm" in name:
            expected = 1.0 if name.endswith("weight") else 0.0
            assert torch.equal(parameter, torch.full_like(parameter, expected)), name
        elif name.endswith("bias"):
            assert not parameter.any(), name
        else:
            assert abs(parameter.std().item() - 0.02) < 0.004, name


@pytest.mark.slow
@pytest.mark.long
def test_two_cpu_ranks_train_gpt2_sharded_by_fsdp2_with_checkpointed_blocks(tmp_path):
    from tests.conftest import only_result, run_bench

    done = run_bench(
        "gpt2", "--device", "cpu", "--devices", "2", "--steps", "1", "--warmup-steps", "0",
        "--batch-size", "2", "--seq-len", "32", "--precision", "bf16",
        "--activation-checkpointing", "full", "--output-dir", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    (point,) = only_result(tmp_path)["points"]
    assert point["status"] == "ok" and point["devices"] == 2
    assert all(math.isfinite(loss) for loss in point["loss_first"] + point["loss_last"])
    details = point["details"]
    assert details["sharding"] == "fsdp2" and details["data_parallel"]["kind"] == "FSDP2"
    assert details["data_parallel"]["fsdp"]["units"] == 13  # 12 blocks + the root
    assert details["activation_checkpointing"] == {"mode": "full", "blocks": 12}
    mfu = details["mfu"]
    assert mfu["flops_per_token"] == 6 * 123_653_376 + 12 * 12 * 12 * 64 * 32
    assert mfu["devices"] == 2 and mfu["tokens_per_s_per_device"] > 0
    assert point["parameters"] == 124_439_808  # the whole model, counted over the shards


@pytest.mark.slow
@pytest.mark.long
def test_jax_gpt2_recomputes_its_blocks_with_the_same_losses():
    pytest.importorskip("flax")
    seen = {}
    for mode in ("none", "full"):
        point = PointConfig(workload="gpt2", framework="jax", batch_size=2, seq_len=16,
                            activation_checkpointing=mode)  # fmt: skip
        session = registry.framework("jax").prepare(point, registry.platform("cpu"))
        seen[mode] = ([session.loss_value(session.step()) for _ in range(2)],
                      session.details.get("activation_checkpointing"))  # fmt: skip
    assert seen["full"][0] == seen["none"][0]
    assert seen["none"][1] is None and seen["full"][1] == {"mode": "full", "blocks": 12}
