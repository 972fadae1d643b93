"""Launch, follow and stop a fleet through SkyPilot's Python SDK (`bench[fleet]`).

With a bucket each target is a managed job (`sky.jobs.launch`: SkyPilot starts the
machine, recovers it if it is taken away, and stops it when the job ends). With a local
folder each target is a cluster (`sky.launch`) that stays up until `bench fleet down`,
so that `bench fleet collect` can copy its results back.

What was launched is kept in FLEET.state.json beside the fleet file (written
atomically), so launching again never starts twice a target that finished or still
runs: only those that failed, were cancelled or never started. Each launch has a name
of its own (the fleet's, the target's and a random suffix), recorded there before
SkyPilot is asked, so two fleets of one name never share a cluster and `down` tears
down only the clusters and jobs this state recorded.

The state is untrusted: anyone who can write beside the fleet file can plant one, and it
decides what `down` stops and where `collect` copies. It is read with a size bound and
every field is checked against the fleet file (see State) before SkyPilot or rsync sees it,
and a recorded job id counts as this fleet's only where SkyPilot's own queue gives that job
the recorded name (a planted state can name anyone's job id).

A target of several nodes gets the nodes' shared secret (BENCH_RDZV_TOKEN) as a
SkyPilot secret: the launching user's own if set, else a fresh random one per launch.
It is written nowhere: not in the task file, the state or a result.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.fleet import tasks
from bench.fleet.config import Fleet, Target, read_bounded, shown
from bench.parallel.ranks import TOKEN_ENV, rdzv_token
from bench.util import files
from bench.util.errors import UsageError

STATE_KIND = "bench-fleet-state"
# A managed job in one of these is left alone by a second launch.
LIVE_OR_DONE = {
    "PENDING", "SUBMITTED", "STARTING", "RUNNING", "WINDING_DOWN", "RECOVERING", "CANCELLING",
    "SUCCEEDED",
}  # fmt: skip
CLUSTER_UP = {"INIT", "UP", "STOPPED", "AUTOSTOPPING", "PENDING"}
_LAUNCHED_KEYS = ("cluster", "job_id", "name", "yaml")  # what _launch_one records
MAX_JOB_ID = 2**63 - 1


def state_path(fleet: Fleet) -> Path:
    return fleet.path.with_name(f"{fleet.path.stem}.state.json")


def _brief(value: Any) -> str:
    """`value` for a one-line message: its repr, control characters escaped, cut short."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _refused(fleet: Fleet, problem: str) -> UsageError:
    return UsageError(f"{shown(state_path(fleet))}: {problem}")


def _unknown(data: dict[str, Any], known: tuple[str, ...]) -> str:
    """What to say of keys not in `known` ('' when there are none)."""
    unknown = ", ".join(sorted(set(data) - set(known)))
    return f"unknown key(s) {_brief(unknown)}; allowed: {', '.join(known)}" if unknown else ""


@dataclass(frozen=True)
class State:
    """What FLEET.state.json holds: target name -> what was launched for it, a managed
    job ({"job_id": N, "name": NAME, "yaml": PATH}) or a cluster ({"cluster": NAME,
    "yaml": PATH}). Only the fleet file's own targets, only names of the fleet's own
    launch pattern (FLEET-TARGET-xxxxxx), only job ids that are whole numbers >= 0."""

    fleet: Fleet
    targets: dict[str, dict[str, Any]]

    def __post_init__(self) -> None:
        own = {target.name: target for target in self.fleet.targets}
        if not isinstance(self.targets, dict):
            raise _refused(
                self.fleet, f"targets: {_brief(self.targets)} is not allowed; use an object"
            )
        for key, launched in self.targets.items():
            if key not in own:
                raise _refused(
                    self.fleet,
                    f"{_brief(key)} is not a target of fleet {self.fleet.name!r}; "
                    f"allowed: {', '.join(own)}",
                )
            problem = _launched_problem(self.fleet, own[key], launched)
            if problem:
                raise _refused(self.fleet, f"target {key!r}{problem}")

    @classmethod
    def read(cls, fleet: Fleet) -> State:
        path = state_path(fleet)
        if not path.exists():
            return cls(fleet, {})
        text = read_bounded(path, "a fleet's state file")
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            raise _refused(fleet, "not JSON; move it away to start afresh") from None
        if not isinstance(data, dict):
            raise _refused(fleet, f"{_brief(data)} is not allowed; use a JSON object")
        if _unknown(data, ("fleet", "kind", "targets")):
            raise _refused(fleet, _unknown(data, ("fleet", "kind", "targets")))
        if (
            data.get("kind") != STATE_KIND
            or data.get("fleet") != fleet.name
            or "targets" not in data
        ):
            raise _refused(
                fleet, f"not the state of fleet {fleet.name!r}; move it away to start afresh"
            )
        return cls(fleet, data["targets"])  # checked in __post_init__

    def save(self) -> None:
        data = {"kind": STATE_KIND, "fleet": self.fleet.name, "targets": self.targets}
        files.replace(state_path(self.fleet), json.dumps(data, indent=1, sort_keys=True) + "\n")


def _launched_problem(fleet: Fleet, target: Target, launched: Any) -> str:
    """What is wrong with what the state says was launched for `target` ('' if nothing)."""
    if not isinstance(launched, dict):
        return f": {_brief(launched)} is not allowed; use an object"
    if _unknown(launched, _LAUNCHED_KEYS):
        return f": {_unknown(launched, _LAUNCHED_KEYS)}"
    if ("job_id" in launched) == ("cluster" in launched):
        return ": give one of job_id or cluster"
    pattern = tasks.launch_pattern(fleet, target)
    for key in ("cluster", "name"):
        value = launched.get(key, "")
        if key in launched and not (isinstance(value, str) and pattern.fullmatch(value)):
            return (
                f".{key}: {_brief(value)} is not allowed; use a name this fleet launched: "
                f"{tasks.job_name(fleet, target)}-XXXXXX (6 hex digits)"
            )
    job_id = launched.get("job_id", 0)
    if not isinstance(job_id, int) or isinstance(job_id, bool) or not 0 <= job_id <= MAX_JOB_ID:
        return f".job_id: {_brief(job_id)} is not allowed; use a whole number >= 0"
    path = launched.get("yaml", "")
    if not isinstance(path, str) or not path.isprintable():
        return f".yaml: {_brief(path)} is not allowed; use a task file's path"
    return ""


def load_state(fleet: Fleet) -> dict[str, dict[str, Any]]:
    """Target name -> what was launched for it, checked (State)."""
    return State.read(fleet).targets


def save_state(fleet: Fleet, targets: dict[str, dict[str, Any]]) -> None:
    State(fleet, targets).save()


def _sky() -> Any:
    try:
        import sky
    except ImportError:
        raise UsageError("bench fleet launch needs SkyPilot: pip install 'bench[fleet]'") from None
    return sky


@dataclass(frozen=True)
class Job:
    """A managed job as SkyPilot's own queue reports it."""

    name: str | None
    status: str


def _jobs(sky: Any, job_ids: list[int]) -> dict[int, Job]:
    """Job id -> its name and state in SkyPilot's queue (ids not there are left out)."""
    if not job_ids:
        return {}
    records = sky.get(sky.jobs.queue(refresh=True, job_ids=job_ids))
    jobs = {}
    for record in records:
        status = getattr(record, "status", None)
        if record.job_id is not None and status is not None:
            name = getattr(record, "job_name", None)
            jobs[record.job_id] = Job(name, getattr(status, "value", str(status)))
    return jobs


def _not_ours(launched: dict[str, Any], job: Job) -> str:
    """Why the job SkyPilot reports is not the one this fleet launched ('' if it is): the
    state's job id and name are only what someone wrote there; SkyPilot's name decides."""
    if isinstance(job.name, str) and job.name == launched.get("name"):
        return ""
    return f"SkyPilot names job {launched['job_id']} {_brief(job.name)}"


def _cluster_states(sky: Any, names: list[str]) -> dict[str, str]:
    if not names:
        return {}
    records = sky.get(sky.status(cluster_names=names))
    return {r.name: getattr(r.status, "value", str(r.status)) for r in records}


def statuses(fleet: Fleet) -> dict[str, str]:
    """Each target's state as SkyPilot reports it ('not launched' where none)."""
    return _statuses(_sky(), fleet, load_state(fleet))


def _statuses(sky: Any, fleet: Fleet, state: dict[str, dict[str, Any]]) -> dict[str, str]:
    jobs = _jobs(sky, [s["job_id"] for s in state.values() if "job_id" in s])
    clusters = _cluster_states(sky, [s["cluster"] for s in state.values() if "cluster" in s])
    said = {}
    for target in fleet.targets:
        launched = state.get(target.name, {})
        if "job_id" in launched:
            said[target.name] = _job_status(launched, jobs.get(launched["job_id"]))
        elif "cluster" in launched:
            said[target.name] = clusters.get(launched["cluster"], "gone (no such cluster)")
        else:
            said[target.name] = "not launched"
    return said


def _job_status(launched: dict[str, Any], job: Job | None) -> str:
    if job is None:
        return "gone (not in SkyPilot's queue)"
    not_ours = _not_ours(launched, job)
    return f"not this fleet's ({not_ours})" if not_ours else job.status


def _secret(target: Target, say: Any) -> dict[str, str]:
    """The nodes' shared secret for a target of several nodes (none for one node)."""
    if target.nodes == 1:
        return {}
    if os.environ.get(TOKEN_ENV):
        token = rdzv_token(os.environ, target.nodes)  # checked: one line if too short
        say(f"{target.name}: its {target.nodes} nodes share your {TOKEN_ENV}")
    else:
        token = secrets.token_hex(32)
        say(f"{target.name}: its {target.nodes} nodes share a fresh random {TOKEN_ENV}")
    return {TOKEN_ENV: token}


def _launch_one(
    sky: Any, fleet: Fleet, target: Target, yaml_path: Path, state: dict[str, dict[str, Any]],
    say: Any,
) -> None:  # fmt: skip
    """Launch one target under a name of its own, recorded in `state` (and saved) before
    SkyPilot is asked: a launch that fails half-way leaves a cluster `down` can find."""
    task = sky.Task.from_yaml(str(yaml_path))
    secret = _secret(target, say)
    if secret:
        task.update_secrets(secret)
    name = tasks.launch_name(fleet, target)
    if fleet.bucket:
        job_ids, _ = sky.get(sky.jobs.launch(task, name=name))
        if not job_ids:
            raise UsageError(f"target {target.name!r}: SkyPilot returned no job id")
        state[target.name] = {"job_id": int(job_ids[0]), "name": name, "yaml": str(yaml_path)}
        save_state(fleet, state)
        return
    state[target.name] = {"cluster": name, "yaml": str(yaml_path)}
    save_state(fleet, state)
    sky.get(sky.launch(task, cluster_name=name))


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
        _launch_one(sky, fleet, target, plan_dir / f"{target.name}.yaml", state, say)
        done[target.name] = "launched"
        say(f"{target.name}: launched {state[target.name]}")
    return done


def down(fleet: Fleet, say: Any) -> None:
    """Cancel the managed jobs and tear down the clusters that this fleet's state
    recorded, and nothing else: a cluster of another fleet, even of the same name, has a
    name of its own, and a job is cancelled only where SkyPilot's queue names it as the
    state does. Torn-down clusters leave the state (a launch starts them afresh)."""
    sky = _sky()
    state = load_state(fleet)
    if not state:
        say(f"fleet {fleet.name}: nothing launched")
        return
    _cancel_own_jobs(sky, state, say)
    clusters = {target: s["cluster"] for target, s in state.items() if "cluster" in s}
    existing = _cluster_states(sky, list(clusters.values()))
    for target, name in clusters.items():
        if name in existing:
            sky.get(sky.down(name))
            say(f"tore down cluster {name}")
        else:
            say(f"cluster {name}: already gone")
        del state[target]
        save_state(fleet, state)  # at once: a later failure must not forget this one


def _cancel_own_jobs(sky: Any, state: dict[str, dict[str, Any]], say: Any) -> None:
    """Cancel the recorded jobs that SkyPilot's queue names as recorded; say why each
    other one is left alone (a planted state may name anyone's job id)."""
    launched_jobs = {target: s for target, s in state.items() if "job_id" in s}
    jobs = _jobs(sky, [s["job_id"] for s in launched_jobs.values()])
    own = []
    for target, launched in launched_jobs.items():
        job_id, job = launched["job_id"], jobs.get(launched["job_id"])
        if job is None:
            say(f"{target}: job {job_id} already gone (not in SkyPilot's queue)")
        elif _not_ours(launched, job):
            say(
                f"{target}: job {job_id} is not this fleet's (SkyPilot names it "
                f"{_brief(job.name)}, not {_brief(launched.get('name'))}); left alone"
            )
        else:
            own.append(job_id)
    if own:
        sky.get(sky.jobs.cancel(job_ids=own))
        say(f"cancelled managed jobs {', '.join(map(str, own))}")
