"""What a result's tables are titled, and whether its workload takes images (a memory
format is named only where it does)."""

from __future__ import annotations

from bench import registry
from bench.config.option import RunOption
from bench.result import Result
from bench.util.errors import UsageError


def title(result: Result) -> str:
    config, env = result.config, result.environment or {}
    accelerator = (env.get("accelerator") or {}).get("accelerator")
    where = accelerator or (env.get("cpu") or {}).get("model") or config.device
    framework = (env.get("framework") or {}).get(config.framework)
    parts = [
        config.workload,
        f"{config.framework} {framework or ''}".strip(),
        f"{config.device} ({where})",
    ]
    if result.label:
        parts.append(result.label)
    if result.status != "complete":
        parts.append(result.status.upper())
    return " · ".join(parts)


def takes_images(result: Result) -> bool:
    """Whether the result's workload takes images. A memory format is an image tensor's
    layout: a token sequence has none, though JAX records its only one (NHWC) for every
    point (bench.report.rows.row_key's rule). True for a workload this bench lacks."""
    try:
        return not registry.workload(result.config.workload).takes_seq_len
    except UsageError:
        return True


def option_header(option: RunOption) -> str:
    """A table's column for a run option: its flag, a word a line ('activation\ncheckpointing')."""
    return option.flag.lstrip("-").replace("-", "\n")
