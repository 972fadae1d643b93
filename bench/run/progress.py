"""What a run tells the user as it goes: the Reporter a Runner and a max-batch search
report to (bench.report.live draws it with rich), the silent one, and a child's
progress callback."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

# A child's progress: (phase, done, total).
Progress = Callable[[str, int, int], None]


class Reporter(Protocol):
    """What the runner tells the user; bench.report.live draws it with rich."""

    def start(self, label: str, total_steps: int | None) -> None: ...
    def progress(self, phase: str, done: int, total: int) -> None: ...
    def finish(self, label: str, status: str, summary: str) -> None: ...
    def warn(self, line: str) -> None: ...


class SilentReporter:
    def start(self, label: str, total_steps: int | None) -> None: ...
    def progress(self, phase: str, done: int, total: int) -> None: ...
    def finish(self, label: str, status: str, summary: str) -> None: ...
    def warn(self, line: str) -> None: ...
