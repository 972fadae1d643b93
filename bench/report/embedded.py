"""What the report page embeds, made JSON-safe: a record without None, NaN or
infinity, its text made visible (control characters as \\xNN); and each distinct
command once, rows holding its index."""

from __future__ import annotations

import math
import shlex
from pathlib import Path
from typing import Any

from bench.result import Result
from bench.util.text import visible

NO_COMMAND = "not recorded in the result (bench rerun FILE runs its config again)"


def command_text(res: Result, path: Path) -> str:
    """The command line that made a result, as a shell would take it back."""
    if not res.command:
        return visible(f"{NO_COMMAND.replace('FILE', shlex.quote(path.name))}")
    return visible(shlex.join(str(part) for part in res.command))


def clean(record: dict[str, Any]) -> dict[str, Any]:
    """No None, no NaN or infinity (JSON has none); text made visible."""
    out = {}
    for name, value in record.items():
        if value is None or (isinstance(value, float) and not math.isfinite(value)):
            continue
        out[name] = visible(value) if isinstance(value, str) else value
    return out


class Commands:
    """Each distinct command once: thousands of points share a few hundred commands."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self._index: dict[str, int] = {}

    def index(self, text: str) -> int:
        if text not in self._index:
            self._index[text] = len(self.texts)
            self.texts.append(text)
        return self._index[text]
