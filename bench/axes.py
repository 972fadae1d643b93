"""The sweep axes, declared once: what a run sweeps over (a tuple on RunConfig), what one
point takes (a field of PointConfig), the option that sets it, and the values allowed
where they are fixed (a framework's memory formats and compilers, a workload's batch
sizes are checked where they are known). The config, the command line, the max-batch
search and the result schema read them from here.

Order: the slowest-varying first. A sweep's points run in this order, the batch size
varying fastest, as in the published tables, and the device count just above it (a
scaling table reads down one config).
"""

from __future__ import annotations

from dataclasses import dataclass

PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "fp8")
MEMORY_FORMATS = ("contiguous", "channels_last")
ALLOCATORS = ("system", "tcmalloc", "jemalloc")
OPENMP_RUNTIMES = ("gnu", "intel")
NUMA_MODES = ("auto", "on", "off")
CHECKPOINTING_MODES = ("none", "selective", "full")


@dataclass(frozen=True)
class Axis:
    many: str  # the RunConfig field: a tuple of values to sweep
    one: str  # the PointConfig field: one value
    flag: str  # the bench run option
    allowed: tuple[str, ...] | None = None  # None: checked where the values are known
    # The max-batch search takes one value of it (it searches once per precision,
    # memory format and compiler, over the batch size).
    one_value_in_search: bool = False
    runtime: bool = False  # how the child is started (allocator, OpenMP, NUMA binding)


AXES = (
    Axis(
        "allocators", "allocator", "--allocator", ALLOCATORS, runtime=True, one_value_in_search=True
    ),
    Axis("openmps", "openmp", "--openmp", OPENMP_RUNTIMES, runtime=True, one_value_in_search=True),
    Axis("numas", "numa", "--numa", NUMA_MODES, runtime=True, one_value_in_search=True),
    Axis("optimizations", "optimize", "--optimize", one_value_in_search=True),
    Axis(
        "activation_checkpointings",
        "activation_checkpointing",
        "--activation-checkpointing",
        CHECKPOINTING_MODES,
        one_value_in_search=True,
    ),
    Axis("precisions", "precision", "--precision", PRECISIONS),
    Axis("memory_formats", "memory_format", "--memory-format", MEMORY_FORMATS),
    Axis("compilers", "compile", "--compile"),
    Axis("devices", "devices", "--devices", one_value_in_search=True),
    Axis("batch_sizes", "batch_size", "--batch-size"),
)
NAMES = tuple(axis.many for axis in AXES)
RUNTIME = tuple(axis for axis in AXES if axis.runtime)
