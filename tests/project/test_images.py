"""Image definitions, checked without a Docker engine: lint, locks, completeness, compose."""

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import DATA, ROOT

IMAGES = sorted(p.parent.name for p in (ROOT / "images").glob("*/image.toml"))
DOCKERFILE = ROOT / "images" / "common" / "Dockerfile"
REQUIREMENT = re.compile(
    r"^([A-Za-z0-9_.\-]+)(?:\[[A-Za-z0-9_,\-]+\])?==([^\s\\;]+)"
)  # extras dropped


def lock_entries(lock: Path) -> dict[str, tuple[str, list[str]]]:
    """name -> (version, hashes) from a pip-compile style lock file."""
    entries: dict[str, tuple[str, list[str]]] = {}
    current = None
    for line in lock.read_text().splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if match := REQUIREMENT.match(stripped):
            current = match.group(1).lower().replace("_", "-")
            entries[current] = (match.group(2), [])
        elif stripped.startswith("--hash=sha256:"):
            assert current, f"{lock}: a hash before any requirement"
            entries[current][1].append(stripped.removeprefix("--hash=sha256:").rstrip(" \\"))
        else:
            pytest.fail(f"{lock}: unpinned or unexpected line {stripped!r}")
    return entries


def test_the_expected_images_exist():
    extra = [p for p in (ROOT / "images").glob("*/Dockerfile") if p != DOCKERFILE]
    assert not extra, "one Dockerfile for all images: images/common/Dockerfile"
    assert {"cuda", "cuda12", "rocm", "xeon"} <= set(IMAGES)


@pytest.mark.parametrize("image", IMAGES)
def test_image_folder_is_complete(image):
    folder = ROOT / "images" / image
    for name in ("requirements.in", "requirements.lock", "image.toml"):
        assert (folder / name).is_file(), f"images/{image}/{name} is missing"
    meta = tomllib.loads((folder / "image.toml").read_text())
    keys = {"description", "base", "device", "python", "platform", "run_args", "ci_build"}
    assert keys <= set(meta)
    assert re.search(r"@sha256:[0-9a-f]{64}$", meta["base"]), "base image not pinned by digest"
    if meta["base"].startswith("debian:"):  # Debian bases need python from packages.txt
        assert "python3-venv" in (folder / "packages.txt").read_text()


@pytest.mark.parametrize("image", IMAGES)
def test_every_locked_package_is_pinned_and_hashed(image):
    folder = ROOT / "images" / image
    entries = lock_entries(folder / "requirements.lock")
    assert entries
    for name, (_version, hashes) in entries.items():
        assert hashes and all(re.fullmatch(r"[0-9a-f]{64}", h) for h in hashes), name
    for line in (folder / "requirements.in").read_text().splitlines():
        if match := REQUIREMENT.match(line.strip()):
            name = match.group(1).lower().replace("_", "-")
            assert entries[name][0] == match.group(2), (
                f"{name} in the lock differs from requirements.in"
            )


def test_dockerfile_contract():
    text = DOCKERFILE.read_text()
    base = re.search(r"^ARG BASE_IMAGE=(\S+)$", text, re.M)
    assert base and re.search(r"@sha256:[0-9a-f]{64}$", base.group(1)), "base not pinned by digest"
    assert 'ENTRYPOINT ["bench"]' in text
    assert re.search(r"^USER 10001:10001$", text, re.M), "must run as the unprivileged user"
    assert 'VOLUME ["/results"]' in text and "BENCH_OUTPUT_DIR=/results" in text
    assert "BENCH_IMAGE=bench:${VARIANT}" in text and "BENCH_IMAGE_VARIANT=${VARIANT}" in text
    assert "COPY images/${VARIANT}/ /opt/bench/image/" in text
    for label in ("version", "revision", "created", "source", "base.name", "base.digest"):
        assert f"org.opencontainers.image.{label}=" in text
    # The classic builder must build it: no BuildKit-only syntax.
    assert "--mount" not in text and "<<" not in text and not text.startswith("# syntax=")


@pytest.mark.skipif(shutil.which("hadolint") is None, reason="hadolint is not installed")
def test_hadolint_passes():
    done = subprocess.run(["hadolint", str(DOCKERFILE)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_compose_has_a_service_per_image():
    yaml = pytest.importorskip("yaml")
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    services = compose["services"]
    assert set(services) == set(IMAGES)
    for image, service in services.items():
        meta = tomllib.loads((ROOT / "images" / image / "image.toml").read_text())
        assert service["image"] == f"bench:{image}"
        assert service["build"]["dockerfile"] == "images/common/Dockerfile"
        assert service["build"]["args"]["VARIANT"] == image
        assert service["build"]["args"]["BENCH_DEVICE"] == meta["device"]
        assert service["build"]["args"].get("BENCH_FRAMEWORK", "torch") == meta.get(
            "framework", "torch"
        )
        assert service["network_mode"] == meta.get("network", "none")
        if "--privileged" in meta["run_args"]:
            assert service["privileged"] is True
        assert "./results:/results" in service["volumes"]
        assert service["pull_policy"] == "never" and service["read_only"] is True
        if "--gpus" in meta["run_args"]:
            devices = service["deploy"]["resources"]["reservations"]["devices"]
            assert devices[0]["capabilities"] == ["gpu"]
        if "/dev/kfd" in meta["run_args"]:
            assert "/dev/kfd" in service["devices"]


def test_nox_lists_sessions_without_docker(tmp_path):
    # A PATH with python but no docker: listing must not touch the engine.
    (tmp_path / "python").symlink_to(sys.executable)
    env = {**os.environ, "PATH": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "nox", "-l"], cwd=ROOT, capture_output=True,
                          text=True, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    for image in IMAGES:
        assert f"build(image='{image}')" in done.stdout
    for session in ("tests", "lint", "collect", "base", "rerun"):
        assert f"{session} ->" in done.stdout
    assert "vendor(image='xeon')" in done.stdout


def _nox(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "nox", *args], cwd=ROOT, capture_output=True,
                          text=True, env=env)  # fmt: skip


def test_rerun_session_refuses_a_result_that_names_no_image():
    done = _nox("-s", "rerun", "--", str(DATA / "result-v5.json"))
    assert done.returncode != 0
    assert "names no bench image id it ran in" in done.stderr
    assert "rerun it natively with bench rerun" in done.stderr


def test_offline_build_checks_its_archive_before_docker(tmp_path):
    """A vendor archive is built from only with the sha256 the user holds, and only when
    the manifest INSIDE it (covered by that hash) vendors this checkout's lock; each is
    refused in one line before anything is loaded or built. The manifest beside the
    archive travels with it and proves nothing."""
    import hashlib
    import io
    import json
    import tarfile

    archive = tmp_path / "bench-xeon-vendor-000000000000.tar"
    manifest = {"image": "bench:xeon", "lock_sha256": "0" * 64,  # an older lock
                "base": {"id": "sha256:" + "1" * 64, "name": "debian", "digest": ""}}  # fmt: skip
    with tarfile.open(archive, "w") as tar:
        data = json.dumps(manifest).encode()
        info = tarfile.TarInfo("manifest.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    beside = {"archive": archive.name, "archive_sha256": digest, "image": "bench:xeon",
              "lock_sha256": hashlib.sha256((ROOT / "images/xeon/requirements.lock")
                                            .read_bytes()).hexdigest()}  # fmt: skip
    (tmp_path / "bench-xeon-vendor-000000000000.manifest.json").write_text(json.dumps(beside))
    env = {"BENCH_VENDOR_ARCHIVE": str(archive)}
    done = _nox("-s", "build(image='xeon')", env=env)
    assert done.returncode != 0 and "set BENCH_ARCHIVE_SHA256" in done.stderr
    done = _nox("-s", "build(image='xeon')", env={**env, "BENCH_ARCHIVE_SHA256": "0" * 64})
    assert done.returncode != 0 and f"its sha256 is {digest}, not the {'0' * 64}" in done.stderr
    done = _nox("-s", "build(image='xeon')", env={**env, "BENCH_ARCHIVE_SHA256": digest})
    assert done.returncode != 0
    assert f"vendors 'bench:xeon' with lock '{'0' * 64}', not bench:xeon" in done.stderr


def test_a_mirror_with_credentials_is_refused_before_it_reaches_an_image():
    env = {"BENCH_DEBIAN_MIRROR": "HTTPS://ci:s3cret@mirror.example/debian"}
    for session in ("base", "build(image='xeon')"):
        done = _nox("-s", session, env=env)
        assert done.returncode != 0
        assert "a URL with a user or password would be stored in the image" in done.stderr
        assert "s3cret" not in done.stderr + done.stdout


def test_rerun_runs_no_image_named_by_a_file_that_is_not_an_image_id(tmp_path):
    """A result's digest reaches docker only as sha256:<64 hex>: never a flag or a mount."""
    data = json.loads((DATA / "result-v9.json").read_text())
    for digest in ("-v/:/host", "bench:xeon", "sha256:" + "a" * 63, ["sha256:x"]):
        data["environment"]["image"] = {"variant": "tpu", "digest": digest}
        crafted = tmp_path / "crafted.json"
        crafted.write_text(json.dumps(data))
        done = _nox("-s", "rerun", "--", str(crafted))
        assert done.returncode != 0 and "names no bench image id it ran in" in done.stderr


@pytest.mark.parametrize("image", IMAGES)
def test_each_image_locks_the_framework_it_runs_by_default(image):
    from bench import registry

    meta = tomllib.loads((ROOT / "images" / image / "image.toml").read_text())
    framework = meta.get("framework", "torch")
    assert framework in registry.framework_names()
    packages = set(lock_entries(ROOT / "images" / image / "requirements.lock"))
    wanted = {"torch": {"torch"}, "tensorflow": {"keras"}, "jax": {"jax", "flax", "optax"}}
    if meta["base"].startswith("debian:"):  # bench:rocm's PyTorch comes with its base
        assert wanted[framework] <= packages, (image, framework)
    if meta["device"] == "tpu":
        assert "libtpu" in packages


@pytest.mark.parametrize("image", IMAGES)
def test_each_image_can_decode_imagenet(image):
    # --data imagenet:PATH decodes JPEGs with Pillow in every framework (bench.datasets);
    # bench:tpu-jax, bench:cuda-jax and bench:cuda-tf had none.
    meta = tomllib.loads((ROOT / "images" / image / "image.toml").read_text())
    if not meta["base"].startswith("debian:"):
        pytest.skip("its Python packages come with its base image (bench:rocm: torchvision's)")
    assert "pillow" in lock_entries(ROOT / "images" / image / "requirements.lock"), image


@functools.cache
def _noxfile():
    """noxfile.py as a module, loaded once (each load registers its sessions again)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_noxfile", ROOT / "noxfile.py")
    noxfile = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(noxfile)
    return noxfile


def _docker_answers() -> bool:
    if shutil.which("docker") is None:
        return False
    return subprocess.run(["docker", "info"], capture_output=True, check=False).returncode == 0


@pytest.mark.parametrize(
    ("inspected", "gateway"),
    [
        ("172.18.0.1 172.18.0.0/16\n", "172.18.0.1"),  # Docker 23 and later
        (" 172.17.0.0/16\n", "172.17.0.1"),  # Docker 20.10: no gateway in the IPAM config
        ("\n", None),
        ("fe80::1 fe80::/64\n", None),
    ],
)
def test_the_ca_is_served_on_the_bridges_gateway_whichever_docker_names_it(inspected, gateway):
    assert _noxfile()._bridge_gateway(inspected) == gateway


@pytest.mark.skipif(not _docker_answers(), reason="no Docker engine answers here")
def test_the_build_ca_is_served_to_the_build_never_put_in_its_context(tmp_path, monkeypatch):
    """BENCH_CA_BUNDLE reaches install.sh over Docker's bridge (so no layer holds it), with
    the same build arguments every time (so the dependency layer stays cached)."""
    import hashlib
    import urllib.error
    import urllib.request

    noxfile = _noxfile()

    class Session:
        def error(self, message):
            raise AssertionError(message)

    bundle = tmp_path / "proxy-ca.crt"
    bundle.write_bytes(b"-----BEGIN CERTIFICATE-----\nproxy\n-----END CERTIFICATE-----\n")
    monkeypatch.setenv("BENCH_CA_BUNDLE", str(bundle))
    seen = []
    for _ in range(2):
        with noxfile._served_ca(Session(), str(bundle)) as args:
            seen.append(args)
            url = args["BENCH_CA_URL"]
            assert urllib.request.urlopen(url, timeout=10).read() == bundle.read_bytes()
            with pytest.raises(urllib.error.HTTPError):
                urllib.request.urlopen(url.rsplit("/", 1)[0] + "/etc/passwd", timeout=10)
        with pytest.raises(urllib.error.URLError):  # no longer served once the build ends
            urllib.request.urlopen(url, timeout=5)
    assert seen[0] == seen[1]
    assert seen[0]["BENCH_CA_SHA256"] == hashlib.sha256(bundle.read_bytes()).hexdigest()
    copied = (ROOT / "images" / "common" / "Dockerfile").read_text()
    assert "ca/" not in copied and not (ROOT / "images" / "common" / "ca").exists()
