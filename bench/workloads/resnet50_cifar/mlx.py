"""resnet50-cifar in MLX: build_model, loss, make_batch (bench.workloads.contract)."""

from bench.workloads._mlx import loss, make_batch
from bench.workloads._mlx import resnet50 as build_model

__all__ = ["build_model", "loss", "make_batch"]
