"""benchmarks/llm_peer.py, the bare FSDP2 loop that llm_overhead.py runs beside bench:
its copy of the Llama 3 model must stay bench's, and (slow) it trains and prints
global tokens/s on one process and on two gloo ranks."""

import importlib.util
import json
import subprocess
import sys

import pytest

from bench import registry
from bench.config.run_config import PointConfig
from bench.workloads import llama3
from tests.conftest import ROOT, needs_two_cores

torch = pytest.importorskip("torch")

PEER = ROOT / "benchmarks" / "llm_peer.py"


def _peer():
    spec = importlib.util.spec_from_file_location("llm_peer", PEER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_peer_imports_nothing_of_bench():
    source = PEER.read_text()
    assert "import bench" not in source and "from bench" not in source


def test_the_peer_s_sizes_are_bench_s():
    peer = _peer()
    assert set(peer.SIZES) == set(llama3.SIZES)
    for name, size in llama3.SIZES.items():
        assert peer.SIZES[name]._asdict() == size._asdict(), name


def test_the_peer_builds_bench_s_weights_and_computes_its_logits():
    peer = _peer()
    spec = registry.workload("llama3-tiny")
    torch.manual_seed(0)
    ours = spec.implementation("torch").build_model(spec, PointConfig(workload="llama3-tiny"))
    torch.manual_seed(0)
    theirs = peer.Llama(peer.SIZES["llama3-tiny"])
    a, b = ours.state_dict(), theirs.state_dict()
    assert list(a) == list(b)
    assert all(torch.equal(a[k], b[k]) for k in a)
    tokens = torch.randint(0, 512, (2, 16), generator=torch.Generator().manual_seed(1))
    assert torch.equal(ours(tokens), theirs(tokens))


@pytest.mark.parametrize("name", ["sgd", "adamw"])
def test_the_peer_describes_its_optimizer_as_bench_does(name):
    from bench.frameworks._torch_optimizer import describe as _describe

    optimizer = _peer().OPTIMIZERS[name]([torch.nn.Parameter(torch.zeros(1))])
    assert _peer().describe(optimizer) == _describe(optimizer)


@pytest.mark.slow
@pytest.mark.parametrize("ranks", [1, pytest.param(2, marks=needs_two_cores)])
def test_the_peer_trains_and_prints_global_tokens_per_second(ranks):
    launcher = [sys.executable]
    if ranks > 1:
        launcher += ["-m", "torch.distributed.run", f"--nproc-per-node={ranks}",
                     "--standalone", "--local-addr=127.0.0.1"]  # fmt: skip
    done = subprocess.run(
        [*launcher, str(PEER), "--size", "llama3-tiny", "--batch-size", "4", "--seq-len", "16",
         "--steps", "2", "--warmup-steps", "1", "--precision", "bf16"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1  # rank 0 alone speaks
    figures = json.loads(lines[0])
    assert figures["unit"] == "tokens/s" and figures["tokens_per_s"] > 0
    assert figures["ranks"] == ranks and figures["optimizer"].startswith("AdamW(")
    assert 0 < figures["loss_last"] < 10
