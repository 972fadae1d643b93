"""Workloads: exact parameter counts as each spec declares them, the docs' table and the
reference FLOPs table checked against the specs, the contracts and the task enum."""

import dataclasses
import json
import re
from importlib.resources import files

import pytest

from bench import registry
from bench.config.run_config import PointConfig
from bench.result import catalog
from bench.workloads.base import Task
from bench.workloads.contract import CONTRACTS, TorchWorkload
from tests.conftest import ROOT

torch = pytest.importorskip("torch")

WORKLOADS = registry.workloads()
DOCS = ROOT / "docs" / "workloads.md"


def test_every_workload_declares_its_parameter_count():
    undeclared = [name for name, spec in WORKLOADS.items() if spec.parameter_count is None]
    assert not undeclared, f"declare parameter_count= in the spec of {', '.join(undeclared)}"


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(
            name, marks=[pytest.mark.full] if registry.optional_modules(spec, "torch") else []
        )
        for name, spec in WORKLOADS.items()
    ],  # NASNet-A Large comes from timm, which only the full tier installs
)
def test_parameter_counts(name):
    spec = registry.workload(name)
    counted = registry.framework("torch").count_parameters(spec, PointConfig(workload=name))
    assert counted == spec.parameter_count, f"{name}: its spec declares {spec.parameter_count:,}"


def test_cnn_family_spans_seed_one_range():
    counts = [WORKLOADS[n].parameter_count for n in ("cnn-s", "cnn-m", "cnn-l", "cnn-xl")]
    assert counts == sorted(counts)
    assert counts[0] == 122_570  # TensorFlow's tutorial CNN: the study's smallest exactly
    assert counts[-1] == pytest.approx(1_649_482, rel=0.01)


def documented() -> dict[str, int | None]:
    """docs/workloads.md's tables: each workload a row names (`a` `b` in its first cell)
    -> the count in its last cell ('1,234 / 5,678' for two names)."""
    rows: dict[str, int | None] = {}
    for line in DOCS.read_text().splitlines():
        if not line.startswith("| `"):
            continue
        cells = [cell.strip() for cell in line.strip("| ").split("|")]
        names = re.findall(r"`([^`]+)`", cells[0])
        counts = [int(c.replace(",", "")) for c in cells[-1].split(" / ") if c.strip()]
        for i, name in enumerate(names):
            rows[name] = counts[i] if len(counts) == len(names) else None
    return rows


def test_docs_table_has_a_row_for_every_workload_with_its_declared_count():
    rows = documented()
    for name, spec in WORKLOADS.items():
        row = f"| `{name}` | {spec.description} | {spec.parameter_count:,} |"
        assert name in rows, f"docs/workloads.md has no row for {name!r}; add one, e.g. {row}"
        assert rows[name] == spec.parameter_count, (
            f"docs/workloads.md: {name!r} shows {rows[name]}, its spec declares "
            f"{spec.parameter_count:,}"
        )
    assert set(rows) <= set(WORKLOADS), f"no such workload: {sorted(set(rows) - set(WORKLOADS))}"


def test_reference_flops_table_has_a_row_for_every_workload_it_should():
    """bench/data/reference_flops.json holds exactly the workloads that TensorFlow or JAX
    run and whose FLOPs PyTorch counts, at their default shape (the values themselves:
    tests/test_frameworks.py, against a live count)."""
    table = json.loads(files("bench").joinpath("data/reference_flops.json").read_text())
    rows = {(row["workload"], tuple(row["input_shape"])) for row in table["workloads"]}
    wanted = {(n, s.input_shape()) for n, s in WORKLOADS.items() if catalog.in_reference_flops(s)}
    for name, shape in sorted(wanted - rows):
        pytest.fail(
            f"bench/data/reference_flops.json has no row for {name!r} at {shape}: "
            "python benchmarks/reference_flops.py writes it"
        )
    assert not rows - wanted, f"rows of no such workload or shape: {sorted(rows - wanted)}"


def test_every_framework_has_a_contract_and_every_module_keeps_it():
    assert set(registry.framework_names()) == set(CONTRACTS)
    for spec in WORKLOADS.values():
        if "torch" in spec.frameworks() and not registry.missing_extras(spec, "torch"):
            implementation = TorchWorkload.load(spec)  # imports it: what discovery read
            assert implementation.loss is not None or implementation.train_loss is not None


def test_task_is_an_enum_that_reads_and_compares_as_its_string():
    spec = registry.workload("gpt2")
    assert spec.task is Task.CAUSAL_LM
    assert spec.task == "causal-lm" and f"{spec.task}" == "causal-lm"
    assert json.dumps({"task": spec.task}) == '{"task": "causal-lm"}'
    assert dataclasses.replace(spec, task="translation").task is Task.TRANSLATION


def test_bert_batch_masks_fifteen_percent_and_scores_only_masked_tokens():
    spec = registry.workload("bert-base")
    impl = spec.implementation("torch")
    point = PointConfig(workload="bert-base", seq_len=64)
    tokens, targets = impl.make_batch(spec, point, 8, torch.Generator().manual_seed(0))
    assert tokens.shape == targets.shape == (8, 64)
    scored = targets != -100
    assert 0.10 < scored.float().mean().item() < 0.20
    assert (tokens[scored] == 103).all()  # the [MASK] token where a target is scored
