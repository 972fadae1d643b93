"""Launch, follow and stop a fleet through SkyPilot's Python SDK (`bench[fleet]`).

With a bucket each target is a managed job (`sky.jobs.launch`: SkyPilot starts the
machine, recovers it if it is taken away, and stops it when the job ends). With a local
folder each target is a cluster (`sky.launch`) that stays up until `bench fleet down`,
so that `bench fleet collect` can copy its results back.

What was launched is kept in FLEET.state.json beside the fleet file (written
atomically), so launching again never starts twice a target that finished or still
runs: only those that failed, were cancelled or never started.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench import files
from bench.errors import UsageError
from bench.fleet import tasks
from bench.fleet.config import Fleet, Target

STATE_KIND = "bench-fleet-state"
# A managed job in one of these is left alone by a second launch.
LIVE_OR_DONE = {
    "PENDING", "SUBMITTED", "STARTING", "RUNNING", "WINDING_DOWN", "RECOVERING", "CANCELLING",
    "SUCCEEDED",
}  # fmt: skip
CLUSTER_UP = {"INIT", "UP", "STOPPED", "AUTOSTOPPING", "PENDING"}


def state_path(fleet: Fleet) -> Path:
    return fleet.path.with_name(f"{fleet.path.stem}.state.json")


def load_state(fleet: Fleet) -> dict[str, dict[str, Any]]:
    """Target name -> what was launched for it ({"job_id": N} or {"cluster": NAME})."""
    path = state_path(fleet)
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
        if data.get("kind") != STATE_KIND or data.get("fleet") != fleet.name:
            raise ValueError
        targets = data["targets"]
        if not isinstance(targets, dict):
            raise ValueError
    except (OSError, ValueError, KeyError, TypeError):
        raise UsageError(
            f"{path}: not the state of fleet {fleet.name!r}; move it away to start afresh"
        ) from None
    return targets


def save_state(fleet: Fleet, targets: dict[str, dict[str, Any]]) -> None:
    data = {"kind": STATE_KIND, "fleet": fleet.name, "targets": targets}
    files.replace(state_path(fleet), json.dumps(data, indent=1, sort_keys=True) + "\n")


def _sky() -> Any:
    try:
        import sky
    except ImportError:
        raise UsageError("bench fleet launch needs SkyPilot: pip install 'bench[fleet]'") from None
    return sky


def _job_states(sky: Any, job_ids: list[int]) -> dict[int, str]:
    if not job_ids:
        return {}
    records = sky.get(sky.jobs.queue(refresh=True, job_ids=job_ids))
    states = {}
    for record in records:
        status = getattr(record, "status", None)
        if record.job_id is not None and status is not None:
            states[record.job_id] = getattr(status, "value", str(status))
    return states


def _cluster_states(sky: Any, names: list[str]) -> dict[str, str]:
    if not names:
        return {}
    records = sky.get(sky.status(cluster_names=names))
    return {r.name: getattr(r.status, "value", str(r.status)) for r in records}


def statuses(fleet: Fleet) -> dict[str, str]:
    """Each target's state as SkyPilot reports it ('not launched' where none)."""
    return _statuses(_sky(), fleet, load_state(fleet))


def _statuses(sky: Any, fleet: Fleet, state: dict[str, dict[str, Any]]) -> dict[str, str]:
    jobs = _job_states(sky, [s["job_id"] for s in state.values() if "job_id" in s])
    clusters = _cluster_states(sky, [s["cluster"] for s in state.values() if "cluster" in s])
    said = {}
    for target in fleet.targets:
        launched = state.get(target.name, {})
        if "job_id" in launched:
            said[target.name] = jobs.get(launched["job_id"], "gone (not in SkyPilot's queue)")
        elif "cluster" in launched:
            said[target.name] = clusters.get(launched["cluster"], "gone (no such cluster)")
        else:
            said[target.name] = "not launched"
    return said


def _launch_one(sky: Any, fleet: Fleet, target: Target, yaml_path: Path) -> dict[str, Any]:
    task = sky.Task.from_yaml(str(yaml_path))
    name = tasks.job_name(fleet, target)
    if fleet.bucket:
        job_ids, _ = sky.get(sky.jobs.launch(task, name=name))
        if not job_ids:
            raise UsageError(f"target {target.name!r}: SkyPilot returned no job id")
        return {"job_id": int(job_ids[0]), "yaml": str(yaml_path)}
    sky.get(sky.launch(task, cluster_name=name))
    return {"cluster": name, "yaml": str(yaml_path)}


def launch(fleet: Fleet, plan_dir: Path, say: Any) -> dict[str, str]:
    """Launch every target that has not finished and does not run; `say(line)` reports
    each decision as it is made. Returns target -> what was done."""
    sky = _sky()
    state = load_state(fleet)
    now = _statuses(sky, fleet, state)
    done = {}
    for target in fleet.targets:
        current = now.get(target.name, "not launched")
        alive = LIVE_OR_DONE if fleet.bucket else CLUSTER_UP
        if current in alive:
            done[target.name] = f"left alone: {current}"
            say(f"{target.name}: {current} (launched before; not launched again)")
            continue
        say(f"{target.name}: launching ({'managed job' if fleet.bucket else 'cluster'})")
        state[target.name] = _launch_one(sky, fleet, target, plan_dir / f"{target.name}.yaml")
        save_state(fleet, state)  # at once: a later failure must not forget this one
        done[target.name] = "launched"
        say(f"{target.name}: launched {state[target.name]}")
    return done


def down(fleet: Fleet, say: Any) -> None:
    """Cancel the fleet's managed jobs, or tear down its clusters."""
    sky = _sky()
    state = load_state(fleet)
    job_ids = [s["job_id"] for s in state.values() if "job_id" in s]
    if job_ids:
        sky.get(sky.jobs.cancel(job_ids=job_ids))
        say(f"cancelled managed jobs {', '.join(map(str, job_ids))}")
    for name in (s["cluster"] for s in state.values() if "cluster" in s):
        sky.get(sky.down(name))
        say(f"tore down cluster {name}")
    if not state:
        say(f"fleet {fleet.name}: nothing launched")
