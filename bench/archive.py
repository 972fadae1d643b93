"""Image and vendor archives (`nox -s save`, `nox -s vendor`) and the manifest beside each.

`dist/bench-xeon-0.1.0-abc.tar.gz` (or `...-vendor-LOCK.tar`) has
`dist/bench-xeon-0.1.0-abc.manifest.json` beside it, which names the image, its lock hash
and the archive's sha256, and `ARCHIVE.sha256` for `sha256sum -c`. An archive verifies
when both say the sha256 it has now.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

SUFFIXES = (".tar", ".tar.gz", ".manifest.json")


def is_archive(path: Path) -> bool:
    return path.name.endswith(SUFFIXES)


def manifest_path(archive: Path) -> Path:
    stem = archive.name.removesuffix(".gz").removesuffix(".tar")
    return archive.with_name(f"{stem}.manifest.json")


def sha256(path: Path) -> str:
    with path.open("rb") as file:  # several GB: read in chunks
        return hashlib.file_digest(file, "sha256").hexdigest()


def verify(path: Path) -> tuple[bool, str]:
    """(verified, what to say) for an archive, or for its manifest (checks the archive)."""
    try:
        if path.name.endswith(".manifest.json"):
            manifest = _manifest(path)
            archive = path.with_name(Path(str(manifest.get("archive", ""))).name)
        else:
            archive, manifest = path, _manifest(manifest_path(path))
        actual = sha256(archive)
    except (OSError, ValueError) as error:
        return False, f"UNREADABLE: {error}"
    sidecar = archive.with_name(f"{archive.name}.sha256")
    said = sidecar.read_text().split()[:1] if sidecar.is_file() else [actual]
    if actual != manifest.get("archive_sha256") or said != [actual]:
        return False, f"EDITED: {archive.name}'s sha256 is not the one its manifest gives"
    lock = str(manifest.get("lock_sha256") or "none")[:12]
    return True, f"ok ({manifest.get('image')}, {archive.name}, lock {lock})"


def _manifest(path: Path) -> dict[str, Any]:
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError:
        raise ValueError(f"no manifest {path.name} beside it") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"{path.name} is not JSON ({error.msg})") from None
    if not isinstance(manifest, dict):
        raise ValueError(f"{path.name} is not a manifest")
    return manifest
