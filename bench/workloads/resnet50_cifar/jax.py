"""resnet50-cifar in JAX (Flax): build_model, loss, make_batch (bench.workloads.contract)."""

from bench.workloads._flax import loss, make_batch
from bench.workloads._flax import resnet50 as build_model

__all__ = ["build_model", "loss", "make_batch"]
