"""`bench fleet plan|launch|status|down|collect FLEET.toml`: one benchmark on many cloud
machines through SkyPilot, its results gathered and compared.

    plan      write one SkyPilot task YAML per target and show what launching would do
    launch    launch what has not finished and does not run (needs bench[fleet])
    status    each target's state as SkyPilot sees it
    down      cancel the jobs, tear down the clusters (only those its launch recorded)
    collect   copy the results here, say which target has none, compare and report
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.table import Table

from bench.commands.options import require_extra
from bench.fleet import config, gather, launch, tasks
from bench.parallel.ranks import TOKEN_ENV
from bench.report.table import console
from bench.util import files
from bench.util.errors import UsageError
from bench.util.text import plain


def check_command(argv: list[str]) -> None:
    """A fleet's command, parsed as `bench` parses it (run or suite); the options the
    fleet sets per target are refused."""
    from bench import registry
    from bench.commands import run_options
    from bench.commands.options import option_names
    from bench.commands.suite import suites

    if not argv:
        raise UsageError("no command: give run WORKLOAD ... or suite NAME ...")
    for option in option_names(argv):
        if option in config.FLEET_OPTIONS:
            raise UsageError(f"{option} is set by the fleet per target")
    if argv[0] == "suite":
        if len(argv) < 2 or argv[1] not in suites():
            raise UsageError(f"unknown suite; choose from: {', '.join(suites())}")
        run_options.parse_run(["tiny", *argv[2:]])  # its run options
    else:
        registry.workload(run_options.parse_run(argv[1:]).workload)


def load(path: Path) -> config.Fleet:
    """The fleet file, its commands checked by bench's own parser."""
    return config.load(path, check_command)


def register(sub: Any) -> None:
    fleet = sub.add_parser("fleet", help="run benchmarks on cloud machines through SkyPilot")
    actions = fleet.add_subparsers(dest="action", required=True, metavar="ACTION")
    helps = {
        "plan": "write the SkyPilot tasks and show what would run, and its price",
        "launch": "launch every target not finished or running (pip install 'bench[fleet]')",
        "status": "each target's state in SkyPilot",
        "down": "cancel the fleet's jobs and tear down its clusters",
        "collect": "copy the results here, check each target has one, compare and report",
    }
    for action, text in helps.items():
        p = actions.add_parser(action, help=text, description=text)
        p.add_argument("fleet", type=Path, help="the fleet file (TOML; see fleets/)")
        if action in ("plan", "launch"):
            p.add_argument(
                "--tasks",
                type=Path,
                help="folder for the task YAML files (default: FLEET.tasks beside the file)",
            )
        if action == "collect":
            p.add_argument(
                "--no-fetch",
                action="store_true",
                help="compare what is already in the results folder; copy nothing",
            )
        p.set_defaults(func=globals()[f"cmd_{action}"])


def _tasks_dir(args: argparse.Namespace, fleet: config.Fleet) -> Path:
    return args.tasks or fleet.path.with_name(f"{fleet.path.stem}.tasks")


def write_tasks(fleet: config.Fleet, folder: Path) -> dict[str, Path]:
    """One YAML per target in `folder`, each written atomically."""
    require_extra("fleet plan", "yaml", extra="fleet")
    import yaml

    class Dumper(yaml.SafeDumper):
        """Scripts as YAML block text (run: |), as people write SkyPilot tasks."""

    def text_block(dumper: yaml.SafeDumper, text: str) -> yaml.Node:
        style = "|" if "\n" in text else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)

    Dumper.add_representer(str, text_block)
    files.require_writable_dir(folder, "tasks")
    written = {}
    for target in fleet.targets:
        path = folder / f"{target.name}.yaml"
        spec = tasks.task(fleet, target)
        text = yaml.dump(spec, Dumper=Dumper, sort_keys=False, width=1000)
        files.replace(path, f"# bench fleet {fleet.name}: target {target.name}\n{text}")
        written[target.name] = path
    return written


def cmd_plan(args: argparse.Namespace) -> int:
    fleet = load(args.fleet)
    written = write_tasks(fleet, _tasks_dir(args, fleet))
    table = Table(title=plain(f"fleet {fleet.name}: nothing launched"), title_justify="left")
    for column in ("target", "image", "machine", "nodes", "USD/hour"):
        table.add_column(column)
    unpinned = []
    for target in fleet.targets:
        price, source = tasks.price_per_hour(target)
        machine = " ".join(x for x in (target.accelerators, target.instance_type) if x)
        where = "/".join(x for x in (target.cloud, target.region) if x)
        if not target.pinned:
            unpinned.append(target.name)
        table.add_row(
            plain(target.name),
            plain(target.image + ("" if target.pinned else " (NOT pinned)")),
            plain(f"{machine} {where}".strip()),
            str(target.nodes),
            plain(f"{price:.2f} ({source})" if price is not None else f"- ({source})"),
        )
    out = console()
    out.print(table)
    out.print("launch by hand (or: bench fleet launch), each under a name of its own:")
    for target in fleet.targets:
        name = tasks.launch_name(fleet, target)
        out.print(plain("  " + tasks.sky_command(fleet, target, str(written[target.name]), name)))
    several = [target.name for target in fleet.targets if target.nodes > 1]
    if several:
        out.print(
            plain(
                f"several nodes ({', '.join(several)}): by hand, export the same secret "
                f"first: export {TOKEN_ENV}=$(python3 -c 'import secrets; "
                "print(secrets.token_hex(32))'); bench fleet launch makes one if it is unset"
            )
        )
    out.print(plain(f"results: {fleet.results}; baseline: {fleet.baseline or 'none'}"))
    if unpinned:
        out.print(
            plain(
                f"images not pinned by digest ({', '.join(unpinned)}): a rerun may get another "
                "image; push the image and name it IMAGE@sha256:..."
            )
        )
    return 0


def cmd_launch(args: argparse.Namespace) -> int:
    fleet = load(args.fleet)
    folder = _tasks_dir(args, fleet)
    write_tasks(fleet, folder)
    out = console()
    launch.launch(fleet, folder, lambda line: out.print(plain(f"fleet {fleet.name}: {line}")))
    out.print(plain(f"follow it: bench fleet status {args.fleet}"))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    fleet = load(args.fleet)
    table = Table(title=plain(f"fleet {fleet.name}"), title_justify="left")
    table.add_column("target")
    table.add_column("state")
    for name, state in launch.statuses(fleet).items():
        table.add_row(plain(name), plain(state))
    console().print(table)
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    fleet = load(args.fleet)
    out = console()
    launch.down(fleet, lambda line: out.print(plain(line)))
    return 0


def cmd_collect(args: argparse.Namespace) -> int:
    """Exit 0 when every target has a result; 1 when some have none (the others are
    still compared)."""
    from bench.commands import compare

    fleet = load(args.fleet)
    out = console()
    folder = gather.local_folder(fleet)
    failed = []
    if not args.no_fetch:
        commands = gather.fetch_commands(fleet, launch.load_state(fleet))
        failed = gather.fetch(commands, lambda line: out.print(plain(f"copying: {line}")))
    found, problems = gather.results_by_target(fleet)
    for line in failed + problems:
        out.print(plain(f"fleet {fleet.name}: {line}"))
    missing = [name for name, paths in found.items() if not paths]
    for name in missing:
        out.print(plain(f"fleet {fleet.name}: target {name} has no result in {folder / name}"))
    present = [path for paths in found.values() for path in paths]
    if not present:
        raise UsageError(f"fleet {fleet.name}: no result files in {folder}")
    baseline = found.get(fleet.baseline or "", [])
    # The baseline by one of its files: the column is the machine that file ran on.
    selector = str(baseline[0]) if baseline else None
    if fleet.baseline and not baseline:
        out.print(plain(f"fleet {fleet.name}: the baseline {fleet.baseline} has no result"))
    common = {"paths": [str(folder)], "price": [], "baseline": selector}
    compare.cmd_compare(argparse.Namespace(**common, format="table", output=None))
    try:
        require_extra("report", "altair", "vl_convert")
    except UsageError as error:
        out.print(plain(f"no report: {error}"))
    else:
        report = folder / "report"
        compare.cmd_report(
            argparse.Namespace(
                **common,
                output=report,
                train_epochs=compare.TRAIN_EPOCHS,
                train_tokens=compare.TRAIN_TOKENS,
            )
        )
    return 1 if missing or failed else 0
