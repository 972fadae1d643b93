"""What rebuilds this image, written once at the end of `docker build` from its build
arguments to /opt/bench/image.json; bench reads it at run time into a result's
environment.image (bench/run/provenance.py), so a plain `docker run` names its image."""

import json
import os
from pathlib import Path

debian = Path("/opt/bench/debian-source")  # install.sh: where its Debian packages came from
record = {
    "name": f"bench:{os.environ['VARIANT']}",
    "revision": os.environ.get("BENCH_GIT_COMMIT") or None,
    "lock_sha256": os.environ.get("BENCH_LOCK_SHA256") or None,
    "inputs_sha256": os.environ.get("BENCH_INPUTS_SHA256") or None,
    "base": os.environ.get("BASE_NAME") or None,
    "base_digest": os.environ.get("BASE_DIGEST") or None,
    "base_origin": os.environ.get("BASE_ORIGIN") or None,
    "debian_source": debian.read_text().strip() if debian.is_file() else None,
}
Path("/opt/bench/image.json").write_text(json.dumps(record, indent=1) + "\n")
