import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent  # the repository
DATA = ROOT / "tests" / "data"
needs_two_cores = pytest.mark.skipif(
    len(os.sched_getaffinity(0)) < 2, reason="two CPU ranks need two cores"
)

# What only the full tier (nox -s tests_full) installs. A test the fast tier would skip
# for want of one of these must be marked full, or it would run in neither tier.
FULL_ONLY = ("tensorflow", "keras", "jax", "flax", "optax", "mlx", "sky", "timm")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The full tier: every slow test, and every test parametrized on TensorFlow, JAX or MLX.
    The README's verbatim install (minutes, mostly pip unpacking PyTorch) goes first, then
    the tests marked long, so that under pytest-xdist one worker starts each while the
    others take the rest, rather than a tier ending on one alone (longest first)."""
    for item in items:
        params = getattr(item, "callspec", None)
        ids = params.id if params is not None else ""
        if item.get_closest_marker("slow") or any(f in ids for f in ("tensorflow", "jax", "mlx")):
            item.add_marker(pytest.mark.full)
    items.sort(key=lambda item: (item.get_closest_marker("readme") is None,
                                 item.get_closest_marker("long") is None))  # fmt: skip


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> object:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.skipped and not item.get_closest_marker("full"):
        reason = str(report.longrepr)
        missing = next((name for name in FULL_ONLY if f"'{name}" in reason or f"no {name}" in reason
                        or f"{name} is not installed" in reason), None)  # fmt: skip
        if missing is not None:
            report.outcome = "failed"
            report.longrepr = (
                f"skipped for want of {missing}, which only the full tier installs: mark the"
                " test full (pytest.mark.full), or it runs in no tier"
            )
    return outcome


def run_bench(
    *args: str, cwd: Path | None = None, timeout: float = 600, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """bench as a user runs it: a separate process, its real exit status and output
    (`env`: variables set on top of this process's, as a user's shell would)."""
    return subprocess.run(
        [sys.executable, "-m", "bench", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def two_nodes(tmp_path: Path, tokens: tuple[str, str], steps: int = 3) -> list[subprocess.Popen]:
    """Two 'machines' on this host: `bench tiny` with --nnodes 2, one CPU rank each, node
    R writing into tmp_path/nR, each with its own BENCH_RDZV_TOKEN (tokens[R])."""
    port = free_port()  # for node 0's rendezvous
    argv = [sys.executable, "-m", "bench", "tiny", "--device", "cpu", "--devices", "1",
            "--nnodes", "2", "--rdzv-endpoint", f"127.0.0.1:{port}", "--batch-size", "16",
            "--steps", str(steps), "--warmup-steps", "1"]  # fmt: skip
    return [
        subprocess.Popen(
            [*argv, "--node-rank", str(r), "--output-dir", str(tmp_path / f"n{r}")],
            env={**os.environ, "BENCH_RDZV_TOKEN": tokens[r]},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for r in (0, 1)
    ]


def only_result(directory: Path) -> dict:
    files = list(directory.glob("*.json"))
    assert len(files) == 1, files
    return json.loads(files[0].read_text())


@pytest.fixture
def fixture_v1() -> Path:
    return DATA / "result-v1.json"


_FAKE_IPEX = '''"""A stand-in for intel_extension_for_pytorch: records each ipex.optimize call."""
import json
import os

__version__ = {version!r}


def optimize(model, optimizer=None, dtype=None, weights_prepack=True):
    with open(os.environ["FAKE_IPEX_CALLS"], "a") as calls:
        calls.write(json.dumps({{"dtype": str(dtype), "weights_prepack": weights_prepack,
                                "training": model.training}}) + "\\n")
    return model, optimizer
'''


def make_fake_ipex(root: Path, monkeypatch: pytest.MonkeyPatch, version: str) -> Path:
    """Install a fake IPEX of `version` (a package and its metadata) for this process and
    the children it starts; returns the file each ipex.optimize call is appended to."""
    package = root / "intel_extension_for_pytorch"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(_FAKE_IPEX.format(version=version))
    info = root / f"intel_extension_for_pytorch-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: intel-extension-for-pytorch\nVersion: {version}\n"
    )
    calls = root / "calls.jsonl"
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setenv("PYTHONPATH", str(root))
    monkeypatch.setenv("FAKE_IPEX_CALLS", str(calls))
    return calls


@pytest.fixture
def fake_ipex(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """IPEX 'installed', made for this torch."""
    import importlib.metadata

    torch = importlib.metadata.version("torch")
    minor = ".".join(torch.split("+")[0].split(".")[:2])
    return make_fake_ipex(tmp_path / "ipex", monkeypatch, f"{minor}.0")
