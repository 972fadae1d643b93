"""One SkyPilot task per fleet target: what `bench fleet plan` writes and `bench fleet
launch` hands to SkyPilot. Nothing here talks to a cloud.

The task starts SkyPilot's own VM image (it has Docker and, on GPU machines, the NVIDIA
container toolkit) and runs the bench image there with `docker run`, exactly as a person
runs it by hand: its entrypoint, user and environment (the image's provenance) as built.
The image is not the task's `image_id`: SkyPilot would install an SSH server and more
into it with apt and log in as its user, and a TPU is reached from the VM anyway.

Results go to /bench-results/TARGET on the machine. With a bucket, each command's files
are copied into the bucket (mounted at /bench-bucket) as soon as it ends, failed or not;
with a local folder, `bench fleet collect` copies them back with rsync.

A target of several nodes trains over the network: its nodes share a secret
(BENCH_RDZV_TOKEN) that SkyPilot hands them as a task secret at launch, never written in
the task file, and `docker run -e BENCH_RDZV_TOKEN` passes it on by name.
"""

from __future__ import annotations

import re
import secrets
import shlex
from typing import Any

from bench.fleet.config import Fleet, Target
from bench.parallel.ranks import TOKEN_ENV
from bench.result import catalog
from bench.util.errors import UsageError

RESULTS = "/bench-results"  # on the machine
BUCKET = "/bench-bucket"  # where the bucket is mounted
CONTAINER_RESULTS = "/results"  # the image's own results folder (BENCH_OUTPUT_DIR)
RDZV_PORT = 29500


def price_key(target: Target) -> str | None:
    """The name bench's price catalogue knows this target by (its instance type, or a
    TPU's accelerator name), if it knows it."""
    known = catalog.instances()
    for key in (target.instance_type, target.accelerators):
        if key and key in known:
            return key
    return None


def price_per_hour(target: Target) -> tuple[float | None, str]:
    """USD per hour for the whole target (all its nodes), and where that comes from."""
    if target.price_per_hour is not None:
        return target.price_per_hour * target.nodes, "the fleet file"
    key = price_key(target)
    if key is None:
        return None, "not in bench's price catalogue: set price_per_hour"
    try:
        priced = catalog.pricing(key, None)  # what the run records with --instance
    except UsageError as error:  # known, but with no on-demand price
        return None, str(error)
    assert priced is not None  # an instance was named
    return priced["usd_per_hour"] * target.nodes, f"catalogue: {key}, {priced['date']}"


def _device_args(target: Target) -> list[str]:
    """What `docker run` needs to reach the target's accelerators."""
    accelerator = (target.accelerators or "").lower()
    if not accelerator:
        return []  # a CPU machine
    if target.tpu:
        return ["--privileged"]  # /dev/accel* and the TPU runtime's own needs
    if accelerator.startswith("mi"):  # AMD Instinct: bench:rocm
        return ["--device", "/dev/kfd", "--device", "/dev/dri", "--group-add", "video"]
    return ["--gpus", "all"]


def bench_arguments(target: Target) -> list[list[str]]:
    """Each command's bench arguments with what the fleet sets: where results go and
    the price (per machine: bench multiplies by --nnodes itself)."""
    extra = ["--output-dir", f"{CONTAINER_RESULTS}/{target.name}"]
    key = price_key(target)
    if target.price_per_hour is not None:
        extra += ["--price-per-hour", repr(target.price_per_hour)]
    elif key is not None:
        extra += ["--instance", key]
    return [[*argv, *extra] for argv in target.commands]


def run_script(fleet: Fleet, target: Target) -> str:
    here = f"{RESULTS}/{target.name}"
    # Several nodes: the run's secret, from the task's environment (a SkyPilot secret),
    # passed by name so that its value is on no command line.
    secret = ["-e", TOKEN_ENV] if target.nodes > 1 else []
    docker = [
        "sudo", "docker", "run", "--rm", "--net", "host", "--ipc", "host", *secret,
        *_device_args(target), "-v", f"{here}:{CONTAINER_RESULTS}/{target.name}", target.image,
    ]  # fmt: skip
    lines = ["status=0"]
    if target.nodes > 1:
        # SkyPilot's environment: every node's IP (the head's first) and this node's rank.
        lines.append('HEAD_IP=$(echo "$SKYPILOT_NODE_IPS" | head -n1)')
    for argv in bench_arguments(target):
        line = shlex.join([*docker, *argv])
        if target.nodes > 1:
            line += (
                ' --nnodes "$SKYPILOT_NUM_NODES" --node-rank "$SKYPILOT_NODE_RANK"'
                f' --rdzv-endpoint "$HEAD_IP:{RDZV_PORT}"'
            )
        lines.append(f"{line} || status=$?")
        if fleet.bucket:  # node 0 writes the result; the others have nothing to copy
            lines.append(
                f"mkdir -p {BUCKET}/{target.name} && cp -a {here}/. {BUCKET}/{target.name}/"
            )
    lines.append("exit $status")
    return "\n".join(lines) + "\n"


def task(fleet: Fleet, target: Target) -> dict[str, Any]:
    """The SkyPilot task (as its YAML holds it) for one target."""
    resources: dict[str, Any] = {}
    for key in ("accelerators", "instance_type", "cloud", "region"):
        value = getattr(target, key)
        if value is not None:
            resources[key] = value
    if target.tpu:
        resources["accelerator_args"] = {"runtime_version": "tpu-vm-base"}
    here = f"{RESULTS}/{target.name}"
    spec: dict[str, Any] = {
        "name": job_name(fleet, target),
        "num_nodes": target.nodes,
        "resources": resources,
        # The image's user (uid 10001) writes the results; pulled before the clock starts.
        "setup": f"sudo mkdir -p {here} && sudo chmod 1777 {here}\n"
        f"sudo docker pull {shlex.quote(target.image)}\n",
        "run": run_script(fleet, target),
    }
    if fleet.bucket:
        # MOUNT_CACHED: files written are uploaded, and kept when the machine goes.
        spec["file_mounts"] = {BUCKET: {"source": fleet.results, "mode": "MOUNT_CACHED"}}
    return spec


def job_name(fleet: Fleet, target: Target) -> str:
    """The task's name: the fleet's and the target's."""
    return f"{fleet.name}-{target.name}"


def launch_name(fleet: Fleet, target: Target) -> str:
    """A name for one launch of a target's cluster or managed job: the task's name and a
    random suffix, so that two fleets of one name (two people, two folders) never share
    a cluster, and tearing one down never touches another's."""
    return f"{job_name(fleet, target)}-{secrets.token_hex(3)}"


def launch_pattern(fleet: Fleet, target: Target) -> re.Pattern[str]:
    """What launch_name makes for `target`: a state's cluster or job name must match it
    whole to be taken for one of this fleet's own."""
    return re.compile(re.escape(f"{job_name(fleet, target)}-") + "[0-9a-f]{6}")


def sky_command(fleet: Fleet, target: Target, yaml_path: str, name: str) -> str:
    """What a person would type to launch the same task by hand, as `name`; several
    nodes take the secret from the person's environment (--secret NAME, no value)."""
    secret = ["--secret", TOKEN_ENV] if target.nodes > 1 else []
    if fleet.bucket:
        return shlex.join(["sky", "jobs", "launch", "-n", name, *secret, yaml_path])
    return shlex.join(["sky", "launch", "-c", name, *secret, yaml_path])
