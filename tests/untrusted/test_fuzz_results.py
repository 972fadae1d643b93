"""Crafted result files against every command that reads them, in this process.

A seeded generator mutates the schema fixtures (tests/data/result-v*.json): values of
the wrong type, huge, tiny, negative, NaN and infinite numbers, whole numbers of
thousands of digits, empty and long lists, deleted keys, deep nesting, control
characters and markup in text, truncated or non-UTF-8 files, file names holding
terminal escapes. Each reader must answer in bounded time with its documented exit
status, as one error line when it refuses, and never send a control character to the
terminal or into a file it writes.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import random
import re
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bench import cli
from bench.commands import rerun
from bench.util.text import visible
from tests.conftest import DATA

FIXTURES = sorted(DATA.glob("result-v*.json"))
# C0 controls but tab and newline, DEL, C1 controls (ESC, BEL, CSI \x9b among them).
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
PER_INPUT_S = 30.0  # every reader on one input, on a busy two-core machine
EXIT = {  # the documented statuses: 0, 1 (verify: not verified), 2 bad input, 3 drift
    "show": {0, 2}, "show-folder": {0}, "compare": {0, 2}, "compare-csv": {0, 2},
    "collect": {0}, "report": {0, 2}, "diff": {0, 2, 3}, "verify": {0, 1},
    "rerun": {0, 2},
}  # fmt: skip

# What json.dumps cannot write (whole numbers Python cannot print, nesting deeper than
# its stack): spliced into the text in place of these strings.
_BIG = {"@@digits5000@@": "9" * 5000, "@@digits4000@@": "-" + "7" * 4000}
_SPLICED = {**_BIG, "@@deep5000@@": "[" * 5000 + "]" * 5000}
_NUMBERS = (1e308, -1e308, float("nan"), float("inf"), float("-inf"), -1, 0, -0.0, 5e-324,
            1e-308, 1e21, 1e22, 2**63, -(2**63), 2**64, 2**31, *_BIG)  # fmt: skip
_WRONG_TYPES = ([], {}, "text", 7, -7, 0, True, False, None, 1.5, [[]], {"a": 1}, [None])
_HOSTILE = (
    "\x1b]0;owned\x07",
    "\x1b[2J\x1b[31mred",
    "\x9b31m\x90x\x9c",
    "[red]x[/red] [/oops] [link=https://evil.example]y[/link]",
    "<img src=x onerror=alert(1)>=cmd|'/c calc'!A1",
    '=HYPERLINK("http://evil.example")',
    "\x00\x08\x7f\r\x0b",
    "$\\alpha$ % {} \\n",
    "</script><script>alert(1)</script>{{constructor.constructor('alert(2)')()}}\u2028'\"",
)
_BAD_NAME = "r\x1b]0;title\x07\x1b[2J.json"  # a file named to retitle and clear a terminal


@dataclass
class Input:
    description: str
    content: bytes
    name: str
    original: Path  # the fixture it came from


def _nodes(doc: Any) -> list[tuple[Any, ...]]:
    """The path of every value in the document (keys and list indices)."""
    found, stack = [], [((), doc)]
    while stack:
        path, value = stack.pop()
        found.append(path)
        if isinstance(value, dict):
            stack.extend(((*path, k), v) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend(((*path, i), v) for i, v in enumerate(value))
    return found


def _shape(path: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple("*" if isinstance(key, int) else key for key in path)


def _pick(rng: random.Random, doc: Any) -> tuple[Any, ...]:
    """A path, drawn uniformly over the shapes of paths ('points.*.step_times_s.*.*'),
    so that the thousands of step times do not drown the few fields that are read."""
    by_shape: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    for path in _nodes(doc):
        if path:
            by_shape.setdefault(_shape(path), []).append(path)
    return rng.choice(by_shape[rng.choice(sorted(by_shape, key=str))])


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    _get(doc, path[:-1])[path[-1]] = value


def _nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


def _graft(rng: random.Random, doc: Any) -> str:
    """Give the document a part the fixtures lack (energy, accuracy, ranks, a ladder, a
    tune, a price, more devices), well formed, for a later mutation to break."""
    points = doc.get("points") or []
    if not points:
        return "graft nothing (no points)"
    point = rng.choice(points)
    repeats = max(1, len(point.get("step_times_s") or []))
    window = {"window_s": 2.0, "per_device_j": {"gpu0": 300.0}, "sources": {"gpu0": "nvml"},
              "epoch_j": [100.0, 90.0]}  # fmt: skip
    epochs = [{"epoch": 1, "top1": 0.5, "train_s": 3.0, "eval_s": 0.5},
              {"epoch": 2, "top1": 0.8, "train_s": 3.0, "eval_s": 0.5}]  # fmt: skip
    axes = {k: point.get(k) for k in ("batch_size", "precision", "memory_format", "compile",
                                     "allocator", "openmp", "numa", "optimize")}  # fmt: skip
    what = rng.choice(("energy", "accuracy", "ranks", "busy", "power", "ladder", "tune",
                       "pricing", "devices", "epochs", "nodes"))  # fmt: skip
    if what == "energy":
        point["energy"] = [copy.deepcopy(window) for _ in range(repeats)]
    elif what == "accuracy":
        point["accuracy"] = [{"metric": "top1", "target": 0.7, "epochs": copy.deepcopy(epochs)}]
    elif what == "ranks":
        point["ranks"] = [{"world_size": 2, "mean_step_s": [0.1, 0.2], "slowest_rank": 1}]
    elif what == "busy":
        point["busy"] = [{"others_cpus": 3.0, "steal_cpus": 0.0, "window_s": 9.0,
                          "throttle": {"gpu0": ["power cap"]}}]  # fmt: skip
    elif what == "power":
        point["power_before"] = [{"gpu0": {"draw_w": 50.0, "limit_w": 300.0}}] * repeats
        point["energy"] = [copy.deepcopy(window) for _ in range(repeats)]
    elif what == "ladder":
        doc["ladder"] = [{"rung": "start", "point": axes, "kept": True, "why": "the start"},
                         {"rung": "bf16", "point": {**axes, "precision": "bf16"}, "kept": False,
                          "why": "slower"}]  # fmt: skip
    elif what == "tune":
        rounds = [{"round": 1, "steps": 2, "points": [copy.deepcopy(point)]}]
        doc["tune"] = {"budget_s": 60.0, "stopped": None, "rounds": rounds}
    elif what == "pricing":
        doc["pricing"] = {"instance": "c7i.2xlarge", "usd_per_hour": 0.357, "source": "test"}
    elif what == "devices":
        points.append({**copy.deepcopy(point), "devices": 2})
    elif what == "epochs":
        point["epoch_times_s"] = [[1.0, 0.9]] * repeats
    else:
        doc.setdefault("environment", {})["nodes_differ"] = ["accelerator.accelerator"]
    return f"graft {what}"


def _mutate(rng: random.Random, doc: Any) -> str:
    """One change at a random place; returns what it did."""
    path = _pick(rng, doc)
    old = _get(doc, path)
    kind = rng.choice(("type", "number", "number", "text", "empty", "long", "delete", "deep"))
    if kind == "type":
        new: Any = copy.deepcopy(rng.choice(_WRONG_TYPES))
    elif kind == "number":
        new = rng.choice(_NUMBERS)
    elif kind == "text":
        hostile = rng.choice(_HOSTILE)
        new = hostile + old if isinstance(old, str) else hostile
    elif kind == "empty":
        new = rng.choice(([], {}, ""))
    elif kind == "long":
        items = old if isinstance(old, list) and old else [old]
        new = rng.choice((items * (2000 // len(items) + 1), "A" * 100_000, ["x"] * 2000))
    elif kind == "deep":
        new = rng.choice((_nested(40), "@@deep5000@@"))
    else:  # delete
        parent = _get(doc, path[:-1])
        del parent[path[-1]]
        return f"delete {'.'.join(map(str, path))}"
    _set(doc, path, new)
    return f"{kind} {'.'.join(map(str, path))} = {visible(repr(new)[:60])}"


def inputs(seed: int, count: int) -> Iterator[Input]:
    """`count` crafted files, the same for the same seed."""
    rng = random.Random(seed)
    docs = {path: json.loads(path.read_text()) for path in FIXTURES}
    for n in range(count):
        original = rng.choice(FIXTURES)
        doc = copy.deepcopy(docs[original])
        if rng.random() < 0.3:
            doc.pop("integrity", None)  # else the checksum no longer matches: a warning
        grafts = [_graft(rng, doc)] if rng.random() < 0.5 else []
        changes = grafts + [_mutate(rng, doc) for _ in range(rng.choice((1, 1, 2, 3)))]
        text = json.dumps(doc)
        for token, spliced in _SPLICED.items():
            text = text.replace(json.dumps(token), spliced)
        content = text.encode()
        roll = rng.random()
        if roll < 0.04:
            cut = rng.randrange(len(content))
            content, changes = content[:cut], [*changes, f"truncated at byte {cut}"]
        elif roll < 0.06:
            content, changes = b"\xff\xfe" + content[:100], [*changes, "not UTF-8"]
        name = _BAD_NAME if rng.random() < 0.1 else f"input-{n}.json"
        yield Input(f"#{n} {original.name}: {'; '.join(changes)}", content, name, original)


class Hang(BaseException):
    """Raised by the alarm: a BaseException, so that no `except` in bench swallows it."""


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    def expire(*_: Any) -> None:
        raise Hang(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _call(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, out.getvalue(), err.getvalue()


def _no_controls(text: str, where: str) -> None:
    found = CONTROL.search(text.replace("\r\n", "\n"))  # CSV ends its lines with CR LF
    assert found is None, f"{where}: raw {found.group()!r} at {found.start()}: {text[:300]!r}"


def _check(name: str, argv: list[str], path: Path) -> None:
    code, out, err = _call(argv)
    assert code in EXIT[name], f"{name}: exit status {code}\n{err[-2000:]}"
    _no_controls(out, f"{name} stdout")
    _no_controls(err, f"{name} stderr")
    lines = err.splitlines()
    assert "Traceback" not in err
    assert all(line.startswith("bench: ") for line in lines), err[-2000:]
    errors = [line for line in lines if line.startswith("bench: error:")]
    if code == 2:
        assert len(errors) == 1, err[-2000:]
        if name in ("show", "rerun"):  # the file is the only input: it is named
            assert visible(str(path)) in errors[0], errors[0]
    else:
        assert not errors, err[-2000:]


def _written(folder: Path) -> None:
    for written in folder.rglob("*"):
        if written.suffix in (".csv", ".md", ".html", ".svg"):
            _no_controls(written.read_text(), str(written))
        if written.name == "report.html":
            _inert_page(written.read_text())


# The report page's own elements: its data (JSON), the Vega bundle and its script.
_PAGE_SCRIPTS = 3
_DATA = re.compile(r"<script type='application/json' id='bench-data'>(.*?)</script>", re.S)


def _inert_page(page: str) -> None:
    """Text from a result file added no element to the page: no script, no image, and
    the JSON the page embeds neither closes its script element nor fails to parse."""
    assert page.count("<script") == _PAGE_SCRIPTS, "a script element more or less"
    assert page.count("</script>") == _PAGE_SCRIPTS
    markup = re.sub(r"<script[^>]*>.*?</script>", "", page, flags=re.S)  # the page less scripts
    assert "<img" not in markup and "<svg" not in markup
    found = _DATA.search(page)
    assert found is not None, "no data element"
    assert not re.search("[<>&\u2028\u2029]", found.group(1)), "raw markup in the data"
    json.loads(found.group(1))


@pytest.fixture
def readers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[Input, int], int]:
    """Every reading command on one crafted input; returns the number of calls made."""
    pytest.importorskip("pandas")
    pytest.importorskip("vl_convert")
    pytest.importorskip("scipy")
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "COLUMNS"):
        monkeypatch.delenv(name, raising=False)
    # bench rerun: its load and its checks of the old config, not a new run
    monkeypatch.setattr(rerun, "run_and_print", lambda config, args, **_: (0, None, None))
    # bench report: the Vega bundle is the same for every input (and takes seconds)
    from bench.report import vega, views

    monkeypatch.setattr(views, "bundle", lambda: "/* vega bundle */")
    # and its figures drawn here, where V8 loads once for every input, not in two children
    # that load it again for each (bench.report.page.write_report draws here given none)
    monkeypatch.setattr(vega, "Renderers", lambda *_, **__: contextlib.nullcontext())

    def read(crafted: Input, n: int) -> int:
        work = tmp_path / str(n)
        folder = work / "results"
        folder.mkdir(parents=True)
        original = shutil.copy(crafted.original, folder / "original.json")
        path = folder / crafted.name
        path.write_bytes(crafted.content)
        out = work / "out"
        calls = {
            "show": ["show", str(path)],
            "show-folder": ["show", str(folder)],
            "compare": ["compare", str(folder), "--baseline", str(original)],
            "compare-csv": ["compare", str(path), "--format", "csv"],
            "collect": ["collect", str(folder), "-o", str(out / "all")],
            "diff": ["diff", str(original), str(path)] + (["--format", "json"] if n % 2 else []),
            "verify": ["verify", str(path)],
            "rerun": ["rerun", str(path), "--output-dir", str(out / "rerun")],
        }
        if n % 5 == 0:  # charts take a second: one input in five
            calls["report"] = ["report", str(path), "-o", str(out / "report")]
        with deadline(PER_INPUT_S):
            for name, argv in calls.items():
                _check(name, argv, path)
        _written(work)
        return len(calls)

    return read


@pytest.mark.parametrize(
    ("seed", "count"),
    [
        pytest.param(7, 25, id="quick"),
        pytest.param(2029, 200, marks=[pytest.mark.slow, pytest.mark.long], id="full"),
    ],
)
def test_crafted_result_files_never_crash_a_reader(readers, seed, count, record_property):
    started, calls = time.monotonic(), 0
    for n, crafted in enumerate(inputs(seed, count)):
        try:
            calls += readers(crafted, n)
        except (AssertionError, Hang) as failure:
            raise AssertionError(f"{crafted.description}\n{failure}") from None
    elapsed = time.monotonic() - started
    record_property("fuzz_inputs", count)
    print(f"fuzz: {count} crafted files, {calls} reader calls, {elapsed:.1f} s")


def test_the_generator_is_seeded_and_varied():
    # 60 inputs: with the schema 10 fixture among those drawn from, the first 40 of seed
    # 11 happen to hold no type change.
    first = [i.description for i in inputs(11, 60)]
    assert first == [i.description for i in inputs(11, 60)]
    kinds = {d.split(": ", 1)[1].split(" ")[0] for d in first}
    assert {"type", "number", "delete"} <= kinds
