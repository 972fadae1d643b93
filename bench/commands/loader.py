"""`bench loader WORKLOAD --data KIND:PATH`: the input pipeline alone, no model. PyTorch's
DataLoader over the dataset's training split, as a run on real data builds it
(bench.frameworks._torch_data.split_loader: the same order, decode and augmentation
at the workload's input size), timed for each worker count (bench.datasets.feed):
images/s, the cores it kept busy, images/s per core, and, given a device's rate on
synthetic data, the cores that would feed it. A table, and a JSON file of every batch's
time (warm-up apart)."""

from __future__ import annotations

import argparse
import json
import os
import platform as host
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.table import Table

from bench import datasets, registry, result
from bench.commands.options import require_extra
from bench.config.bounds import MAX_PREFETCH
from bench.config.option_types import list_of, measure, one_of, strict_int, whole
from bench.config.options import DECODES, INPUT_DTYPES
from bench.datasets import feed
from bench.util import files
from bench.util.errors import UsageError
from bench.util.text import plain

DEFAULT_WORKERS = (0, 1, 2)
MAX_WORKERS = 256


def register(sub: Any) -> None:
    p = sub.add_parser(
        "loader",
        help="measure the input pipeline alone (no model): images/s for each worker count, "
        "per core, and the cores a device's rate needs",
    )
    p.add_argument("workload", help="whose input size and dataset checks apply (see: bench list)")
    p.add_argument("--data", required=True, metavar="KIND:PATH",
                   help="the dataset: imagenet:PATH or cifar10:PATH")  # fmt: skip
    p.add_argument(
        "--num-workers", type=list_of(strict_int, "--num-workers", "whole numbers, e.g. 0,1,2,4"),
        default=DEFAULT_WORKERS, metavar="N[,N...]",
        help="loader worker processes to sweep (default 0,1,2; 0: in bench's own process)",
    )  # fmt: skip
    p.add_argument("--batch-size", type=whole, default=None,
                   help="images a batch (default: the workload's)")  # fmt: skip
    p.add_argument("--steps", type=whole, default=20, help="measured batches (default 20)")
    p.add_argument("--warmup-steps", type=whole, default=2,
                   help="batches before them, kept apart; the first includes the workers' "
                   "start (default 2)")  # fmt: skip
    p.add_argument(
        "--prefetch-factor", type=whole, default=None, metavar="N",
        help="batches each worker prepares ahead, as bench run's (default: PyTorch's 2)",
    )  # fmt: skip
    p.add_argument("--input-dtype", type=one_of("input-dtype", INPUT_DTYPES),
                   default=INPUT_DTYPES[0], metavar="DTYPE",
                   help="the batch as the host sends it: float32 (default: normalised on the "
                   "host) or uint8 (its pixels; the device normalises them)")  # fmt: skip
    p.add_argument("--decode", type=one_of("decode", DECODES), default=DECODES[0],
                   metavar="WHERE",
                   help="cpu (default: the workers decode the JPEGs) or device (the workers "
                   "only read each file and its crop, as bench run --decode device sends them; "
                   "the device's decode is not timed here)")  # fmt: skip
    p.add_argument("--seed", type=whole, default=0, help="the order and augmentation's seed")
    p.add_argument(
        "--device-rate", metavar="IMAGES_PER_S|FILE", default=None,
        help="a device's training rate on synthetic data, or a result file of a synthetic "
        "run of this workload: the cores needed to feed it",
    )  # fmt: skip
    p.add_argument(
        "--output-dir", type=Path, default=Path(os.environ.get("BENCH_OUTPUT_DIR", "results")),
        help="where the JSON goes (default ./results)",
    )  # fmt: skip
    p.set_defaults(func=cmd_loader)


def device_rate(text: str, workload: str) -> feed.DeviceRate:
    """--device-rate: a number of images/s, or a result's fastest synthetic point of the
    same workload (its machine named)."""
    if re.fullmatch(r"[-+.0-9eE_]+", text) and not Path(text).exists():
        try:
            value = measure(text)
        except argparse.ArgumentTypeError as error:
            raise UsageError(f"--device-rate: {error} (images/s), or a result file") from None
        return feed.DeviceRate(value, "given", "the device")
    from bench.report.machines import machine_label

    try:
        res = result.load(text)
    except result.ResultError as error:
        raise UsageError(f"--device-rate: {error}") from None
    if res.config.workload != workload:
        raise UsageError(f"--device-rate: {text} is a run of {res.config.workload}, "
                         f"not {workload}: its images are not these")  # fmt: skip
    if res.config.data != "synthetic":
        raise UsageError(f"--device-rate: {text} trained on {res.config.data}, not synthetic "
                         "data: its rate may be its loader's")  # fmt: skip
    rates = [p.throughput.value for p in res.points if p.status == "ok" and p.throughput]
    if not rates:
        raise UsageError(f"--device-rate: {text} has no measured point")
    return feed.DeviceRate(max(rates), text, machine_label(res))


def _check(args: argparse.Namespace) -> tuple[Any, int]:
    """The workload's spec, the dataset's training split and the batch size, each bad
    input refused in one line before anything is timed."""
    spec = registry.workload(args.workload)
    ref = datasets.parse(args.data)
    if ref is None or ref.source == "tokens":
        raise UsageError(f"--data {args.data!r}: the loader reads labelled images; use "
                         "imagenet:PATH or cifar10:PATH")  # fmt: skip
    if args.decode == "device" and ref.kind != "imagenet":
        raise UsageError(f"--decode device: {ref.kind}'s images are raw pixels, with no JPEG "
                         "to decode; it needs --data imagenet:PATH")  # fmt: skip
    if args.decode == "device" and args.input_dtype != "float32":
        raise UsageError("--decode device: the workers send the files' bytes, neither float32 "
                         "nor uint8 pixels; leave --input-dtype out")  # fmt: skip
    if any(not 0 <= w <= MAX_WORKERS for w in args.num_workers):
        raise UsageError(f"--num-workers: from 0 to {MAX_WORKERS} workers")
    if args.prefetch_factor is not None and not (
        1 <= args.prefetch_factor <= MAX_PREFETCH and all(args.num_workers)
    ):
        raise UsageError(f"--prefetch-factor: from 1 to {MAX_PREFETCH}, with 1 or more "
                         "--num-workers in every count swept")  # fmt: skip
    if args.steps < 1 or args.warmup_steps < 0:
        raise UsageError("--steps: at least 1 measured batch (--warmup-steps: 0 or more)")
    batch = spec.default_batch_size if args.batch_size is None else args.batch_size
    if batch < 1:
        raise UsageError("--batch-size: at least 1 image")
    split = datasets.open_dataset(ref, spec).train
    need = (args.steps + args.warmup_steps) * batch
    if need > len(split):
        raise UsageError(
            f"data: {ref.path} has {len(split):,} training images, fewer than "
            f"{args.warmup_steps} + {args.steps} batches of {batch} ({need:,}): lower --steps "
            "or --batch-size"
        )
    return split, batch


def _stop(batches: Any) -> None:
    """End a DataLoader's iterator now: its workers exit."""
    shutdown = getattr(batches, "_shutdown_workers", None)
    if shutdown is not None:
        shutdown()


def _cpu(batches: Any) -> float | None:
    """bench's CPU seconds and those of the DataLoader's worker processes so far."""
    return feed.cpu_seconds(w.pid for w in getattr(batches, "_workers", ()))


def sweep(split: Any, args: argparse.Namespace, batch: int) -> list[feed.FeedRow]:
    import torch  # noqa: F401  (imported here: its seconds are no loader's warm-up)

    from bench.frameworks import _torch_decode
    from bench.frameworks._torch_data import split_loader

    rows = []
    for workers in args.num_workers:

        def start(workers: int = workers) -> Any:
            if args.decode == "device":  # the files' bytes, for a device to decode
                return _torch_decode.loader(split, batch, seed=args.seed, epoch=0, train=True,
                                            workers=workers, pin_memory=False,
                                            prefetch_factor=args.prefetch_factor)  # fmt: skip
            return split_loader(split, batch, seed=args.seed, epoch=0, train=True,
                                workers=workers, pin_memory=False,
                                prefetch_factor=args.prefetch_factor,
                                raw=args.input_dtype == "uint8")  # fmt: skip

        timed = feed.measure(start, workers=workers, batch_size=batch, warmup=args.warmup_steps,
                             steps=args.steps, cpu=_cpu, stop=_stop)  # fmt: skip
        rows.append(timed)
    return rows


def table(args: argparse.Namespace, rows: list[feed.FeedRow]) -> Table:
    out = Table(title=plain(f"loader: {args.workload} on {args.data}, batch "
                            f"{rows[0].batch_size}, {args.steps} batches each"),
                title_justify="left")  # fmt: skip
    for header in ("workers", "images/s", "cores busy", "images/s\nper core",
                   "batch median\n(ms)", "batch p95\n(ms)", "warm-up (s)"):  # fmt: skip
        out.add_column(header, justify="right")
    for row in rows:
        times = row.batch_time
        out.add_row(
            str(row.workers), f"{row.images_per_s:,.1f}",
            "n/a" if row.cores is None else f"{row.cores:.2f}",
            "n/a" if row.per_core is None else f"{row.per_core:,.1f}",
            f"{times.median * 1e3:,.1f}", f"{times.p95 * 1e3:,.1f}",
            f"{sum(row.warmup_times_s):,.2f}",
        )  # fmt: skip
    return out


def document(args: argparse.Namespace, rows: list[feed.FeedRow],
             device: feed.DeviceRate | None, started: str) -> dict[str, Any]:  # fmt: skip
    best = feed.fastest(rows)
    feeding = None
    if device is not None:
        feeding = {
            "images_per_s": device.images_per_s, "source": device.source, "name": device.name,
            "cores_needed": feed.cores_needed(device, best), "at_workers": best.workers,
            "said": feed.feeding_sentence(device, best),
        }  # fmt: skip
    machine = {"cpu_count": os.cpu_count(), "machine": host.machine(),
               "processor": host.processor() or None}  # fmt: skip
    return {
        "kind": feed.LOADER_KIND,
        "workload": args.workload,
        "data": args.data,
        "seed": args.seed,
        "prefetch_factor": args.prefetch_factor,
        "input_dtype": args.input_dtype,
        "decode": args.decode,
        "steps": args.steps,
        "warmup_steps": args.warmup_steps,
        "host": machine,
        "started": started,
        "rows": [row.to_json() for row in rows],
        "device": feeding,
    }


def save(folder: Path, doc: dict[str, Any]) -> Path:
    """A new file in `folder` (never over another), written atomically."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    text = json.dumps(doc, indent=1)
    for n in range(100):
        path = folder / f"loader-{doc['workload']}-{stamp}{f'-{n}' if n else ''}.json"
        if files.create(path, text):
            return path
    raise UsageError(f"--output-dir: {folder} already holds loader files of this second")


def cmd_loader(args: argparse.Namespace) -> int:
    from bench.report.table import console

    require_extra("loader", "torch")
    device = device_rate(args.device_rate, args.workload) if args.device_rate else None
    split, batch = _check(args)
    files.require_writable_dir(args.output_dir, "--output-dir")
    started = datetime.now(UTC).isoformat(timespec="seconds")
    rows = sweep(split, args, batch)
    out = console()
    out.print(table(args, rows))
    best = feed.fastest(rows)
    if device is not None:
        out.print(plain(feed.feeding_sentence(device, best)))
    path = save(args.output_dir, document(args, rows, device, started))
    out.print(plain(f"loader: {path}"))
    return 0
