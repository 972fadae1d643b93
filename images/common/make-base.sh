#!/bin/sh
# Build a Debian base image locally with debootstrap and import it into Docker: for
# air-gapped sites and for CI machines that cannot pull from a registry. Images
# then build FROM it with --build-arg BASE_IMAGE=<tag>.
#
#   make-base.sh [TAG] [SUITE] [MIRROR]
#   defaults:     bench-base:bookworm  bookworm  http://deb.debian.org/debian
#
# For a base that matches the pinned digest's date, pass a snapshot mirror, e.g.
# http://snapshot.debian.org/archive/debian/20260803T000000Z
set -eu
tag=${1:-bench-base:bookworm}
suite=${2:-bookworm}
mirror=${3:-http://deb.debian.org/debian}
command -v debootstrap > /dev/null || {
    echo "make-base.sh: debootstrap is not installed: apt-get install debootstrap (as root), then run this again" >&2
    exit 1
}
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase "$suite" "$root" "$mirror"
# Same trimming as Debian's slim images: no caches, no package lists.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
tar --numeric-owner -C "$root" -c . | docker import \
    --change 'CMD ["bash"]' \
    --message "debootstrap --variant=minbase $suite $mirror" - "$tag"
docker image inspect --format '{{.Id}}' "$tag"
