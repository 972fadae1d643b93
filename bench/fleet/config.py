"""A fleet file (TOML): the same bench commands on several cloud targets, validated
whole before anything is planned or launched.

    [fleet]
    name = "tpuv2-vs-v100"
    results = "gs://my-bucket/bench"      # a bucket (s3://, gs://, r2://) or a local folder
    baseline = "v100x4"                   # a target's name: what bench compare divides by
    commands = ["run resnet50 --batch-size 1024 --precision bf16"]

    [[target]]
    name = "v100x4"
    image = "ghcr.io/me/bench:cuda@sha256:..."
    accelerators = "V100:4"
    instance_type = "p3.8xlarge"          # optional: cloud, region, nodes, commands too

A fleet file may come from someone else: it is read with a size bound, and every error
is one line that names the field and what is allowed, never a traceback.
"""

from __future__ import annotations

import os
import re
import shlex
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.util import files
from bench.util.errors import UsageError

BUCKET_SCHEMES = ("s3", "gs", "r2")
# bench options a fleet sets itself, per target: not in its commands.
FLEET_OPTIONS = (
    "--output-dir", "--instance", "--price-per-hour", "--nnodes", "--node-rank", "--rdzv-endpoint",
)  # fmt: skip
_NAME = re.compile(r"[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?")  # also a cluster and job name
# SkyPilot's accelerator syntax: NAME or NAME:COUNT (V100:4, A100-80GB:8, tpu-v2-8).
_ACCELERATORS = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(:[1-9][0-9]{0,3})?")
_IMAGE = re.compile(r"[a-z0-9][a-z0-9._/:-]*(@sha256:[0-9a-f]{64})?")
_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
_BUCKET = re.compile(rf"({'|'.join(BUCKET_SCHEMES)})://[a-z0-9][a-z0-9._-]*(/.*)?")
_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # an instance type, a cloud, a region
MAX_FILE_BYTES = 2**20  # a fleet file or its state: a few KiB in practice
CommandCheck = Callable[[list[str]], None]  # raises UsageError for a command bench refuses
_FLEET_KEYS = {"name", "description", "results", "baseline", "commands"}
_TARGET_KEYS = {
    "name", "image", "accelerators", "instance_type", "cloud", "region", "nodes", "commands",
    "price_per_hour",
}  # fmt: skip


@dataclass(frozen=True)
class Target:
    name: str
    image: str
    commands: tuple[tuple[str, ...], ...]  # bench arguments, one tuple per command
    accelerators: str | None = None
    instance_type: str | None = None
    cloud: str | None = None
    region: str | None = None
    nodes: int = 1
    price_per_hour: float | None = None

    @property
    def tpu(self) -> bool:
        """A Cloud TPU VM (its runtime named in the task; docker reaches it privileged)."""
        return (self.accelerators or "").lower().startswith("tpu-")

    @property
    def pinned(self) -> bool:
        return bool(_DIGEST.search(self.image))


@dataclass(frozen=True)
class Fleet:
    name: str
    description: str
    results: str  # a bucket URL, or a local folder (absolute)
    baseline: str | None
    targets: tuple[Target, ...]
    path: Path  # the fleet file: its state file lives beside it

    @property
    def bucket(self) -> bool:
        return self.results.split("://")[0] in BUCKET_SCHEMES and "://" in self.results


def shown(text: object) -> str:
    """`text` for a one-line message: as it is, or quoted with its control characters
    escaped."""
    text = str(text)
    return text if text.isprintable() else repr(text)


def read_bounded(path: Path, what: str) -> str:
    """The text of `path`, a regular file of at most MAX_FILE_BYTES (never a FIFO that
    blocks, never read whole when larger)."""
    try:
        with os.fdopen(files.open_regular(path), "rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except files.NotRegular:
        raise UsageError(f"{shown(path)}: not a regular file; {what} is a file") from None
    except OSError as error:
        raise UsageError(f"{shown(path)}: cannot read {what} ({error.strerror})") from None
    if len(data) > MAX_FILE_BYTES:
        raise UsageError(f"{shown(path)}: {what} is at most {MAX_FILE_BYTES:,} bytes")
    try:
        return data.decode()
    except UnicodeDecodeError as error:
        raise UsageError(f"{shown(path)}: {what} is UTF-8 text ({error})") from None


def _text(
    where: str, value: Any, pattern: re.Pattern[str] | None = None, allowed: str = "a text"
) -> str:
    """A text field: a string, not blank, of printable characters (no NUL, newline or
    terminal escape), all of it matched by `pattern`."""
    if (
        not isinstance(value, str)
        or not value.strip()
        or (pattern and not pattern.fullmatch(value))
    ):
        raise UsageError(f"{where}: {value!r} is not allowed; use {allowed}")
    if not value.isprintable():
        raise UsageError(f"{where}: {value!r} is not allowed; use printable characters only")
    return value


def _unknown(where: str, data: dict[str, Any], known: set[str]) -> None:
    unknown = sorted(set(data) - known)
    if unknown:
        raise UsageError(
            f"{where}: unknown key(s) {', '.join(map(shown, unknown))}; allowed: "
            f"{', '.join(sorted(known))}"
        )


def _commands(where: str, value: Any, check: CommandCheck) -> tuple[tuple[str, ...], ...]:
    """Each command split as a shell would and checked by `check` (bench's own parser,
    given by the command that loads the fleet), before anything starts."""
    if not isinstance(value, list) or not value:
        raise UsageError(f"{where}: give a non-empty list of bench commands, e.g. ['run tiny']")
    parsed = []
    for i, command in enumerate(value):
        here = f"{where}[{i}]"
        try:
            argv = shlex.split(_text(here, command, allowed="a bench command line"))
        except ValueError as error:
            raise UsageError(f"{here}: {error}") from None
        if argv and argv[0] not in ("run", "suite"):
            argv.insert(0, "run")  # `resnet50 ...` is `run resnet50 ...`, as on the command line
        try:
            check(argv)
        except UsageError as error:
            raise UsageError(f"{here} ({command!r}): {error}") from None
        parsed.append(tuple(argv))
    return tuple(parsed)


def _target(
    i: int, data: Any, commands: tuple[tuple[str, ...], ...] | None, check: CommandCheck
) -> Target:
    where = f"target[{i}]"
    if not isinstance(data, dict):
        raise UsageError(f"{where}: expected a table ([[target]])")
    _unknown(where, data, _TARGET_KEYS)
    name = _text(f"{where}.name", data.get("name"), _NAME, "lower-case letters, digits and -")
    where = f"target {name!r}"
    nodes = data.get("nodes", 1)
    if not isinstance(nodes, int) or isinstance(nodes, bool) or not 1 <= nodes <= 1024:
        raise UsageError(f"{where}.nodes: {nodes!r} is not allowed; use a whole number >= 1")
    price = data.get("price_per_hour")
    if price is not None and (
        not isinstance(price, int | float) or isinstance(price, bool) or not 0 < price < 10_000
    ):
        raise UsageError(f"{where}.price_per_hour: {price!r} is not allowed; use USD per hour > 0")
    optional = {}
    for key in ("accelerators", "instance_type", "cloud", "region"):
        if key in data:
            pattern = _ACCELERATORS if key == "accelerators" else _PLAIN_NAME
            allowed = "NAME or NAME:COUNT (V100:4, tpu-v2-8)" if key == "accelerators" else ""
            optional[key] = _text(f"{where}.{key}", data[key], pattern, allowed or "a name")
    if "accelerators" not in optional and "instance_type" not in optional:
        raise UsageError(f"{where}: give accelerators, instance_type or both")
    if "commands" in data:
        commands = _commands(f"{where}.commands", data["commands"], check)
    if commands is None:
        raise UsageError(f"{where}: no commands: give [fleet] commands or the target's own")
    target = Target(
        name=name,
        image=_text(f"{where}.image", data.get("image"), _IMAGE, "an image reference"),
        commands=commands,
        nodes=nodes,
        price_per_hour=None if price is None else float(price),
        **optional,
    )
    if target.tpu and nodes > 1:
        raise UsageError(f"{where}.nodes: a TPU pod slice is one target: name it (tpu-v4-32)")
    return target


def load(path: Path, check: CommandCheck) -> Fleet:
    """The fleet in `path`, or a UsageError naming the field that is wrong. `check`
    refuses a bench command line (['run', 'resnet50', ...] or ['suite', NAME, ...])
    that bench would refuse, or that sets what the fleet sets per target."""
    text = read_bounded(path, "a fleet file")
    try:
        data = tomllib.loads(text)
    except ValueError as error:  # TOMLDecodeError, or a number of over 4300 digits
        raise UsageError(f"{shown(path)}: not a TOML file ({shown(error)})") from None
    except RecursionError:
        raise UsageError(f"{shown(path)}: not a fleet file (nested too deep)") from None
    _unknown(str(path), data, {"fleet", "target"})
    head = data.get("fleet")
    if not isinstance(head, dict):
        raise UsageError(f"{path}: no [fleet] table")
    _unknown("fleet", head, _FLEET_KEYS)
    name = _text("fleet.name", head.get("name"), _NAME, "lower-case letters, digits and -")
    buckets = ", ".join(f"{s}://BUCKET/PATH" for s in BUCKET_SCHEMES)
    results = _text(
        "fleet.results", head.get("results"), allowed=f"a bucket ({buckets}) or a folder"
    )
    if "://" in results:
        _text("fleet.results", results, _BUCKET, f"a bucket ({buckets}) or a local folder")
    else:
        results = str((Path(path).parent / results).resolve())
    commands = _commands("fleet.commands", head["commands"], check) if "commands" in head else None
    raw = data.get("target")
    if not isinstance(raw, list) or not raw:
        raise UsageError(f"{path}: no targets: add [[target]] tables")
    targets = tuple(_target(i, t, commands, check) for i, t in enumerate(raw))
    names = [t.name for t in targets]
    if len(set(names)) != len(names):
        raise UsageError(f"target: the name {max(names, key=names.count)!r} is given twice")
    baseline = head.get("baseline")
    if baseline is not None and baseline not in names:
        raise UsageError(
            f"fleet.baseline: {baseline!r} is not a target; choose from: {', '.join(names)}"
        )
    description = _text("fleet.description", head["description"]) if "description" in head else ""
    return Fleet(name, description, results, baseline, targets, Path(path).resolve())
