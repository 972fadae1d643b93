#!/usr/bin/env bash
# CI for the images: make sure a Docker engine answers, build the Debian base locally,
# then build each image marked ci_build in its image.toml from its real lock and
# smoke-run it on the CPU (nox -s smoke checks the result file and the labels).
set -euo pipefail
cd "$(dirname "$0")/.."

need() { command -v "$1" > /dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2"; }; }
if ! docker info > /dev/null 2>&1; then
    need dockerd docker.io
    nohup dockerd > /tmp/bench-ci-dockerd.log 2>&1 &
    for _ in $(seq 60); do docker info > /dev/null 2>&1 && break; sleep 1; done
    docker info > /dev/null || { tail -20 /tmp/bench-ci-dockerd.log; exit 1; }
fi
need debootstrap debootstrap

# No registry is reachable here: a local base, the plain Debian mirror instead of the
# snapshot service, and the host's CA bundle for the TLS proxy in front of PyPI.
export BENCH_BASE_IMAGE=bench-base:bookworm
export BENCH_DEBIAN_MIRROR=http://deb.debian.org/debian
export BENCH_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt
docker image inspect "$BENCH_BASE_IMAGE" > /dev/null 2>&1 || python3 -m nox -s base

images=$(python3 -c 'import pathlib, tomllib
print(" ".join(p.parent.name for p in sorted(pathlib.Path("images").glob("*/image.toml"))
               if tomllib.loads(p.read_text())["ci_build"]))')
for image in $images; do
    start=$(date +%s)
    python3 -m nox -s "build(image='$image')"
    size=$(docker image inspect --format '{{.Size}}' "bench:$image")
    echo "bench:$image built in $(( $(date +%s) - start )) s, $(( size / 1048576 )) MiB"
    python3 -m nox -s "smoke(image='$image')"
    docker rmi "bench:$image" > /dev/null  # ~6 GB each: keep the disk free
done
docker image prune -f > /dev/null
