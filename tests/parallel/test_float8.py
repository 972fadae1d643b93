"""--precision fp8: float8 training of the decoders' linear layers through torchao, on
GPUs with float8 tensor cores; refused in one line everywhere else."""

import pytest

from bench import registry
from bench.config.run_config import PointConfig, RunConfig
from bench.platforms import cuda
from bench.util.errors import UsageError

torch = pytest.importorskip("torch")


def test_fp8_on_a_cpu_is_one_line_with_status_2(capsys):
    from bench.cli import main

    assert main(["llama3-tiny", "--device", "cpu", "--precision", "fp8"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "precision 'fp8' is not available on cpu; cpu supports: bf16, fp16, fp32" in err


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"workload": "resnet50"}, "fp8 applies to the decoders bench shards with FSDP2"),
        ({"workload": "llama3-tiny", "framework": "jax"}, "fp8 is not available with jax"),
    ],
)
def test_fp8_is_refused_where_float8_training_does_not_apply(config, message):
    with pytest.raises(UsageError, match=message):
        RunConfig(**config, precisions=("fp8",))


def test_a_gpu_without_float8_tensor_cores_is_named_with_its_capability(monkeypatch):
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: (8, 0))
    reason = cuda.PLATFORM.precision_unsupported("fp8")
    assert reason.startswith("fp8 needs float8 tensor cores, compute capability 8.9")
    assert reason.endswith("this GPU is 8.0")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: (9, 0))
    assert cuda.PLATFORM.precision_unsupported("fp8") is None  # H100


def test_without_torchao_fp8_names_its_extra_before_any_child(monkeypatch):
    monkeypatch.setattr(registry, "_installed", lambda m: m != "torchao")
    point = PointConfig(workload="llama3-tiny", precision="bf16")
    registry.framework("torch").preflight([point])  # bf16 needs nothing more
    fp8 = PointConfig(workload="llama3-tiny", precision="fp8")  # the device is checked apart
    with pytest.raises(
        registry.MissingExtra, match=r"needs torchao: pip install 'bench\[float8\]'"
    ):
        registry.framework("torch").preflight([fp8])


@pytest.mark.full
def test_float8_swaps_every_linear_but_the_output_and_the_tiny_llama_trains():
    """On the CPU torchao's float8 matmul is emulated: slow, but the same code path."""
    pytest.importorskip("torchao")
    from torchao.float8.float8_linear import Float8Linear

    from bench.parallel.float8 import apply_float8

    spec = registry.workload("llama3-tiny")
    model = spec.implementation("torch").build_model(spec, PointConfig(workload="llama3-tiny"))
    applied = apply_float8(model)
    swapped = [n for n, m in model.named_modules() if isinstance(m, Float8Linear)]
    assert applied["linears"] == len(swapped) == 2 * 7  # q, k, v, o, w1, w2, w3 per block
    assert not isinstance(model.output, Float8Linear)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    tokens = torch.randint(0, 512, (2, 33), generator=torch.Generator().manual_seed(0))
    losses = []
    for _ in range(5):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model(tokens[:, :-1])
        loss = torch.nn.functional.cross_entropy(
            logits.flatten(0, 1).float(), tokens[:, 1:].flatten()
        )
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    assert all(torch.isfinite(torch.tensor(losses))) and losses[-1] < losses[0]


def test_an_fp8_run_s_mfu_divides_by_the_dense_bf16_peak_as_torchtitan_reports_it():
    from bench.result import mfu

    h100 = {"accelerator": {"accelerator": "NVIDIA H100 80GB HBM3", "accelerator_count": 8}}
    fp8 = PointConfig(workload="llama3-8b", batch_size=8, precision="fp8", seq_len=8192)
    bf16 = PointConfig(workload="llama3-8b", batch_size=8, precision="bf16", seq_len=8192)
    record = mfu.record(fp8, [2.0, 2.0], h100)
    assert record["value"] == mfu.record(bf16, [2.0, 2.0], h100)["value"]
    assert record["peak_flops"] == pytest.approx(989.4e12)
    assert "bf16 peak for an fp8 run" in record["peak_source"]
