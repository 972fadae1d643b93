"""A comparison's columns: machines by their hardware, read from each result's
provenance (accelerators by model and count, or the CPU by model and the cores bench
could use, and the instance type where known), and a run's --label (or its memory
cap) on top: "before" and "after" stay two columns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.result import Result, moment
from bench.util.text import visible
from bench.util.units import format_bytes

# A product name that is a cloud instance type (AWS Nitro: 'm7i.2xlarge'), not a
# generic one ('Google Compute Engine', 'Virtual Machine', 'Standard PC (Q35 ...)').
_INSTANCE_TYPE = re.compile(r"[a-z][a-z0-9-]*\.[0-9]*[a-z]+[0-9]*")


LABEL_CHARS = 160


def _instance_type(env: dict[str, Any]) -> str | None:
    product = ((env.get("host") or {}).get("dmi") or {}).get("product_name")
    return product if isinstance(product, str) and _INSTANCE_TYPE.fullmatch(product) else None


def cpu_label(env: dict[str, Any]) -> str | None:
    """'AMD EPYC (2 cores)': the model and the cores bench could use, so two VMs of one
    generic model ('Intel(R) Xeon(R) Processor') are not the same machine."""
    cpu = env.get("cpu") or {}
    model = cpu.get("model")
    if not model:
        return None
    cores = cpu.get("affinity_cores") or cpu.get("logical_cores")
    if not isinstance(cores, int) or cores < 1:
        return model
    return f"{model} ({cores} core{'s' if cores > 1 else ''})"


def machine_label(res: Result) -> str:
    """The machine's hardware: its accelerators by model and count, or its CPU by model
    and usable cores and the instance type where known. Not its image, framework or
    date: those are facets of one machine's runs."""
    env = res.environment or {}
    accelerator = env.get("accelerator") or {}
    if accelerator.get("accelerator"):
        count = accelerator.get("accelerator_count") or 1
        label = (
            f"{count}x {accelerator['accelerator']}" if count > 1 else accelerator["accelerator"]
        )
    else:
        label = cpu_label(env) or res.config.device
        # VMs of one CPU model differ by size: the instance type where it is known.
        instance = (res.pricing or {}).get("instance") or _instance_type(env)
        if instance:
            label += f" · {instance}"
    # Control characters from a file never reach a terminal or chart; a name is cut where
    # no machine's is that long (a file's 32 MiB CPU name made a 437 MB page, in each row).
    label = visible(label)
    return label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…"


def image_name(res: Result) -> str | None:
    name = ((res.environment or {}).get("image") or {}).get("name")
    return visible(name) if isinstance(name, str) and name else None


@dataclass
class Machine:
    """One column: a machine (its hardware), or one --label of runs on it."""

    label: str
    results: list[tuple[Path, Result]] = field(default_factory=list)
    price_per_hour: float | None = None
    price_source: str | None = None
    peak_tflops: float | None = None
    hardware: str = ""  # machine_label of its results; `label` adds the run's --label
    run_label: str | None = None  # the runs' --label, None for unlabelled runs

    @property
    def environment(self) -> dict[str, Any] | None:
        return self.results[0][1].environment if self.results else None


def cap_label(res: Result) -> str | None:
    """'memory-limit 16GiB', as bench suite labels a card emulated with --memory-limit:
    the default column label of a capped run, so each cap is a column of its own."""
    cap = res.config.memory_limit_bytes
    if not cap:
        return None
    whole = cap % 2**30 == 0
    return f"memory-limit {cap // 2**30}GiB" if whole else f"memory-limit {format_bytes(cap)}"


def machine_columns(loaded: list[tuple[Path, Result]]) -> dict[str, Machine]:
    """Results grouped into columns: by machine (its hardware) and --label (a capped
    run without one: its cap). Runs of one machine at other times, in other images or
    frameworks share its column."""
    columns: dict[str, Machine] = {}
    for path, res in loaded:
        hardware = machine_label(res)
        run_label = visible(res.label) if res.label else cap_label(res)
        label = f"{hardware} · {run_label}" if run_label else hardware
        column = columns.get(label)
        if column is None:
            column = columns[label] = Machine(label, hardware=hardware, run_label=run_label)
        column.results.append((path, res))
    for column in columns.values():
        column.results.sort(key=lambda pr: moment(pr[1].started))
    return columns
