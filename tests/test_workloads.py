"""Workloads: discovery, exact parameter counts, and that each one trains."""

import sys
import textwrap

import pytest

from bench import registry
from bench.config import PointConfig

torch = pytest.importorskip("torch")

# Exact counts (each shared tensor once). cnn-s is TensorFlow's CNN tutorial network,
# the M2 Max vs V100 study's smallest (122,570); the family spans its range up to ~1.65 M.
PARAMETERS = {
    "tiny": 5_354,
    "moe-tiny": 189_760,
    "olmoe-1b-7b": 6_919_161_856,
    "gpt-oss-20b": 20_914_755_648,
    "cnn-s": 122_570,
    "cnn-m": 356_810,
    "cnn-l": 750_346,
    "cnn-xl": 1_662_794,
    "resnet50": 25_557_032,  # torchvision's ResNet-50
    "resnet50-cifar": 23_528_522,
    "bert-base": 109_514_298,  # BERT-base with a tied masked-LM head, no pooler
    "bert-large": 335_174_458,
    # The model zoo of the 2020 GPU comparison, and today's transformers.
    "gpt2": 124_439_808,  # GPT-2 small, exactly as published (tied embeddings)
    "gpt2-medium": 354_823_168,
    "vit-b16": 86_567_656,  # torchvision's ViT-B/16
    "nasnet-large": 88_753_150,  # timm's nasnetalarge
    "maskrcnn": 44_454_513,  # torchvision's, from scratch (batch norm trains)
    "deeplabv3": 39_638_355,  # torchvision's, 19 classes, no auxiliary head
    "transformer-big": 214_249_472,  # the paper's 213 M with a 37k shared vocabulary
    "pix2pixhd": 188_149_957,  # global generator 182.5 M + two discriminators 5.6 M
    # Llama 3 at Meta's published sizes, counted on the meta device (nothing allocated).
    "llama3-1b": 1_235_814_400,  # Llama 3.2 1B, tied embeddings
    "llama3-8b": 8_030_261_248,  # Llama 3.1 8B
    "llama3-tiny": 164_160,
}


def test_every_workload_is_discovered():
    assert set(registry.workloads()) == set(PARAMETERS)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param(name, count, marks=[pytest.mark.full] if name == "nasnet-large" else [])
        for name, count in PARAMETERS.items()
    ],  # NASNet-A Large comes from timm, which only the full tier installs
)
def test_parameter_counts(name, expected):
    spec = registry.workload(name)
    assert (
        registry.framework("torch").count_parameters(spec, PointConfig(workload=name)) == expected
    )


def test_cnn_family_spans_seed_one_range():
    counts = [PARAMETERS[n] for n in ("cnn-s", "cnn-m", "cnn-l", "cnn-xl")]
    assert counts == sorted(counts)
    assert counts[-1] == pytest.approx(1_649_482, rel=0.01)


def test_bert_batch_masks_fifteen_percent_and_scores_only_masked_tokens():
    spec = registry.workload("bert-base")
    impl = spec.implementation("torch")
    point = PointConfig(workload="bert-base", seq_len=64)
    tokens, targets = impl.make_batch(spec, point, 8, torch.Generator().manual_seed(0))
    assert tokens.shape == targets.shape == (8, 64)
    scored = targets != -100
    assert 0.10 < scored.float().mean().item() < 0.20
    assert (tokens[scored] == 103).all()  # the [MASK] token where a target is scored


def test_a_new_workload_folder_is_found_without_editing_anything(tmp_path, monkeypatch):
    package = tmp_path / "bench_extra" / "mlp_demo"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        textwrap.dedent("""
        from bench.workloads.base import WorkloadSpec
        WORKLOADS = (WorkloadSpec(name="mlp-demo", description="demo", task="image-classification",
                                  sample_shape=(4,), num_classes=2),)
    """)
    )
    (package / "torch.py").write_text("")
    import bench.workloads

    monkeypatch.setattr(
        bench.workloads, "__path__", [*bench.workloads.__path__, str(tmp_path / "bench_extra")]
    )
    monkeypatch.delitem(sys.modules, "bench.workloads.mlp_demo", raising=False)
    registry.workloads.cache_clear()
    try:
        spec = registry.workload("mlp-demo")
        assert spec.package == "bench.workloads.mlp_demo"
        assert spec.frameworks() == ("torch",)
    finally:
        registry.workloads.cache_clear()
