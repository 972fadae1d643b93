"""What `--data` names: `synthetic`, `loader`, or a dataset or token file as KIND:PATH.

Read by the config (bench/config/run_config.py) when it checks itself, and by the datasets that
open what it names (bench/datasets/): the name's syntax lives here, below both.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.util.errors import UsageError

KINDS = ("cifar10", "imagenet")  # labelled images, trained on a whole epoch at a time
TOKEN_KINDS = ("tokens", "tokens-u32")  # token ids for decoders (bench.datasets.tokens)


@dataclass(frozen=True)
class DataRef:
    kind: str
    path: str

    def __str__(self) -> str:
        return f"{self.kind}:{self.path}"

    @property
    def source(self) -> str:
        """What a framework must offer for it (Framework.data_sources): 'dataset' for
        labelled images, 'tokens' for a token file."""
        return "tokens" if self.kind in TOKEN_KINDS else "dataset"


def parse(data: str) -> DataRef | None:
    """'cifar10:/data/cifar' -> DataRef; 'synthetic' and 'loader' -> None."""
    kind, colon, path = data.partition(":")
    if not colon:
        return None
    if kind not in KINDS + TOKEN_KINDS:
        raise UsageError(
            f"data: dataset {kind!r} is not known; use "
            f"{', '.join(k + ':PATH' for k in KINDS + TOKEN_KINDS)}"
        )
    if not path:
        what = "file" if kind in TOKEN_KINDS else "folder"
        raise UsageError(f"data: {data!r} names no {what}; use {kind}:PATH")
    return DataRef(kind, path)
