"""The commands' own option types: each number a user types is checked by the rule of the
file field that will hold it (bench.config.bounds.Bound), so nothing the command line takes is
refused when read back, and nothing too small to run anything is taken."""

import argparse

import pytest

from bench.cli import main
from bench.commands.options import tune_budget
from bench.config.bounds import TIMEOUT, TUNE_BUDGET
from bench.config.option_types import bounded


@pytest.mark.parametrize("text", ["0.0001s", "29s", "100000h", "87601h"])
def test_a_tune_budget_the_record_would_refuse_is_refused_on_the_command_line(text):
    with pytest.raises(argparse.ArgumentTypeError, match="is not allowed; use seconds from 30"):
        tune_budget(text)


@pytest.mark.parametrize("text", ["30s", "20m", "1.5h", "87600h"])
def test_every_tune_budget_the_command_line_takes_a_record_takes_back(text):
    assert TUNE_BUDGET(tune_budget(text))


@pytest.mark.parametrize(("argv", "said"), [
    (["tune", "tiny", "--device", "cpu", "--budget", "0.0001s"],
     "argument --budget: '0.0001s' is not allowed; use seconds from 30 to 315,360,000"),
    (["tune", "tiny", "--device", "cpu", "--budget", "100000h"],
     "argument --budget: '100000h' is not allowed; use seconds from 30 to 315,360,000"),
    (["tune", "tiny", "--device", "cpu", "--steps", "3", "--budget", "1s"],
     "argument --budget: '1s' is not allowed"),
    (["tiny", "--device", "cpu", "--timeout", "1e-9"],
     "argument --timeout: '1e-9' is not allowed; use seconds from 1 to 315,360,000"),
])  # fmt: skip
def test_a_number_out_of_its_file_rule_is_one_line_and_a_non_zero_exit(argv, said, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1, err


def test_a_bounded_option_says_the_rule_it_shares():
    parse = bounded(TIMEOUT)
    assert parse("1") == 1.0 and TIMEOUT(parse("315360000"))
    with pytest.raises(argparse.ArgumentTypeError, match=TIMEOUT.words.replace("(", r"\(")
                       .replace(")", r"\)")):  # fmt: skip
        parse("0.5")
