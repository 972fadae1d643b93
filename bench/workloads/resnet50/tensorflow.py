"""resnet50 in TensorFlow (Keras): build_model, loss, make_batch (bench.workloads.contract)."""

from bench.workloads._keras import loss, make_batch
from bench.workloads._keras import resnet50 as build_model

__all__ = ["build_model", "loss", "make_batch"]
