"""What a mixture of experts' point says of its experts, for compare's and the report's
MoE view: the all-to-all's share of the step, the load balance (tokens per expert, max
over mean), the dropped token assignments, which matmuls ran and how far the experts
were split. Read from the point's `details.moe` (bench/workloads/moe/torch.py,
moe_report) with every type and bound checked: a result file is anyone's to write, and
a value outside what bench writes reads as not measured (None), never as a number.

Tokens/s per device and MFU are the LLM figures (Point.unit_throughput_per_device,
Point.mfu); a MoE's MFU counts its active parameters only (bench.result.mfu.MOE_FORMULA), which
the point's `details.mfu.formula` says.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench.config.bounds import MAX_INT, fraction, number, whole
from bench.result import Point
from bench.result.mfu import MOE_FORMULA

# The MFU formula's short name ('6N_active+12LHQT'), for captions.
FORMULA = MOE_FORMULA.split(":", 1)[0]
_SECONDS = number(0, 1e9)
_PATH = 80  # characters of a matmul path kept ('torch.nn.functional.grouped_mm')


def _of(check: Any, value: Any) -> Any:
    return value if check(value) else None


@dataclass(frozen=True)
class Experts:
    """A MoE point's account of its experts (None: not recorded, or not a number bench
    would write)."""

    experts: int
    top_k: int
    expert_parallel: int  # ranks the experts were split over (1: every expert local)
    all_to_all_share: float | None  # of the mean measured step; 0 where there is none
    all_to_all_s: float | None  # seconds per step, forward and backward
    balance: float | None  # tokens per expert, max over mean (1: even)
    assignments: int | None  # token-to-expert assignments counted (tokens x top-k)
    dropped: int | None  # of them, dropped past an expert's capacity
    matmuls: str | None  # grouped_mm, or the loop over experts

    def __post_init__(self) -> None:
        if not whole(1)(self.experts) or not whole(1, self.experts)(self.top_k):
            raise ValueError(f"experts {self.experts!r}, top_k {self.top_k!r}: not a MoE")
        if not whole(1, self.experts)(self.expert_parallel):
            raise ValueError(f"expert_parallel {self.expert_parallel!r} must be 1 to experts")

    @classmethod
    def of(cls, point: Point | None) -> Experts | None:
        """The point's experts, or None where it is no MoE's (or its record is unreadable)."""
        record = point.details.get("moe") if point is not None else None
        if not isinstance(record, dict):
            return None
        read: Any = record  # each value checked as it is read
        experts = read.get("experts")
        if not whole(1)(experts):  # the bound of what follows
            return None
        applied = read.get("expert_parallel")  # None: one process, every expert here
        parallel: Any = applied.get("expert_parallel") if isinstance(applied, dict) else 1
        assignments = _of(whole(0, MAX_INT), read.get("assignments"))
        dropped = _of(whole(0, assignments if assignments is not None else -1),
                      read.get("dropped_assignments"))  # fmt: skip
        matmuls = read.get("expert_matmuls")
        try:
            return cls(
                experts=experts,
                top_k=read.get("top_k"),  # checked on creation
                expert_parallel=parallel,
                all_to_all_share=_of(fraction, read.get("all_to_all_share")),
                all_to_all_s=_of(_SECONDS, read.get("all_to_all_s_per_step")),
                balance=_of(number(1, experts), read.get("balance_max_over_mean")),
                assignments=assignments,
                dropped=dropped,
                matmuls=matmuls[:_PATH] if isinstance(matmuls, str) else None,
            )
        except ValueError:  # its top-k or split is no MoE's
            return None

    @property
    def dropped_share(self) -> float | None:
        if self.dropped is None or not self.assignments:
            return None
        return self.dropped / self.assignments

    @property
    def exchanged(self) -> bool:
        """Whether tokens went to other ranks: with every expert local, no all-to-all."""
        return self.expert_parallel > 1

    def all_to_all_text(self) -> str:
        if not self.exchanged:
            return "no all-to-all"
        if self.all_to_all_share is None:
            return "all-to-all n/a"
        return f"all-to-all {self.all_to_all_share:.1%}"

    def balance_text(self) -> str:
        return "balance n/a" if self.balance is None else f"balance {self.balance:.2f}"

    def dropped_text(self) -> str:
        share = self.dropped_share
        if share is None:
            return "dropped n/a"
        return f"dropped {self.dropped:,} ({share:.1%})" if self.dropped else "none dropped"

    def record(self) -> dict[str, Any]:
        """The figures for compare's CSV and JSON (one record per row and machine)."""
        return {
            "experts": self.experts,
            "top_k": self.top_k,
            "expert_parallel": self.expert_parallel,
            "all_to_all_share": self.all_to_all_share,
            "all_to_all_s_per_step": self.all_to_all_s,
            "balance_max_over_mean": self.balance,
            "assignments": self.assignments,
            "dropped_assignments": self.dropped,
            "expert_matmuls": self.matmuls,
        }
