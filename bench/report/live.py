"""Progress while a sweep runs: a rich bar on a terminal, one line per point otherwise
(docker run without -t, CI logs), so progress is visible either way."""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from bench.util.text import plain, visible

_MARK = {
    "ok": "[green]✓[/]",
    "done": "[green]✓[/]",
    "oom": "[yellow]✗ oom[/]",
    "error": "[red]✗ error[/]",
}


class LiveReporter:
    def __init__(self, console: Console) -> None:
        self.console = console
        self.bar = Progress(
            TextColumn("{task.description}", markup=False),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[phase]}", markup=False),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self.task: TaskID | None = None

    def __enter__(self) -> LiveReporter:
        if self.console.is_terminal:
            self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.console.is_terminal:  # stopping a bar never started prints an empty line
            self.bar.stop()

    def start(self, label: str, total_steps: int | None) -> None:
        if self.task is not None:
            self.bar.remove_task(self.task)
        # A label may hold a rerun file's words: controls escaped (markup is off).
        self.task = self.bar.add_task(visible(label), total=total_steps, phase="starting")
        if not self.console.is_terminal:
            self.console.print(plain(f"… {label}"), highlight=False)

    def progress(self, phase: str, done: int, total: int) -> None:
        # Called from the thread that reads the child's pipe; rich's Progress is thread-safe.
        if self.task is not None and phase != "setup":
            self.bar.update(self.task, advance=1, phase=visible(phase))

    def finish(self, label: str, status: str, summary: str) -> None:
        # The summary may be a child's error message: text, never markup.
        mark = Text.from_markup(_MARK[status]) if status in _MARK else plain(status)
        self.console.print(mark, plain(f"{label}: {summary}"), highlight=False)

    def warn(self, line: str) -> None:
        self.console.print(plain(f"bench: warning: {line}"), highlight=False)
