"""A result file's checksum: sha256 of its canonical content, written with it.

The canonical content is the file's JSON without its `integrity` field, serialised with
sorted keys, no spaces and ASCII escapes: any edit of a figure, a config value or the
provenance changes it, while re-indenting the file does not. A checksum shows that a
file is the one bench wrote, not who wrote it: anyone can recompute it after an edit.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

FIELD = "integrity"
METHOD = "sha256 of the canonical JSON of every other field (sorted keys, no spaces, ASCII)"

OK, EDITED, ABSENT = "ok", "edited", "absent"


def digest(data: dict[str, Any]) -> str:
    content = {key: value for key, value in data.items() if key != FIELD}
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def seal(data: dict[str, Any]) -> dict[str, Any]:
    """The document with its checksum added (last, after every field it covers)."""
    return {**data, FIELD: {"sha256": digest(data), "method": METHOD}}


def check(data: dict[str, Any]) -> str:
    """OK when the stored checksum matches, EDITED when it does not (or is malformed),
    ABSENT for files written before bench wrote checksums."""
    stored = data.get(FIELD)
    if stored is None:
        return ABSENT
    if not isinstance(stored, dict) or not isinstance(stored.get("sha256"), str):
        return EDITED
    return OK if stored["sha256"] == digest(data) else EDITED
