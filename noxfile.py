"""Sessions for developing and packaging bench: `nox -l` lists them, `nox -s NAME` runs one.

Images are the folders under images/ with an image.toml, all built from
images/common/Dockerfile; adding a folder adds its sessions. Nothing here runs Docker at import
time, so `nox -l` works on any machine. Options for the image sessions come from
environment variables (named in each docstring) so that make and CI can pass them.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import tomllib
from pathlib import Path
from typing import Any

import nox

nox.options.sessions = ["lint", "tests"]
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True

ROOT = Path(__file__).parent
IMAGES_DIR = ROOT / "images"
IMAGES = sorted(p.parent.name for p in IMAGES_DIR.glob("*/image.toml"))
DOCKERFILE = IMAGES_DIR / "common" / "Dockerfile"
CONSTRAINTS = ("-c", "constraints.txt")
PYTHON_SOURCES = ("bench", "tests", "benchmarks", "noxfile.py")


def _pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _image(name: str) -> dict[str, Any]:
    return tomllib.loads((IMAGES_DIR / name / "image.toml").read_text())


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else ""


def _public_url(url: str) -> str:
    """A remote URL without its user and password (a CI token) before it goes in a label."""
    return re.sub(r"^([a-z+]+://)[^/@]*@", r"\1", url)


def _inspect(ref: str) -> dict[str, Any]:
    """`docker image inspect REF`, parsed; {} when there is no such image."""
    done = subprocess.run(["docker", "image", "inspect", ref], capture_output=True, text=True)
    return json.loads(done.stdout)[0] if done.returncode == 0 else {}


def _require_docker(session: nox.Session) -> None:
    if shutil.which("docker") is None:
        session.error("docker is not installed")
    if subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
        session.error("no Docker engine answers (start dockerd, or check permissions)")


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite on the CPU (real training in child processes included)."""
    # tensorflow-cpu, not the [tensorflow] extra: the same TensorFlow without 600 MB of
    # CUDA libraries that a CPU test run never loads.
    session.install("-e", ".[torch,jax,report,dev,xeon]", "tensorflow-cpu", "keras", *CONSTRAINTS)
    session.run("pytest", *session.posargs, env={"PYTHONUNBUFFERED": "1"})


@nox.session
def lint(session: nox.Session) -> None:
    """ruff (format and lint), mypy on the package, hadolint on every Dockerfile."""
    session.install("-e", ".[torch,report,dev]", *CONSTRAINTS)  # mypy checks against torch
    session.run("ruff", "format", "--check", *PYTHON_SOURCES)
    session.run("ruff", "check", *PYTHON_SOURCES)
    session.run("mypy")
    session.run("hadolint", str(DOCKERFILE))


@nox.session(default=False)
def overhead(session: nox.Session) -> None:
    """Print bench's resnet50 throughput next to a bare PyTorch loop (not a test)."""
    session.install("-e", ".[torch]", *CONSTRAINTS)
    session.run("python", "benchmarks/overhead.py", *session.posargs)


@nox.session(python=False, default=False)
@nox.parametrize("image", IMAGES)
def lock(session: nox.Session, image: str) -> None:
    """Re-lock images/IMAGE/requirements.in with hashes (uv; reproducible by date)."""
    settings, meta = _pyproject()["tool"]["bench"]["images"], _image(image)
    folder = IMAGES_DIR / image
    session.run(
        "uv", "pip", "compile", str(folder / "requirements.in"),
        "--generate-hashes", "--no-header", "--native-tls",
        "--python-version", meta["python"], "--python-platform", meta["platform"],
        # Only what was published before this date: the same lock next year.
        "--exclude-newer", settings["exclude-newer"],
        "-o", str(folder / "requirements.lock"),
        external=True,
    )  # fmt: skip


@nox.session(python=False, default=False)
def base(session: nox.Session) -> None:
    """Build the Debian base locally with debootstrap (air-gapped sites, CI).

    Env: BENCH_DEBIAN_MIRROR (default http://deb.debian.org/debian). Then build images
    on it with BENCH_BASE_IMAGE=bench-base:bookworm.
    """
    _require_docker(session)
    mirror = os.environ.get("BENCH_DEBIAN_MIRROR", "http://deb.debian.org/debian")
    tag = _pyproject()["tool"]["bench"]["images"]["local-base"]
    session.run(str(IMAGES_DIR / "common" / "make-base.sh"), tag, "bookworm", mirror, external=True)


def _build_args(image: str) -> dict[str, str]:
    """The Dockerfile's arguments: the image's own (image.toml) and its provenance."""
    meta = _image(image)
    lock_file = IMAGES_DIR / image / "requirements.lock"
    epoch = os.environ.get("SOURCE_DATE_EPOCH") or _git("log", "-1", "--format=%ct") or "0"
    dirty = "-dirty" if _git("status", "--porcelain", "--untracked-files=no") else ""
    args = {
        "VARIANT": image,
        "BENCH_DEVICE": meta["device"],
        "BENCH_FRAMEWORK": meta.get("framework", "torch"),
        "DESCRIPTION": f"Deep-learning training benchmarks. {meta['description']}",
        "BASE_IMAGE": meta["base"],
        "BASE_DIGEST": meta["base"].partition("@")[2],
        "BENCH_VERSION": _pyproject()["project"]["version"],
        "BENCH_GIT_COMMIT": (_git("rev-parse", "HEAD") or "unknown") + dirty,
        "BENCH_LOCK_SHA256": _sha256(lock_file),
        "BENCH_SOURCE": _public_url(_git("remote", "get-url", "origin")),
        "SOURCE_DATE_EPOCH": epoch,
        "BUILD_DATE": dt.datetime.fromtimestamp(int(epoch), dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    local_base = os.environ.get("BENCH_BASE_IMAGE")
    if local_base and meta["base"].startswith("debian:"):  # a local stand-in for Debian's
        args["BASE_IMAGE"], args["BASE_DIGEST"] = local_base, _inspect(local_base).get("Id", "")
    if os.environ.get("BENCH_DEBIAN_MIRROR"):
        args["DEBIAN_MIRROR"] = os.environ["BENCH_DEBIAN_MIRROR"]
    return args


@nox.session(python=False, default=False)
@nox.parametrize("image", IMAGES)
def build(session: nox.Session, image: str) -> None:
    """Build bench:IMAGE from its lock (classic builder or BuildKit; never pulls).

    Env: BENCH_BASE_IMAGE (a local Debian base instead of the pinned digest, for the
    Debian-based images), BENCH_DEBIAN_MIRROR (default: the
    dated Debian snapshot), BENCH_CA_BUNDLE (extra CA file for a TLS-intercepting proxy).
    """
    _require_docker(session)
    ca_dir = IMAGES_DIR / "common" / "ca"
    staged = ca_dir / "extra-ca.crt"
    if os.environ.get("BENCH_CA_BUNDLE"):
        shutil.copyfile(os.environ["BENCH_CA_BUNDLE"], staged)
    try:
        build_args = [f"--build-arg={k}={v}" for k, v in _build_args(image).items()]
        session.run(
            "docker", "build", "-f", str(DOCKERFILE),
            "-t", f"bench:{image}", *build_args, str(ROOT),
            external=True,
        )  # fmt: skip
    finally:
        staged.unlink(missing_ok=True)


def _run_args(image: str, results: Path, *, devices: bool = True) -> list[str]:
    """docker run flags: results volume, no network, read-only root, and (with
    `devices`) the image's device flags, e.g. --gpus all."""
    results.mkdir(parents=True, exist_ok=True)
    image_id = _inspect(f"bench:{image}").get("Id", "")
    user = []
    if os.getuid() != 0:  # files in ./results belong to whoever ran nox
        user = ["--user", f"{os.getuid()}:{os.getgid()}"]
    else:  # root on the host: the image's own unprivileged user writes the results
        results.chmod(0o777)
    # RAPL counters for CPU and DRAM energy, read-only, where the host has them.
    powercap = Path("/sys/class/powercap")
    rapl = ["-v", f"{powercap}:{powercap}:ro"] if powercap.is_dir() else []
    meta = _image(image)
    # No network, unless the device needs the host's (TPU VMs: Google's flags for
    # containers, given with the device flags in image.toml).
    network = meta.get("network", "none") if devices else "none"
    return [
        "--rm", "--pull", "never", "--network", network, "--read-only",
        "--tmpfs", "/tmp:exec",  # torch.compile writes its kernels there
        "--shm-size", meta.get("shm_size", "2g"),  # DataLoader workers use /dev/shm
        "-v", f"{results.resolve()}:/results", "-e", f"BENCH_IMAGE_DIGEST={image_id}",
        *rapl,
        *user, *(meta["run_args"] if devices else []),
    ]  # fmt: skip


@nox.session(python=False, default=False)
@nox.parametrize("image", IMAGES)
def run(session: nox.Session, image: str) -> None:
    """Run bench in bench:IMAGE: nox -s "run(image='cuda')" -- resnet50 --batch-size 64."""
    _require_docker(session)
    results = Path(os.environ.get("BENCH_RESULTS", ROOT / "results"))
    args = session.posargs or ["list"]
    session.run("docker", "run", *_run_args(image, results), f"bench:{image}", *args, external=True)


@nox.session(python=False, default=False)
@nox.parametrize("image", IMAGES)
def smoke(session: nox.Session, image: str) -> None:
    """Smoke-test bench:IMAGE on the CPU: two resnet50 steps in the image's framework, then
    check the result file; without --device cpu, a GPU or TPU image must refuse clearly."""
    _require_docker(session)
    results = Path(tempfile.mkdtemp(prefix=f"bench-smoke-{image}-"))
    meta = _image(image)
    gpu_image = meta["device"] != "cpu"  # a GPU or TPU image
    # No device flags: this host may have no GPU runtime (and that is the case to test).
    # A CPU image's flags are its own (bench:xeon's CAP_SYS_NICE for numactl): kept.
    run = ["docker", "run", *_run_args(image, results, devices=not gpu_image), f"bench:{image}"]
    steps = ["resnet50", "--batch-size", "2", "--warmup-steps", "1", "--steps", "2"]
    session.run(*run, *steps, *(["--device", "cpu"] if gpu_image else []), external=True)
    (result_file,) = results.glob("*.json")
    data = json.loads(result_file.read_text())
    labels = _inspect(f"bench:{image}")["Config"]["Labels"] or {}
    lock_sha = _sha256(IMAGES_DIR / image / "requirements.lock")
    recorded = data["environment"]["image"]
    checks = {
        "every point measured": all(p["status"] == "ok" for p in data["points"]),
        "image name": recorded["name"] == f"bench:{image}",
        "image variant": recorded["variant"] == image,
        "lock hash": recorded["lock_sha256"] == lock_sha,
        "image digest": (recorded["digest"] or "").startswith("sha256:"),
        "git commit": bool(data["environment"]["bench"]["git_commit"]),
        "framework": data["environment"]["framework"]["name"] == meta.get("framework", "torch"),
        "label lock hash": labels.get("dev.bench.lock.sha256") == lock_sha,
        "label created": labels.get("org.opencontainers.image.created", "").endswith("Z"),
    }
    # What the image's launcher sets as the runtime axes' defaults (image.toml [runtime]):
    # every point's child ran with it, the libraries preloaded and the binding applied.
    for point in data["points"]:
        applied = point.get("runtime") or {}
        preload = applied.get("ld_preload") or ""
        for axis, value in meta.get("runtime", {}).items():
            checks[f"{axis} {value}"] = point.get(axis) == value
        library = {"tcmalloc": "libtcmalloc", "jemalloc": "libjemalloc"}
        if point.get("allocator") in library:
            checks["allocator preloaded"] = library[point["allocator"]] in preload
        if point.get("openmp") == "intel":
            checks["Intel OpenMP preloaded"] = "libiomp5" in preload
        if point.get("numa") == "on":
            checks["NUMA bound"] = bool(applied.get("numa_binding"))
    session.log(json.dumps(checks))
    if not all(checks.values()):
        session.error(f"bench:{image}: failed checks: {[k for k, ok in checks.items() if not ok]}")
    if gpu_image:  # without --device: refuse clearly, and name the device flag to add
        done = subprocess.run([*run, *steps], capture_output=True, text=True)
        session.log(done.stderr.strip())
        if done.returncode == 0 or meta["run_args"][0] not in done.stderr + done.stdout:
            session.error(f"bench:{image} without its device did not refuse clearly")
    smoke_ranks = meta.get("smoke_ranks", True)  # false: a known issue, in image.toml
    if (
        smoke_ranks
        and meta.get("framework", "torch") == "torch"
        and len(os.sched_getaffinity(0)) >= 2
    ):
        # Data parallel in the image as users run it (no network, read-only root):
        # torchrun's two gloo ranks meet over loopback and report one point.
        ranks = Path(tempfile.mkdtemp(prefix=f"bench-smoke-{image}-ranks-"))
        run = ["docker", "run", *_run_args(image, ranks, devices=not gpu_image), f"bench:{image}"]
        two = [
            "tiny",
            "--device",
            "cpu",
            "--devices",
            "2",
            "--batch-size",
            "16",
            "--steps",
            "3",
            "--timeout",
            "300",
        ]  # a hang fails the check instead of blocking CI
        session.run(*run, *two, external=True)
        (point,) = json.loads(next(ranks.glob("*.json")).read_text())["points"]
        session.log(f"two ranks: status {point['status']}, devices {point['devices']}")
        if point["status"] != "ok" or point["devices"] != 2:
            session.error(f"bench:{image}: two CPU ranks did not train one point")
        shutil.rmtree(ranks, ignore_errors=True)
    shutil.rmtree(results, ignore_errors=True)


@nox.session(default=False)
def collect(session: nox.Session) -> None:
    """Merge result JSON files under a folder into one CSV and a Markdown summary.

    nox -s collect -- [FOLDER (default results)] [OUTPUT PREFIX (default results/summary)]
    """
    session.install("-e", ".[report]", *CONSTRAINTS)
    folder = session.posargs[0] if session.posargs else "results"
    prefix = session.posargs[1] if len(session.posargs) > 1 else f"{folder}/summary"
    session.run("bench", "collect", folder, "-o", prefix)


@nox.session(python=False, default=False)
@nox.parametrize("image", IMAGES)
def save(session: nox.Session, image: str) -> None:
    """docker save bench:IMAGE to dist/ with its sha256 and a manifest (digest, lock hash).

    The archive loads years later (docker load) after a registry has dropped the tags.
    """
    _require_docker(session)
    inspect = _inspect(f"bench:{image}")
    if not inspect:
        session.error(f"no image bench:{image}; build it first")
    labels = inspect["Config"]["Labels"] or {}
    dist = ROOT / "dist"
    dist.mkdir(exist_ok=True)
    version = labels.get("org.opencontainers.image.version", "unknown")
    stem = f"bench-{image}-{version}-{inspect['Id'][7:19]}"
    archive = dist / f"{stem}.tar.gz"
    session.run("sh", "-c", f"docker save bench:{image} | gzip -1 > {archive}", external=True)
    digest = _sha256(archive)
    (dist / f"{archive.name}.sha256").write_text(f"{digest}  {archive.name}\n")
    manifest = {
        "archive": archive.name,
        "archive_sha256": digest,
        "image": f"bench:{image}",
        "image_id": inspect["Id"],
        "repo_digests": inspect.get("RepoDigests", []),
        "lock_sha256": labels.get("dev.bench.lock.sha256"),
        "labels": labels,
        "load_with": f"docker load -i {archive.name}",
    }
    (dist / f"{stem}.manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    session.log(f"{archive} ({archive.stat().st_size / 2**30:.2f} GiB), sha256 {digest}")
