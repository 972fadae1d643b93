"""Training to a target, checked for a run and for each of its points: a top-1 accuracy
on a real dataset (whole epochs, one process) or a decoder's validation loss over a token
file (bench.datasets.loss_target), every step counted toward it."""

from __future__ import annotations

from bench.config import data_ref
from bench.config.fields import Config, choice, positive, values
from bench.util.errors import UsageError


def check_dataset(cfg: Config, dataset: bool) -> None:
    """Training on a real dataset (and to a target accuracy): whole epochs, every step
    counted toward accuracy, one process."""
    if cfg.train_to is not None:
        if (
            isinstance(cfg.train_to, bool)
            or not isinstance(cfg.train_to, int | float)
            or not (0 < cfg.train_to <= 1)
        ):
            raise UsageError(
                f"train_to: {cfg.train_to!r} is not allowed; use a top-1 accuracy between "
                "0 and 1 (e.g. 0.94)"
            )
        if not dataset:
            raise UsageError(
                "train_to: needs a real dataset to evaluate on "
                f"(--data {'|'.join(k + ':PATH' for k in data_ref.KINDS)})"
            )
    if not dataset:
        return
    if cfg.epochs is None:
        raise UsageError(
            "epochs: training on a dataset needs --epochs N (with --train-to: the most "
            "epochs to try, also spelled --max-epochs)"
        )
    if cfg.epoch_samples is not None:
        raise UsageError("epoch_samples: an epoch on a dataset is the whole training split")
    if cfg.warmup_steps:
        raise UsageError(
            "warmup_steps: on a dataset every step trains toward accuracy; epoch 1 holds "
            "the start-up costs (throughput reads epochs 2..N)"
        )


LOSS_TARGET_FIELDS = ("val_data", "max_tokens", "eval_every", "eval_sequences", "recipe")
# Declared here, below the datasets that implement them (tests/datasets/test_loss_target.py checks
# they agree with bench.datasets.loss_target.EVALUATORS and recipe.DECODER_RECIPES).
LOSS_FRAMEWORKS = ("torch",)  # frameworks that evaluate a validation loss over ranks
DECODER_RECIPES = ("default", "llmc-gpt2-124m", "mlperf-llama31-8b")
EVAL_UNITS = ("tokens", "sequences")


def check_loss_target(cfg: Config, source: str) -> None:
    """Training a decoder to a validation loss (bench.datasets.loss_target): a token file
    to train on and another to evaluate on, every step counted toward the target."""
    if cfg.train_to_loss is None:
        given = [name for name in LOSS_TARGET_FIELDS if getattr(cfg, name) is not None]
        if given:
            raise UsageError(f"{given[0]}: only applies with train_to_loss (--train-to-loss)")
        return
    loss = cfg.train_to_loss
    if isinstance(loss, bool) or not isinstance(loss, int | float) or not 0 < loss < 1e6:
        raise UsageError(
            f"train_to_loss: {loss!r} is not allowed; use a validation loss in nats per "
            "token (log perplexity) above 0, e.g. 3.28"
        )
    if cfg.framework not in LOSS_FRAMEWORKS:
        raise UsageError(
            f"train_to_loss: {cfg.framework} has no validation loss over a token file yet "
            f"(an evaluation split over ranks); it applies to {', '.join(LOSS_FRAMEWORKS)}"
        )
    if source != "tokens":
        raise UsageError(
            "train_to_loss: needs a token file to train on (--data tokens:PATH, a glob for "
            "several shards) and one to evaluate on (--val-data tokens:PATH)"
        )
    ref = data_ref.parse(cfg.val_data or "")
    if ref is None or ref.source != "tokens":
        raise UsageError(
            f"val_data: {cfg.val_data!r} is not allowed; train_to_loss needs the validation "
            "token file as tokens:PATH (or tokens-u32:PATH)"
        )
    for name in ("max_tokens", "eval_every", "eval_sequences"):
        positive(name, getattr(cfg, name))
    choice("eval_every_unit", cfg.eval_every_unit, EVAL_UNITS)
    if cfg.recipe is not None:
        choice("recipe", cfg.recipe, DECODER_RECIPES)
    if cfg.warmup_steps:
        raise UsageError(
            "warmup_steps: with train_to_loss every step trains toward the target (the "
            "first steps hold the start-up costs, counted as MLPerf counts them)"
        )
    if cfg.epochs is not None:
        raise UsageError("epochs: train_to_loss counts tokens (--max-tokens), not epochs")
    if any(values(cfg, "optimizations", "optimize")):
        raise UsageError(
            "optimize: train_to_loss builds its own AdamW (its recipe's), which "
            "ipex.optimize would not see; leave --optimize out"
        )
