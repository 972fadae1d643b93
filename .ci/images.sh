#!/usr/bin/env bash
# CI for the images: make sure a Docker engine answers, run the README's make quickstart as
# a newcomer types it, then build each image marked ci_build in its image.toml from its
# real lock (kept when its inputs are unchanged since the last build here) and smoke-run
# it on the CPU (nox -s smoke checks the result file and the labels); the one
# marked ci_offline is also rebuilt with no network from a vendor archive (again only when
# what that rebuild downloads changed).
# BENCH_CI_IMAGES="tpu-jax xeon" picks the images instead of ci_build.
set -euo pipefail
cd "$(dirname "$0")/.."

need() { command -v "$1" > /dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2"; }; }
if ! docker info > /dev/null 2>&1; then
    need dockerd docker.io
    nohup dockerd > /tmp/bench-ci-dockerd.log 2>&1 &
    for _ in $(seq 60); do docker info > /dev/null 2>&1 && break; sleep 1; done
    docker info > /dev/null || { tail -20 /tmp/bench-ci-dockerd.log; exit 1; }
fi
need make make

# The README's quickstart as a newcomer types it, none of the BENCH_ variables set: nox -s
# build finds out what this machine reaches (here no registry, no snapshot.debian.org, a TLS
# proxy in front of PyPI) and chooses by itself (a local Debian base made with debootstrap,
# deb.debian.org, the host's CA bundle); the image is rebuilt only when its inputs changed.
start=$(date +%s)
env -u BENCH_BASE_IMAGE -u BENCH_DEBIAN_MIRROR -u BENCH_CA_BUNDLE make quickstart
echo "make quickstart (the README's) took $(( $(date +%s) - start )) s"

images=${BENCH_CI_IMAGES:-}
[ -n "$images" ] || images=$(python3 -c 'import pathlib, tomllib
print(" ".join(p.parent.name for p in sorted(pathlib.Path("images").glob("*/image.toml"))
               if tomllib.loads(p.read_text())["ci_build"]))')
built() {  # bench:IMAGE built: its build time and size
    size=$(docker image inspect --format '{{.Size}}' "bench:$1")
    echo "bench:$1 built$2 in $(( $(date +%s) - start )) s, $(( size / 1048576 )) MiB"
}
freeze() { docker run --rm --pull never --network none --entrypoint pip "bench:$1" freeze; }
lock_label() { docker image inspect --format '{{index .Config.Labels "dev.bench.lock.sha256"}}' "bench:$1"; }

# The offline rebuild (image.toml: ci_offline): vendor what the build downloads, rebuild
# from that archive alone with --network none, and compare with the online build.
offline_check() {
    freeze "$1" > /tmp/bench-freeze-online.txt
    online_lock=$(lock_label "$1")
    start=$(date +%s)
    python3 -m nox -s "vendor(image='$1')"
    echo "vendored bench:$1 in $(( $(date +%s) - start )) s: $(du -h dist/bench-"$1"-vendor-*.tar | cut -f1)"
    start=$(date +%s)
    archive=$(ls dist/bench-"$1"-vendor-*.tar)
    # The hash this machine just printed is the one it holds: the offline build checks it.
    BENCH_VENDOR_ARCHIVE=$archive BENCH_ARCHIVE_SHA256=$(cut -d' ' -f1 "$archive.sha256") \
        python3 -m nox -s "build(image='$1')"
    built "$1" " offline (--network none)"
    freeze "$1" | diff /tmp/bench-freeze-online.txt - || { echo "offline: pip freeze differs"; exit 1; }
    [ "$(lock_label "$1")" = "$online_lock" ] || { echo "offline: lock hash differs"; exit 1; }
    echo "bench:$1 rebuilt offline: pip freeze ($(wc -l < /tmp/bench-freeze-online.txt) packages) and lock hash $online_lock as online"
    python3 -m nox -s "smoke(image='$1')"
    rm -f dist/bench-"$1"-vendor-*
}

offline_inputs() {  # the sha256 of what an offline rebuild of bench:IMAGE downloads from
    find images/common/Dockerfile images/common/install.sh pyproject.toml images/"$1" \
        -maxdepth 1 -type f | sort | xargs sha256sum | sha256sum | cut -c1-16
}

for image in $images; do
    start=$(date +%s)
    python3 -m nox -s "build(image='$image')"
    built "$image" ""
    docker image prune -f > /dev/null  # the image it replaced: one at a time, not all at the end
    start=$(date +%s)
    python3 -m nox -s "smoke(image='$image')"
    echo "bench:$image smoke-tested in $(( $(date +%s) - start )) s"
    if [ "$(python3 -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb")).get("ci_offline", False))' "images/$image/image.toml")" = True ]; then
        # The offline rebuild proves that the lock, its Debian packages and the build's
        # own requirements can be vendored and built with no network: it is proven again
        # when one of those changed, not on every change to bench's code (copied from
        # the build context, never downloaded). BENCH_CI_OFFLINE=1 proves it anyway.
        marker=${XDG_CACHE_HOME:-$HOME/.cache}/bench-ci/offline-$image-$(offline_inputs "$image")
        if [ -e "$marker" ] && [ -z "${BENCH_CI_OFFLINE:-}" ]; then
            echo "bench:$image: rebuilt offline from these inputs on $(cat "$marker"): not again"
        else
            offline_check "$image"
            mkdir -p "$(dirname "$marker")" && date -u +%FT%TZ > "$marker"
        fi
    fi
done
# The images stay for the next run (nox -s build keeps one whose inputs are unchanged, and
# reuses the cached dependency layer when only bench changed); what they replaced goes.
docker image prune -f > /dev/null
df -h /var/lib/docker | tail -1
