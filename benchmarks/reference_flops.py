"""Write bench/data/reference_flops.json: PyTorch's model FLOPs per sample for every
workload that TensorFlow or JAX also implements, at its default input shape.

TensorFlow and JAX use PyTorch's count of the same workload as their model FLOPs (one
definition for MFU in every framework). Where PyTorch is installed they count it live
in a PyTorch child; the TPU and the TensorFlow/JAX CUDA images have no PyTorch, so
they read this table. tests/test_frameworks.py keeps it equal to a live count.

    python benchmarks/reference_flops.py      # needs bench[torch]
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from bench import registry
from bench.config.run_config import PointConfig
from bench.result import catalog

OUT = Path(__file__).parents[1] / "bench" / "data" / "reference_flops.json"


def count(workload: str) -> float:
    spec = registry.workload(workload)
    point = PointConfig(workload=workload, batch_size=spec.min_batch_size)
    session = registry.framework("torch").prepare(point, registry.platform("cpu"))
    flops = session.count_flops()
    assert flops is not None
    return flops


def main() -> None:
    entries = []
    for name, spec in sorted(registry.workloads().items()):
        if not catalog.in_reference_flops(spec):
            continue
        flops = count(name)
        entries.append(
            {"workload": name, "input_shape": list(spec.input_shape()), "flops_per_sample": flops}
        )
        print(f"{name:16} {flops / 1e9:12.4f} GFLOP/sample")
    OUT.write_text(
        json.dumps(
            {
                "about": "Model FLOPs per sample, forward + backward, as counted by PyTorch's "
                "FlopCounterMode (matmuls, convolutions, attention; 2 FLOPs per multiply-add) "
                "at each workload's default input shape. Written by "
                "benchmarks/reference_flops.py.",
                "counted_with": f"torch {torch.__version__}",
                "workloads": entries,
            },
            indent=2,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
