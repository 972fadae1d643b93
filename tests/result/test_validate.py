"""Every refused field of a result, nested ones included, is named with its rule in one
line: a bad value inside a loss record was "found an object of 14 items", a
schema_version of the wrong type "no schema_version", and tokens that went backwards
along a curve were scored as usual."""

import copy
import json

import pytest

from bench import result
from bench.result import ResultError
from tests.conftest import DATA

V16 = json.loads((DATA / "result-v16.json").read_text())
V16.pop("integrity")  # as an editor's file: its checksum no longer matches


def _load(tmp_path, change) -> str:
    doc = copy.deepcopy(V16)
    change(doc)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ResultError) as refused:
        result.load(path)
    message = str(refused.value)
    assert "\n" not in message
    return message


def _curve(doc):
    return doc["points"][0]["loss"][0]["curve"]


SECONDS = "expected seconds (0, or 1e-12 to 1e21)"
CRAFTED = [
    (lambda d: _curve(d)[0].update(train_s=-5.0),
     f"points[0].loss[0].curve[0].train_s: {SECONDS}, found -5.0"),
    (lambda d: _curve(d)[1].update(eval_s="1"),
     f'points[0].loss[0].curve[1].eval_s: {SECONDS}, found "1"'),
    (lambda d: _curve(d)[0].update(step=0),
     "points[0].loss[0].curve[0].step: expected a whole number from 1 to 2147483647, found 0"),
    (lambda d: _curve(d)[0].pop("loss"), "points[0].loss[0].curve[0]: missing field 'loss'"),
    (lambda d: d["points"][0]["loss"][0].update(target=-1),
     "points[0].loss[0].target: expected a number from 1e-12 to 1e21, found -1"),
    (lambda d: d["points"][0]["loss"][0].update(curve={"a": 1}),
     "points[0].loss[0].curve: expected a list of {step, tokens, loss, train_s, eval_s}, "
     'found {"a": 1}'),
    (lambda d: _curve(d)[2].update(tokens=1),
     "points[0].loss[0].curve[2].tokens: expected tokens trained, no fewer than the evaluation "
     "before's"),
    (lambda d: d.update(schema_version="16"),
     'not a bench result (schema_version: expected a whole number from 1 to 19, found "16")'),
    (lambda d: d.update(schema_version=0),
     "not a bench result (schema_version: expected a whole number from 1 to 19, found 0)"),
    (lambda d: d.update(schema_version=True), "schema_version: expected a whole number"),
]  # fmt: skip


@pytest.mark.parametrize(("change", "said"), CRAFTED)
def test_a_refused_field_is_named_with_its_rule(tmp_path, change, said):
    assert said in _load(tmp_path, change)


def test_an_accuracy_epoch_is_named_too(tmp_path):
    v8 = json.loads((DATA / "result-v8.json").read_text())
    v8.pop("integrity", None)
    at = next(i for i, p in enumerate(v8["points"]) if any(p.get("accuracy") or []))
    v8["points"][at]["accuracy"][0]["epochs"][0]["top1"] = 2.0
    path = tmp_path / "r.json"
    path.write_text(json.dumps(v8))
    with pytest.raises(ResultError, match=rf"points\[{at}\]\.accuracy\[0\]\.epochs\[0\]\.top1: "
                       "expected a fraction from 0 to 1, found 2.0"):  # fmt: skip
        result.load(path)


def test_a_file_without_schema_version_says_so(tmp_path):
    assert "not a bench result (no schema_version)" in _load(
        tmp_path, lambda d: d.pop("schema_version")
    )
