"""make quickstart's image path without a Docker engine: what nox -s build chooses from
what it reaches (faked), and each failure as one line saying what to do, the missing
piece faked: no docker, no permission on its socket, no engine, no debootstrap, no base,
no Debian index, too little disk."""

import http.server
import os
import re
import stat
import subprocess
import sys
import threading
from collections import namedtuple
from pathlib import Path

import pytest

from tests.project.test_images import ROOT, _noxfile

PINNED = "debian:bookworm-slim@sha256:" + "a" * 64
LOCAL = {
    "Id": "sha256:" + "b" * 64,
    "Created": "2026-12-07T08:20:00Z",
    "Comment": "debootstrap --variant=minbase bookworm http://deb.debian.org/debian",
}


class Refused(Exception):
    pass


class Session:
    """What the image path asks of nox.Session: error() raises, as nox's does."""

    def __init__(self) -> None:
        self.logged: list[str] = []
        self.ran: list[tuple[str, ...]] = []

    def error(self, message: str) -> None:
        raise Refused(message)

    def log(self, message: str) -> None:
        self.logged.append(message)

    def run(self, *args: str, **kwargs: object) -> None:
        self.ran.append(args)


def _fake_docker(folder: Path, stderr: str = "", code: int = 1, stdout: str = "") -> None:
    """A `docker` on PATH that says STDERR and exits CODE, as the real one does when its
    engine cannot be reached."""
    script = folder / "docker"
    script.write_text(
        f"#!/bin/sh\nprintf '%s' '{stdout}'\nprintf '%s\\n' '{stderr}' >&2\nexit {code}\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


def _refusal(call) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(Refused) as refused:
        call()
    line = str(refused.value)
    assert "\n" not in line, line
    return line


# Docker itself


def test_no_docker_binary_is_one_line_before_anything_runs(tmp_path):
    (tmp_path / "python").symlink_to(sys.executable)
    env = {**os.environ, "PATH": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "nox", "-s", "build(image='xeon')"], cwd=ROOT,
                          capture_output=True, text=True, env=env)  # fmt: skip
    assert done.returncode != 0
    assert "docker is not installed: install Docker Engine" in done.stderr
    assert "pip install '.[torch]' && bench suite quick" in done.stderr


def test_no_permission_on_the_socket_says_how_to_get_it(tmp_path, monkeypatch):
    _fake_docker(tmp_path, "permission denied while trying to connect to the Docker daemon"
                 " socket at unix:///var/run/docker.sock: Get ...: dial unix"
                 " /var/run/docker.sock: connect: permission denied")  # fmt: skip
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    line = _refusal(lambda: _noxfile()._require_docker(Session()))
    assert line.startswith("no permission on the Docker engine's socket")
    assert "usermod -aG docker" in line


def test_an_engine_that_does_not_answer_says_to_start_it(tmp_path, monkeypatch):
    _fake_docker(tmp_path, "Cannot connect to the Docker daemon at unix:///var/run/docker.sock."
                 " Is the docker daemon running?")  # fmt: skip
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    line = _refusal(lambda: _noxfile()._require_docker(Session()))
    assert line.startswith("no Docker engine answers") and "start it" in line


def test_an_engine_that_answers_is_no_problem(tmp_path, monkeypatch):
    _fake_docker(tmp_path, code=0)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    assert _noxfile()._docker_problem() is None


# debootstrap, the base


def test_no_debootstrap_as_a_user_names_it_and_root(monkeypatch):
    noxfile = _noxfile()
    monkeypatch.setattr(noxfile.shutil, "which", lambda name, *a, **k: None)
    monkeypatch.setattr(noxfile.os, "geteuid", lambda: 1000)
    line = _refusal(lambda: noxfile._need_debootstrap(Session()))
    assert "sudo apt-get install debootstrap" in line


def test_no_debootstrap_as_root_is_installed_with_apt_else_one_line(tmp_path, monkeypatch):
    noxfile = _noxfile()
    apt = tmp_path / "apt-get"  # an apt that installs nothing (no mirror answers)
    apt.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path}/asked\nexit 100\n')
    apt.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(noxfile.os, "geteuid", lambda: 0)
    line = _refusal(lambda: noxfile._need_debootstrap(Session()))
    assert "debootstrap is not installed: install it (apt-get install debootstrap)" in line
    assert "install -y -qq debootstrap" in (tmp_path / "asked").read_text()


def test_make_base_without_debootstrap_is_one_line_not_exit_127():
    done = subprocess.run(["/bin/sh", str(ROOT / "images/common/make-base.sh")],
                          capture_output=True, text=True, env={"PATH": "/nonexistent"})  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "make-base.sh: debootstrap is not installed: apt-get install debootstrap (as root),"
        " then run this again"
    )


@pytest.fixture
def reached(monkeypatch):
    """What the build reaches, faked: {'registry': bool, 'snapshot': bool, 'mirror': bool},
    images on this machine by reference, and whether a proxy re-signs TLS."""
    noxfile = _noxfile()
    world = {"registry": False, "snapshot": False, "mirror": True, "resigns": False,
             "custom": True, "images": {}}  # fmt: skip
    hosts = {"registry-1.docker.io": "registry", "snapshot.debian.org": "snapshot",
             "deb.debian.org": "mirror", "mirror.example": "custom"}  # fmt: skip

    def answers(url, context=None):  # type: ignore[no-untyped-def]
        return world[hosts[url.split("/")[2]]]

    monkeypatch.setattr(noxfile, "_answers", answers)
    monkeypatch.setattr(noxfile, "_inspect", lambda ref: world["images"].get(ref, {}))
    monkeypatch.setattr(noxfile, "_proxy_resigns_tls", lambda: world["resigns"])
    monkeypatch.setattr(noxfile, "_image", lambda name: {"base": PINNED, "device": "cpu"})
    for name in ("BENCH_BASE_IMAGE", "BENCH_DEBIAN_MIRROR", "BENCH_CA_BUNDLE"):
        monkeypatch.delenv(name, raising=False)
    return world


def test_no_registry_no_snapshot_a_local_base_the_mirror_and_the_host_ca(reached):
    reached["resigns"] = True
    reached["images"]["bench-base:bookworm"] = LOCAL
    session = Session()
    args, bundle = _noxfile()._choose(session, "xeon")
    assert args["BASE_IMAGE"] == "bench-base:bookworm" and args["BASE_DIGEST"] == LOCAL["Id"]
    assert args["BASE_ORIGIN"] == f"{LOCAL['Comment']}, 2026-12-07"
    assert args["DEBIAN_MIRROR"] == "http://deb.debian.org/debian"
    assert bundle == "/etc/ssl/certs/ca-certificates.crt"
    (line,) = session.logged
    assert line.startswith("bench:xeon from the local base bench-base:bookworm")
    assert "registry-1.docker.io does not answer" in line
    assert "snapshot.debian.org does not answer" in line and "a proxy re-signs TLS" in line
    assert "a rebuild years later gets what the Debian mirror holds then" in line
    assert not session.ran  # no pull, no base built: it was here


def test_no_base_here_is_made_with_debootstrap_from_the_snapshot_where_it_answers(
    reached, monkeypatch
):
    noxfile = _noxfile()
    reached["snapshot"] = True
    monkeypatch.setattr(noxfile, "_need_debootstrap", lambda session: None)
    session = Session()

    def run(*args, **kwargs):  # type: ignore[no-untyped-def]
        session.ran.append(args)
        reached["images"]["bench-base:bookworm"] = LOCAL

    session.run = run  # type: ignore[method-assign]
    args, _ = noxfile._choose(session, "xeon")
    ((script, tag, _, mirror),) = session.ran
    assert script.endswith("make-base.sh") and tag == "bench-base:bookworm"
    assert mirror == f"http://snapshot.debian.org/archive/debian/{noxfile._debian_snapshot()}"
    assert "DEBIAN_MIRROR" not in args  # the dated snapshot's packages


def test_everything_reached_the_pinned_base_and_the_snapshot_a_same_rebuild(reached):
    reached.update(registry=True, snapshot=True)
    reached["images"][PINNED] = {"Id": "sha256:" + "c" * 64}
    session = Session()
    args, bundle = _noxfile()._choose(session, "xeon")
    assert args == {} and bundle is None  # the Dockerfile's defaults: pinned, snapshot
    assert "gets the same base, packages and wheels" in session.logged[0]


def test_the_bench_variables_still_choose(reached, monkeypatch, tmp_path):
    reached.update(registry=True, snapshot=True)
    reached["images"].update({PINNED: {"Id": "x"}, "my-base:1": LOCAL})
    monkeypatch.setenv("BENCH_BASE_IMAGE", "my-base:1")
    monkeypatch.setenv("BENCH_DEBIAN_MIRROR", "http://mirror.example/debian")
    monkeypatch.setenv("BENCH_CA_BUNDLE", str(tmp_path / "ca.crt"))
    session = Session()
    args, bundle = _noxfile()._choose(session, "xeon")
    assert args["BASE_IMAGE"] == "my-base:1"
    assert args["DEBIAN_MIRROR"] == "http://mirror.example/debian"
    assert bundle == str(tmp_path / "ca.crt")
    assert "; BENCH_BASE_IMAGE)" in session.logged[0]


def test_a_named_mirror_that_does_not_answer_is_one_line_before_the_build(reached, monkeypatch):
    reached["custom"] = False
    monkeypatch.setenv("BENCH_DEBIAN_MIRROR", "http://mirror.example/debian")
    line = _refusal(lambda: _noxfile()._choose(Session(), "xeon"))
    assert line.startswith("BENCH_DEBIAN_MIRROR=http://mirror.example/debian does not answer")


def test_a_named_base_that_is_not_here_is_one_line(reached, monkeypatch):
    monkeypatch.setenv("BENCH_BASE_IMAGE", "bench-base:bookworm")
    line = _refusal(lambda: _noxfile()._choose(Session(), "xeon"))
    assert line.startswith("BENCH_BASE_IMAGE=bench-base:bookworm is no image on this machine")


def test_no_base_and_no_registry_for_a_base_debootstrap_cannot_make(reached, monkeypatch):
    noxfile = _noxfile()
    monkeypatch.setattr(noxfile, "_image", lambda name: {"base": "rocm/pytorch@sha256:" + "d" * 64})
    line = _refusal(lambda: noxfile._choose(Session(), "rocm"))
    assert "is not on this machine and registry-1.docker.io does not answer" in line
    assert "docker load it from an archive" in line


def test_no_debian_archive_answers_is_one_line(reached):
    reached["mirror"] = False
    line = _refusal(lambda: _noxfile()._choose(Session(), "xeon"))
    assert line.startswith("neither snapshot.debian.org nor deb.debian.org answers")
    assert "BENCH_DEBIAN_MIRROR" in line


def test_a_probe_counts_any_http_answer_and_nothing_else(tmp_path):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self) -> None:
            self.send_response(401)  # a registry's /v2/ without a token
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    try:
        assert _noxfile()._answers(f"http://127.0.0.1:{port}/v2/")
    finally:
        server.shutdown()
        server.server_close()
    assert not _noxfile()._answers(f"http://127.0.0.1:{port}/v2/")  # nothing listens now


# Disk


def test_too_little_disk_for_the_build_is_one_line_before_it(tmp_path, monkeypatch):
    noxfile = _noxfile()
    _fake_docker(tmp_path, code=0, stdout=str(tmp_path))  # docker info: its data-root
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    monkeypatch.setattr(noxfile, "_inspect", lambda ref: {})
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(noxfile.shutil, "disk_usage", lambda path: usage(0, 0, 3 * 2**30))
    line = _refusal(lambda: noxfile._check_disk(Session(), "xeon", "f" * 64))
    assert line.startswith(f"Docker's disk ({tmp_path}) has 3.0 GiB free and building bench:xeon")
    assert "docker image prune" in line
    monkeypatch.setattr(noxfile.shutil, "disk_usage", lambda path: usage(0, 0, 40 * 2**30))
    noxfile._check_disk(Session(), "xeon", "f" * 64)  # room enough: no word


def test_a_rebuild_of_the_same_lock_asks_for_no_room(monkeypatch):
    noxfile = _noxfile()
    monkeypatch.setattr(noxfile, "_inspect", lambda ref: {
        "Config": {"Labels": {"dev.bench.lock.sha256": "f" * 64}}})  # fmt: skip
    monkeypatch.setattr(noxfile.shutil, "disk_usage", lambda path: pytest.fail("asked"))
    noxfile._check_disk(Session(), "xeon", "f" * 64)


# The Debian index, inside the build


def test_no_debian_index_fetched_fails_in_one_line(tmp_path):
    check = ROOT / "images/common/check-apt-index.sh"
    done = subprocess.run(["/bin/sh", str(check), "http://deb.example/debian bookworm",
                           str(tmp_path)], capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.strip().startswith(
        "install.sh: apt-get update fetched no Debian package index from"
        " http://deb.example/debian bookworm: set BENCH_DEBIAN_MIRROR"
    )
    (tmp_path / "deb.debian.org_debian_dists_bookworm_main_binary-amd64_Packages.lz4").touch()
    done = subprocess.run(["/bin/sh", str(check), "x", str(tmp_path)], capture_output=True)
    assert done.returncode == 0


def test_install_checks_the_index_right_after_apt_get_update():
    script = (ROOT / "images/common/install.sh").read_text()
    update = script.index("    apt-get update\n")
    check = script.index("/opt/bench/common/check-apt-index.sh")
    install = script.index("apt-get install -y --no-install-recommends --download-only")
    assert update < check < install


# What the image says of itself


def test_no_label_carries_a_local_path(monkeypatch):
    noxfile = _noxfile()
    public = "https://github.com/org/bench.git"
    for origin, label in (("/work/bench", ""), ("file:///srv/bench.git", ""),
                          ("https://ci:token@github.com/org/bench.git", public),
                          ("git@github.com:org/bench.git", public)):  # fmt: skip
        monkeypatch.setattr(noxfile, "_git", lambda *args, o=origin: o)
        assert noxfile._public_source() == label, origin


def test_the_image_writes_every_key_bench_reads_from_it():
    from bench.run import provenance

    written = set(re.findall(r'^    "(\w+)":', (ROOT / "images/common/image-json.py").read_text(),
                             re.MULTILINE))  # fmt: skip
    assert set(provenance.IMAGE_FILE_KEYS) <= written
    dockerfile = (ROOT / "images/common/Dockerfile").read_text()
    assert "RUN /opt/venv/bin/python /opt/bench/common/image-json.py" in dockerfile
    assert str(provenance.IMAGE_FILE) == "/opt/bench/image.json"


def test_every_build_leaves_no_container_when_it_fails(monkeypatch):
    noxfile = _noxfile()
    session = Session()
    noxfile._docker_build(session, "bench:x", {"VARIANT": "x"}, ca_bundle=None)
    ((*command,),) = session.ran
    assert command[:3] == ["docker", "build", "--force-rm"]


def test_a_plain_docker_run_result_is_rerun_in_the_image_built_from_its_inputs(
    tmp_path, monkeypatch
):
    noxfile = _noxfile()
    image_id = "sha256:" + "e" * 64
    _fake_docker(tmp_path, code=0, stdout=image_id)  # docker info, then docker images -q
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    assert noxfile._built_from("0" * 64) == image_id
    for recorded in (None, "0" * 63, "-v/:/host", ["0" * 64]):
        assert noxfile._built_from(recorded) is None
    _fake_docker(tmp_path, code=0, stdout="--help")  # not an image id: never a reference
    assert noxfile._built_from("0" * 64) is None
