"""Many result files -> one table: one row per measured point, provenance alongside.

Used by `bench collect` and `nox -s collect`. pandas is imported here only, so the
core package does not need it (pip install 'bench[report]').
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench import result
from bench.datasets.feed import LOADER_KIND
from bench.result import Result, integrity
from bench.result.checked import Checked
from bench.util import files, text
from bench.util.errors import UsageError

COMPARISON_KIND = "bench-comparison"  # what `bench compare --format json` writes
DIFF_KIND = "bench-diff"  # bench diff --format json
SUITE_STATE_KIND = "bench-suite-state"  # what `bench suite` keeps beside its results

if TYPE_CHECKING:
    import pandas as pd


def warn(message: str) -> None:
    """One line on stderr; control characters (of a file's name, say) made visible."""
    print(text.one_line(f"bench: warning: {message}"), file=sys.stderr)


def result_files(paths: Iterable[str | Path]) -> list[Path]:
    """The result files named, and every *.json below the folders named. A subfolder
    that cannot be read is named in a warning, not silently left out."""
    return [path for path, _ in _found(paths)]


def _found(paths: Iterable[str | Path]) -> list[tuple[Path, bool]]:
    """result_files, each with whether it was named itself (not found in a folder)."""
    found: list[tuple[Path, bool]] = []

    def unreadable(error: OSError) -> None:
        warn(f"cannot read folder {error.filename} ({error.strerror}); its files are left out")

    for path in map(Path, paths):
        if path.is_dir():
            found += sorted(
                (Path(folder) / name, False)
                for folder, _, names in os.walk(path, onerror=unreadable)
                for name in names
                if name.endswith(".json")
            )
        elif path.exists():
            found.append((path, True))
        else:
            raise UsageError(text.visible(f"{path}: no such file or folder"))
    if not found:
        raise UsageError(text.visible(f"no result files in {', '.join(map(str, paths))}"))
    return found


def is_bench_document(data: Any) -> bool:
    """Whether a document read from a file (read_document, with a result's bounds) is one
    of bench's own outputs other than a result (what `bench compare --format json -o`
    and `bench loader` write, which users keep beside their results)."""
    return isinstance(data, dict) and (
        data.get("kind") in (COMPARISON_KIND, DIFF_KIND, SUITE_STATE_KIND, LOADER_KIND)
        or ("schema_version" not in data and {"baseline", "machines", "points"} <= set(data))
    )


def load_all(
    paths: Iterable[str | Path], unreadable: list[tuple[Path, str]] | None = None
) -> list[tuple[Path, Result]]:
    """Every result file named or found, each read once. One that cannot be read fails
    the command when it was named itself; found in a folder, it is set apart and the
    folder's other files are read: named in a warning, or added to `unreadable` (its
    path and why) where the caller groups them (bench compare: one line for all).
    Bytes that passed every check before are not checked again (bench.result.checked)."""
    with _no_cycle_collection():
        loaded, edited = _read(_found(paths), unreadable)
    if len(edited) == 1:
        warn(f"{edited[0]} was changed after bench wrote it (its sha256 does not match): "
             "its figures may not be the ones measured")  # fmt: skip
    elif edited:
        warn(f"{len(edited)} results were changed after bench wrote them (their sha256 does "
             f"not match), e.g. {edited[0]}: their figures may not be the ones measured; "
             "bench verify names each")  # fmt: skip
    if not loaded:
        raise UsageError(text.visible(f"no result files in {', '.join(map(str, paths))}"))
    return loaded


def _read(
    found: list[tuple[Path, bool]], unreadable: list[tuple[Path, str]] | None
) -> tuple[list[tuple[Path, Result]], list[Path]]:
    """load_all's reading: each file's result, and those changed after bench wrote them."""
    loaded, edited = [], []
    checked = Checked.open()
    for path, named in found:
        try:
            data = checked.read_document(path)
            if is_bench_document(data):
                # A suite's own state, in the folder bench suite made: nothing to say.
                if named or data.get("kind") != SUITE_STATE_KIND:
                    warn(f"skipped {path}: a bench output (comparison, diff, suite state "
                         "or loader), not a result")  # fmt: skip
                continue
            loaded.append((path, checked.from_document(path, data, warn_edited=False)))
            if loaded[-1][1].integrity == integrity.EDITED:
                edited.append(path)
        except result.ResultError as error:
            if named:
                raise
            if unreadable is not None:
                unreadable.append((path, str(error)))
            else:
                warn(f"set apart: {error}")
    checked.save()
    return loaded, edited


@contextlib.contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Python's cycle collector paused: reading thousands of files makes millions of
    objects that all stay (json makes no cycles), and the collector's passes over them
    found nothing and cost a sixth of the reading (10,000 files: 1.5 s of 9.8).
    Reference counting still frees whatever is not kept."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _provenance(res: Result) -> dict[str, Any]:
    env = res.environment or {}
    accelerator = env.get("accelerator") or {}
    image = env.get("image") or {}
    framework = env.get("framework") or {}
    return {
        "workload": res.config.workload,
        "framework": res.config.framework,
        "framework_version": framework.get(res.config.framework),
        "device": res.config.device,
        "accelerator": accelerator.get("accelerator"),
        "accelerator_count": accelerator.get("accelerator_count"),
        "driver": accelerator.get("driver_version"),
        "cpu": (env.get("cpu") or {}).get("model"),
        "host": (env.get("host") or {}).get("hostname"),
        "image": image.get("name"),
        "image_digest": image.get("digest"),
        "lock_sha256": image.get("lock_sha256"),
        "bench_version": (env.get("bench") or {}).get("version"),
        "bench_commit": (env.get("bench") or {}).get("git_commit"),
        "started": res.started,
    }


def points_frame(loaded: list[tuple[Path, Result]]) -> pd.DataFrame:
    import pandas as pd

    rows = []
    for path, res in loaded:
        common = {"file": str(path), **_provenance(res)}
        for p in res.points:
            tp, step = p.throughput, p.step_time
            rows.append(
                {
                    **common,
                    # GLOBAL throughput: the devices that trained it (ranks over nodes)
                    "devices": p.devices_trained,
                    "batch_size": p.batch_size,
                    "precision": p.precision,
                    "memory_format": p.memory_format,
                    "compile": p.compile or "none",
                    "optimize": p.optimize or "none",
                    "activation_checkpointing": p.activation_checkpointing,
                    "status": p.status,
                    "error": p.error,
                    "throughput": tp.value if tp else None,
                    "throughput_unit": tp.unit if tp else None,
                    "ci95_low": tp.ci95_low if tp else None,
                    "ci95_high": tp.ci95_high if tp else None,
                    "repeats": len(p.step_times_s),
                    "step_median_s": step.median if step else None,
                    "step_p95_s": step.p95 if step else None,
                    "peak_memory_bytes": p.peak_memory,
                    "flops_per_sample": p.flops_per_sample,
                    "achieved_flops": p.achieved_flops,
                }
            )
    return pd.DataFrame(rows)


def max_batch_frame(loaded: list[tuple[Path, Result]]) -> pd.DataFrame:
    import pandas as pd

    rows = [
        {
            "file": str(path),
            **_provenance(res),
            "precision": m.precision,
            "memory_format": m.memory_format,
            "compile": m.compile or "none",
            "search": m.axis,  # batch_size, or seq_len: then the columns are lengths
            "largest_batch": m.display,
            "first_failing": m.first_failing,
            "probes": len(m.probes),
        }
        for path, res in loaded
        for m in res.max_batch
    ]
    return pd.DataFrame(rows)


_SUMMARY_COLUMNS = [
    "workload", "accelerator", "cpu", "image", "devices", "batch_size", "precision",
    "memory_format", "compile", "status", "throughput", "ci95_low", "ci95_high", "step_median_s",
]  # fmt: skip
_WHEN_THEY_DIFFER = ("devices",)  # summary columns shown only where the points differ


def write(loaded: list[tuple[Path, Result]], prefix: Path) -> list[Path]:
    """PREFIX.csv (every column) and PREFIX.md (a readable summary); max-batch searches
    go to PREFIX-max-batch.csv and a second table in the Markdown."""
    prefix.parent.mkdir(parents=True, exist_ok=True)
    points, searches = points_frame(loaded), max_batch_frame(loaded)
    written = [prefix.with_name(prefix.name + ".csv"), prefix.with_name(prefix.name + ".md")]
    files.replace(written[0], _safe_csv(points))
    parts = [f"# bench results\n\n{len(loaded)} result files, {len(points)} points.\n"]
    if not points.empty:
        columns = [c for c in _SUMMARY_COLUMNS
                   if c not in _WHEN_THEY_DIFFER or points[c].nunique() > 1]  # fmt: skip
        parts.append("## Throughput (samples/s)\n\n" + _safe_markdown(points[columns]))
    if not searches.empty:
        written.append(prefix.with_name(prefix.name + "-max-batch.csv"))
        files.replace(written[-1], _safe_csv(searches))
        columns = ["workload", "accelerator", "cpu", "precision", "largest_batch", "first_failing"]
        parts.append("## Largest batch that trains\n\n" + _safe_markdown(searches[columns]))
    files.replace(written[1], "\n\n".join(parts) + "\n")
    return written


def _safe_csv(frame: pd.DataFrame) -> str:
    """CSV whose text cells a spreadsheet will not run as formulas."""
    return frame.map(text.csv_cell).to_csv(index=False)


def _safe_markdown(frame: pd.DataFrame) -> str:
    """A Markdown table whose text cells (from result files) are escaped."""
    cells = frame.map(lambda v: text.markdown(v) if isinstance(v, str) else v)
    cells.columns = [text.markdown(c) for c in frame.columns]
    return cells.to_markdown(index=False)
