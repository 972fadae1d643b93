"""What the report compared: each machine's software and settings (accelerator, driver,
CUDA or ROCm, framework versions, power limit, image), and which machine ran which
configurations of each workload. Without them an H100 and an H200 sharing 1 of 28
configurations, or a CPU in torch 2.14 beside GPUs in 2.11, read as like with like.

Every value comes from a result file: any JSON type, any length. A value is shown only
where it is text or a number, made visible, cut to CHARS characters, and a field lists
at most DISTINCT distinct values ('and 3 more').
"""

from __future__ import annotations

from typing import Any

from bench.report.compare import Comparison, Machine
from bench.report.words import config_label
from bench.util.text import visible

CHARS, DISTINCT, NAMES = 80, 4, 6


def _text(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    text = visible(str(value))
    return text if len(text) <= CHARS else text[: CHARS - 1] + "…"


def _listed(values: list[Any]) -> str:
    """Distinct values in order of first sight, at most DISTINCT of them."""
    seen = list(dict.fromkeys(t for v in values if (t := _text(v)) is not None))
    more = len(seen) - DISTINCT
    return ", ".join(seen[:DISTINCT]) + (f" and {more} more" if more > 0 else "")


def _section(env: Any, name: str) -> dict[str, Any]:
    found = env.get(name) if isinstance(env, dict) else None
    return found if isinstance(found, dict) else {}


def _flat(value: Any) -> list[Any]:
    return list(value[:16]) if isinstance(value, list) else [value]


def machine_record(machine: Machine) -> dict[str, Any]:
    """One row of the machines table, from every result of the machine."""
    envs = [res.environment for _, res in machine.results]
    accelerators, drivers, runtimes, frameworks, power, images, cpus = ([] for _ in range(7))
    for env in envs:
        acc, fw = _section(env, "accelerator"), _section(env, "framework")
        name, count = acc.get("accelerator"), acc.get("accelerator_count")
        if _text(name) and isinstance(count, int) and not isinstance(count, bool):
            accelerators.append(f"{_text(name)} x {count}" if count > 1 else _text(name))
        drivers.append(acc.get("driver_version"))
        # The runtime the accelerator ran (a CPU's torch build names a CUDA it never used).
        keys = ("cuda_runtime", "torch_cuda", "torch_hip", "rocm") if name else ()
        for key in keys:
            if _text(acc.get(key) or fw.get(key)):
                runtime = "ROCm" if key in ("torch_hip", "rocm") else "CUDA"
                runtimes.append(f"{runtime} {_text(acc.get(key) or fw.get(key))}")
                break
        framework = _text(fw.get("name"))
        if framework:
            version = _text(fw.get(framework))
            frameworks.append(f"{framework} {version}" if version else framework)
        nvml = _section(acc, "nvml")
        power += [f"{w:g} W" for w in _flat(nvml.get("power_limit_w")) if _number(w)]
        images.append(_image(env))
        cpu = _section(env, "cpu")
        cores = cpu.get("affinity_cores") or cpu.get("logical_cores")
        if _text(cpu.get("model")):
            cpus.append(
                f"{_text(cpu.get('model'))}" + (f", {cores} cores" if _number(cores) else "")
            )
    return {
        "machine": machine.label,
        "accelerator": _listed(accelerators) or "none (CPU)",
        "driver": _listed(drivers),
        "runtime": _listed(runtimes),
        "frameworks": _listed(frameworks),
        "power_limit": _listed(power),
        "image": _listed(images) or "none",
        "cpu": _listed(cpus),
        "results": len(machine.results),
    }


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == value


def _image(env: Any) -> str | None:
    image = env.get("image") if isinstance(env, dict) else None
    if isinstance(image, dict):
        return _text(image.get("name") or image.get("reference") or image.get("digest"))
    return _text(image)


def machines_table(comparison: Comparison) -> list[dict[str, Any]]:
    return [machine_record(m) for m in comparison.machines]


def coverage(comparison: Comparison) -> list[dict[str, Any]]:
    """Per workload and machine: how many of the workload's configurations it ran, how
    many of them the baseline ran too, and which (the first NAMES)."""
    base = comparison.machines.index(comparison.baseline)
    total: dict[str, int] = {}
    ran: dict[tuple[str, int], list[tuple[str, bool]]] = {}
    for key, cells in comparison.rows:
        total[key.workload] = total.get(key.workload, 0) + 1
        for i, cell in enumerate(cells):
            if cell.point is not None:
                ran.setdefault((key.workload, i), []).append(
                    (config_label(key), cells[base].point is not None)
                )
    rows = []
    for (workload, i), configs in sorted(ran.items()):
        shared = sum(both for _, both in configs)
        names = [name for name, _ in configs]
        more = len(names) - NAMES
        rows.append(
            {
                "workload": workload,
                "machine": comparison.machines[i].label,
                "ran": len(configs),
                "of": total[workload],
                "ran_text": f"{len(configs)} of {total[workload]}",
                "shared": shared if i != base else None,
                "shared_text": "the baseline" if i == base else f"{shared} of {len(configs)}",
                "configs": "; ".join(names[:NAMES]) + (f"; and {more} more" if more > 0 else ""),
            }
        )
    return rows
