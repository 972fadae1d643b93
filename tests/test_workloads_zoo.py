"""The model zoo of the 2020 GPU comparison: each model trains through the framework's
own session (its inputs, targets, losses and optimiser), at a reduced size on the CPU."""

import dataclasses

import pytest

from bench import registry
from bench.config.run_config import PointConfig

torch = pytest.importorskip("torch")

# Reduced shapes: the real ones (800x1333 detection, 2048x1024 pix2pixHD, 1024 tokens)
# need a GPU's memory and time; the architectures are the full ones.
REDUCED = {
    "vit-b16": {"sample_shape": (3, 32, 32)},
    "nasnet-large": {"sample_shape": (3, 96, 96)},
    "deeplabv3": {"sample_shape": (3, 64, 64)},
    "maskrcnn": {"sample_shape": (3, 128, 160)},
    "pix2pixhd": {"sample_shape": (36, 32, 64)},
    "gpt2": {"default_seq_len": 16},
    "transformer-big": {"default_seq_len": 16},
    "bert-large": {"default_seq_len": 16},
}


def _session(monkeypatch, name: str, **point):
    spec = dataclasses.replace(registry.workload(name), **REDUCED[name])
    monkeypatch.setitem(registry.workloads(), name, spec)
    config = PointConfig(workload=name, device="cpu", **{"batch_size": 2, **point})
    return registry.framework("torch").prepare(config, registry.platform("cpu"))


@pytest.mark.slow
@pytest.mark.parametrize("name", REDUCED)
def test_each_model_trains_and_its_loss_falls(monkeypatch, name):
    session = _session(monkeypatch, name, batch_size=1 if name == "maskrcnn" else 2)
    losses = [session.loss_value(session.step()) for _ in range(3)]
    assert all(map(torch.isfinite, torch.tensor(losses))), losses
    assert losses[-1] < losses[0], losses


def test_detection_targets_go_through_the_data_loader(monkeypatch):
    """Boxes, labels and masks (a dict per batch) survive sample-by-sample loading."""
    session = _session(monkeypatch, "maskrcnn", data="loader", num_workers=0, batch_size=1)
    images, targets = next(session.batches)
    assert images.shape == (1, 3, 128, 160)
    assert targets["boxes"].shape == (1, 8, 4) and targets["masks"].shape == (1, 8, 128, 160)


@pytest.mark.slow  # builds and steps a 2048 x 1024 generator and discriminators
def test_pix2pixhd_generator_loss_trains_only_the_generator(monkeypatch):
    session = _session(monkeypatch, "pix2pixhd")
    model = session.eager_model
    labels, photos = next(session.batches)
    losses = model(labels, photos)
    (losses["g_gan"] + losses["g_feature_matching"]).backward()
    assert all(p.grad is None for p in model.discriminators.parameters())
    assert all(p.grad is not None for p in model.generator.parameters())
    model.zero_grad(set_to_none=True)
    losses = model(labels, photos)
    losses["d"].backward()
    assert all(p.grad is None for p in model.generator.parameters())
    assert session.details["optimizer"] == "Adam(lr=0.0002, betas=(0.5, 0.999))"


def test_natural_units_are_recorded_per_sample():
    assert registry.workload("gpt2").units_per_sample(512) == ("tokens", 512)
    assert registry.workload("transformer-big").units_per_sample() == ("tokens", 128)
    assert registry.workload("pix2pixhd").units_per_sample() == ("pixels", 2048 * 1024)
    assert registry.workload("maskrcnn").units_per_sample() is None  # images are samples


@pytest.mark.parametrize(
    ("name", "smallest"),
    [pytest.param("maskrcnn", 1, marks=pytest.mark.slow), ("deeplabv3", 2)],  # Mask R-CNN: ~10 s
)
def test_flops_are_counted_at_the_smallest_batch(monkeypatch, name, smallest):
    """Where only one sample fits (pix2pixHD at 2048x1024 on a small card), the count
    must not need two."""
    session = _session(monkeypatch, name, batch_size=smallest)
    sizes = []
    make_batch = session.impl.make_batch
    monkeypatch.setattr(
        session.impl,
        "make_batch",
        lambda spec, point, size, gen: sizes.append(size) or make_batch(spec, point, size, gen),
    )
    assert session.count_flops() > 0
    assert sizes == [smallest]
