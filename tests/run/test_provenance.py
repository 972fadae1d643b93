"""bench/run/provenance.py: what a result says of the image it ran in, read from the image's
own record (/opt/bench/image.json) so that a plain `docker run` names what rebuilds it."""

import json

from bench.run import provenance

RECORD = {
    "name": "bench:xeon",
    "revision": "1934a505a20e616b55639c9e44197c5b83dc9923",
    "inputs_sha256": "0" * 64,
    "base_digest": "sha256:" + "3" * 64,
    "base_origin": (
        "debootstrap --variant=minbase bookworm http://deb.debian.org/debian, 2026-12-07"
    ),
    "debian_source": "http://deb.debian.org/debian bookworm, fetched 2026-12-07",
}


def test_a_plain_docker_run_result_names_what_rebuilds_its_image(tmp_path, monkeypatch):
    (tmp_path / "image.json").write_text(json.dumps(RECORD))
    monkeypatch.setattr(provenance, "IMAGE_FILE", tmp_path / "image.json")
    monkeypatch.setenv("BENCH_IMAGE", "bench:xeon")
    monkeypatch.setenv("BENCH_LOCK_SHA256", "f" * 64)
    monkeypatch.delenv("BENCH_IMAGE_DIGEST", raising=False)  # a plain docker run passes none
    image = provenance.collect()["image"]
    assert image["name"] == "bench:xeon" and image["lock_sha256"] == "f" * 64
    for key in provenance.IMAGE_FILE_KEYS:
        assert image[key] == RECORD[key], key


def test_the_record_is_read_bounded_and_typed(tmp_path, monkeypatch):
    path = tmp_path / "image.json"
    monkeypatch.setattr(provenance, "IMAGE_FILE", path)
    assert provenance.image_file() == {}  # outside an image
    path.write_text("[1, 2]")
    assert provenance.image_file() == {}
    path.write_text(json.dumps({"inputs_sha256": 7, "base_origin": "x" * 301, "other": "y"}))
    assert provenance.image_file() == dict.fromkeys(provenance.IMAGE_FILE_KEYS)
    path.write_text(" " * (64 * 1024 + 1))
    assert provenance.image_file() == {}


def test_in_image_is_the_image_name(monkeypatch):
    monkeypatch.setenv("BENCH_IMAGE", "bench:cuda")
    assert provenance.in_image() == "bench:cuda"
    monkeypatch.delenv("BENCH_IMAGE")
    assert provenance.in_image() is None
