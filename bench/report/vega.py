"""Vega through vl-convert, no browser and no network: the script the page inlines
(Vega, Vega-Lite and vega-embed as one), and a Vega-Lite spec rendered to SVG and PNG
for the figures beside the page, in child processes (`Renderers`) that draw while the
parent writes the page.

vl-convert holds Python's lock while it draws (about a second a figure on a CPU), so
threads would draw one at a time: `bench report` starts its renderers before it reads
the results (each loads V8 meanwhile), sends each figure's spec to the first free one
and writes what comes back. Only specs go in and SVG and PNG come out, as JSON lines.
The page's script (`bundle`, two seconds of the parent's lock to make) is asked of the
first renderer as it starts (`Renderers(bundle=True)`), so that it is made on the other
core while the parent reads the results.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterable
from functools import cache
from types import TracebackType
from typing import IO, Any

from bench.util.errors import BenchError

SCALE = 2.0  # a PNG's pixels per the chart's: sharp in print (matplotlib's was 120 dpi)
# A PNG's longest side, at most: a PNG renderer refuses 65,536 pixels (a chart of 180
# panels is 36,000 tall). A longer chart's PNG is drawn finer; its SVG is whole.
MOST_PIXELS = 30_000
RENDERERS = 2  # child processes at most (and no more than the cores)
_SIZE = re.compile(r'<svg[^>]*?\swidth="([0-9.]+)"[^>]*?\sheight="([0-9.]+)"')
BUNDLE = "bundle"  # a request for the script, where a spec would be
_WARM = {"mark": "point", "data": {"values": [{"a": 1}]}, "encoding": {"x": {"field": "a"}}}


@cache
def bundle() -> str:
    """Vega, Vega-Lite and vega-embed as one script (vl-convert ships them): the page
    fetches nothing."""
    import vl_convert

    code = str(vl_convert.javascript_bundle())  # type: ignore[call-arg]
    # Inline, a '</script' in its text would end the element: in JS, '<\\/' reads the same.
    return re.sub("</(script)", r"<\\/\1", code, flags=re.IGNORECASE)


def render(spec: dict[str, Any] | str) -> tuple[str, bytes]:
    """A Vega-Lite spec with its data inside (or its JSON), as SVG and PNG (the PNG from
    the SVG: the spec is laid out once). The same Vega-Lite the page's bundle holds."""
    import vl_convert

    text = spec if isinstance(spec, str) else as_json(spec)
    svg = str(vl_convert.vegalite_to_svg(text))
    size = _SIZE.match(svg)
    longest = max(float(size.group(1)), float(size.group(2))) if size else 1.0
    scale = min(SCALE, MOST_PIXELS / longest)
    return svg, bytes(vl_convert.svg_to_png(svg, scale=scale))


def as_json(spec: dict[str, Any]) -> str:
    """A spec's JSON, on one line: a NaN in the page's data is a bug, refused here."""
    return json.dumps(spec, allow_nan=False)


class Renderers:
    """Child processes that draw figures (`python -m bench.report.vega`), each started at
    once and loading V8 while the parent goes on; a context manager that ends them."""

    def __init__(self, count: int = RENDERERS, *, bundle: bool = False) -> None:
        count = min(count, os.cpu_count() or 1)  # none: nothing to draw
        self._children = [
            subprocess.Popen(
                [sys.executable, "-m", "bench.report.vega"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            for _ in range(count)
        ]
        self._bundle: str | None = None
        self._asked = bundle and bool(self._children)  # its answer not read yet
        if self._asked:
            _send(self._children[0], BUNDLE)

    def bundle(self) -> str:
        """The page's script: the first renderer's, where it was asked as it started,
        else made here (bundle())."""
        if self._bundle is None:
            if self._asked:
                self._asked = False
                answer = _answer(self._children[0])
                if not isinstance(answer.get("bundle"), str):
                    error = answer.get("error", "its renderer answered nonsense")
                    raise BenchError(f"bench report: could not make the page's script: {error}")
                self._bundle = answer["bundle"]
            else:
                self._bundle = bundle()
        return self._bundle

    def __enter__(self) -> Renderers:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close(kill=error is not None)  # an error (bad input, Ctrl-C): nothing to wait for

    def start(self, specs: Iterable[tuple[str, dict[str, Any]]]) -> Drawing:
        """Each (name, spec) to the first free child, the largest first (the last to
        finish is then a small one); the parent goes on while they draw."""
        if self._asked:  # the first renderer answers that first
            self.bundle()
        jobs: queue.Queue[tuple[str, str]] = queue.Queue()
        for name, text in sorted(((n, as_json(s)) for n, s in specs), key=lambda j: -len(j[1])):
            jobs.put((name, text))
        return Drawing(self._children, jobs)

    def close(self, kill: bool = False) -> None:
        """End the children: stdin closed (they exit), killed if they linger (or at once:
        `kill`, where what they would finish is not wanted)."""
        for child in self._children:
            if kill:
                child.kill()
        for child in self._children:
            if child.stdin is not None and not child.stdin.closed:
                with contextlib.suppress(OSError):
                    child.stdin.close()
        for child in self._children:
            try:
                child.wait(timeout=5)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
            if child.stdout is not None:
                child.stdout.close()


class Drawing:
    """Figures being drawn: `result()` waits for them, SVG and PNG by name."""

    def __init__(self, children: list[subprocess.Popen[str]], jobs: queue.Queue[tuple[str, str]]):
        self._jobs, self._drawn, self._failed = jobs, {}, []  # type: ignore[var-annotated]
        self._threads = [threading.Thread(target=self._work, args=(c,), daemon=True)
                         for c in children]  # fmt: skip
        for thread in self._threads:
            thread.start()

    def _work(self, child: subprocess.Popen[str]) -> None:
        while not self._failed:
            try:
                name, text = self._jobs.get_nowait()
            except queue.Empty:
                return
            answer = _ask(child, text)
            svg, png = answer.get("svg"), answer.get("png")
            try:
                if "error" in answer or not isinstance(svg, str) or not isinstance(png, str):
                    raise ValueError(answer.get("error", "its renderer answered nonsense"))
                self._drawn[name] = (svg, base64.b64decode(png, validate=True))
            except ValueError as error:  # a bad answer's base64 too (binascii.Error)
                self._failed.append(f"figure {name}: {error}")
                return

    def result(self) -> dict[str, tuple[str, bytes]]:
        for thread in self._threads:
            thread.join()
        if self._failed:
            raise BenchError(f"bench report: could not draw the {self._failed[0]}")
        if not self._jobs.empty():  # no renderer was left to draw them
            raise BenchError(f"bench report: no renderer drew the figure {self._jobs.get()[0]}")
        return self._drawn


def _ask(child: subprocess.Popen[str], text: str) -> dict[str, str]:
    """One spec to a child, and its answer: {'svg', 'png' (base64)} or {'error'}."""
    _send(child, text)
    return _answer(child)


def _send(child: subprocess.Popen[str], text: str) -> None:
    """A line to a child (a broken pipe is found reading its answer)."""
    assert child.stdin is not None
    with contextlib.suppress(OSError, ValueError):  # broken, or closed by close() (Ctrl-C)
        child.stdin.write(text + "\n")
        child.stdin.flush()


def _answer(child: subprocess.Popen[str]) -> dict[str, str]:
    """A child's answer line: {'svg', 'png' (base64)}, {'bundle'} or {'error'}."""
    assert child.stdout is not None
    try:
        line = child.stdout.readline()
    except (OSError, ValueError):  # closed by Renderers.close (Ctrl-C)
        line = ""
    if not line:
        return {"error": f"its renderer ended (exit status {child.wait()})"}
    try:
        answer = json.loads(line)
    except ValueError:  # something in the child wrote to its stdout
        answer = None
    return answer if isinstance(answer, dict) else {"error": "its renderer answered nonsense"}


def serve(stdin: IO[str], stdout: IO[str]) -> None:
    """A renderer's loop: a spec's JSON a line in, its SVG and PNG a line out (BUNDLE in,
    the page's script out), until end-of-file (the parent done or gone)."""
    render(as_json(_WARM))  # V8 and Vega-Lite loaded before the first figure comes
    for line in stdin:
        try:
            if line.strip() == BUNDLE:
                answer = {"bundle": bundle()}
            else:
                svg, png = render(line)
                answer = {"svg": svg, "png": base64.b64encode(png).decode()}
        except Exception as error:  # said to the parent, which stops
            answer = {"error": f"{type(error).__name__}: {error}"[:2000]}
        stdout.write(json.dumps(answer) + "\n")
        stdout.flush()


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it ends us
    serve(sys.stdin, sys.stdout)
