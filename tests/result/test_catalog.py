"""bench/result/catalog.py: whom the reference FLOP table serves."""

import pytest

from bench.result import catalog


@pytest.mark.parametrize(
    ("installed", "expected"),
    [("2.14.1", True), ("2.14.1+cpu", True), ("2.14.1+cu130", True), ("2.14.0", False),
     ("2.15.0+cu130", False)],
)  # fmt: skip
def test_the_reference_table_serves_pytorch_only_from_the_release_that_counted_it(
    monkeypatch, installed, expected
):
    """A PyTorch release that counted nothing in the table counts live, in a child: its
    FlopCounterMode may see other operators. The build's local tag does not matter."""
    from importlib import metadata

    monkeypatch.setattr(catalog, "_load", lambda name: {"counted_with": "torch 2.14.1+cu130"})
    monkeypatch.setattr(metadata, "version", lambda name: installed)
    assert catalog.counted_by_installed_torch() is expected


def test_without_pytorch_installed_nothing_is_served_from_the_table_to_it(monkeypatch):
    from importlib import metadata

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    assert catalog.counted_by_installed_torch() is False
