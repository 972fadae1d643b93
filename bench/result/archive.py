"""Image and vendor archives (`nox -s save`, `nox -s vendor`) and the manifest beside each.

`dist/bench-xeon-0.1.0-abc.tar.gz` (or `...-vendor-LOCK.tar`) has
`dist/bench-xeon-0.1.0-abc.manifest.json` beside it, which names the image, its lock hash
and the archive's sha256, and `ARCHIVE.sha256` for `sha256sum -c`. An archive verifies
when both say the sha256 it has now.

A manifest and a sidecar travel with the archive, so they prove only that nothing was
damaged in transit, never who made it: before an archive is loaded or unpacked, its
sha256 is checked against one the user holds (`held`), and its members are unpacked one
by one after each is validated (`extract`), whatever the Python version's tarfile filters
enforce.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tarfile
from pathlib import Path
from typing import Any

from bench.util import files

SUFFIXES = (".tar", ".tar.gz", ".manifest.json")
# A Docker image id or digest as bench records it, and a bare sha256 the user holds.
IMAGE_ID = re.compile(r"sha256:[0-9a-f]{64}")
SHA256 = re.compile(r"[0-9a-f]{64}")
# What extract unpacks at most: a vendor archive holds a base image and a few GB of wheels.
MAX_MEMBERS = 100_000
MAX_MEMBER_BYTES = 32 * 2**30
MAX_TOTAL_BYTES = 64 * 2**30
_NAME = re.compile(r"[A-Za-z0-9._+=@,%~-]{1,255}")  # a path part (Debian: ~ %3a); no controls


class ArchiveError(ValueError):
    """An archive that is not the one the user holds, or a member that must not be unpacked."""


MAX_MANIFEST_BYTES = 2**20


def is_archive(path: Path) -> bool:
    return path.name.endswith(SUFFIXES)


def manifest_path(archive: Path) -> Path:
    stem = archive.name.removesuffix(".gz").removesuffix(".tar")
    return archive.with_name(f"{stem}.manifest.json")


def sha256(path: Path) -> str:
    with os.fdopen(files.open_regular(path), "rb") as file:  # several GB: in chunks
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
        sidecar = archive.with_name(f"{archive.name}.sha256")
        said = (
            files.read_small(sidecar, 4096).decode(errors="replace").split()[:1]
            if sidecar.is_file()
            else [actual]
        )
    except (OSError, ValueError) as error:
        return False, f"UNREADABLE: {error}"
    if actual != manifest.get("archive_sha256") or said != [actual]:
        return False, f"EDITED: {archive.name}'s sha256 is not the one its manifest gives"
    lock = str(manifest.get("lock_sha256") or "none")[:12]
    return True, f"ok ({manifest.get('image')}, {archive.name}, lock {lock})"


def _manifest(path: Path) -> dict[str, Any]:
    try:  # a manifest is a few hundred bytes; one beside an archive is anyone's
        manifest = json.loads(files.read_small(path, MAX_MANIFEST_BYTES))
    except FileNotFoundError:
        raise ValueError(f"no manifest {path.name} beside it") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"{path.name} is not JSON ({error.msg})") from None
    except (RecursionError, UnicodeDecodeError):
        raise ValueError(f"{path.name} is not a manifest") from None
    if not isinstance(manifest, dict):
        raise ValueError(f"{path.name} is not a manifest")
    return manifest


def is_image_id(text: object) -> bool:
    """`sha256:` + 64 lowercase hex: an image id bench recorded, checked before Docker sees it."""
    return isinstance(text, str) and IMAGE_ID.fullmatch(text) is not None


def held(archive: Path, expected: str | None, *, variable: str = "BENCH_ARCHIVE_SHA256") -> str:
    """The archive's sha256 once it equals `expected`, the hash the user holds (printed by
    the nox session that made the archive); an ArchiveError in one line otherwise."""
    if not expected:
        raise ArchiveError(
            f"{archive.name}: set {variable} to the sha256 printed when the archive was made"
            " (its .sha256 file, from a source you trust): the manifest beside it proves nothing"
        )
    expected = expected.strip().lower()
    if SHA256.fullmatch(expected) is None:
        raise ArchiveError(f"{variable}: {expected[:80]!r} is not a sha256 (64 hex digits)")
    actual = sha256(archive)
    if actual != expected:
        raise ArchiveError(
            f"{archive.name}: its sha256 is {actual}, not the {expected} you hold: not loaded"
        )
    return actual


def _target(dest: Path, member: tarfile.TarInfo) -> Path:
    """Where a member goes under dest, once its name is a plain relative path."""
    parts = member.name.removesuffix("/").split("/")  # as written, not normalised
    if member.name.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ArchiveError(f"member {member.name[:200]!r}: not a plain relative path")
    bad = next((p for p in parts if _NAME.fullmatch(p) is None), None)
    if bad is not None:
        raise ArchiveError(f"member {member.name[:200]!r}: the name {bad[:80]!r} is not allowed")
    return dest.joinpath(*parts)


def extract(
    archive: Path,
    dest: Path,
    *,
    max_members: int = MAX_MEMBERS,
    max_member_bytes: int = MAX_MEMBER_BYTES,
    max_total_bytes: int = MAX_TOTAL_BYTES,
) -> list[str]:
    """Unpack a tar (plain or gzip) into the empty folder dest, member by member: regular
    files and folders only (no links, devices or fifos), plain relative names, within the
    size and count bounds; files are created new (never through a link), 0644, folders
    0755, owned by whoever runs this. The names unpacked, in order."""
    dest.mkdir(parents=True, exist_ok=True)
    if any(dest.iterdir()):
        raise ArchiveError(f"{dest} is not empty")
    names: list[str] = []
    total = 0
    with tarfile.open(archive, "r:*") as tar:
        for member in tar:  # streamed: the whole listing is never held
            if len(names) >= max_members:
                raise ArchiveError(f"{archive.name}: more than {max_members} members")
            target = _target(dest, member)
            if member.isdir():
                target.mkdir(mode=0o755, parents=True, exist_ok=True)
            elif member.isfile():
                if member.size > max_member_bytes or total + member.size > max_total_bytes:
                    raise ArchiveError(
                        f"member {member.name[:200]!r}: {member.size} bytes is over the limit"
                        f" ({max_member_bytes} a member, {max_total_bytes} in all)"
                    )
                total += member.size
                # Folders are only ever made here (no member is a link): no link on the way.
                target.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
                source = tar.extractfile(member)
                if source is None:
                    raise ArchiveError(f"member {member.name[:200]!r}: unreadable")
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                with source, os.fdopen(os.open(target, flags, 0o644), "wb") as out:
                    shutil.copyfileobj(source, out, 1 << 20)
            else:
                kind = "a link" if member.issym() or member.islnk() else "not a file or folder"
                raise ArchiveError(f"member {member.name[:200]!r}: {kind}, not unpacked")
            names.append(member.name)
    return names


def read_member(archive: Path, name: str, max_bytes: int = 2**20) -> bytes:
    """The bytes of one regular-file member (at most max_bytes), read without unpacking."""
    with tarfile.open(archive, "r:*") as tar:
        for member in tar:
            if member.name == name:
                stream = tar.extractfile(member) if member.isfile() else None
                if stream is None or member.size > max_bytes:
                    raise ArchiveError(f"member {name}: not a file of at most {max_bytes} bytes")
                with stream:
                    return stream.read()
    raise ArchiveError(f"{archive.name} has no {name}")
