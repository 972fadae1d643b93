"""Training a decoder to a validation loss (--train-to-loss): MLPerf's LLM metric and the
GPT-2 speedrun's, as --train-to is for images.

The decoder trains on --data tokens:PATH (one file, or the shards a glob names) with
its recipe's AdamW and schedule (bench.datasets.recipe.DecoderRecipe), and every
`eval_every` steps its mean next-token cross-entropy (nats per token: the log
perplexity) is measured on the first `eval_sequences` windows of --val-data, in the
file's order, as MLPerf reads its validation set. The evaluation is split evenly over
the ranks (rank r takes the r-th contiguous slice, in micro-batches of its training
batch, so every rank runs as many forward passes: FSDP2 gathers the same shards on
each), and the sum of the losses and the count of tokens are added over the ranks
(one all-reduce, with a stop flag beside them): every rank gets the same loss and
stops at the same step. Training stops once the loss is at most the target, or at the
end of --max-tokens.

Before any point runs (in the parent) the validation file is refused in one line when
it is missing, holds fewer windows than one evaluation takes, holds another format or
vocabulary's tokens than the training data, or is not held out of the training data:
  - one of its files is a training file (the same inode);
  - one of its files begins or ends with the same window of tokens as a training file
    (a copy, a prefix, a suffix, the file with tokens added at either end);
  - a window the evaluation reads is a training window the run trains on: its digest is
    among those of the training windows the parent read (tokens.Trained: the run's
    first CHECKED_TOKENS, in its order), compared over the evaluated windows up to
    MAX_HASHED_BYTES of the validation file.
Each file is read once for this, within those bounds (the old check hashed two files of
equal size whole, the validation file once per training shard). What it does not find:
a validation window that holds training tokens without being a whole training window
(a slice cut from inside a training file off its windows' grid, a shared passage),
training windows past the first CHECKED_TOKENS the run trains on, and validation
windows past the bound.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from bench.config import data_ref
from bench.datasets import DatasetError, tokens
from bench.datasets.recipe import DECODER_RECIPES, DecoderRecipe
from bench.datasets.tokens import TokenFile, Trained, digests

if TYPE_CHECKING:
    from bench.config.run_config import PointConfig, RunConfig
    from bench.frameworks.base import Session

DEFAULT_EVAL_SEQUENCES = 1024  # MLPerf's Llama 3.1 8B evaluates 1,024 sequences
DEFAULT_EVALUATIONS = 20  # without --eval-every: this many over the budget


@dataclass(frozen=True)
class Plan:
    """A point's training to a loss, in steps: what the result records beside its curve."""

    target: float
    seq_len: int
    tokens_per_step: int
    budget_steps: int
    eval_every_steps: int
    eval_sequences: int
    recipe: DecoderRecipe

    def describe(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "seq_len": self.seq_len,
            "tokens_per_step": self.tokens_per_step,
            "budget_steps": self.budget_steps,
            "budget_tokens": self.budget_steps * self.tokens_per_step,
            "eval_every_steps": self.eval_every_steps,
            "eval_sequences": self.eval_sequences,
            "eval_tokens": self.eval_sequences * self.seq_len,
            "recipe": self.recipe.describe(self.tokens_per_step, self.budget_steps),
        }


def seq_len(point: PointConfig) -> int:
    return int(point.spec.input_shape(point.seq_len)[0])


def eval_sequences(point: PointConfig, windows: int) -> int:
    """--eval-sequences, else up to DEFAULT_EVAL_SEQUENCES of the file's windows, a whole
    number per rank."""
    if point.eval_sequences is not None:
        return point.eval_sequences
    return min(DEFAULT_EVAL_SEQUENCES, windows) // point.ranks * point.ranks


def plan(point: PointConfig, val_windows: int) -> Plan:
    if point.train_to_loss is None:
        raise DatasetError("train_to_loss: this point trains to no validation loss")
    budget = point.budget_steps
    if point.eval_every is None:
        every = max(1, budget // DEFAULT_EVALUATIONS)
    elif point.eval_every_unit == "sequences":
        every = max(1, round(point.eval_every / point.batch_size))
    else:
        every = max(1, round(point.eval_every / point.tokens_per_step))
    return Plan(
        target=float(point.train_to_loss),
        seq_len=seq_len(point),
        tokens_per_step=point.tokens_per_step,
        budget_steps=budget,
        eval_every_steps=min(every, budget),
        eval_sequences=eval_sequences(point, val_windows),
        recipe=DECODER_RECIPES[point.recipe or "default"],
    )


def open_val(point: PointConfig) -> TokenFile:
    """The validation file, in its own order, its errors naming --val-data."""
    ref = data_ref.parse(point.val_data or "")
    if ref is None:
        raise DatasetError("val_data: train_to_loss needs --val-data tokens:PATH")
    try:
        return TokenFile(ref, seq_len(point) + 1, point.seed, shuffle=False)
    except DatasetError as error:
        raise DatasetError(_as_val(str(error))) from None


def _as_val(message: str) -> str:
    return "val_data: " + message.removeprefix("data: ")


def check(config: RunConfig, train: TokenFile, trained: Trained) -> None:
    """In the parent, before any child: the validation file of every point, against the
    training file `train` (open) and the windows of it the parent read (`trained`), and
    every token of its evaluated windows."""
    points = list(config.points())
    val = open_val(points[0])
    try:
        _same_format(val, train)
        _not_a_training_file(val, train)
        for point in points:
            wanted = eval_sequences(point, val.windows)
            if wanted < 1 or val.windows < wanted:
                raise DatasetError(
                    f"val_data: {val.where} holds {val.tokens:,} tokens: {val.windows:,} "
                    f"windows of {val.window} (seq_len {val.window - 1} + 1); one evaluation "
                    f"takes {max(wanted, point.ranks):,} (--eval-sequences, a whole number "
                    f"per rank over {point.ranks})"
                )
        most = max(eval_sequences(p, val.windows) for p in points)
        compared = tokens.MAX_HASHED_BYTES // val.window_bytes  # windows, each hashed once
        chunk = max(1, 2**22 // val.window)  # about 4 million tokens at a time
        for first in range(0, most, chunk):
            try:
                rows = val.read(first, min(chunk, most - first), points[0].spec)
            except DatasetError as error:
                raise DatasetError(_as_val(str(error))) from None
            if first < compared:
                _held_out(val, train, trained, rows[: compared - first], first)
    finally:
        val.close()


HELD_OUT = "a validation loss needs tokens held out of training"


def _same_format(val: TokenFile, train: TokenFile) -> None:
    """Refuse a validation file of another format than the training data's."""
    if val.layout.dtype != train.layout.dtype or val.layout.offset != train.layout.offset:
        raise DatasetError(
            f"val_data: {val.where} is {val.layout.name} ({val.layout.dtype.name} tokens); "
            f"the training data {train.where} is {train.layout.name} "
            f"({train.layout.dtype.name}): tokenize both with one tokenizer"
        )


def _not_a_training_file(val: TokenFile, train: TokenFile) -> None:
    """Refuse a validation file that is a training file (the same inode), or begins or
    ends with the same window of tokens as one: each file's two ends read once."""
    files = {shard.identity: shard for shard in train.shards}
    for mine in val.shards:
        theirs = files.get(mine.identity)
        if theirs is not None:
            raise DatasetError(
                f"val_data: {mine.where} is the same file as the training data's "
                f"{theirs.where}; {HELD_OUT}"
            )
    ends: dict[tuple[str, bytes], Any] = {}
    for shard in train.shards:
        for end in shard.ends(train.window):
            ends.setdefault(end, shard)
    how = {
        "begins": "a copy, a prefix of it, or it with tokens added at the end",
        "ends": "a copy, a suffix of it, or it with tokens added at the start",
    }
    for mine in val.shards:
        for end in mine.ends(val.window):
            theirs = ends.get(end)
            if theirs is not None:
                raise DatasetError(
                    f"val_data: {mine.where} {end[0]} with the same {val.window:,} tokens as "
                    f"the training data's {theirs.where} ({how[end[0]]}); {HELD_OUT}"
                )


def _held_out(
    val: TokenFile, train: TokenFile, trained: Trained, rows: np.ndarray, first: int
) -> None:
    """Refuse validation windows `first` .. (`rows`) of which one is a trained window."""
    found = trained.find(digests(rows))
    if found is None:
        return
    index, position = found
    mine, window = val.locate(int(val.positions(first + index, 1)[0]))
    theirs, trained_window = train.locate(position)
    start = window * val.window
    raise DatasetError(
        f"val_data: window {window:,} of {mine.where} (its tokens {start:,} to "
        f"{start + val.window - 1:,}) is window {trained_window:,} of the training data's "
        f"{theirs.where}, which the run trains on; {HELD_OUT}"
    )


# --- In the child ----------------------------------------------------------------------


@dataclass
class Evaluation:
    loss: float  # mean nats per token over every rank's windows
    sequences: int
    tokens: int
    stop: bool  # a rank was asked to stop (SIGINT): all stop after this evaluation


class TorchEvaluator:
    """torch's side: the recipe's AdamW and schedule on the session, and the loss of its
    eager model (eval mode: no dropout) over this rank's slice of the validation windows.
    (It reaches into bench.frameworks.torch.TorchSession's model, optimizer and schedule;
    an `evaluate_loss` of the Session interface would hold it.)"""

    def __init__(self, session: Any, point: PointConfig, val: TokenFile, plan: Plan) -> None:
        self.session, self.point, self.val, self.plan = session, point, val, plan
        rank = session.rank
        self.rank: int = rank.rank if rank else 0
        self.ranks: int = rank.world_size if rank else 1

    def apply_recipe(self) -> None:
        """AdamW with the recipe's settings (decay on matrices only) in place of the
        workload's, fused or foreach as the workload's was, and its schedule per step."""
        import torch

        session, recipe = self.session, self.plan.recipe
        old = session.optimizer
        params = [p for group in old.param_groups for p in group["params"]]
        groups = [
            {"params": [p for p in params if p.dim() >= 2], "weight_decay": recipe.weight_decay},
            {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
        ]
        kernel = {k: old.defaults[k] for k in ("fused", "foreach") if old.defaults.get(k)}
        session.optimizer = torch.optim.AdamW(
            [g for g in groups if g["params"]], lr=recipe.lr, betas=recipe.betas,
            eps=recipe.eps, **kernel,
        )  # fmt: skip
        warmup, end = recipe.steps(self.plan.tokens_per_step, self.plan.budget_steps)
        session.schedule = torch.optim.lr_scheduler.LambdaLR(
            session.optimizer, lambda step: recipe.lr_factor(step, warmup, end)
        )

    def evaluate(self, stop: bool) -> Evaluation:
        import torch

        session = self.session
        share = self.plan.eval_sequences // self.ranks
        first = self.rank * share
        micro = max(1, self.point.batch_size // self.ranks)
        make = session.impl.token_batch
        model = session.eager_model
        total = torch.zeros((), dtype=torch.float64, device=session.device)
        count = 0
        model.eval()
        try:
            with (
                torch.no_grad(),
                torch.autocast(
                    session.device.type,
                    dtype=session.amp_dtype,
                    enabled=session.amp_dtype is not None,
                ),
            ):
                for start in range(first, first + share, micro):
                    size = min(micro, first + share - start)
                    windows = self.val.read(start, size, self.point.spec)
                    inputs, targets = make(torch.from_numpy(windows))
                    inputs, targets = session._to_device(inputs), session._to_device(targets)
                    mean = session.train_loss(model, inputs, targets)
                    total += mean.double() * targets.numel()
                    count += targets.numel()
        finally:
            model.train()
        sums = torch.stack([total, torch.tensor(float(count), dtype=torch.float64,
                                                device=session.device),
                            torch.tensor(float(stop), dtype=torch.float64,
                                         device=session.device)])  # fmt: skip
        if session.rank is not None:
            import torch.distributed as dist

            dist.all_reduce(sums)  # gloo on the CPU, NCCL on the GPU: every rank the same
        loss_sum, tokens, stops = (float(v) for v in sums.cpu())
        return Evaluation(loss_sum / tokens, self.plan.eval_sequences, int(tokens), stops > 0)


EVALUATORS: dict[str, type[TorchEvaluator]] = {"torch": TorchEvaluator}


def evaluator(point: PointConfig, session: Session) -> TorchEvaluator:
    """The point's validation file opened and checked in the child, the plan made, and
    the recipe applied to the session."""
    val = open_val(point)
    made = plan(point, val.windows)
    if val.windows < made.eval_sequences:
        val.close()
        raise DatasetError(
            f"val_data: {val.where} holds {val.windows:,} windows; one evaluation takes "
            f"{made.eval_sequences:,}"
        )
    chosen = EVALUATORS[point.framework](session, point, val, made)
    chosen.apply_recipe()
    return chosen


@contextlib.contextmanager
def stop_requests(signals: tuple[int, ...]) -> Iterator[list[str]]:
    """Within the block `signals` ask the training to stop after its next evaluation
    (the list returned gets the signal's name), instead of ending the process and what
    it measured; outside it, each signal's handler is what it was."""
    asked: list[str] = []

    def handler(signum: int, frame: Any) -> None:
        asked.append(signal.Signals(signum).name)

    previous = {signum: signal.signal(signum, handler) for signum in signals}
    try:
        yield asked
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)
