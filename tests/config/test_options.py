"""A run option is declared once (bench.config.options): the parser, the config's fields,
the sweep axes, the result's point axes, tune's grid and what rerun takes from its own
command line follow from it, and a field forgotten in RunConfig or PointConfig fails here."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from bench.commands import rerun, tune
from bench.commands.options import UsageParser
from bench.commands.run_options import add_run_options, config_from_args, parse_run
from bench.config import options as options_table
from bench.config import sweep
from bench.config.option import RunOption
from bench.config.options import COUNT, RUN_OPTIONS, point_default, run_default
from bench.config.run_config import PointConfig, RunConfig
from bench.result import POINT_AXES, Point
from bench.result.measured import Measured
from bench.util.errors import UsageError


def _fields(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def test_run_config_declares_exactly_the_fields_the_options_set():
    declared = {o.field for o in RUN_OPTIONS if o.field is not None}
    extra = set(options_table.DERIVED_FIELDS) | set(options_table.API_FIELDS)
    assert _fields(RunConfig) == declared | extra


def test_point_config_declares_each_axis_value_and_every_field_a_child_needs():
    axis_values = {o.sweep for o in RUN_OPTIONS if o.sweeps}
    copied = {o.field for o in RUN_OPTIONS if o.field and o.child and not o.sweeps}
    assert _fields(PointConfig) == axis_values | copied | set(options_table.POINT_DERIVED)


# The fields that default otherwise than their option, each resolved before a config is
# built (the device, the devices, the formats, the steps: their comments say how) or
# recorded resolved by a point.
OWN_DEFAULTS = {
    RunConfig: {"device", "memory_formats", "steps", "devices"},
    PointConfig: {"device", "batch_size", "memory_format", "warmup_steps", "steps", "devices"},
    Measured: {"memory_format", "devices"},
}


@pytest.mark.parametrize("cls", list(OWN_DEFAULTS))
def test_each_field_an_option_sets_defaults_to_the_tables_default(cls):
    table = run_default if cls is RunConfig else point_default
    names = {o.field if cls is RunConfig else o.sweep or o.field for o in RUN_OPTIONS}
    checked = 0
    for f in dataclasses.fields(cls):
        if f.name not in names or f.name in OWN_DEFAULTS[cls] or f.default is dataclasses.MISSING:
            continue
        expected = table(f.name)
        assert (f.default, type(f.default)) == (expected, type(expected)), (
            f"{cls.__name__}.{f.name}"
        )
        checked += 1
    assert checked >= 10  # Measured holds the point's axes, the configs every option


def test_a_sweep_axis_is_a_tuple_of_run_config_and_the_rest_are_not():
    tuples = {f.name for f in dataclasses.fields(RunConfig) if str(f.type).startswith("tuple[")}
    assert tuples == {o.field for o in RUN_OPTIONS if o.sweeps} == set(sweep.NAMES)


def test_an_axis_left_out_of_the_sweep_order_varies_slowest_and_a_wrong_name_is_refused():
    order = tuple(name for name in options_table.SWEEP_ORDER if name != "numas")
    assert [a.many for a in sweep.in_sweep_order(RUN_OPTIONS, order)] == ["numas", *order]
    with pytest.raises(ValueError, match="SWEEP_ORDER names each sweep axis at most once"):
        sweep.in_sweep_order(RUN_OPTIONS, (*options_table.SWEEP_ORDER, "numas"))
    with pytest.raises(ValueError, match="at most once"):
        sweep.in_sweep_order(RUN_OPTIONS, (*options_table.SWEEP_ORDER, "widgets"))


def test_the_result_tells_points_apart_by_every_axis_but_the_device_count():
    assert set(POINT_AXES) == {o.one for o in RUN_OPTIONS if o.sweeps} - {"devices"}
    assert set(POINT_AXES) <= _fields(Point)


def test_the_parser_has_every_option_of_the_table_in_its_order():
    parser = UsageParser(prog="bench run")
    add_run_options(parser)
    text = parser.format_help()
    places = [text.index(f"  {o.flag}") for o in RUN_OPTIONS if o.flag.startswith("--")]
    assert places == sorted(places)
    assert parser.parse_args(["tiny"]).compile == (None,)
    assert parser.parse_args(["tiny", "--compile"]).compile == (options_table.DEFAULT_COMPILER,)


def test_each_option_sets_its_field(monkeypatch):
    """config_from_args reads the table: an option's value reaches the field it names."""
    monkeypatch.setenv("BENCH_DEVICE", "cpu")
    given = {
        "--threads": ("2", "threads", 2),
        "--seed": ("7", "seed", 7),
        "--max-batch-step": ("4", "max_batch_step", 4),
        "--memory-limit": ("1GiB", "memory_limit_bytes", 2**30),
        "--timeout": ("30", "timeout_s", 30.0),
        "--max-epochs": ("3", "epochs", 3),
        "--precision": ("fp32,bf16", "precisions", ("fp32", "bf16")),
        "--allocator": ("system", "allocators", ("system",)),
    }
    for flag, (value, field, expected) in given.items():
        config = config_from_args(parse_run(["tiny", flag, value]))
        assert getattr(config, field) == expected, flag
    config = config_from_args(parse_run(["tiny", "--channels-last", "--batch-size", "8,4"]))
    assert (config.memory_formats, config.max_batch_start) == (("channels_last",), 4)


def test_an_environment_default_is_parsed_as_the_option_would_be(monkeypatch):
    monkeypatch.setenv("BENCH_NUMA", "off")
    assert parse_run(["tiny"]).numa == ("off",)
    monkeypatch.setenv("BENCH_NUMA", "")  # set but empty: as bench was launched
    assert parse_run(["tiny"]).numa == (None,)


def test_a_config_message_names_the_option_as_typed(monkeypatch):
    monkeypatch.setenv("BENCH_DEVICE", "cpu")
    unlimited = parse_run(["tiny"])
    unlimited.memory_limit = 0  # the config names its field, memory_limit_bytes
    with pytest.raises(UsageError, match=r"^--memory-limit: 0 is not allowed"):
        config_from_args(unlimited)
    with pytest.raises(UsageError, match=r"^--seed: -1 is not allowed"):
        config_from_args(parse_run(["tiny", "--seed", "-1"]))
    with pytest.raises(UsageError, match=r"^--activation-checkpointing: 'tiny' has no"):
        config_from_args(parse_run(["tiny", "--activation-checkpointing", "full"]))


def test_tune_searches_exactly_the_axes_the_table_marks():
    assert set(tune.GRID) == {o.field for o in RUN_OPTIONS if o.tune}
    assert all(o.sweeps for o in RUN_OPTIONS if o.tune)
    grid = tune.default_axes(RunConfig(workload="tiny"), {"--channels-last"})
    assert "memory_formats" not in grid and "precisions" in grid


def test_tune_refuses_every_spelling_of_epochs():
    args = argparse.Namespace(workload="tiny", options=["--max-epochs", "2"], budget=60.0,
                              resume=None)  # fmt: skip
    with pytest.raises(UsageError, match="--max-epochs: not with bench tune"):
        tune.cmd_tune(args)


def test_rerun_takes_the_marked_options_from_its_command_line():
    marked = {o.field for o in RUN_OPTIONS if o.rerun}
    assert marked == {"devices", "nnodes", "node_rank", "rdzv_endpoint", "data", "val_data"}
    assert {o.field for o in rerun.FROM_HERE} == marked
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    rerun.register(sub)
    args = parser.parse_args(["rerun", "f.json", "--nnodes", "1", "--devices", "1", "--data",
                              "cifar10:/x", "--val-data", "tokens:/y"])  # fmt: skip
    assert (args.nnodes, args.devices, args.data, args.val_data) == (
        1, (1,), "cifar10:/x", "tokens:/y")  # fmt: skip


def test_an_option_sets_one_field_or_spells_another():
    with pytest.raises(ValueError, match="sets one field"):
        RunOption(("--x",), "help", None)
    with pytest.raises(ValueError, match="sets one field"):
        RunOption(("--x",), "help", "x", same_as="y")
    with pytest.raises(ValueError, match="only a sweep axis"):
        RunOption(("--x",), "help", "x", runtime=True)
    with pytest.raises(ValueError, match="not a sweep axis"):
        RunOption(("--x",), "help", "x", stored=COUNT).one  # noqa: B018
    # an option that sets a field says how a result stores it (its schema entries)
    with pytest.raises(ValueError, match=r"says how a result stores it \(stored="):
        RunOption(("--x",), "help", "x")
    with pytest.raises(ValueError, match="says how a result stores it"):
        RunOption(("--x",), "help", None, same_as="y", stored=COUNT)


def test_each_option_s_stored_form_is_its_schema_entry():
    """CONFIG and POINT follow from the options: a sweep axis's POINT entry is one value,
    its CONFIG entry the list of them."""
    from bench.result import schema

    config = {f.name: f for f in schema.CONFIG}
    point = {f.name: f for f in schema.POINT}
    attention = next(o for o in RUN_OPTIONS if o.field == "attentions")
    assert (point["attention"].since, point["attention"].older) == (14, "auto")
    assert point["attention"].check("flash") and not point["attention"].check("fast")
    assert config["attentions"].older == ["auto"] and config["attentions"].check(["math"])
    assert not config["attentions"].check("math")  # a list, each one value
    assert config["attentions"].expected == f"a list, each {attention.stored.expected}"
    assert point["batch_size"].required and not config["batch_sizes"].required
    assert config["workload"].required and "devices" in config
    assert point["devices"].check(2) and not point["devices"].check(None)  # ranks, not the axis
    assert {o.field for o in RUN_OPTIONS if o.field} <= set(config)


def test_the_ladder_refuses_every_option_it_sets():
    from bench.commands import ladder

    marked = [flag for o in RUN_OPTIONS if o.ladder_sets for flag in o.flags]
    assert "--channels-last" in marked and "--numa" not in marked
    for flag in marked:
        value = [] if flag in ("--channels-last", "--find-max-batch") else ["1"]
        args = argparse.Namespace(workload="tiny", options=[flag, *value], resume=None)
        with pytest.raises(UsageError, match=f"^{flag}: the ladder sets it"):
            ladder.cmd_ladder(args)


def test_tunes_winner_is_every_axis_that_is_on_as_its_option():
    from bench.search.tune import command_line

    config = RunConfig(workload="tiny", threads=2)
    point = Point(batch_size=64, precision="bf16", memory_format="channels_last",
                  compile="inductor", optimize="fused", activation_checkpointing="none",
                  allocator="tcmalloc", openmp=None, numa="on")  # fmt: skip
    assert command_line(point, config) == (
        "bench run tiny --framework torch --device cpu --batch-size 64 --precision bf16 "
        "--memory-format channels_last --compile inductor --optimize fused "
        "--allocator tcmalloc --numa on --threads 2"
    )


def test_a_help_names_its_default_from_the_declaration():
    """'(default {default})' in a help is the option's default, a sweep's one value: the
    number is written once, where the default is."""
    assert RunOption(("--n",), "n (default {default})", "n", default=(3,), sweep="n",
                     stored=COUNT).help == "n (default 3)"  # fmt: skip
    assert RunOption(("--x",), "x (default {default})", "x", default=0.5,
                     stored=COUNT).help == "x (default 0.5)"  # fmt: skip
    said = {o.flag: o.help for o in RUN_OPTIONS if o.help and "(default " in o.help}
    assert said["--repeats"].startswith("fresh processes per point (default 1);")
    assert "{default}" not in "".join(said.values())
