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
