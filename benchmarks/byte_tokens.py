"""Byte-level token files from a folder of text: data for `--train-to-loss` on a machine
with no tokenizer and no network (a lent GPU, an air-gapped cluster).

Every byte is one token (ids 0..255, inside GPT-2's and Llama 3's vocabularies), written
as llm.c's uint16 .bin (its 1 KiB header, magic 20240520 version 1), which bench reads
as `tokens:PATH`. The files matching --glob under SOURCE are read in sorted order; every
--val-every-th file goes to val.bin, the rest to train.bin, so the validation text is
never trained on; folders named site-packages or dist-packages are skipped (a Python
standard library's folder holds what was installed into it). The loss is then in nats
per byte, not per GPT-2 token: compare it only with runs on the same files (the sha256
printed here; bench records it too).

    stdlib=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')
    python benchmarks/byte_tokens.py "$stdlib" /tmp/bytes

Not a test and not a dataset of record: it prints what it wrote.
"""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

import numpy as np

MAGIC, VERSION, HEADER_INTS = 20240520, 1, 256  # llm.c's GPT-2 token files
INSTALLED = {"site-packages", "dist-packages"}  # packages installed into a stdlib: skipped


def write(path: Path, data: bytes) -> str:
    header = np.zeros(HEADER_INTS, dtype="<i4")
    header[:3] = MAGIC, VERSION, len(data)
    body = np.frombuffer(data, dtype=np.uint8).astype("<u2")
    blob = header.tobytes() + body.tobytes()
    path.write_bytes(blob)
    return hashlib.sha256(blob).hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--glob", default="**/*.py")
    parser.add_argument("--val-every", type=int, default=20)
    args = parser.parse_args()
    files = sorted(
        p
        for p in args.source.glob(args.glob)
        if p.is_file() and not INSTALLED.intersection(p.relative_to(args.source).parts)
    )
    if not files:
        raise SystemExit(f"byte_tokens: no file matches {args.glob!r} under {args.source}")
    train, val = bytearray(), bytearray()
    for index, path in enumerate(files):
        (val if index % args.val_every == 0 else train).extend(path.read_bytes())
    args.out.mkdir(parents=True, exist_ok=True)
    for name, data in (("train.bin", train), ("val.bin", val)):
        digest = write(args.out / name, bytes(data))
        print(f"{args.out / name}: {len(data):,} tokens (bytes), sha256 {digest}")
    print(f"from {len(files)} files matching {args.glob!r} under {args.source}")


if __name__ == "__main__":
    main()
