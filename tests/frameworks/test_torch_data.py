"""PyTorch's DataLoader as bench builds it (bench.frameworks._torch_data): the lever
--prefetch-factor reaches it, and a run records it."""

from __future__ import annotations

import numpy as np
import pytest

from bench.frameworks._torch_data import prefetch, split_loader
from tests.conftest import only_result, run_bench


class _Split:
    name = "train"

    def __len__(self) -> int:
        return 8

    def sample(self, index, rng, raw=False):
        return np.full((4, 4, 3), index, np.float32), index % 2


def test_the_prefetch_factor_reaches_the_dataloader_only_with_workers():
    loader = split_loader(_Split(), 4, seed=0, epoch=0, train=True, workers=1,
                          pin_memory=False, prefetch_factor=4)  # fmt: skip
    assert loader.prefetch_factor == 4
    assert sum(len(labels) for _, labels in loader) == 8  # it still loads every batch
    assert prefetch(0, 4) is None and prefetch(2, None) is None and prefetch(2, 3) == 3


@pytest.mark.slow  # a real run in a child: the full tier's
def test_a_run_records_its_prefetch_factor(tmp_path):
    done = run_bench("tiny", "--data", "loader", "--num-workers", "1", "--prefetch-factor", "4",
                     "--steps", "2", "--warmup-steps", "1", "--device", "cpu",
                     "--output-dir", str(tmp_path))  # fmt: skip
    assert done.returncode == 0, done.stderr
    stored = only_result(tmp_path)
    assert stored["config"]["prefetch_factors"] == [4]
    assert [p["prefetch_factor"] for p in stored["points"]] == [4]


def test_uint8_batches_normalised_on_the_device_are_the_host_s_float32_ones(tmp_path):
    """--input-dtype uint8: the loader sends the crop's bytes, a quarter of float32's,
    and the device's normalisation gives the batch the host would have sent."""
    import torch

    from bench import datasets, registry
    from bench.frameworks._torch_data import normaliser
    from tests.fake_data import write_imagenet

    folder = write_imagenet(tmp_path / "imagenet", classes=2, train=4, val=1, size=48)
    ref = datasets.parse(f"imagenet:{folder}")
    split = datasets.open_dataset(ref, registry.workload("resnet50")).train
    raw, labels = next(iter(split_loader(split, 4, seed=1, epoch=0, train=True, workers=0,
                                         pin_memory=False, raw=True)))  # fmt: skip
    host, same = next(iter(split_loader(split, 4, seed=1, epoch=0, train=True, workers=0,
                                        pin_memory=False)))  # fmt: skip
    assert raw.dtype == torch.uint8 and host.dtype == torch.float32
    assert torch.equal(labels, same) and raw.shape == host.shape == (4, 3, 224, 224)
    assert torch.allclose(normaliser(split, "cpu")(raw), host, atol=1e-5)


@pytest.mark.full
def test_a_run_on_uint8_batches_trains_and_records_its_levers(tmp_path):
    from tests.fake_data import write_imagenet

    folder = write_imagenet(tmp_path / "imagenet", classes=2, train=8, val=2, size=48)
    done = run_bench("cnn-s", "--data", f"imagenet:{folder}", "--epochs", "2", "--batch-size",
                     "4", "--input-dtype", "uint8", "--pin-memory", "off", "--device", "cpu",
                     "--output-dir", str(tmp_path / "out"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = only_result(tmp_path / "out")
    assert (doc["config"]["input_dtypes"], doc["config"]["pin_memories"]) == (["uint8"], ["off"])
    assert {(p["input_dtype"], p["pin_memory"], p["decode"]) for p in doc["points"]} == {
        ("uint8", "off", "cpu")}  # fmt: skip
    assert doc["points"][0]["status"] == "ok" and doc["points"][0]["input_wait_share"]
