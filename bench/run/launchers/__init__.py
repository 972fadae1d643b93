"""Launchers: how a point's child starts.

    process    one `python -m bench.child.worker` (every framework; TensorFlow and JAX spread
               over the local devices inside it)
    torchrun   PyTorch's own launcher (torch.distributed.run): one rank per device, on
               one machine or several; bench adds no launcher of its own

The runner calls spawn(); the point says which launcher it needs: more than one rank
(--devices above 1, or --nnodes above 1) is torchrun. Either starts with the point's
allocator, OpenMP runtime and NUMA binding (bench.run.runtime), recorded in the response,
and its compilers' caches (torch.compile's, Triton's) in folders only the user can write
(bench.run.compiler_cache).
On Ctrl-C or SIGTERM a point training to a target loss is asked to stop and answers with
the curve it measured, raised as Stopped (a KeyboardInterrupt) for the runner to record;
any other point is stopped at once. Several machines share a secret (BENCH_RDZV_TOKEN,
bench.parallel.ranks): only their ranks see it, through the environment; a one-machine point's
child never does.
A search's probes share one process where they can (`ProbingChild`, bench.run.launchers.probing).
A fleet of cloud instances launches whole runs, not points, and lives with the fleet
commands.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from bench.config.run_config import PointConfig, RunConfig
from bench.parallel import ranks
from bench.result.response import Response, read_answer
from bench.run import compiler_cache, runtime
from bench.run.launchers import process, torchrun
from bench.run.launchers.probing import ProbingChild

Progress = Callable[[str, int, int], None]
Stopped = process.Stopped


def name(point: PointConfig) -> str:
    return "torchrun" if point.ranks > 1 else "process"


def check(config: RunConfig) -> None:
    """Refuse, before anything runs, a run that no point of could launch: several
    machines without their shared secret (one line that says how to set it), or a
    compiler cache another user could write (bench.run.compiler_cache)."""
    compiler_cache.child_env(os.environ)
    if config.nnodes > 1:
        ranks.rdzv_token(os.environ, config.nnodes)


def spawn(
    point: PointConfig, job: str, on_progress: Progress, timeout_s: float | None = None
) -> Response:
    """Measure one point (job 'measure') or count its FLOPs ('count_flops') in a fresh
    child: its answer, with the runtime it was started with."""
    child = runtime.child_runtime(point.allocator, point.openmp, point.numa, dict(os.environ))
    try:
        if name(point) == "torchrun":
            answer = torchrun.spawn_ranks(point, job, on_progress, timeout_s, child)
        else:
            answer = process.spawn_worker(point, job, on_progress, timeout_s, child)
    except Stopped as stop:  # what the stopped point measured, with its runtime too
        stop.response = process.with_runtime(stop.response, child)
        raise
    return process.with_runtime(answer, child)


def read(answer: Response | dict[str, Any]) -> Response:
    """A stand-in's answer (a test's, which may be the JSON a child writes) as a Response:
    bench.result.response.read_answer."""
    return answer if isinstance(answer, Response) else read_answer(answer)


__all__ = ["ProbingChild", "Stopped", "check", "name", "read", "spawn"]
