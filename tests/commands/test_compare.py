"""bench compare's own options (bench.commands.compare): a --price by the rule of the
result field it stands for (pricing.usd_per_hour, as --price-per-hour)."""

from __future__ import annotations

import argparse

import pytest

from bench.commands.compare import _price


@pytest.mark.parametrize("text", ["AMD=-1", "AMD=0", "AMD=1e-310", "AMD=1e-300", "AMD=inf",
                                  "AMD=nan", "=2", "AMD"])  # fmt: skip
def test_a_price_that_no_result_could_hold_is_refused_in_one_line(text):
    """-1 printed samples per dollar of -34,381,115; 1e-310 wrote Infinity into JSON; 0
    silently meant no price."""
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        _price(text)
    assert "\n" not in str(refused.value)


def test_a_price_within_the_rule_is_taken():
    assert _price("Intel(R) Xeon(R) Processor (2 cores)=0.5") == (
        "Intel(R) Xeon(R) Processor (2 cores)", 0.5)  # fmt: skip


def test_the_json_holds_no_infinity_or_nan():
    """1e-310 as a price once wrote "samples_per_dollar": Infinity, which jq refuses."""
    import json

    from bench.commands.compare import json_lines

    text = json_lines({"points": [{"a": float("inf"), "b": float("nan"), "c": 1.5}],
                       "x": {"y": [float("-inf")]}})  # fmt: skip
    assert json.loads(text) == {"points": [{"a": None, "b": None, "c": 1.5}], "x": {"y": [None]}}
    assert "Infinity" not in text and "NaN" not in text
