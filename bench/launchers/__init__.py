"""Launchers: how a point's child starts.

    process    one `python -m bench.worker` (every framework; TensorFlow and JAX spread
               over the local devices inside it)
    torchrun   PyTorch's own launcher (torch.distributed.run): one rank per device, on
               one machine or several; bench adds no launcher of its own

The runner calls spawn(); the point says which launcher it needs: more than one rank
(--devices above 1, or --nnodes above 1) is torchrun. A fleet of cloud instances
launches whole runs, not points, and lives with the fleet commands.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench.config import PointConfig
from bench.launchers import process, torchrun

Response = dict[str, Any]
Progress = Callable[[str, int, int], None]


def name(point: PointConfig) -> str:
    return "torchrun" if point.ranks > 1 else "process"


def spawn(
    point: PointConfig, task: str, on_progress: Progress, timeout_s: float | None = None
) -> Response:
    """Measure one point (task 'measure') or count its FLOPs ('count_flops')."""
    if name(point) == "torchrun":
        return torchrun.spawn_ranks(point, task, on_progress, timeout_s)
    return process.spawn_worker(point, task, on_progress, timeout_s)
