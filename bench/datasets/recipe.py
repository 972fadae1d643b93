"""How --train-to trains: one documented recipe per dataset, the same in every framework.

SGD with momentum; the peak learning rate scales linearly with the GLOBAL batch
(lr_per_256 x batch / 256, Goyal et al.'s rule); it rises linearly from zero over the
first `warmup_fraction` of the steps, then decays to zero at the last step of
--max-epochs (linearly or along a cosine). Weight decay is L2 on every parameter, as
torch.optim.SGD applies it; the loss is cross-entropy with label smoothing.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

SCHEDULES = ("linear", "cosine")


@dataclass(frozen=True)
class Recipe:
    lr_per_256: float
    momentum: float = 0.9
    nesterov: bool = False
    weight_decay: float = 0.0
    label_smoothing: float = 0.0
    warmup_fraction: float = 0.0
    schedule: str = "cosine"

    def __post_init__(self) -> None:
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule: {self.schedule!r}; choose from {', '.join(SCHEDULES)}")
        if not 0 <= self.warmup_fraction < 1:
            raise ValueError(f"warmup_fraction: {self.warmup_fraction} must lie in [0, 1)")

    def peak_lr(self, batch_size: int) -> float:
        return self.lr_per_256 * batch_size / 256

    def lr_factor(self, step: Any, total_steps: int, xp: Any = None) -> Any:
        """The learning rate of step `step` (0-based) as a fraction of the peak. `xp` is
        the array module that computes it (NumPy by default; jax.numpy or keras.ops
        where the step is a traced value inside a compiled step)."""
        if xp is None:
            import numpy as xp
        warmup = int(self.warmup_fraction * total_steps)
        rising = (step + 1) / max(warmup, 1)
        progress = xp.clip((step - warmup) / max(1, total_steps - warmup), 0.0, 1.0)
        if self.schedule == "linear":
            falling = 1.0 - progress
        else:
            falling = 0.5 * (1.0 + xp.cos(math.pi * progress))
        return xp.where(step < warmup, rising, falling)

    def describe(self, batch_size: int, total_steps: int) -> dict[str, Any]:
        return {
            **dataclasses.asdict(self),
            "peak_lr": self.peak_lr(batch_size),
            "total_steps": total_steps,
        }


# --- Decoders trained to a validation loss (--train-to-loss) -------------------------------


@dataclass(frozen=True)
class DecoderRecipe:
    """How --train-to-loss trains a decoder: AdamW, a linear warm-up over `warmup_tokens`
    from peak/steps to the peak, then a cosine (or linear) decay to `final_lr_fraction`
    of the peak at `decay_tokens` (None: the token budget, --max-tokens), flat after it.
    Weight decay applies to matrices only (dim >= 2: llm.c's and Megatron's way), never
    to biases and norms. Counted in tokens, so that a batch other than the reference's
    keeps the same schedule over the data; the step counts it comes to are recorded."""

    name: str
    lr: float
    betas: tuple[float, float] = (0.9, 0.95)
    eps: float = 1e-8
    weight_decay: float = 0.1
    warmup_tokens: int = 0
    warmup_fraction: float = 0.0  # of the budget's steps, added to warmup_tokens' steps
    decay_tokens: int | None = None
    final_lr_fraction: float = 0.0
    schedule: str = "cosine"
    reference: str = ""  # where the numbers come from, for the result and the docs

    def __post_init__(self) -> None:
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule: {self.schedule!r}; choose from {', '.join(SCHEDULES)}")
        if not 0 <= self.warmup_fraction < 1:
            raise ValueError(f"warmup_fraction: {self.warmup_fraction} must lie in [0, 1)")
        if not 0 <= self.final_lr_fraction <= 1:
            raise ValueError(f"final_lr_fraction: {self.final_lr_fraction} must lie in [0, 1]")

    def steps(self, tokens_per_step: int, budget_steps: int) -> tuple[int, int]:
        """(warm-up steps, the step the decay ends at) for this batch and budget."""
        warmup = round(self.warmup_tokens / tokens_per_step)
        warmup += int(self.warmup_fraction * budget_steps)
        end = budget_steps if self.decay_tokens is None else self.decay_tokens // tokens_per_step
        return warmup, max(end, warmup + 1)

    def lr_factor(self, step: int, warmup: int, end: int) -> float:
        """Step `step`'s (0-based) learning rate as a fraction of the peak."""
        if step < warmup:
            return (step + 1) / warmup
        progress = min(1.0, (step - warmup) / max(1, end - warmup))
        shape = (
            1.0 - progress
            if self.schedule == "linear"
            else 0.5 * (1 + math.cos(math.pi * progress))
        )
        return self.final_lr_fraction + (1.0 - self.final_lr_fraction) * shape

    def describe(self, tokens_per_step: int, budget_steps: int) -> dict[str, Any]:
        warmup, end = self.steps(tokens_per_step, budget_steps)
        return {
            **dataclasses.asdict(self),
            "optimizer": "AdamW",
            "weight_decay_applies_to": "parameters of 2 or more dimensions",
            "tokens_per_step": tokens_per_step,
            "warmup_steps": warmup,
            "decay_end_step": end,
            "budget_steps": budget_steps,
            "grad_clip": None,
            "grad_accumulation": 1,
        }


# llm.c's GPT-2 (124M) on FineWeb 10B (scripts/run_gpt2_124M.sh: -l 0.0006 -u 700 -q 0.0
# -c 0.1 -d 524288): 700 warm-up steps of 524,288 tokens, cosine to zero at the last step.
LLMC_GPT2 = DecoderRecipe(
    "llmc-gpt2-124m", lr=6e-4, warmup_tokens=700 * 524_288, final_lr_fraction=0.0,
    reference="karpathy/llm.c scripts/run_gpt2_124M.sh",
)  # fmt: skip
# MLPerf Training's Llama 3.1 8B (small_llm_pretraining/nemo, config_*_8b.sh): GBS 32 of
# 8,192 tokens, MAX_LR 5e-4, 16,384 // GBS warm-up steps, cosine to 0.1 x the peak over
# max_steps 1,200,000 (fixed in pretrain_llama31.py: in practice barely decaying).
MLPERF_LLAMA31_8B = DecoderRecipe(
    "mlperf-llama31-8b", lr=5e-4, warmup_tokens=16_384 * 8192,
    decay_tokens=1_200_000 * 32 * 8192, final_lr_fraction=0.1,
    reference="mlcommons/training small_llm_pretraining/nemo (config_H200_1x8x1_8b.sh)",
)  # fmt: skip
# Without --recipe: the decoders' own AdamW (lr 3e-4), warm-up over the first 10% of the
# budget's steps (as MLPerf's), cosine to 0.1 x the peak at the budget's end.
DEFAULT_DECODER = DecoderRecipe(
    "default", lr=3e-4, warmup_fraction=0.1, final_lr_fraction=0.1,
    reference="bench's decoders' AdamW (torchtitan, nanoGPT); MLPerf's 10% warm-up",
)  # fmt: skip
DECODER_RECIPES = {r.name: r for r in (DEFAULT_DECODER, LLMC_GPT2, MLPERF_LLAMA31_8B)}
