"""Sessions for developing and packaging bench: `nox -l` lists them, `nox -s NAME` runs one.
Over 500 lines because nox loads this one file and cannot be relied on to import a sibling.

Images are the folders under images/ with an image.toml, all built from
images/common/Dockerfile; adding a folder adds its sessions. Nothing here runs Docker at import
time, so `nox -l` works on any machine. Options for the image sessions come from
environment variables (named in each docstring) so that make and CI can pass them.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import http.client
import http.server
import ipaddress
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import tarfile
import tempfile
import threading
import tomllib
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nox

sys.path.insert(0, str(Path(__file__).parent))
# bench.result.archive is stdlib only: this checkout's, installed or not.
from bench.result import archive as archives

nox.options.sessions = ["lint", "tests"]
nox.options.reuse_existing_virtualenvs = True
# uv makes the venvs where it is installed (pip install 'nox[uv]', as the README says):
# PyTorch's CUDA wheels take seconds, not pip's minutes, and a second venv links them from
# uv's cache. Without uv, virtualenv and pip, as before.
nox.options.default_venv_backend = "uv|virtualenv"
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


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else ""


def _public_url(url: str) -> str:
    """A remote URL without its user and password (a CI token) before it goes in a label."""
    return re.sub(r"^([a-z][a-z0-9+.-]*://)[^/@]*@", r"\1", url, flags=re.IGNORECASE)


def _looks_like_a_token(part: str) -> bool:
    """20 or more letters and digits in a row, both kinds (a snapshot's 20260803T000000Z has
    16, a name like debian-bookworm-2024 none), or a UUID. A guess: a shorter token, or one
    cut by - or _, passes; that is why a mirror must need no secret at all in its URL."""
    uuid = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    if re.search(uuid, part, re.IGNORECASE):
        return True
    runs = re.findall(r"[A-Za-z0-9]{20,}", part)
    return any(re.search(r"[0-9]", run) and re.search(r"[A-Za-z]", run) for run in runs)


def _mirror_problem(url: str) -> str | None:
    """Why a Debian mirror's URL could carry a secret or more than one sources.list entry;
    None for a plain http(s)://HOST[:PORT]/PATH. The reason never quotes the URL."""
    if any(not 0x21 <= ord(c) <= 0x7E for c in url):
        return "the URL holds whitespace, a control or a non-ASCII character"
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:  # a bracket of an IPv6 host opened and not closed, or not opened
        return "the URL's host is not a name or a bracketed IPv6 address"
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not url.lower().startswith(f"{scheme}://"):
        return "the URL is not http://HOST/PATH or https://HOST/PATH"
    if "@" in parts.netloc:
        return "a URL with a user or password would be stored in the image"
    if "?" in url or "#" in url:
        return "a URL with a query or fragment (?token=...) would be stored in the image"
    try:
        _ = parts.port  # parsed when read
    except ValueError:
        return "the URL's port is not a number"
    if not parts.hostname:
        return "the URL names no host"
    if not re.fullmatch(r"[A-Za-z0-9._~:/%\[\]-]+", url):
        return "the URL holds a character other than letters, digits and -._~:/%[]"
    names = [*parts.hostname.split("."), *urllib.parse.unquote(parts.path).split("/")]
    if any(_looks_like_a_token(name) for name in names):
        return (
            "a URL with a host or path part that looks like a token (20 or more letters and"
            " digits in a row, or a UUID) would be stored in the image"
        )
    return None


def _debian_mirror(session: nox.Session) -> str | None:
    """BENCH_DEBIAN_MIRROR, refused when it could carry a secret: a build argument is kept
    in the image's history, and a mirror in the base's commit and a vendor manifest."""
    mirror = os.environ.get("BENCH_DEBIAN_MIRROR")
    problem = _mirror_problem(mirror) if mirror else None
    if problem:
        session.error(
            f"BENCH_DEBIAN_MIRROR: {problem}; use a mirror that needs no secret in its URL"
            " (an apt proxy on this network): a build argument stays in the image's history"
        )
    return mirror


def _inspect(ref: str) -> dict[str, Any]:
    """`docker image inspect REF`, parsed; {} when there is no such image."""
    done = subprocess.run(["docker", "image", "inspect", ref], capture_output=True, text=True)
    return json.loads(done.stdout)[0] if done.returncode == 0 else {}


NATIVE = "pip install '.[torch]' && bench suite quick"


def _docker_problem() -> str | None:
    """Why this machine cannot run Docker, in one line that says what to do; None when
    its engine answers."""
    if shutil.which("docker") is None:
        return (
            "docker is not installed: install Docker Engine (Debian and Ubuntu: sudo apt-get"
            f" install docker.io), or run bench without Docker: {NATIVE}"
        )
    try:
        done = subprocess.run(["docker", "info"], capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return "the Docker engine does not answer docker info within 30 s: restart it"
    if done.returncode == 0:
        return None
    said = done.stderr.strip().splitlines()[-1:] or [""]
    if "permission denied" in said[0].lower():
        return (
            "no permission on the Docker engine's socket (/var/run/docker.sock): add your"
            " user to the docker group (sudo usermod -aG docker $USER, then log in again),"
            " or run as root"
        )
    return (
        "no Docker engine answers (docker info: "
        f"{said[0][:160]}): start it (sudo systemctl start docker, or sudo dockerd &)"
    )


def _require_docker(session: nox.Session) -> None:
    problem = _docker_problem()
    if problem:
        session.error(problem)


# The fast tier's install is the README's: PyTorch, plus what the reading commands and the
# checks need. The full tier adds every framework and optional library bench can drive.
FAST_EXTRAS = ".[torch,report,dev,xeon]"
FULL_EXTRAS = ".[torch,jax,mlx,report,dev,xeon,zoo,fleet,float8]"


# The tests' children each import PyTorch: uv installs no bytecode, so where the shell
# says PYTHONDONTWRITEBYTECODE (CI machines often do) every child compiled torch's and
# torchvision's sources again, about 8 s of CPU each. The test runs write it once, into
# nox's own venvs (and __pycache__ folders git ignores), so each child reads it.
TEST_ENV = {"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": None}


@nox.session
def tests(session: nox.Session) -> None:
    """The fast tier: unit tests, small CPU runs and the README's commands on a bare install."""
    session.install("-e", FAST_EXTRAS, *CONSTRAINTS)
    # pytest-xdist, one worker per CPU (at most 4: each test's children use threads of
    # their own); `nox -s tests -- -n 0` runs them in one process.
    session.run("pytest", "-m", "not full", "-n", "auto", "--maxprocesses", "4",
                "--durations", "15", *session.posargs, env=TEST_ENV)  # fmt: skip


@nox.session(default=False)
def tests_full(session: nox.Session) -> None:
    """The full tier (CI): real training, TensorFlow, JAX, MLX, SkyPilot and the zoo's timm."""
    # tensorflow-cpu, not the [tensorflow] extra: the same TensorFlow without 600 MB of
    # CUDA libraries that a CPU test run never loads.
    session.install("-e", FULL_EXTRAS, "tensorflow-cpu", "keras", "playwright", *CONSTRAINTS)
    # os_packages: fast-tier tests that skip without an OS library (the fast tier needs
    # none); here again, once .ci/run has installed them.
    # Two pytest-xdist workers, as the fast tier: most of a full test's time is a child
    # starting (imports, a FLOP count), not both cores busy. `-- -n 0`: one process.
    # --durations: each CI log names the tests that set the tier's time.
    session.run("pytest", "-m", "full or os_packages", "-n", "auto", "--maxprocesses", "2",
                "--durations", "25", *session.posargs, env=TEST_ENV)  # fmt: skip


@nox.session
def lint(session: nox.Session) -> None:
    """ruff (format and lint), mypy on the package, hadolint on every Dockerfile."""
    session.install("-e", ".[report,dev]", *CONSTRAINTS)
    # mypy reads torch's and torchvision's code and never imports them: without their
    # CUDA libraries (4 GB) the lint venv takes 1.8 GB, not 6. Pillow: the types of the
    # ImageNet reader's images (torchvision needs it too; matplotlib brought it before).
    session.install("--no-deps", "torch", "torchvision", "pillow", *CONSTRAINTS)
    session.run("ruff", "format", "--check", *PYTHON_SOURCES)
    session.run("ruff", "check", *PYTHON_SOURCES)
    # mypy's cache lives beside uv's, outside the checkout: a fresh clone on this machine
    # re-checks what changed (mypy compares each file's hash) in seconds, not 50 s cold.
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "bench" / "mypy"
    session.run("mypy", "--cache-dir", str(cache))
    session.run("hadolint", str(DOCKERFILE))


@nox.session(default=False)
def docs(session: nox.Session) -> None:
    """The manual (docs/) as a static site in site/: fails on a broken link or anchor."""
    session.install("-e", ".[docs]", *CONSTRAINTS)
    # --strict with mkdocs.yml's validation: a missing page or anchor fails the build.
    # NO_MKDOCS_2_WARNING: Material's notice about MkDocs 2.0, not about this manual.
    session.run(
        "mkdocs", "build", "--strict", "-d", "site", *session.posargs,
        env={"NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip


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
    """Build the Debian base locally with debootstrap (where no registry answers).

    Env: BENCH_DEBIAN_MIRROR (default: the dated snapshot where it answers, else
    http://deb.debian.org/debian). nox -s build uses it by itself where the pinned base
    cannot be had; BENCH_BASE_IMAGE=bench-base:bookworm asks for it anyway.
    """
    _debian_mirror(session)  # one that could carry a secret: refused first
    _require_docker(session)
    mirror, _ = _debian_source(session)
    _make_base(session, _local_base_tag(), _base_mirror(mirror))


# What a build can reach, found out in seconds before it starts (nox -s build, make
# quickstart), so that Docker never pulls: the classic builder pulls a FROM it lacks and
# waits on a registry that may not answer. The reproducible choice wherever it can be had.
PROBE_TIMEOUT_S = 4
DEFAULT_MIRROR = "http://deb.debian.org/debian"
SNAPSHOT_ARCHIVE = "http://snapshot.debian.org/archive/debian"
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
PUBLIC_ROOTS = Path("/usr/share/ca-certificates/mozilla")  # Debian's copy of Mozilla's roots
TLS_PROBE = "https://pypi.org/simple/"


def _answers(url: str, context: ssl.SSLContext | None = None) -> bool:
    """Whether URL answers a HEAD within PROBE_TIMEOUT_S (any HTTP status: a registry's
    /v2/ answers 401)."""
    request = urllib.request.Request(url, method="HEAD")
    try:
        with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT_S, context=context):
            return True
    except urllib.error.HTTPError:
        return True
    except (OSError, ValueError, http.client.HTTPException):
        return False


def _registry(ref: str) -> str:
    """The registry an image reference comes from (Docker Hub's for debian:...)."""
    first, slash, _ = ref.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        return first
    return "registry-1.docker.io"


def _debian_snapshot() -> str:
    """The snapshot's date the Dockerfile pins (ARG DEBIAN_SNAPSHOT)."""
    found = re.search(r"^ARG DEBIAN_SNAPSHOT=(\S+)$", DOCKERFILE.read_text(), re.MULTILINE)
    return found.group(1) if found else ""


def _proxy_resigns_tls() -> bool:
    """Whether a proxy re-signs TLS here: pypi.org's certificate verifies against the
    host's CA bundle and not against the public roots alone (what pip in the build trusts)."""
    roots = sorted(PUBLIC_ROOTS.glob("*.crt")) if PUBLIC_ROOTS.is_dir() else []
    if not roots or not HOST_CA_BUNDLE.is_file():
        return False  # cannot tell: BENCH_CA_BUNDLE says it
    try:
        public = ssl.create_default_context(cadata="".join(p.read_text() for p in roots))
        host = ssl.create_default_context(cafile=str(HOST_CA_BUNDLE))
    except (OSError, ValueError, ssl.SSLError):
        return False
    return _answers(TLS_PROBE, host) and not _answers(TLS_PROBE, public)


def _debian_source(session: nox.Session) -> tuple[str | None, str]:
    """Where the build's Debian packages come from: (DEBIAN_MIRROR, or None for the dated
    snapshot; the words for the line that says so)."""
    mirror = _debian_mirror(session)
    if mirror and not _answers(f"{mirror.rstrip('/')}/dists/bookworm/Release"):
        session.error(
            f"BENCH_DEBIAN_MIRROR={mirror} does not answer (no dists/bookworm/Release): set it"
            " to a Debian mirror this machine reaches, or unset it to use snapshot.debian.org"
            " or deb.debian.org"
        )
    if mirror:
        return mirror, f"Debian packages from {mirror} (BENCH_DEBIAN_MIRROR)"
    snapshot = _debian_snapshot()
    if _answers(f"{SNAPSHOT_ARCHIVE}/{snapshot}/dists/bookworm/Release"):
        return None, f"Debian packages from the snapshot of {snapshot}"
    if _answers(f"{DEFAULT_MIRROR}/dists/bookworm/Release"):
        return DEFAULT_MIRROR, (
            f"Debian packages from {DEFAULT_MIRROR} as it is today (snapshot.debian.org does"
            " not answer)"
        )
    session.error(
        "neither snapshot.debian.org nor deb.debian.org answers: set BENCH_DEBIAN_MIRROR to"
        " a Debian mirror this machine reaches (an apt proxy), or build offline from a"
        " vendor archive (BENCH_VENDOR_ARCHIVE)"
    )
    raise AssertionError  # session.error raises


def _base_mirror(mirror: str | None) -> str:
    """What debootstrap fetches the base from: the snapshot of the pinned base's date, or
    the mirror the packages come from."""
    return mirror or f"{SNAPSHOT_ARCHIVE}/{_debian_snapshot()}"


def _local_base_tag() -> str:
    return str(_pyproject()["tool"]["bench"]["images"]["local-base"])


def _need_debootstrap(session: nox.Session) -> None:
    """debootstrap on PATH: installed with apt where this is root, else one line."""
    if shutil.which("debootstrap"):
        return
    if os.geteuid() != 0:
        session.error(
            "the Debian base must be built here (no registry answers) with debootstrap, as"
            " root: sudo apt-get install debootstrap && sudo nox -s base, then run this again"
        )
    if shutil.which("apt-get"):
        session.log("debootstrap is not installed: apt-get install debootstrap")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for step in (["update", "-qq"], ["install", "-y", "-qq", "debootstrap"]):
            subprocess.run(["apt-get", *step], env=env, capture_output=True)
    if not shutil.which("debootstrap"):
        session.error(
            "the Debian base must be built here (no registry answers) and debootstrap is not"
            " installed: install it (apt-get install debootstrap), then run this again"
        )


def _make_base(session: nox.Session, tag: str, mirror: str) -> None:
    _need_debootstrap(session)
    session.run(str(IMAGES_DIR / "common" / "make-base.sh"), tag, "bookworm", mirror, external=True)


def _base_origin(inspected: dict[str, Any]) -> str:
    """What a local base was made from, as make-base.sh recorded it: 'debootstrap
    --variant=minbase bookworm MIRROR, 2026-12-07'."""
    comment = str(inspected.get("Comment") or "")[:200]
    made = str(inspected.get("Created") or "")[:10]
    return f"{comment}, {made}" if comment.startswith("debootstrap") else comment


def _choose(session: nox.Session, image: str) -> tuple[dict[str, str], str | None]:
    """What bench:IMAGE is built from here: its base, its Debian packages' source and the
    CA its downloads trust, each the reproducible one where this machine reaches it, the
    BENCH_ variables first. The build arguments and the CA bundle to serve; one line says
    what was chosen and what it means for a rebuild years later."""
    meta = _image(image)
    pinned, registry = meta["base"], _registry(meta["base"])
    debian = pinned.startswith("debian:")
    packages = (IMAGES_DIR / image / "packages.txt").is_file()
    mirror, packages_said = _debian_source(session) if packages or debian else (None, "")
    args = {"DEBIAN_MIRROR": mirror} if mirror else {}
    said = []
    explicit = os.environ.get("BENCH_BASE_IMAGE") if debian else None
    if not explicit and _inspect(pinned):
        said.append(f"the pinned base {pinned.partition('@')[0]} by digest (on this machine)")
    elif not explicit and _answers(f"https://{registry}/v2/"):
        done = subprocess.run(["docker", "pull", "-q", pinned], capture_output=True, text=True)
        if done.returncode != 0:  # by digest: Docker checks what it pulled against it
            why = (done.stderr.strip().splitlines() or [""])[-1][:160]
            session.error(
                f"docker pull {pinned} failed ({why}); or build a local base: nox -s base"
            )
        said.append(
            f"the pinned base {pinned.partition('@')[0]} by digest (pulled from {registry})"
        )
    elif debian:
        tag = explicit or _local_base_tag()
        if not _inspect(tag):
            if explicit:
                session.error(
                    f"BENCH_BASE_IMAGE={explicit} is no image on this machine: build one with"
                    " nox -s base (bench-base:bookworm), or unset BENCH_BASE_IMAGE"
                )
            session.log(f"{registry} does not answer: building the Debian base {tag} here")
            _make_base(session, tag, _base_mirror(mirror))
        local = _inspect(tag)
        origin = _base_origin(local)
        args.update(BASE_IMAGE=tag, BASE_DIGEST=local.get("Id", ""), BASE_ORIGIN=origin)
        why = "BENCH_BASE_IMAGE" if explicit else f"{registry} does not answer"
        said.append(f"the local base {tag} ({origin or 'made here'}; {why})")
    else:
        session.error(
            f"the base image {pinned} is not on this machine and {registry} does not answer:"
            f" docker load it from an archive (nox -s save or vendor), or build bench:{image}"
            " where that registry answers"
        )
    if packages:
        said.append(packages_said)
    bundle = os.environ.get("BENCH_CA_BUNDLE")
    if bundle:
        said.append(f"the CA bundle {bundle} (BENCH_CA_BUNDLE)")
    elif _proxy_resigns_tls():
        bundle = str(HOST_CA_BUNDLE)
        said.append(f"the host's CA bundle {bundle} (a proxy re-signs TLS)")
    same = "BASE_ORIGIN" not in args and (mirror is None or not packages)
    later = (
        "a rebuild from this commit years later gets the same base, packages and wheels"
        if same
        else "a rebuild years later gets what the Debian mirror holds then, not this image's"
        f" packages: keep the image (nox -s \"save(image='{image}')\") or its downloads"
        f" (nox -s \"vendor(image='{image}')\")"
    )
    session.log(f"bench:{image} from {', '.join(said)}; {later}")
    return args, bundle


def _public_source() -> str:
    """The public URL of this repository for the image's source label, or "" where its
    origin is a local path (a clone of a clone): a label never carries a local path."""
    url = _public_url(_git("remote", "get-url", "origin"))
    if url.lower().startswith("https://"):
        return url
    scp = re.fullmatch(r"[\w.-]+@([\w.-]+):([\w./-]+)", url)  # git@github.com:org/bench.git
    return f"https://{scp[1]}/{scp[2]}" if scp else ""


def _build_args(
    session: nox.Session, image: str, *, choose: bool = True
) -> tuple[dict[str, str], str | None]:
    """The Dockerfile's arguments: the image's own (image.toml), what it is built from
    here (`choose`: found out, else the pinned base) and its provenance; the CA bundle."""
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
        "BENCH_LOCK_SHA256": archives.sha256(lock_file),
        "BENCH_SOURCE": _public_source(),
        "SOURCE_DATE_EPOCH": epoch,
        "BUILD_DATE": dt.datetime.fromtimestamp(int(epoch), dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    if not choose:  # an offline build: the archive's base, the mirror it was vendored with
        mirror = _debian_mirror(session)
        return {**args, **({"DEBIAN_MIRROR": mirror} if mirror else {})}, None
    chosen, bundle = _choose(session, image)
    return {**args, **chosen}, bundle


# The build arguments that say where and when, not what: left out of the inputs hash.
_PROVENANCE_ARGS = ("BENCH_GIT_COMMIT", "BENCH_SOURCE", "SOURCE_DATE_EPOCH", "BUILD_DATE")


def _inputs_sha256(image: str, args: dict[str, str]) -> str:
    """The sha256 of what bench:IMAGE is built from: every file the Dockerfile copies (as
    .dockerignore leaves them) and the build arguments other than provenance."""
    digest = hashlib.sha256()
    roots = [DOCKERFILE.parent, IMAGES_DIR / image, ROOT / "bench", ROOT / "pyproject.toml",
             ROOT / "README.md"]  # fmt: skip
    for root in roots:
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for path in files:
            relative = path.relative_to(ROOT)
            if "__pycache__" in relative.parts:
                continue  # as .dockerignore
            digest.update(f"{relative}\0{archives.sha256(path)}\0".encode())
    kept = {k: v for k, v in args.items() if k not in _PROVENANCE_ARGS}
    digest.update(json.dumps(kept, sort_keys=True).encode())
    return digest.hexdigest()


# BENCH_CA_BUNDLE reaches the build over Docker's bridge network, never through the build
# context: the one RUN step that downloads fetches it, checks its sha256 and deletes it,
# so no layer holds it. A fixed port and path keep the build arguments, and so the
# cached dependency layer, the same from one build to the next.
CA_PORT = 29517
CA_PATH = "/bench-build-ca.crt"
MAX_CA_BYTES = 4 * 2**20


def _bridge_gateway(inspected: str) -> str | None:
    """The bridge's IPv4 gateway from 'GATEWAY SUBNET' as `docker network inspect` gives
    them. Docker 20.10 leaves the default bridge's gateway out of its IPAM config; it
    is then the subnet's first host, as Docker assigns it."""
    fields = inspected.split()
    with contextlib.suppress(ValueError):
        if len(fields) == 2:
            return str(ipaddress.IPv4Address(fields[0]))
        if len(fields) == 1:  # no gateway: the subnet alone
            return str(next(ipaddress.IPv4Network(fields[0]).hosts()))
    return None


_PEM_CERTIFICATE = re.compile(rb"-----BEGIN CERTIFICATE-----(.*?)-----END CERTIFICATE-----", re.S)


def _ca_certificates(bundle: bytes) -> bytes:
    """The CERTIFICATE blocks of a CA bundle, one after the other: what is served on the
    bridge, which every container there can fetch. Comments and other blocks are left
    out; a bundle that holds a private key (mitmproxy-ca.pem does) is refused, not cut."""
    if b"PRIVATE KEY" in bundle:
        raise ValueError(
            "holds a private key (a PRIVATE KEY block), which every container on Docker's"
            " bridge could fetch during the build: pass the CA's certificate alone"
        )
    blocks = list(_PEM_CERTIFICATE.finditer(bundle))
    if not blocks:
        raise ValueError("holds no certificate (no -----BEGIN CERTIFICATE----- block)")
    # base64's alphabet only: no other PEM block or header can hide inside one.
    if any(not re.fullmatch(rb"[A-Za-z0-9+/=\s]+", block[1]) for block in blocks):
        raise ValueError("has a CERTIFICATE block that is not base64")
    return b"".join(block[0] + b"\n" for block in blocks)


@contextlib.contextmanager
def _served_ca(session: nox.Session, bundle: str | None) -> Iterator[dict[str, str]]:
    """Serve a CA bundle's certificates (BENCH_CA_BUNDLE, or the host's where a proxy
    re-signs TLS) to the build on the bridge's gateway while it runs: the build arguments
    that tell install.sh where they are and their sha256."""
    if not bundle:
        yield {}
        return
    path = Path(bundle)
    if not path.is_file() or path.stat().st_size > MAX_CA_BYTES:
        session.error(f"BENCH_CA_BUNDLE: {bundle} is not a file of at most 4 MiB")
    try:
        data = _ca_certificates(path.read_bytes())
    except OSError as error:
        session.error(f"BENCH_CA_BUNDLE: cannot read {bundle} ({error.strerror})")
    except ValueError as error:
        session.error(f"BENCH_CA_BUNDLE: {bundle} {error}")
    done = subprocess.run(
        ["docker", "network", "inspect", "bridge", "--format",
         "{{(index .IPAM.Config 0).Gateway}} {{(index .IPAM.Config 0).Subnet}}"],
        capture_output=True, text=True,
    )  # fmt: skip
    gateway = _bridge_gateway(done.stdout) if done.returncode == 0 else None
    if gateway is None:
        session.error("BENCH_CA_BUNDLE: Docker's bridge network has no IPv4 gateway to serve it on")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path != CA_PATH:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    try:
        server = http.server.ThreadingHTTPServer((gateway, CA_PORT), Handler)
    except OSError as error:
        session.error(f"BENCH_CA_BUNDLE: cannot serve it on {gateway}:{CA_PORT} ({error.strerror})")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield {
            "BENCH_CA_URL": f"http://{gateway}:{CA_PORT}{CA_PATH}",
            "BENCH_CA_SHA256": hashlib.sha256(data).hexdigest(),
        }
    finally:
        server.shutdown()
        server.server_close()


def _docker_build(
    session: nox.Session, tag: str, args: dict[str, str], *flags: str, ca_bundle: str | None
) -> None:
    """docker build of the common Dockerfile, with the extra CA served for the build only;
    a failed step leaves no container behind (--force-rm)."""
    with _served_ca(session, ca_bundle) as ca:
        build_args = [f"--build-arg={k}={v}" for k, v in {**args, **ca}.items()]
        session.run(
            "docker", "build", "--force-rm", "-f", str(DOCKERFILE), "-t", tag, *flags,
            *build_args, str(ROOT), external=True,
        )  # fmt: skip


# Free space a build from scratch takes on Docker's disk: bench:xeon's 6.7 GB with its
# downloaded wheels beside it until its install step's layer is committed (the disk's use
# rose by 12.7 GiB at the peak of make quickstart from a fresh clone here, base included).
BUILD_FREE_GIB = 14


def _disk_problem(image: str, root: str, free_bytes: int) -> str | None:
    """One line when Docker's disk lacks the room for a build of bench:IMAGE from scratch."""
    if free_bytes >= BUILD_FREE_GIB * 2**30:
        return None
    return (
        f"Docker's disk ({root}) has {free_bytes / 2**30:.1f} GiB free and building"
        f" bench:{image} takes about {BUILD_FREE_GIB} GiB: free some (docker image prune,"
        " docker builder prune), then run this again"
    )


def _check_disk(session: nox.Session, image: str, lock_sha256: str) -> None:
    """Before a long build: is there room for it? Not asked where an image of this lock is
    here (its dependency layer is in the build cache: only bench's small layer is new)."""
    labels = _inspect(f"bench:{image}").get("Config", {}).get("Labels") or {}
    if labels.get("dev.bench.lock.sha256") == lock_sha256:
        return
    done = subprocess.run(["docker", "info", "--format", "{{.DockerRootDir}}"],
                          capture_output=True, text=True)  # fmt: skip
    root = done.stdout.strip() or "/var/lib/docker"
    try:
        free = shutil.disk_usage(root).free
    except OSError:
        return  # not readable from here (a remote engine): Docker says it if it runs out
    problem = _disk_problem(image, root, free)
    if problem:
        session.error(problem)


@nox.session(python=False, default=False)
@nox.parametrize("image", IMAGES)
def build(session: nox.Session, image: str) -> None:
    """Build bench:IMAGE from its lock (classic builder or BuildKit; never pulls).

    It first finds out in seconds what this machine reaches and says in one line what it
    chose: the pinned base by digest where it is here or its registry answers (pulled by
    digest then), else a Debian base made here with debootstrap (nox -s base); the dated
    Debian snapshot where it answers, else deb.debian.org; the host's CA bundle where a
    proxy re-signs TLS. The BENCH_ variables below choose instead.

    A bench:IMAGE already here whose label dev.bench.inputs.sha256 is the hash of what it
    would be built from now (its files and build arguments) is kept, not rebuilt
    (BENCH_REBUILD=1 rebuilds anyway); a rebuild after a change to bench alone reuses the
    cached dependency layer.

    Env: BENCH_BASE_IMAGE (a local Debian base instead of the pinned digest, for the
    Debian-based images), BENCH_DEBIAN_MIRROR (a Debian mirror instead of the dated
    snapshot), BENCH_CA_BUNDLE (extra CA file for a TLS-intercepting proxy),
    BENCH_VENDOR_ARCHIVE (an archive from `nox -s vendor`: build from it alone, with
    --network none).
    """
    archive = os.environ.get("BENCH_VENDOR_ARCHIVE")
    # Before Docker: an archive the user does not hold, or for another lock, is refused first.
    manifest = _vendored(session, Path(archive), image) if archive else {}
    _debian_mirror(session)
    _require_docker(session)
    args, bundle = _build_args(session, image, choose=not archive)
    if not archive:
        inputs = _inputs_sha256(image, args)
        labels = _inspect(f"bench:{image}").get("Config", {}).get("Labels") or {}
        if labels.get("dev.bench.inputs.sha256") == inputs and not os.environ.get("BENCH_REBUILD"):
            session.log(f"bench:{image} is up to date (inputs {inputs[:12]}): not rebuilt")
            return
        _check_disk(session, image, args["BENCH_LOCK_SHA256"])
        _docker_build(session, f"bench:{image}", {**args, "BENCH_INPUTS_SHA256": inputs},
                      ca_bundle=bundle)  # fmt: skip
        return
    vendor = IMAGES_DIR / image / "vendor"  # copied into the image with its folder
    if vendor.exists():
        session.error(f"{vendor} is in the way (left by an interrupted build?): remove it")
    with tempfile.TemporaryDirectory(prefix="bench-vendor-", dir=ROOT) as tmp:
        try:
            archives.extract(Path(archive), Path(tmp))
        except (OSError, ValueError, tarfile.TarError) as error:
            session.error(f"{archive}: {error}")
        base_tag = f"bench-vendor-base:{image}"
        session.run("docker", "load", "-q", "-i", f"{tmp}/base.tar", external=True)
        if _inspect(manifest["base"]["id"]).get("Id") != manifest["base"]["id"]:
            session.error(f"{archive}: base.tar did not load the image {manifest['base']['id']}")
        session.run("docker", "tag", manifest["base"]["id"], base_tag, external=True)
        Path(tmp, "vendor").rename(vendor)
        base = {"BASE_IMAGE": base_tag, "BASE_NAME": manifest["base"]["name"],
                "BASE_DIGEST": manifest["base"]["digest"]}  # fmt: skip
        try:
            _docker_build(session, f"bench:{image}", {**args, **base}, "--network", "none",
                          ca_bundle=None)  # fmt: skip
        finally:
            shutil.rmtree(vendor, ignore_errors=True)
            subprocess.run(["docker", "rmi", base_tag], capture_output=True)


def _held(session: nox.Session, archive: Path) -> None:
    """The archive's sha256 must be the one the user holds, BENCH_ARCHIVE_SHA256."""
    try:
        archives.held(archive, os.environ.get("BENCH_ARCHIVE_SHA256"))
    except (OSError, ValueError) as error:
        session.error(f"{archive}: {error}")


def _vendored(session: nox.Session, archive: Path, image: str) -> Any:
    """A vendor archive's own manifest (inside it, so covered by the hash the user holds),
    once it vendors this checkout's lock and names its base image by id."""
    _held(session, archive)
    try:
        manifest = json.loads(archives.read_member(archive, "manifest.json"))
    except (OSError, ValueError, tarfile.TarError) as error:
        session.error(f"{archive}: {error}")
    lock_sha = archives.sha256(IMAGES_DIR / image / "requirements.lock")
    base = manifest.get("base") if isinstance(manifest, dict) else None
    if not isinstance(base, dict) or not archives.is_image_id(base.get("id")):
        session.error(f"{archive}: its manifest.json names no base image id")
    if manifest.get("image") != f"bench:{image}" or manifest.get("lock_sha256") != lock_sha:
        session.error(
            f"{archive} vendors {str(manifest.get('image'))[:40]!r} with lock"
            f" {str(manifest.get('lock_sha256'))[:64]!r}, not bench:{image} with"
            f" images/{image}/requirements.lock ({lock_sha}): check out the commit it was"
            " made from, or vendor again"
        )
    return manifest


@nox.session(python=False, default=False)
@nox.parametrize("image", IMAGES)
def vendor(session: nox.Session, image: str) -> None:
    """Archive what bench:IMAGE's build downloads, to rebuild it offline (dist/).

    One tar for rebuilding the image years later with no network: the base image (docker
    save), the Debian packages and the locked wheels, as the build fetched and installed them.

    Then: BENCH_VENDOR_ARCHIVE=dist/ARCHIVE nox -s "build(image='IMAGE')". Env: as build.
    """
    _require_docker(session)
    args, bundle = _build_args(session, image)
    base = _inspect(args["BASE_IMAGE"])
    if not base:  # bench never pulls
        session.error(
            f"the base image {args['BASE_IMAGE']} is not on this machine:"
            " docker pull it, or build one with nox -s base and set BENCH_BASE_IMAGE"
        )
    tag = f"bench-vendor:{image}"
    _check_disk(session, image, "")
    _docker_build(session, tag, {**args, "BENCH_VENDOR": "keep"}, ca_bundle=bundle)
    dist = ROOT / "dist"
    dist.mkdir(exist_ok=True)
    archive = dist / f"bench-{image}-vendor-{args['BENCH_LOCK_SHA256'][:12]}.tar"
    with tempfile.TemporaryDirectory(prefix="bench-vendor-", dir=dist) as tmp:
        work = Path(tmp)
        created = session.run(
            "docker", "create", "--pull", "never", tag, silent=True, external=True
        )
        cid = str(created).strip()
        try:
            session.run("docker", "cp", f"{cid}:/opt/bench/image/vendor", str(work), external=True)
        finally:
            subprocess.run(["docker", "rm", cid], capture_output=True)
            subprocess.run(["docker", "rmi", tag], capture_output=True)
        session.run("docker", "save", "-o", str(work / "base.tar"), base["Id"], external=True)
        manifest = {
            "kind": "bench vendor archive",
            "image": f"bench:{image}",
            "lock_sha256": args["BENCH_LOCK_SHA256"],
            "base": {"name": args["BASE_IMAGE"], "id": base["Id"], "digest": args["BASE_DIGEST"]},
            "debian_source": args.get("DEBIAN_MIRROR", "the dated Debian snapshot"),
            "debs": sorted(p.name for p in (work / "vendor" / "debs").glob("*.deb")),
            "wheels": sorted(p.name for p in (work / "vendor" / "wheels").iterdir()),
            "build_with": f"BENCH_VENDOR_ARCHIVE=dist/{archive.name}"
            f" nox -s \"build(image='{image}')\"",
        }
        (work / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        partial = work / archive.name
        with tarfile.open(partial, "w") as tar:
            for name in ("manifest.json", "base.tar", "vendor"):
                tar.add(work / name, arcname=name)
        partial.rename(archive)
    _seal_archive(session, archive, manifest)


def _seal_archive(session: nox.Session, archive: Path, manifest: dict[str, Any]) -> None:
    """ARCHIVE.sha256 and STEM.manifest.json beside an archive: what `bench verify` and an
    offline build check it against."""
    digest = archives.sha256(archive)
    archive.with_name(f"{archive.name}.sha256").write_text(f"{digest}  {archive.name}\n")
    sealed = {"archive": archive.name, "archive_sha256": digest, **manifest}
    archives.manifest_path(archive).write_text(json.dumps(sealed, indent=2) + "\n")
    session.log(f"{archive} ({archive.stat().st_size / 2**30:.2f} GiB), sha256 {digest}")


def _run_args(image: str, results: Path, *, devices: bool = True, ref: str = "") -> list[str]:
    """docker run flags for bench:IMAGE (or REF, a build of it): results volume, no
    network, read-only root, and (with `devices`) the image's device flags, e.g. --gpus all."""
    results.mkdir(parents=True, exist_ok=True)
    image_id = _inspect(ref or f"bench:{image}").get("Id", "")
    user = []
    if os.getuid() != 0:  # files in ./results belong to whoever ran nox
        user = ["--user", f"{os.getuid()}:{os.getgid()}"]
    else:  # root on the host: the image's own unprivileged user writes the results, and
        # the sticky bit keeps anyone else's files in the shared folder from being removed
        results.chmod(0o1777)
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
def rerun(session: nox.Session) -> None:
    """Rerun a result in the image it was measured in, then its drift verdict.

    nox -s rerun -- OLD.json [bench rerun options, e.g. --label new-driver].

    The image is the one whose id OLD.json recorded (for a plain `docker run`'s result, the
    one here built from the inputs it recorded): on this machine, else loaded from a
    `nox -s save` archive in dist/ whose sha256 you hold (BENCH_ARCHIVE_SHA256). The file
    chooses no flag: devices, privileges and network are those of the image's own variant
    (its label), never the file's. Env: BENCH_RERUN_IMAGE=bench:xeon reruns in another
    build instead (a rebuild, a newer bench: the verdict names what changed); BENCH_RESULTS
    as for run.
    """
    if not session.posargs:
        session.error("usage: nox -s rerun -- OLD.json [bench rerun options]")
    old, options = Path(session.posargs[0]), session.posargs[1:]
    from bench.result.io import read_document
    from bench.util.errors import BenchError

    try:  # bench's bounded reader: a regular file, its size, values and depth
        recorded = read_document(old)["environment"]["image"] or {}
        recorded = {k: recorded.get(k) for k in ("digest", "name", "lock_sha256", "inputs_sha256")}
    except BenchError as error:
        session.error(str(error))
    except (KeyError, TypeError, AttributeError) as error:
        session.error(f"{old}: not a bench result ({type(error).__name__})")
    ref = os.environ.get("BENCH_RERUN_IMAGE") or recorded["digest"]
    if not ref:  # a plain docker run's result: the image here built from the same inputs
        ref = _built_from(recorded["inputs_sha256"])
    if not os.environ.get("BENCH_RERUN_IMAGE") and not archives.is_image_id(ref):
        session.error(
            f"{old} names no bench image id it ran in (sha256: and 64 hex digits), nor inputs"
            " an image here was built from:"
            f" rerun it natively with bench rerun {old}, or name an image with BENCH_RERUN_IMAGE"
        )
    _require_docker(session)
    if not _inspect(ref):
        _load_saved(session, str(ref), recorded)
    image_id = _inspect(ref).get("Id", "")
    title = (_inspect(ref).get("Config", {}).get("Labels") or {}).get(
        "org.opencontainers.image.title", ""
    )
    variant = title.removeprefix("bench:")
    if not title.startswith("bench:") or variant not in IMAGES:
        session.error(f"{ref} is not a bench image (its title label is {title[:80]!r})")
    results = Path(os.environ.get("BENCH_RESULTS", ROOT / "results"))
    with tempfile.TemporaryDirectory(prefix="bench-rerun-") as tmp:  # a path -v can take
        Path(tmp).chmod(0o755)
        shutil.copyfile(old, Path(tmp, "old.json"))
        Path(tmp, "old.json").chmod(0o644)
        run = ["docker", "run", *_run_args(variant, results, ref=image_id), "-v", f"{tmp}:/old:ro"]
        session.run(*run, image_id, "rerun", "/old/old.json", *options, external=True)


def _built_from(inputs: Any) -> str | None:
    """The id of the bench image on this machine whose inputs hash (its label
    dev.bench.inputs.sha256) is INPUTS, a result's record of it (64 hex digits), or None."""
    if not isinstance(inputs, str) or not re.fullmatch(r"[0-9a-f]{64}", inputs):
        return None
    if _docker_problem():
        return None
    label = f"label=dev.bench.inputs.sha256={inputs}"
    done = subprocess.run(["docker", "images", "-q", "--no-trunc", "--filter", label],
                          capture_output=True, text=True)  # fmt: skip
    found = done.stdout.split()
    return found[0] if done.returncode == 0 and found and archives.is_image_id(found[0]) else None


def _load_saved(session: nox.Session, image_id: str, recorded: dict[str, Any]) -> None:
    """docker load the archive in dist/ that holds IMAGE_ID, once its sha256 is the one the
    user holds; the id must then be on this machine. Else say what to do."""
    for manifest_path in sorted((ROOT / "dist").glob("*.manifest.json")):
        try:
            manifest = json.loads(manifest_path.read_text())
        except (OSError, ValueError):
            continue  # not one of ours: bench verify says what is wrong with it
        if isinstance(manifest, dict) and manifest.get("image_id") == image_id:
            archive = manifest_path.with_name(Path(str(manifest.get("archive"))).name)
            _held(session, archive)
            session.run("docker", "load", "-i", str(archive), external=True)
            if _inspect(image_id).get("Id") != image_id:
                session.error(f"{archive} did not load the image {image_id}")
            return
    session.error(
        f"{str(recorded.get('name'))[:40]!r} with image id {image_id} (lock"
        f" {str(recorded.get('lock_sha256'))[:12]!r}) is not on this machine, and no archive in"
        f" dist/ holds it: copy its nox -s save archive and manifest into dist/ (and set"
        f" BENCH_ARCHIVE_SHA256), or rebuild it at the commit the result names and rerun in"
        f" the rebuild with BENCH_RERUN_IMAGE=bench:VARIANT"
    )


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
    own = meta.get("smoke_args", [])  # what only this image can run (bench:xeon-ipex: IPEX)
    session.run(*run, *steps, *own, *(["--device", "cpu"] if gpu_image else []), external=True)
    (result_file,) = results.glob("*.json")
    data = json.loads(result_file.read_text())
    labels = _inspect(f"bench:{image}")["Config"]["Labels"] or {}
    lock_sha = archives.sha256(IMAGES_DIR / image / "requirements.lock")
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
        if point.get("numa") == "auto":  # bound, or unbound with the reason recorded
            checks["NUMA bound or why not"] = bool(
                applied.get("numa_binding") or applied.get("numa_note")
            )
        if point.get("optimize"):  # applied in the child, with the version that did it
            done = point["details"].get(f"{point['optimize']}_optimize") or {}
            checks[f"optimize {point['optimize']} applied"] = bool(done.get("version"))
    session.log(json.dumps(checks))
    if not all(checks.values()):
        session.error(f"bench:{image}: failed checks: {[k for k, ok in checks.items() if not ok]}")
    if meta.get("runtime", {}).get("numa") == "auto":
        # The flagship command as a user first types it: a plain docker run, without the
        # image's --cap-add SYS_NICE, prints no NUMA warning (nothing was asked for).
        plain = ["docker", "run", *_run_args(image, results, devices=False), f"bench:{image}"]
        done = subprocess.run([*plain, "tiny", "--steps", "2", "--warmup-steps", "1"],
                              capture_output=True, text=True)  # fmt: skip
        said = done.stdout + done.stderr
        if done.returncode != 0 or "NUMA" in said or "numactl" in said:
            session.error(f"bench:{image}: a plain docker run warned about NUMA:\n{said[-2000:]}")
        session.log(f"bench:{image}: a plain docker run (no SYS_NICE) says nothing of NUMA")
    if gpu_image:  # without --device: refuse clearly, and name the device flag to add
        done = subprocess.run([*run, *steps], capture_output=True, text=True)
        session.log(done.stderr.strip())
        if done.returncode == 0 or meta["run_args"][0] not in done.stderr + done.stdout:
            session.error(f"bench:{image} without its device did not refuse clearly")
    if meta.get("framework", "torch") == "torch" and len(os.sched_getaffinity(0)) >= 2:
        # Data parallel in the image as users run it (no network, read-only root):
        # torchrun's two gloo ranks meet over loopback and report one point. Three
        # launches: a teardown that deadlocked in 1 run of 3 (PyTorch 2.8.0) passed a
        # check of one launch.
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
            "--repeats",
            "3",
            "--timeout",
            "120",
        ]  # a hang fails the check instead of blocking CI (a launch takes about 15 s)
        session.run(*run, *two, external=True)
        (point,) = json.loads(next(ranks.glob("*.json")).read_text())["points"]
        launches = len(point.get("ranks") or [])
        session.log(
            f"two ranks: status {point['status']}, devices {point['devices']}, {launches} launches"
        )
        if point["status"] != "ok" or point["devices"] != 2 or launches != 3:
            session.error(f"bench:{image}: two CPU ranks did not train one point")
        shutil.rmtree(ranks, ignore_errors=True)
    if meta.get("framework", "torch") == "torch":
        # torch.compile in the image: inductor builds C++ kernels with the image's
        # compiler and Python's headers (bench:xeon lacked Python.h: every --compile point
        # of tune and ladder failed with CppCompileError, and no smoke run compiled).
        compiled = Path(tempfile.mkdtemp(prefix=f"bench-smoke-{image}-compile-"))
        run = [
            "docker",
            "run",
            *_run_args(image, compiled, devices=not gpu_image),
            f"bench:{image}",
        ]
        session.run(*run, "tiny", "--device", "cpu", "--compile", "--warmup-steps", "1",
                    "--steps", "2", external=True)  # fmt: skip
        (point,) = json.loads(next(compiled.glob("*.json")).read_text())["points"]
        session.log(f"torch.compile: status {point['status']}")
        if point["status"] != "ok":
            session.error(f"bench:{image}: torch.compile failed: {point.get('error')}")
        shutil.rmtree(compiled, ignore_errors=True)
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


def _save_gzipped(session: nox.Session, image_id: str, archive: Path) -> None:
    """docker save IMAGE_ID | gzip -1 into ARCHIVE, as argv lists with both exit codes
    checked (a failed save must not seal a partial archive), renamed into place at the end."""
    partial = archive.with_name(f".{archive.name}.partial")
    session.log(f"docker save {image_id} | gzip -1 > {archive}")
    try:
        with partial.open("wb") as out:
            save = subprocess.Popen(["docker", "save", image_id], stdout=subprocess.PIPE)
            gzip = subprocess.run(["gzip", "-1"], stdin=save.stdout, stdout=out)
            if save.stdout is not None:
                save.stdout.close()
            if save.wait() != 0 or gzip.returncode != 0:
                session.error(f"docker save or gzip failed ({save.returncode}, {gzip.returncode})")
        partial.rename(archive)
    finally:
        partial.unlink(missing_ok=True)


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
    if re.fullmatch(r"[0-9A-Za-z.+-]{1,40}", version) is None:  # a label is the image's text
        session.error(f"bench:{image}: its version label {version[:40]!r} is not a version")
    stem = f"bench-{image}-{version}-{inspect['Id'][7:19]}"
    archive = dist / f"{stem}.tar.gz"
    _save_gzipped(session, inspect["Id"], archive)
    manifest = {
        "image": f"bench:{image}",
        "image_id": inspect["Id"],
        "repo_digests": inspect.get("RepoDigests", []),
        "lock_sha256": labels.get("dev.bench.lock.sha256"),
        "labels": labels,
        # Saved by id: loading it re-points no tag. Check the sha256 against the one you
        # hold first; nox -s rerun does (BENCH_ARCHIVE_SHA256).
        "load_with": f"docker load -i {archive.name} && docker tag {inspect['Id']} bench:{image}",
    }
    _seal_archive(session, archive, manifest)
