"""docs/contributing.md's recipe for adding a workload, followed: a folder written beside
the others is discovered, listed, and trains a step on the CPU; one that lacks a function
its framework's contract requires is refused at discovery, in one line."""

import json
import shutil
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

import bench
from bench import registry
from bench.cli import main
from bench.config import discovery
from bench.config.run_config import PointConfig
from bench.util.errors import BenchError
from bench.workloads.contract import JaxWorkload, TorchWorkload, WorkloadError
from tests.conftest import run_bench

torch = pytest.importorskip("torch")

# The recipe's two files for a tiny MLP on 3x4x4 images: 48 x 2 + 2 = 98 parameters.
SPEC = """
from bench.workloads.base import Task, WorkloadSpec

WORKLOADS = (
    WorkloadSpec(
        name="mlp-demo",
        description="a one-layer MLP for the recipe's test",
        task=Task.IMAGE_CLASSIFICATION,
        parameter_count=98,
        sample_shape=(3, 4, 4),
        num_classes=2,
        default_batch_size=4,
    ),
)
"""
TORCH = """
from torch import nn

from bench.workloads._torch import loss, make_batch

__all__ = ["build_model", "loss", "make_batch"]


def build_model(spec, point):
    return nn.Sequential(nn.Flatten(), nn.Linear(48, spec.num_classes))
"""


def write_workload(workloads: Path, torch_source: str = TORCH) -> Path:
    folder = workloads / "mlp_demo"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(textwrap.dedent(SPEC))
    (folder / "torch.py").write_text(textwrap.dedent(torch_source))
    return folder


@pytest.fixture
def beside_the_others(tmp_path, monkeypatch):
    """A folder of workloads that discovery reads beside bench/workloads/ (as if the
    recipe's folder were written there), for this test only."""
    import bench.workloads

    extra = tmp_path / "workloads"
    monkeypatch.setattr(bench.workloads, "__path__", [*bench.workloads.__path__, str(extra)])
    for name in [m for m in sys.modules if m.startswith("bench.workloads.mlp_demo")]:
        monkeypatch.delitem(sys.modules, name)
    discovery.workloads.cache_clear()
    yield extra
    discovery.workloads.cache_clear()
    for name in [m for m in sys.modules if m.startswith("bench.workloads.mlp_demo")]:
        del sys.modules[name]


def test_a_new_folder_is_discovered_listed_and_trains_a_step(
    beside_the_others, capsys, monkeypatch
):
    write_workload(beside_the_others)
    spec = registry.workload("mlp-demo")
    assert spec.package == "bench.workloads.mlp_demo" and spec.frameworks() == ("torch",)
    implementation = TorchWorkload.load(spec)
    assert implementation.optimizer is None and implementation.train_loss is None

    monkeypatch.setenv("COLUMNS", "200")  # every column, so the task shows too
    assert main(["list"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if "mlp-demo" in line)
    assert "image-classification" in row and "3x4x4" in row and " 98 " in row

    point = PointConfig(workload="mlp-demo", device="cpu", batch_size=4)
    assert registry.framework("torch").count_parameters(spec, point) == spec.parameter_count
    session = registry.framework("torch").prepare(point, registry.platform("cpu"))
    try:
        loss = session.loss_value(session.step())
    finally:
        session.close()
    assert loss > 0 and session.parameters == 98


def test_a_module_without_a_required_function_is_refused_at_discovery(beside_the_others):
    no_batch = TORCH.replace("import loss, make_batch", "import loss").replace(', "make_batch"', "")
    folder = write_workload(beside_the_others, no_batch)
    with pytest.raises(WorkloadError) as refused:
        registry.workloads()
    message = str(refused.value)
    assert "\n" not in message
    assert message == (
        f"workload 'mlp-demo': {folder / 'torch.py'} has no make_batch "
        "(a torch workload defines build_model, make_batch and loss or train_loss)"
    )
    assert "bench.workloads.mlp_demo.torch" not in sys.modules  # read, never imported


def test_a_model_with_neither_loss_nor_train_loss_is_refused(beside_the_others):
    folder = write_workload(
        beside_the_others,
        "from bench.workloads._torch import make_batch\n\ndef build_model(spec, point): ...\n",
    )
    with pytest.raises(WorkloadError, match=r"torch.py has no loss or train_loss \("):
        registry.workloads()
    assert folder.exists()


def test_an_unknown_task_is_refused_in_one_line(beside_the_others):
    folder = write_workload(beside_the_others)
    spec = folder / "__init__.py"
    spec.write_text(spec.read_text().replace("Task.IMAGE_CLASSIFICATION", '"regression"'))
    with pytest.raises(WorkloadError, match="task 'regression' is not one of: image-class"):
        registry.workloads()


@pytest.mark.full  # a copy of the package, bench list and a real run: seconds
def test_the_recipe_as_a_user_follows_it(tmp_path):
    """The folder written into a copy of the package (a user's checkout), then the
    commands the recipe names, each in a process of its own as a user runs them."""
    source = tmp_path / "src"
    shutil.copytree(Path(bench.__file__).parent, source / "bench")
    write_workload(source / "bench" / "workloads")
    env = {"PYTHONPATH": str(source), "COLUMNS": "200"}

    listed = run_bench("list", env=env, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "mlp-demo" in listed.stdout and "one-layer MLP" in listed.stdout

    out = tmp_path / "results"
    done = run_bench(
        "mlp-demo", "--device", "cpu", "--steps", "1", "--warmup-steps", "0",
        "--repeats", "1", "--output-dir", str(out), env=env, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [saved] = [json.loads(p.read_text()) for p in out.glob("*.json")]
    assert saved["config"]["workload"] == "mlp-demo"
    [point] = saved["points"]
    assert point["status"] == "ok" and point["parameters"] == 98

    (source / "bench" / "workloads" / "mlp_demo" / "torch.py").write_text(
        TORCH.replace("def build_model", "def built_model")
    )
    refused = run_bench("list", env=env, cwd=tmp_path)
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines() == [
        f"bench: error: workload 'mlp-demo': {source}/bench/workloads/mlp_demo/torch.py has "
        "no build_model (a torch workload defines build_model, make_batch and loss or train_loss)"
    ]


def test_a_folder_without_workloads_is_refused_in_one_line(beside_the_others):
    folder = write_workload(beside_the_others)
    (folder / "__init__.py").write_text("SPECS = ()\n")
    with pytest.raises(BenchError, match=r"mlp_demo/__init__.py: defines no WORKLOADS \(a tuple"):
        registry.workloads()


def test_a_module_resolves_once_into_its_contract_absent_options_none():
    module = ModuleType("fake_jax")
    module.build_model = lambda spec, point, dtype: None
    module.make_batch = lambda spec, point, size, seed: (None, None)
    module.loss = lambda logits, targets: 0.0
    resolved = JaxWorkload.of(module, "fake")
    assert resolved.loss is module.loss
    assert resolved.optimizer is None and resolved.token_batch is None
    del module.loss
    with pytest.raises(WorkloadError) as refused:
        JaxWorkload.of(module, "fake")
    assert str(refused.value) == (
        "workload 'fake': fake_jax has no loss "
        "(a jax workload defines build_model, make_batch and loss)"
    )
