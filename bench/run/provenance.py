"""Provenance stamped on every result: what ran, where, with what, set how.

Collected in the child process, which already imports the framework and owns the
device; the parent never touches the accelerator (a CUDA context there would take
memory from the measurement).
"""

from __future__ import annotations

import json
import math
import os
import platform as host
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import bench
from bench.util import numa

if TYPE_CHECKING:
    from bench.frameworks.base import Framework
    from bench.platforms.base import Platform

# Environment variables recorded in results, with their values: an allow-list of what
# changes speed, never a pattern over all names (one would let AWS_SECRET_ACCESS_KEY,
# db_password or Terraform's TF_VAR_* into files people share). Whole families only
# where a performance library owns the prefix; elsewhere exact names.
SPEED_ENV_PREFIXES = (
    "OMP_",  # OpenMP
    "KMP_",  # Intel OpenMP
    "GOMP_",  # GNU OpenMP
    "MKL_",
    "OPENBLAS_",
    "DNNL_",
    "ONEDNN_",
    "CUDA_",
    "NCCL_",
    "CUBLAS_",
    "CUBLASLT_",
    "CUDNN_",
    "NVIDIA_TF32_",
    "TORCHINDUCTOR_",
    "HIP_",
    "ROCR_",
    "HSA_",
    "MIOPEN_",
    "RCCL_",
    "TPU_",
    "LIBTPU_",
)
SPEED_ENV_NAMES = (
    "LD_PRELOAD",
    "MALLOC_CONF",
    "TCMALLOC_LARGE_ALLOC_REPORT_THRESHOLD",
    "TCMALLOC_RELEASE_RATE",
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_HIP_ALLOC_CONF",
    "PYTORCH_NO_CUDA_MEMORY_CACHING",
    "PYTORCH_TUNABLEOP_ENABLED",
    "TORCH_CUDNN_V8_API_ENABLED",
    "TORCH_BLAS_PREFER_CUBLASLT",
    "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
    "TORCH_COMPILE_DEBUG",
    "XLA_FLAGS",
    "XLA_PYTHON_CLIENT_MEM_FRACTION",
    "XLA_PYTHON_CLIENT_PREALLOCATE",
    "XLA_PYTHON_CLIENT_ALLOCATOR",
    "TF_XLA_FLAGS",
    "TF_ENABLE_ONEDNN_OPTS",
    "TF_GPU_ALLOCATOR",
    "TF_FORCE_GPU_ALLOW_GROWTH",
    "TF_GPU_THREAD_MODE",
    "TF_GPU_THREAD_COUNT",
    "TF_CUDNN_DETERMINISTIC",
    "TF_DETERMINISTIC_OPS",
    "TF_NUM_INTEROP_THREADS",
    "TF_NUM_INTRAOP_THREADS",
    "TF_ENABLE_AUTO_MIXED_PRECISION",
    "JAX_PLATFORMS",
    "JAX_ENABLE_X64",
    "JAX_DEFAULT_MATMUL_PRECISION",
    "JAX_COMPILATION_CACHE_DIR",
    "BENCH_NUMA_BINDING",  # what bench:xeon's launcher applied (before schema 5)
    "BENCH_ALLOCATOR",  # the defaults of --allocator, --openmp, --numa (bench:xeon sets them)
    "BENCH_OPENMP",
    "BENCH_NUMA",
)
# Values that look like credentials are never written, whatever the variable's name:
# a URL with a password, a private key, a known token format, or a long random string.
# redact() sees only what a user typed or set: the command line and the allow-listed
# variables' values. The digests bench records as provenance (git commit, image digest,
# lock sha256) are read into their own fields and never pass through it.
_CREDENTIAL_VALUE = re.compile(
    r"""://[^/\s:@]+:[^/\s@]+@           # scheme://user:password@host
      | -----BEGIN[ A-Z]*PRIVATE\ KEY
      | \b(?:AKIA|ASIA)[0-9A-Z]{16}\b     # AWS access key ids
      | \b(?:gh[pousr]_|github_pat_|glpat-|xox[abprs]-|hf_|sk-|AIza)[0-9A-Za-z_-]{10,}
      | \beyJ[0-9A-Za-z_-]{10,}\.[0-9A-Za-z_-]{10,}\.   # a JSON Web Token
      | (?=[0-9A-Za-z+/_=]*[0-9])(?=[0-9A-Za-z+/_=]*[a-z])(?=[0-9A-Za-z+/_=]*[A-Z])
        [0-9A-Za-z+/_=]{32,}      # a long mixed-case random string ('-' ends it: GPU UUIDs)
    """,
    re.VERBOSE,
)
# Random strings of one case: hex of 32 characters or more (BENCH_RDZV_TOKEN's form,
# `openssl rand -hex 32`; a git token or a sha1 is 40), and base32 or base36 keys. A
# run of letters and digits of one case, 32 or more long, with both letters and
# digits, is a secret unless it is a digest named as one (`sha256:...`, an image's
# `@sha256:...`), or reads like words (below 3.5 bits a character: repeated letters).
_ONE_CASE_RUN = re.compile(r"(?<![0-9A-Za-z])(?:[0-9a-z]{32,}|[0-9A-Z]{32,})(?![0-9A-Za-z])")
_NAMED_DIGEST = re.compile(r"(?:sha1|sha256|sha384|sha512):$", re.IGNORECASE)
_HEX = frozenset("0123456789abcdefABCDEF")
_RANDOM_BITS_PER_CHAR = 3.5  # a random hex string of 32 has about 3.8, of 64 about 3.9


def _bits_per_char(run: str) -> float:
    counts = [run.count(c) for c in set(run)]
    return -sum(n / len(run) * math.log2(n / len(run)) for n in counts)


def _random_one_case(value: str) -> bool:
    for match in _ONE_CASE_RUN.finditer(value):
        run = match.group()
        if _NAMED_DIGEST.search(value, 0, match.start()):
            continue
        if not (any(c.isdigit() for c in run) and any(c.isalpha() for c in run)):
            continue  # a long number, or a word
        if set(run) <= _HEX or _bits_per_char(run) >= _RANDOM_BITS_PER_CHAR:
            return True
    return False


REDACTED = "<redacted: looks like a credential>"


def redact(value: str) -> str:
    """The value, or REDACTED if any part of it looks like a credential."""
    if _CREDENTIAL_VALUE.search(value) or _random_one_case(value):
        return REDACTED
    return value


# CPU features that decide which kernels run (x86 and Arm names from /proc/cpuinfo).
CPU_FLAGS = (
    "avx",
    "avx2",
    "fma",
    "avx512f",
    "avx512_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
    "amx_fp16",
    "asimd",
    "sve",
    "sve2",
    "bf16",
    "i8mm",
)
# Set in images (see images/) so a result names the exact image it ran in.
IMAGE_ENV = {
    "name": "BENCH_IMAGE",
    "variant": "BENCH_IMAGE_VARIANT",
    "digest": "BENCH_IMAGE_DIGEST",
    "lock_sha256": "BENCH_LOCK_SHA256",
    "base": "BENCH_BASE_IMAGE",
}
# What rebuilds the image, written at its build (images/common/image-json.py): read into
# environment.image, so that a plain `docker run` result names it too.
IMAGE_FILE = Path("/opt/bench/image.json")
IMAGE_FILE_KEYS = ("inputs_sha256", "base_digest", "base_origin", "debian_source")


def image_file() -> dict[str, str | None]:
    """IMAGE_FILE_KEYS from the image's own record, each text of at most 300 characters
    or None; {} outside an image (or where the file is not one of ours)."""
    try:
        if IMAGE_FILE.stat().st_size > 64 * 1024:
            return {}
        data = json.loads(IMAGE_FILE.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    found: dict[str, str | None] = {}
    for key in IMAGE_FILE_KEYS:
        value = data.get(key)
        found[key] = value if isinstance(value, str) and 0 < len(value) <= 300 else None
    return found


def in_image() -> str | None:
    """The bench image this process runs in (its name, bench:VARIANT), or None."""
    return os.environ.get("BENCH_IMAGE") or None


# Where a compiler keeps its cache is no speed setting, and bench sets it for every child
# (bench.run.compiler_cache): a user's home path in it would read as drift between users.
NOT_SPEED_ENV = ("TORCHINDUCTOR_CACHE_DIR",)


def speed_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The allow-listed variables that change speed, credential-like values redacted."""
    environ = dict(os.environ) if environ is None else environ
    return {
        name: redact(value)
        for name, value in sorted(environ.items())
        if (name.startswith(SPEED_ENV_PREFIXES) or name in SPEED_ENV_NAMES)
        and name not in NOT_SPEED_ENV
    }


def _git(*args: str, cwd: Path) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def bench_source() -> dict[str, Any]:
    """bench's version and the git commit of its source tree (or as baked into an image)."""
    info: dict[str, Any] = {"version": bench.__version__, "git_commit": None, "git_dirty": None}
    if os.environ.get("BENCH_GIT_COMMIT"):
        info["git_commit"] = os.environ["BENCH_GIT_COMMIT"]
        return info
    source = Path(bench.__file__).resolve().parent.parent
    # Only a checkout of bench itself counts, not some repository bench is installed in.
    if _git("rev-parse", "--show-toplevel", cwd=source) == str(source):
        info["git_commit"] = _git("rev-parse", "HEAD", cwd=source)
        status = _git("status", "--porcelain", "--untracked-files=no", cwd=source)
        info["git_dirty"] = None if status is None else bool(status)
    return info


# World-readable DMI fields that say what machine this is; a cloud VM's product name
# is often its instance type (AWS: 'c7i.2xlarge'). Serial numbers and UUIDs (root-only
# anyway) identify one machine and are never recorded.
_DMI = ("sys_vendor", "product_name")


def dmi() -> dict[str, str] | None:
    found = {}
    for name in _DMI:
        try:
            value = Path("/sys/class/dmi/id", name).read_text().strip()
        except OSError:
            continue
        if value and value.isprintable() and len(value) <= 100:
            found[name] = value
    return found or None


def affinity_cores() -> int | None:
    """The CPUs this process may run on (a container's or taskset's share), or None."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None


def cpu_info(run_cores: int | None = None) -> dict[str, Any]:
    """The processor; `affinity_cores`: the CPUs the run was given (`run_cores`, read by a
    rank before it pinned itself to its share), else this process's."""
    info: dict[str, Any] = {
        "model": host.processor() or None,  # replaced by /proc/cpuinfo's name on Linux
        "architecture": host.machine(),
        "logical_cores": os.cpu_count(),
        "physical_cores": None,
        "sockets": None,
        "numa_nodes": None,
        "flags": [],
        "affinity_cores": run_cores or affinity_cores(),
    }
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return info
    cores, sockets, flags = set(), set(), set()
    physical_id = "0"
    for line in text.splitlines():
        key, _, value = (part.strip() for part in line.partition(":"))
        if key == "model name":  # x86; Arm kernels do not print one
            info["model"] = value
        elif key == "physical id":
            physical_id = value
            sockets.add(value)
        elif key == "core id":
            cores.add((physical_id, value))
        elif key in ("flags", "Features"):
            flags.update(value.split())
    info["physical_cores"] = len(cores) or None
    info["sockets"] = len(sockets) or None
    info["flags"] = [flag for flag in CPU_FLAGS if flag in flags]
    try:  # kHz; absent in many VMs
        khz = Path("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq").read_text()
        info["max_mhz"] = int(khz) / 1000
    except (OSError, ValueError):
        info["max_mhz"] = None
    info["numa_nodes"] = len(numa.node_cpus()) or None
    return info


def _os_release() -> str | None:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip('"')
    except OSError:
        pass
    return None


def _memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def _describe(framework: Framework | None, platform: Platform | None) -> dict[str, Any] | None:
    if platform is None:
        return None
    return framework.describe_devices(platform) if framework else platform.describe()


_RUNTIME_LIBRARIES = ("libtcmalloc", "libjemalloc", "libiomp5", "libgomp")


def runtime_libraries() -> list[str] | None:
    """The allocator and OpenMP libraries mapped into this process (from /proc/self/maps):
    evidence of what --allocator and --openmp really loaded. None where it cannot be read."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return None
    found = {
        Path(line.split()[-1]).name
        for line in maps.splitlines()
        if "/" in line and Path(line.split()[-1]).name.startswith(_RUNTIME_LIBRARIES)
    }
    return sorted(found)


def collect(
    framework: Framework | None = None,
    platform: Platform | None = None,
    run_cores: int | None = None,
) -> dict[str, Any]:
    """Everything that identifies the software and hardware of a measurement; a rank
    passes the CPUs the run had before it took its share (`run_cores`), so that the
    machine reads the same whatever the ranks."""
    image: dict[str, str | None] = {key: os.environ.get(var) for key, var in IMAGE_ENV.items()}
    image.update(image_file())
    return {
        "bench": bench_source(),
        "host": {
            "hostname": socket.gethostname(),
            "os": host.platform(),
            "os_release": _os_release(),
            "kernel": host.release(),
            "python": sys.version.split()[0],
            "python_implementation": host.python_implementation(),
            "memory_bytes": _memory_bytes(),
            "in_container": Path("/.dockerenv").exists() or Path("/run/.containerenv").exists(),
            "dmi": dmi(),
        },
        "cpu": cpu_info(run_cores),
        "accelerator": _describe(framework, platform),
        "framework": {"name": framework.name, **framework.versions()} if framework else None,
        "image": image if any(image.values()) else None,
        "env": speed_env(),
        "runtime_libraries": runtime_libraries(),
    }
