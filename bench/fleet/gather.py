"""`bench fleet collect`: bring every target's result files into one local folder
(FOLDER/TARGET/*.json) and say which target produced none.

A local-folder fleet copies each cluster's /bench-results/TARGET back with rsync over
the SSH names SkyPilot sets up for its clusters; a bucket is copied with its cloud's
own tool (aws s3 sync, gcloud storage rsync). Copies only add files: a result already
here is never deleted or truncated by a failed copy.

What a copy writes where comes from the fleet file: the destination is the results
folder's TARGET for a target of the fleet file (a link there that leads elsewhere is
refused), and no value the state gives reaches rsync as an option.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from bench import result
from bench.fleet import tasks
from bench.fleet.config import Fleet, shown
from bench.util import files
from bench.util.errors import UsageError

# The tool that copies a bucket down, per scheme (argv: source, then destination).
_BUCKET_TOOLS = {
    "s3": ["aws", "s3", "sync"],
    "gs": ["gcloud", "storage", "rsync", "--recursive"],
}


def local_folder(fleet: Fleet) -> Path:
    """Where the fleet's results are gathered: the folder itself, or one beside the
    fleet file for a bucket."""
    if fleet.bucket:
        return fleet.path.with_name(f"{fleet.path.stem}-results")
    return Path(fleet.results)


def _rsync(folder: Path, name: str, cluster: str) -> list[str]:
    """The copy of one target's results from its cluster into folder/TARGET."""
    destination = folder / name
    try:
        leads_to = destination.resolve()
    except (OSError, RuntimeError):  # a loop of links
        leads_to = None
    if leads_to is None or not leads_to.is_relative_to(folder.resolve()):
        raise UsageError(
            f"{shown(destination)} leads outside {shown(folder)} (to {shown(leads_to)}); "
            f"target {name!r} is copied only into a folder inside: remove that link"
        )
    source = f"{cluster}:{tasks.RESULTS}/{name}/"
    if source.startswith("-"):
        raise UsageError(
            f"target {name!r}: the cluster {cluster!r} is not allowed; rsync would take it "
            "for an option"
        )
    return ["rsync", "-a", source, str(destination)]


def fetch_commands(fleet: Fleet, state: dict[str, dict]) -> list[list[str]]:
    """The copies to run, in order (nothing to run for a target never launched), for
    the fleet file's own targets only (`state` as launch.load_state checked it)."""
    folder = local_folder(fleet)
    if fleet.bucket:
        scheme = fleet.results.split("://")[0]
        if scheme not in _BUCKET_TOOLS:
            raise UsageError(
                f"bench fleet collect cannot copy {scheme}:// buckets itself; copy "
                f"{fleet.results} into {folder} with your tool, then: bench fleet collect "
                f"{fleet.path} --no-fetch"
            )
        return [[*_BUCKET_TOOLS[scheme], fleet.results.rstrip("/"), str(folder)]]
    return [
        _rsync(folder, target.name, state[target.name]["cluster"])
        for target in fleet.targets
        if "cluster" in state.get(target.name, {})
    ]


def fetch(commands: list[list[str]], say) -> list[str]:
    """Run the copies; returns one line per copy that failed (the others still run)."""
    failed = []
    for argv in commands:
        if shutil.which(argv[0]) is None:
            raise UsageError(
                f"bench fleet collect needs {argv[0]} on PATH to run: {' '.join(argv)}"
            )
        Path(argv[-1]).mkdir(mode=files.FOLDER_MODE, parents=True, exist_ok=True)
        say(" ".join(argv))
        done = subprocess.run(argv, capture_output=True, text=True)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            failed.append(f"{' '.join(argv)}: exit {done.returncode}: {last}")
    return failed


def results_by_target(fleet: Fleet) -> tuple[dict[str, list[Path]], list[str]]:
    """Each target's result files, and one line per file that is not a result (bench's
    own outputs, a suite's state file among them, are passed over)."""
    from bench.report.collect import is_bench_document

    folder = local_folder(fleet)
    found: dict[str, list[Path]] = {}
    problems = []
    for target in fleet.targets:
        found[target.name] = []
        for path in sorted((folder / target.name).glob("*.json")):
            try:  # read once: a result, or one of bench's other outputs
                data = result.read_document(path)
                if not is_bench_document(data):
                    result.from_document(path, data)
                    found[target.name].append(path)
            except UsageError as error:
                problems.append(f"{path}: {error}")
    return found, problems
