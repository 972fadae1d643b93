"""Llama 3 in JAX: the PyTorch model's parameters, initialisation and numbers, and its
state sharded FSDP-style over a mesh of devices (two emulated CPU devices here, through
XLA_FLAGS in a child: a process's device count is fixed when JAX first opens them)."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from bench import registry
from bench.config.run_config import PointConfig
from bench.parallel import jax_fsdp
from bench.workloads.llama3 import Size
from tests.conftest import only_result, run_bench

pytestmark = pytest.mark.full
jax = pytest.importorskip("jax")
pytest.importorskip("flax")

TWO_DEVICES = {"XLA_FLAGS": "--xla_force_host_platform_device_count=2", "JAX_PLATFORMS": "cpu"}
PUBLISHED = {"llama3-1b": 1_235_814_400, "llama3-8b": 8_030_261_248}


def _jax_count(name: str) -> int:
    point = PointConfig(workload=name, framework="jax")
    return registry.framework("jax").count_parameters(point.spec, point)  # eval_shape only


@pytest.mark.parametrize(("name", "published"), PUBLISHED.items())
def test_the_jax_parameter_counts_equal_the_published_without_allocating(name, published):
    assert _jax_count(name) == published


def test_the_tiny_jax_model_has_exactly_the_torch_models_parameters():
    """The declared count, which tests/test_workloads.py checks against the torch model
    (built there, not here: a worker that has loaded TensorFlow and JAX crashed loading
    PyTorch's compiler stack, triton, in CI)."""
    assert _jax_count("llama3-tiny") == registry.workload("llama3-tiny").parameter_count == 164_160


def _flax_params(model) -> dict:
    """A torch Llama's weights under the Flax model's names (Dense kernels transposed)."""
    params: dict = {}
    for name, parameter in model.named_parameters():
        path = name.split(".")
        if path[0] == "layers":
            path = [f"layers_{path[1]}", *path[2:]]
        value = parameter.detach().numpy()
        if path[-2] == "embedding":
            path[-1] = "embedding"
        elif not path[-2].endswith("norm"):
            path[-1], value = "kernel", value.T
        node = params
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value
    return params


@pytest.mark.parametrize("tied", [False, True])
def test_the_jax_model_computes_the_torch_models_logits_from_the_same_weights(tied):
    torch = pytest.importorskip("torch")
    from bench.workloads.llama3 import jax as flax_llama
    from bench.workloads.llama3 import torch as torch_llama

    # theta 10,000: at 500,000 and 16 positions the slow pairs barely turn.
    size = Size(64, 2, 4, 2, 192, tied=tied, max_seq_len=128, vocab=512, rope_theta=10_000.0)
    torch.manual_seed(0)
    reference = torch_llama.Llama(size)
    tokens = np.random.default_rng(0).integers(0, 512, (2, 16))
    expected = reference(torch.as_tensor(tokens)).detach().numpy()
    model = flax_llama.Llama(size)
    shapes = jax.eval_shape(lambda: model.init(jax.random.key(0), tokens))["params"]
    params = _flax_params(reference)
    assert jax.tree.structure(params) == jax.tree.structure(shapes)
    assert jax.tree.map(np.shape, params) == jax.tree.map(lambda s: s.shape, shapes)
    logits = np.asarray(model.apply({"params": params}, tokens))
    np.testing.assert_allclose(logits, expected, atol=2e-5, rtol=1e-4)


def test_the_jax_model_is_initialised_as_the_torch_one():
    from bench.workloads.llama3 import jax as flax_llama

    size = Size(256, 8, 4, 2, 512, tied=False, max_seq_len=64, vocab=1024)
    tokens = np.zeros((1, 8), np.int32)
    params = flax_llama.Llama(size).init(jax.random.key(0), tokens)["params"]
    depth = 0.02 / math.sqrt(2 * size.layers)  # the blocks' output projections
    block = params["layers_3"]
    for weight, std in [(params["embedding"]["embedding"], 0.02),
                        (params["output"]["kernel"], 0.02),
                        (block["attention"]["wq"]["kernel"], 0.02),
                        (block["feed_forward"]["w1"]["kernel"], 0.02),
                        (block["attention"]["wo"]["kernel"], depth),
                        (block["feed_forward"]["w2"]["kernel"], depth)]:  # fmt: skip
        assert float(np.std(weight)) == pytest.approx(std, rel=0.05)
        assert abs(float(np.mean(weight))) < std / 10
    for norm in (block["attention_norm"], block["ffn_norm"], params["norm"]):
        assert np.all(np.asarray(norm["weight"]) == 1)


def test_fsdp_splits_each_array_along_its_largest_dimension_the_devices_divide():
    assert jax_fsdp.shard_dimension((512, 64), 2) == 0
    assert jax_fsdp.shard_dimension((64, 192), 2) == 1
    assert jax_fsdp.shard_dimension((1001, 64), 8) == 1  # the largest does not split
    assert jax_fsdp.shard_dimension((6, 6), 3) == 0  # the first of equals
    assert jax_fsdp.shard_dimension((3, 5), 2) is None  # replicated
    assert jax_fsdp.shard_dimension((), 2) is None  # a scalar: Adam's step count
    assert jax_fsdp.shard_dimension((1,), 2) is None
    assert str(jax_fsdp.partition_spec((64, 192), 2, "data")) == str(
        jax.sharding.PartitionSpec(None, "data")
    )


SHARDED_SESSION = """
import json, math
import jax
from bench import registry
from bench.config.run_config import PointConfig

point = PointConfig(workload="llama3-tiny", framework="jax", batch_size=4, seq_len=32)
session = registry.framework("jax").prepare(point, registry.platform("cpu"))
losses = [session.loss_value(session.step()) for _ in range(4)]
params, moments = session.state["params"], session.state["opt_state"][0].mu
def layout(array):
    return {"devices": len(array.sharding.device_set),
            "shards": sorted({tuple(s.data.shape) for s in array.addressable_shards})}
print(json.dumps({
    "devices": session.devices, "details": session.details, "losses": losses,
    "embedding": layout(params["embedding"]["embedding"]),
    "w1": layout(params["layers_0"]["feed_forward"]["w1"]["kernel"]),
    "w1_moment": layout(moments["layers_0"]["feed_forward"]["w1"]["kernel"]),
    "inputs": layout(session.batch[0]),
}))
"""


def _two_devices(script: str) -> dict:
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, env={**os.environ, **TWO_DEVICES})  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_two_devices_each_hold_half_of_every_weight_and_of_its_adam_moments():
    seen = _two_devices(SHARDED_SESSION)
    assert seen["devices"] == 2
    assert seen["embedding"] == {"devices": 2, "shards": [[256, 64]]}  # 512 x 64, by rows
    assert seen["w1"] == {"devices": 2, "shards": [[64, 96]]}  # 64 x 192, by columns
    assert seen["w1_moment"] == seen["w1"]  # the optimizer state follows its parameter
    assert seen["inputs"] == {"devices": 2, "shards": [[2, 32]]}  # the batch on the same axis
    details = seen["details"]
    assert details["sharding"] == "fsdp" and details["fsdp"]["mesh"] == {"data": 2}
    assert details["fsdp"]["arrays_replicated"] == 4  # Adam's count, step, loss scale, good steps
    assert details["optimizer"] == "AdamW(lr=0.0003, betas=(0.9, 0.95), weight_decay=0.1)"
    assert all(math.isfinite(loss) for loss in seen["losses"])
    assert seen["losses"][-1] < seen["losses"][0]


@pytest.mark.slow
def test_llama3_tiny_trains_with_jax_over_two_emulated_devices_and_reports_tokens_and_mfu(
    tmp_path,
):
    done = run_bench(
        "llama3-tiny", "--framework", "jax", "--device", "cpu", "--steps", "3",
        "--warmup-steps", "1", "--precision", "bf16", "--output-dir", str(tmp_path),
        env=TWO_DEVICES,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    (point,) = only_result(tmp_path)["points"]
    assert point["status"] == "ok" and point["devices"] == 2
    assert point["unit_throughput"]["unit"] == "tokens/s" and point["unit_throughput"]["value"] > 0
    assert point["parameters"] == 164_160  # the whole model, counted over the shards
    details = point["details"]
    assert details["sharding"] == "fsdp" and details["mesh"] == {"data": 2}
    assert details["compute_dtype"] == "bfloat16" and details["per_device_batch"] == 2
    mfu = details["mfu"]  # as the torch path's: the formula, the devices that trained
    assert mfu["formula"].startswith("6N+12LHQT") and mfu["devices"] == 2
    assert mfu["tokens_per_s"] > 0
    assert mfu["tokens_per_s_per_device"] == pytest.approx(mfu["tokens_per_s"] / 2)
    assert (mfu["value"] is None) == (mfu["reason"] is not None)
    assert mfu["value"] is None or mfu["value"] > 0


def test_jax_checkpointing_recomputes_the_torch_blocks_with_the_same_numbers_in_less_memory():
    """flax.linen.remat on the blocks bench.parallel.checkpoint names: the same losses
    to the bit, less of XLA's scratch memory for the compiled step as more is recomputed."""
    seen = {}
    for mode in ("none", "selective", "full"):
        point = PointConfig(workload="llama3-tiny", framework="jax", batch_size=8, seq_len=256,
                            activation_checkpointing=mode)  # fmt: skip
        session = registry.framework("jax").prepare(point, registry.platform("cpu"))
        losses = [session.loss_value(session.step()) for _ in range(3)]
        scratch = session.compiled.memory_analysis().temp_size_in_bytes
        seen[mode] = (losses, scratch, session.details.get("activation_checkpointing"))
    assert seen["selective"][0] == seen["full"][0] == seen["none"][0]
    assert seen["none"][1] > seen["selective"][1] > seen["full"][1]
    assert seen["none"][2] is None
    assert seen["selective"][2] == {"mode": "selective", "blocks": 1}  # of 2: every other
    assert seen["full"][2] == {"mode": "full", "blocks": 2}


@pytest.mark.slow
def test_jax_learns_a_token_file_over_two_emulated_devices_and_records_it(tmp_path):
    """The torch test's periodic llm.c file (each token says which comes next): the loss
    falls far within 21 steps; the batch each step reads is split over the mesh."""
    import hashlib

    from tests.fake_data import periodic_tokens, write_tokens

    path = write_tokens(tmp_path / "train.bin", periodic_tokens(65 * 400), "gpt-2")
    done = run_bench(
        "llama3-tiny", "--framework", "jax", "--device", "cpu", "--data", f"tokens:{path}",
        "--steps", "20", "--warmup-steps", "1", "--output-dir", str(tmp_path / "out"),
        env=TWO_DEVICES,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    (point,) = only_result(tmp_path / "out")["points"]
    assert point["status"] == "ok" and point["devices"] == 2
    (first,), (last,) = point["loss_first"], point["loss_last"]
    assert first > 5.5 and last < first - 0.5, (first, last)
    dataset = point["details"]["dataset"]
    assert dataset["format"] == "llm.c magic 20240520 version 1" and dataset["windows"] == 400
    assert dataset["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
