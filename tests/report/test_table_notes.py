"""The lines under a result's tables: what the tables leave out is said."""

import json

from bench import result
from bench.report.table import notes, tables
from tests.conftest import DATA


def test_a_point_whose_loss_curves_are_empty_is_said_not_dropped(tmp_path):
    """Empty loss curves dropped the loss table without a word."""
    doc = json.loads((DATA / "result-v16.json").read_text())
    doc.pop("integrity")
    for record in doc["points"][0]["loss"]:
        if record:
            record["curve"] = []
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    loaded = result.load(path)
    label = loaded.points[0].label_for(False)
    assert not any("loss:" in str(t.title) for t in tables(loaded))
    assert (
        f"{label}: trained to a validation loss, but its loss curves hold no evaluation: "
        "left out of the loss tables"
    ) in (notes(loaded) or "").splitlines()


def test_a_point_with_its_curves_has_no_such_line():
    loaded = result.load(DATA / "result-v16.json")
    assert "hold no evaluation" not in (notes(loaded) or "")
