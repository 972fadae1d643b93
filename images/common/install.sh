#!/bin/sh
# The install step every image shares, run once inside `docker build`:
#   install.sh VENV
# with the image's folder (images/<VARIANT>/) copied to /opt/bench/image.
# 1. The Debian packages in its packages.txt, from a dated snapshot of the archive
#    (DEBIAN_SNAPSHOT), or from DEBIAN_MIRROR when set (builders that cannot reach
#    the snapshot service); one line and a failure when apt fetched no index. Where
#    they came from is kept in /opt/bench/debian-source. No packages.txt: no apt at all
#    (e.g. the Ubuntu ROCm base).
# 2. A virtual environment at VENV (kept if the base image already has one).
# 3. The image's hash-locked requirements, without network resolution: pip
#    --require-hashes, --no-deps. bench itself is installed by the Dockerfile's next
#    step, so that a new commit of bench leaves this layer in the build cache.
# 4. An unprivileged user `bench` that owns /results.
# Both installs read their files from a vendor folder, $image/vendor/{debs,wheels}:
#   - BENCH_VENDOR=keep (`nox -s vendor`): fetched from the network into it first, and
#     kept in the image for nox to copy out;
#   - a vendor folder already there (an offline build, `docker build --network none`):
#     used as it is, no network at all, then deleted;
#   - otherwise: fetched into it, then deleted.
set -eu
venv=$1
image=/opt/bench/image
lock=$image/requirements.lock
vendor=$image/vendor
offline=$( [ -d "$vendor" ] && echo yes || echo no)
packages=$( [ -f "$image/packages.txt" ] && grep -v '^#' "$image/packages.txt" | tr '\n' ' ' || true)

if [ -n "${BENCH_LOCK_SHA256:-}" ]; then
    echo "$BENCH_LOCK_SHA256  $lock" | sha256sum -c -
fi

if [ -n "$packages" ] && [ "$offline" = no ]; then
    . /etc/os-release
    rm -f /etc/apt/sources.list /etc/apt/sources.list.d/*
    if [ -n "${DEBIAN_MIRROR:-}" ]; then
        printf 'deb %s %s main\ndeb %s %s-updates main\n' \
            "$DEBIAN_MIRROR" "$VERSION_CODENAME" "$DEBIAN_MIRROR" "$VERSION_CODENAME" \
            > /etc/apt/sources.list
    else
        snapshot=http://snapshot.debian.org/archive
        printf 'deb [check-valid-until=no] %s/debian/%s %s main\ndeb [check-valid-until=no] %s/debian-security/%s %s-security main\n' \
            "$snapshot" "$DEBIAN_SNAPSHOT" "$VERSION_CODENAME" \
            "$snapshot" "$DEBIAN_SNAPSHOT" "$VERSION_CODENAME" > /etc/apt/sources.list
    fi
    apt-get update
    mkdir -p "$vendor/debs/partial"
    if [ -n "${DEBIAN_MIRROR:-}" ]; then
        where="$DEBIAN_MIRROR $VERSION_CODENAME"
        source="$where, fetched $(date -u +%Y-%m-%d)"
    else
        where="snapshot.debian.org $DEBIAN_SNAPSHOT"
        source=$where
    fi
    /opt/bench/common/check-apt-index.sh "$where"
    echo "$source" > "$vendor/debian-source"  # travels in a vendor archive too
    # shellcheck disable=SC2086 # one word per package
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends --download-only \
        -o Dir::Cache::archives="$vendor/debs" ca-certificates $packages
    rm -rf "$vendor/debs/partial" "$vendor/debs/lock" /var/lib/apt/lists/*
    # The mirror stays in no layer: the image's apt has no source, its packages are here.
    rm -f /etc/apt/sources.list
fi
if [ -n "$packages" ]; then  # local files only: apt resolves them among themselves
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$vendor"/debs/*.deb
    # Where they came from, for /opt/bench/image.json (image-json.py)
    cp "$vendor/debian-source" /opt/bench/debian-source 2> /dev/null || true
fi

[ -x "$venv/bin/python" ] || python3 -m venv "$venv"

# Trust an extra CA (a TLS-intercepting proxy) for this step's downloads only: nox serves
# it on Docker's bridge while the build runs (BENCH_CA_URL), never in the build context,
# so it is in no layer; its sha256 is checked, and it is deleted before the step ends.
if [ -n "${BENCH_CA_URL:-}" ] && [ "$offline" = no ]; then
    "$venv/bin/python" - "$BENCH_CA_URL" "${BENCH_CA_SHA256:-}" /tmp/build-ca-extra.crt <<'PY'
import hashlib, sys, urllib.request
url, expected, target = sys.argv[1:]
data = urllib.request.urlopen(url, timeout=30).read(4 * 2**20 + 1)
if len(data) > 4 * 2**20 or hashlib.sha256(data).hexdigest() != expected:
    sys.exit(f"install.sh: the CA served at {url} is not the one nox hashed")
open(target, "wb").write(data)
PY
    cat /etc/ssl/certs/ca-certificates.crt /tmp/build-ca-extra.crt > /tmp/build-ca.pem
    export PIP_CERT=/tmp/build-ca.pem
fi
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_INDEX_URL=https://pypi.org/simple
if [ "$offline" = no ]; then
    "$venv/bin/pip" download --require-hashes --no-deps -r "$lock" -d "$vendor/wheels"
fi
"$venv/bin/pip" install --require-hashes --no-deps --no-index --find-links "$vendor/wheels" -r "$lock"

# A fixed numeric id (USER 10001:10001 in the Dockerfiles) that no base image uses.
if ! id bench > /dev/null 2>&1; then
    groupadd --gid 10001 bench
    useradd --create-home --uid 10001 --gid 10001 --shell /usr/sbin/nologin bench
fi
mkdir -p /results
chown bench:bench /results
rm -f /tmp/build-ca.pem /tmp/build-ca-extra.crt
[ "${BENCH_VENDOR:-}" = keep ] || rm -rf "$vendor"
