"""Workloads: one folder each, found by bench.registry.workloads()."""
