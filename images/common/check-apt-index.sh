#!/bin/sh
# After apt-get update, one line and a failure when it fetched no package index: apt-get
# update exits 0 when no source answers (saying so only in W: lines), and the build would
# fail 20 lines later on "Unable to locate package".
#   check-apt-index.sh SOURCE [LISTS]    (LISTS: default /var/lib/apt/lists)
lists=${2:-/var/lib/apt/lists}
for index in "$lists"/*_Packages*; do
    [ -e "$index" ] && exit 0
done
echo "install.sh: apt-get update fetched no Debian package index from $1: set BENCH_DEBIAN_MIRROR to a Debian mirror this machine reaches (an apt proxy), then build again" >&2
exit 1
