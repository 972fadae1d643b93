"""The versioned catalogues shipped with bench: hourly prices and peak FLOP/s.

Both are data files (bench/data/*.json) with a source for every figure. A figure that
is not in them is unknown, and what depends on it is None with the reason: nothing
is estimated.
"""

from __future__ import annotations

import functools
import json
import re
from importlib import resources
from typing import Any

from bench.util.errors import UsageError

TFLOPS = 1e12


@functools.cache
def _load(name: str) -> dict[str, Any]:
    return json.loads(resources.files("bench").joinpath("data", name).read_text())


def instances() -> dict[str, dict[str, Any]]:
    return _load("prices.json")["instances"]


def pricing(
    instance: str | None, price_per_hour: float | None, kind: str = "on_demand"
) -> dict[str, Any] | None:
    """What a result records about the price of its machine, or None if none was given."""
    if price_per_hour is not None:
        if not price_per_hour > 0:
            raise UsageError(f"price-per-hour: {price_per_hour!r} must be a positive number of USD")
        return {"instance": instance, "usd_per_hour": price_per_hour, "kind": "given",
                "date": None, "source": "given on the command line"}  # fmt: skip
    if instance is None:
        return None
    known = instances()
    if instance not in known:
        raise UsageError(f"instance: {instance!r} is not in the price catalogue; choose from: "
                         f"{', '.join(sorted(known))}, or pass --price-per-hour")  # fmt: skip
    entry = known[instance]
    if entry.get(kind) is None:
        raise UsageError(f"instance: the catalogue has no {kind} price for {instance}")
    return {"instance": instance, "usd_per_hour": entry[kind], "kind": kind,
            "provider": entry["provider"], "region": entry["region"],
            "date": entry["date"], "source": entry["source"]}  # fmt: skip


def accelerator_price(name: str | None, count: int) -> dict[str, Any] | None:
    """A catalogue price for `count` of accelerator `name`: the cheapest per-device share
    of an instance of that accelerator (its on-demand price over its device count), with
    where it comes from and when it was read; None where the catalogue has no instance of
    it (nothing is estimated)."""
    if not name or count < 1:
        return None
    shares = [
        (entry["on_demand"] / entry["accelerator_count"], instance, entry)
        for instance, entry in instances().items()
        if entry.get("accelerator") == name
        and entry.get("on_demand")
        and entry.get("accelerator_count")
    ]
    if not shares:
        return None
    share, instance, entry = min(shares, key=lambda s: s[0])
    devices = entry["accelerator_count"]
    return {
        "usd_per_hour": share * count,
        "kind": "catalogue",
        "date": entry["date"],
        "source": f"bench's price catalogue, read {entry['date']}: {instance} on demand "
        f"({entry['provider']} {entry['region']}, ${entry['on_demand']:g}/h for {devices}) "
        f"per device x {count}; {entry['source']}",
    }


def _accelerator_peak(name: str, precision: str) -> tuple[float | None, str]:
    for entry in _load("peak_flops.json")["accelerators"]:
        if re.fullmatch(entry["match"], name):
            value = entry.get(precision)
            if value is None:
                return None, f"{name} has no dense {precision} peak (no fast path for it)"
            return value * TFLOPS, entry["source"]
    return None, f"no peak FLOP/s known for {name!r}; pass --peak-tflops"


def _cpu_peak(cpu: dict[str, Any], precision: str) -> tuple[float | None, str]:
    table = _load("peak_flops.json")["cpu_flops_per_cycle_per_core"]
    flags, cores, mhz = set(cpu.get("flags") or []), cpu.get("physical_cores"), cpu.get("max_mhz")
    per_cycle = next((n for flag, n in table.get(precision, []) if flag in flags), None)
    if per_cycle is None:
        return (
            None,
            f"no known {precision} FLOPs/cycle for this CPU's instruction set; pass --peak-tflops",
        )
    if not cores or not mhz:
        return None, "the CPU's core count or maximum clock is unknown here; pass --peak-tflops"
    return (
        cores * mhz * 1e6 * per_cycle,
        f"computed: {cores} cores x {mhz:.0f} MHz x {per_cycle} FLOPs/cycle ({table['comment']})",
    )


def peak_flops(
    environment: dict[str, Any] | None, precision: str, override_tflops: float | None = None
) -> tuple[float | None, str]:
    """Peak FLOP/s of ALL devices that ran, for `precision`, and where it comes from
    (or None and why not)."""
    if override_tflops is not None:
        return override_tflops * TFLOPS, "given with --peak-tflops"
    env = environment or {}
    accelerator = env.get("accelerator") or {}
    name, count = accelerator.get("accelerator"), accelerator.get("accelerator_count") or 0
    if name:
        value, source = _accelerator_peak(name, precision)
        return (value * count if value is not None else None), source
    return _cpu_peak(env.get("cpu") or {}, precision)


def in_reference_flops(spec: Any) -> bool:
    """Whether the reference table holds `spec`: PyTorch counts it and TensorFlow or JAX
    also run it (a PyTorch-only workload, pix2pixhd at 2048x1024 among them, is counted
    live where it runs). A workload whose FLOPs are a formula (the decoders' 6N +
    attention) needs no table: the formula is the same in every framework."""
    if spec.analytic_flops is not None:
        return False
    frameworks = set(spec.frameworks())
    return "torch" in frameworks and bool(frameworks - {"torch"})


def reference_flops(workload: str, input_shape: tuple[int, ...]) -> float | None:
    """PyTorch's FLOP count per sample for `workload` at this input shape, from the table
    in bench/data/reference_flops.json (for frameworks run where PyTorch is not, and for
    PyTorch itself where the installed release is the one that counted it)."""
    for entry in _load("reference_flops.json")["workloads"]:
        if entry["workload"] == workload and tuple(entry["input_shape"]) == input_shape:
            return float(entry["flops_per_sample"])
    return None


def counted_by_installed_torch() -> bool:
    """Whether the installed PyTorch is the release that counted the reference table
    (its version without the build's local tag: CPU and CUDA builds count alike). Read
    from the package's metadata: the parent never imports torch for it."""
    from importlib import metadata

    try:
        installed = metadata.version("torch")
    except metadata.PackageNotFoundError:
        return False
    counted = _load("reference_flops.json")["counted_with"].removeprefix("torch ")
    return installed.split("+")[0] == counted.split("+")[0]


def torch_reference_flops(workload: str, input_shape: tuple[int, ...]) -> float | None:
    """The table's count for PyTorch itself: only where the installed release counted it
    (a full-tier test keeps the table equal to a live count), sparing the counting child
    whose PyTorch import took 5-10 s of every run on a CPU; else None (a child counts)."""
    return reference_flops(workload, input_shape) if counted_by_installed_torch() else None
