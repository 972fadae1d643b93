"""Parallelism applied as functions over a plain model (the model file knows nothing of
them): fsdp.apply_fsdp shards a torch model with FSDP2, jax_fsdp.apply_fsdp a JAX
training state (parameters and optimizer state) over a device mesh. The framework's
session picks what applies from the point and the workload (bench.frameworks.torch,
bench.frameworks.jax)."""
