"""Parallelism applied as functions over a plain model (the model file knows nothing of
them): fsdp.apply_fsdp shards a model with FSDP2. The framework's session picks what
applies from the point and the workload (bench.frameworks.torch)."""
