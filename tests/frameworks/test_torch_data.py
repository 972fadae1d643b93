"""PyTorch's DataLoader as bench builds it (bench.frameworks._torch_data): the lever
--prefetch-factor reaches it, and a run records it."""

from __future__ import annotations

import numpy as np

from bench.frameworks._torch_data import prefetch, split_loader
from tests.conftest import only_result, run_bench


class _Split:
    name = "train"

    def __len__(self) -> int:
        return 8

    def sample(self, index, rng):
        return np.full((4, 4, 3), index, np.float32), index % 2


def test_the_prefetch_factor_reaches_the_dataloader_only_with_workers():
    loader = split_loader(_Split(), 4, seed=0, epoch=0, train=True, workers=1,
                          pin_memory=False, prefetch_factor=4)  # fmt: skip
    assert loader.prefetch_factor == 4
    assert sum(len(labels) for _, labels in loader) == 8  # it still loads every batch
    assert prefetch(0, 4) is None and prefetch(2, None) is None and prefetch(2, 3) == 3


def test_a_run_records_its_prefetch_factor(tmp_path):
    done = run_bench("tiny", "--data", "loader", "--num-workers", "1", "--prefetch-factor", "4",
                     "--steps", "2", "--warmup-steps", "1", "--device", "cpu",
                     "--output-dir", str(tmp_path))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert only_result(tmp_path)["config"]["prefetch_factor"] == 4
