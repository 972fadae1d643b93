"""`bench ladder WORKLOAD [RUN OPTIONS]`: the Xeon CPU training study's table, on the
machine it runs on. From its start (batch 128, fp32) through a batch sweep, then the
platform's rungs (on a CPU bf16, channels_last, the framework's compiler, TCMalloc with
Intel OpenMP, IPEX; on a CUDA GPU TF32, bf16, channels_last, the compiler, CUDA graphs,
the fused optimizer), each tried on top of the best so far and kept only when faster
beyond noise (bench.search.ladder). One result
file; `bench rerun` climbs it again, `bench report` charts it; --resume FILE goes on
with an interrupted climb.
"""

from __future__ import annotations

import argparse
from typing import Any

from bench.commands.options import add_resume, option_names, own_options, workload_and_run_options
from bench.config.options import RUN_OPTIONS
from bench.util.errors import UsageError

# The ladder sets these itself, rung by rung (bench.config.options's `ladder_sets`).
_SET_BY_THE_LADDER = tuple(flag for o in RUN_OPTIONS if o.ladder_sets for flag in o.flags)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "ladder",
        help="climb the Xeon CPU study's ladder: each optimisation on top of the best so far",
    )
    workload_and_run_options(
        p,
        "bench run options (--device, --batch-size for the sweep, default 32,64,128,256; "
        "--repeats, default 3; --steps, --instance, ...)",
    )
    add_resume(p, "bench ladder")
    p.set_defaults(func=cmd_ladder)


def cmd_ladder(args: argparse.Namespace) -> int:
    from bench.commands import run_options, running
    from bench.search.ladder import DEFAULT_BATCHES, LadderRunner

    known, options = own_options("bench ladder", args, "--resume")
    given = option_names(options)
    for name in given:
        if name in _SET_BY_THE_LADDER:
            raise UsageError(
                f"{name}: the ladder sets it, rung by rung; to sweep it yourself, use bench run"
            )
    parsed = run_options.parse_run([args.workload, *options])
    if not parsed.batch_size:
        parsed.batch_size = DEFAULT_BATCHES
    if "--repeats" not in given:
        parsed.repeats = 3  # intervals to decide each rung on
    config = run_options.config_from_args(parsed)
    return running.run_and_print(config, parsed, known.resume, runner_class=LadderRunner)[0]
