"""The layout of a result file: its version, its history, and one table of its fields.

Each field a file stores is declared once here: its name, what it may hold (the check
load applies, with bounds: bench/config/bounds.py), the schema version that added it,
and what files older than that version hold in its place. The validator
(bench/result/validate.py) and the steps that bring an older file up to date
(bench/result/migrations.py) are derived from these tables; the dataclasses that hold
a loaded file (bench/result/point.py, document.py) must declare the same names, which
tests/result/test_schema.py checks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.config.bounds import (
    COUNT,
    LABEL_WORDS,
    NUMBER_OF,
    NUMBER_TEXT,
    TEXT_OR_NULL,
    TUNE_BUDGET,
    UNSET,
    WHOLE_TEXT,
    Check,
    an_object,
    axis_value,
    busy_number,
    byte_count,
    dict_of,
    fraction,
    label,
    list_of,
    non_negative,
    number_or_nan,
    one_of,
    optional,
    positive,
    text,
    whole,
)
from bench.config.option_types import MAX_TOKENS
from bench.config.options import RUN_OPTIONS

# POINT_AXES: what tells one point of a run from another, the device count aside (the
# sweep axes' names in a Point, a PointConfig and a PointConfig's dict, a ladder rung);
# MAX_TOKENS: the most tokens a run trains on. Both are the run options' (bench.config.sweep).
from bench.config.sweep import POINT_AXES

# Bump on any change to the stored layout, with a line below and a fixture file
# tests/data/result-v<N>.json that must keep loading; a new field is an entry of a
# table below with `since` the new version (and `older`, what older files hold), or, for
# a run option, its `stored` in bench.config.options (the CONFIG and POINT entries follow).
# History:
#   1 (bench 0.1.0): first version.
#   2 (bench 0.1.0): points gain `energy` (per repeat) and `energy_unavailable`;
#     results gain `pricing` and `peak_tflops`.
#   3 (bench 0.1.0): points gain `power_before` (per repeat); results gain `integrity`
#     (the sha256 of the rest: bench/result/integrity.py); max-batch searches gain
#     `resolution` (1 before: they bisected to the exact batch); results gain `label`.
#   4 (bench 0.1.0): points gain `ranks` (per repeat, data-parallel ranks through
#     torchrun: each rank's mean step, the slowest rank's steps); configs gain
#     `devices`, `nnodes`, `node_rank`, `rdzv_endpoint` (their defaults before);
#     points gain `busy` (per repeat: load, other processes' CPU, CPU clocks, GPU
#     throttling over the measured window: bench/trackers/busy.py).
#   5: results gain `ladder` (bench ladder's rungs); points gain `allocator`, `openmp`,
#     `numa` (sweep axes: the child's memory allocator, OpenMP runtime and NUMA
#     binding; null: as bench was launched) and `runtime` (what was applied: LD_PRELOAD,
#     the settings, the numactl binding or why none, the libraries the child had
#     mapped); configs gain `allocators`, `openmps`, `numas`.
#   6: results gain `tune` (bench tune's rounds of successive halving: every probe as a
#     point, the budget and why it stopped; null for other runs).
#   7: points gain `unit_throughput` (derived: tokens/s or pixels/s where the workload
#     has such a unit; details.per_sample records how many a sample holds).
#   8: training on a real dataset: points gain `input_wait_s` (per repeat, per step: time
#     blocked on the next batch), `accuracy` (per repeat: the target and top-1 after
#     each epoch with its training and evaluation time) and `synthetic_step_times_s`
#     (after the last epoch, the same session on one synthetic batch); `to_accuracy`,
#     `input_wait_fraction` and `synthetic_ratio` are derived from them. Configs gain
#     `train_to`.
#   9: points gain `optimize` (a sweep axis: the framework's whole-model optimisation,
#     torch's 'ipex' for ipex.optimize; null: none, as every point before); configs gain
#     `optimizations`; tune records gain `spent_s` (seconds spent, for --resume).
#   10: points gain `activation_checkpointing` (a sweep axis: none, selective, full;
#     'none' for every point before); configs gain `activation_checkpointings`.
#   11: max-batch searches gain `axis` (what was searched: batch_size, or seq_len for
#     --find-max-seq-len at the config's one batch size; batch_size before) and their
#     probes `seq_len` (the sequence length probed, null where the workload takes none;
#     null before); configs gain `find_max_seq_len` (false before).
#   12: training a decoder to a validation loss: points gain `loss` (per repeat: the
#     target, the plan in steps and tokens, the recipe, and after each evaluation the
#     tokens trained, the validation loss and the training and evaluation seconds);
#     `to_loss` is derived from it. Configs gain `train_to_loss`, `val_data`,
#     `max_tokens`, `eval_every`, `eval_every_unit` ('tokens' before), `eval_sequences`
#     and `recipe`.
#   13: configs gain `expert_parallel` (a mixture of experts' experts split over that
#     many ranks, bench.parallel.expert; 1 before: every rank held every expert).
#   14: a decoder's levers, sweep axes: points gain `attention` (the kernel
#     held: auto, flash, efficient, cudnn, math; 'auto' before), `cross_entropy` (plain,
#     chunked; 'plain' before) and `pad_vocab` (the vocabulary's multiple; 0 before);
#     configs gain `attentions`, `cross_entropies`, `pad_vocabs`.
#   15: a max-batch search's probes gain `child` (which of the search's child processes
#     ran it: 1, 2, ...) and `kind` (fresh: the first in its child; in-process: after
#     others in the same child; forked: in a fork of it, as a fresh child; confirm: the
#     answer again in a fresh child); null before, when every probe was a fresh child's.
#   16: a max-batch search's probes gain `seconds` (the probe's whole time as the parent
#     saw it, request to answer) and `step_times_s` (its steps as its child timed them);
#     null before.
#   17: configs gain `prefetch_factor` (--prefetch-factor: batches each DataLoader worker
#     prepares ahead; null before and by default: PyTorch's 2). environment.image gains
#     what rebuilds the image, from its own record (`inputs_sha256`, `base_digest`,
#     `base_origin`, `debian_source`; null before). Derived: a point's `throughput.value`
#     is the geometric mean of its repeats, the centre of its interval (the arithmetic
#     mean before, which could lie outside it; re-derived on load, so an older file reads
#     the new figure); `input_wait_share` is the repeats' mean share with its interval.
#     Read by the command line's rules: a result's `label` (--label: 1 to 80 printable
#     characters), a tune record's `budget_s` (--budget: 30 s to ten years), a config's
#     `timeout_s` (--timeout: 1 s to ten years), a compiler's name and mode (never a
#     leading '-'); a loss curve's tokens never go backwards. A file breaking one is
#     refused naming the field; no file bench wrote from its own command line breaks them.
#   18: configs gain `input_dtype` (--input-dtype: float32, normalised on the host, or uint8,
#     the pixels normalised on the device; 'float32' before) and `pin_memory` (--pin-memory:
#     on, off; null before and by default: the platform's choice).
#   19: the input pipeline's levers become sweep axes: points gain `num_workers` and
#     `prefetch_factor` (the config's one value before, which every point was measured
#     with); configs' `num_workers` and `prefetch_factor` become the lists `workers` and
#     `prefetch_factors` (bench.result.migrations moves them).
#   20: the batch's dtype and its pinned memory become sweep axes too, and JPEG decoding
#     on the device is one: points gain `input_dtype`, `pin_memory` (the config's one value
#     before) and `decode` (cpu: the loader's workers, Pillow; device: torchvision's
#     decode_jpeg on the GPU; 'cpu' before); configs' `input_dtype` and `pin_memory`
#     become the lists `input_dtypes` and `pin_memories` (bench.result.migrations moves
#     them), and configs gain `decodes`.
SCHEMA_VERSION = 20

STATUSES = ("ok", "oom", "error")


@dataclass(frozen=True)
class Field:
    """One field of an object in a result file."""

    name: str
    check: Check | None  # None: checked elsewhere (load, integrity, RunConfig)
    expected: str = ""  # what `check` allows, for the one line that refuses a file
    since: int = 1  # the schema version that added it
    # What a file older than `since` holds in its place, set on load; UNSET: nothing
    # (the dataclass's default applies).
    older: Any = UNSET
    required: bool = False  # a file without it is refused


def _ranks_record(value: Any) -> bool:
    """What the table reads of the ranks: each rank's mean step, the slowest rank."""
    return (
        isinstance(value, dict)
        and list_of(optional(positive))(value.get("mean_step_s", []))
        and whole(0)(value.get("slowest_rank", 0))
    )


def _busy_record(value: Any) -> bool:
    """What derive.busy_why reads: numbers or null, and {device: [reason text]}."""
    if not isinstance(value, dict):
        return False
    numbers = all(
        value.get(k) is None or busy_number(value.get(k))
        for k in ("others_cpus", "steal_cpus", "window_s")
    )
    throttle = value.get("throttle")
    reasons = throttle is None or dict_of(list_of(text))(throttle)
    return numbers and reasons


def _rung(value: Any) -> bool:
    """What the ladder table reads of a rung (its point is looked up by its axes)."""
    point = value.get("point") if isinstance(value, dict) else None
    return (
        isinstance(point, dict)
        and text(value.get("rung"))
        and text(value.get("why"))
        and value.get("kept") in (True, False, None)
        and all(axis_value(point.get(name)) for name in POINT_AXES)
    )


Rule = Callable[[dict[str, Any]], str | None]


def record(fields: tuple[Field, ...], rule: Rule | None = None) -> Check:
    """An object whose `fields` pass (each required one present), and `rule` (what the
    fields hold together: None, or the words naming the first part that breaks it). Its
    fields and rule are kept on the check, so that an error names the first bad field,
    nested ones included (points[0].loss[0].curve[0].train_s), with its rule."""

    def record(value: Any) -> bool:
        return (
            isinstance(value, dict)
            and all(f.name in value for f in fields if f.required)
            and all(
                f.check is None or f.name not in value or f.check(value[f.name]) for f in fields
            )
            and (rule is None or rule(value) is None)
        )

    record.fields = fields  # type: ignore[attr-defined]
    record.rule = rule  # type: ignore[attr-defined]
    return record


# What bench show reads of a tune record (its points are checked as points; bench.search.tune_record
# checks the rest before --resume reads it): the budget by --budget's own rule.
TUNE_ROUND = (
    Field("round", whole(1), WHOLE_TEXT, required=True),
    Field("steps", whole(1), WHOLE_TEXT, required=True),
    Field("points", list_of(an_object), "a list of objects", required=True),
)
TUNE = (
    Field("budget_s", TUNE_BUDGET, TUNE_BUDGET.words, required=True),
    Field("stopped", *TEXT_OR_NULL),
    Field("rounds", list_of(record(TUNE_ROUND)), "a list of {round, steps, points}",
          required=True),
)  # fmt: skip
_SECONDS_OR_ZERO = "seconds (0, or 1e-12 to 1e21)"
# What ToAccuracy reads: a target or null, and each epoch's top-1 and times.
ACCURACY_EPOCH = (
    Field("top1", fraction, "a fraction from 0 to 1", required=True),
    Field("train_s", non_negative, _SECONDS_OR_ZERO, required=True),
    Field("eval_s", non_negative, _SECONDS_OR_ZERO, required=True),
)
_EPOCHS = list_of(record(ACCURACY_EPOCH))


def _epochs(value: Any) -> bool:
    return _EPOCHS(value) and bool(value)


_epochs.each = _EPOCHS.each  # type: ignore[attr-defined]
ACCURACY = (
    Field("epochs", _epochs, "a list of one or more {top1, train_s, eval_s}", required=True),
    Field("target", optional(lambda t: fraction(t) and t > 0), "a fraction above 0, or null"),
)
# What ToLoss reads: a positive target, and each evaluation's step, tokens, loss and times.
LOSS_EVALUATION = (
    Field("step", whole(1), WHOLE_TEXT, required=True),
    Field("tokens", whole(1, MAX_TOKENS), f"a whole number of tokens from 1 to {MAX_TOKENS:.0e}",
          required=True),
    Field("loss", number_or_nan, "a number", required=True),
    Field("train_s", non_negative, _SECONDS_OR_ZERO, required=True),
    Field("eval_s", non_negative, _SECONDS_OR_ZERO, required=True),
)  # fmt: skip


def _tokens_forward(value: dict[str, Any]) -> str | None:
    """A curve's tokens never go backwards: each evaluation trained on at least the
    tokens of the one before (scored otherwise, a run reaches its target before it
    trained)."""
    before = 0
    for i, evaluation in enumerate(value.get("curve") or ()):
        tokens = evaluation.get("tokens") if isinstance(evaluation, dict) else None
        if isinstance(tokens, int) and not isinstance(tokens, bool):
            if tokens < before:
                return (f"curve[{i}].tokens: expected tokens trained, no fewer than the "
                        f"evaluation before's {before:,}, found {tokens:,}")  # fmt: skip
            before = tokens
    return None


LOSS = (
    Field("target", positive, NUMBER_TEXT.removesuffix(", or null"), required=True),
    Field("curve", list_of(record(LOSS_EVALUATION)),
          "a list of {step, tokens, loss, train_s, eval_s}", required=True),
    Field("stopped", *TEXT_OR_NULL),
)  # fmt: skip


def _power_reading(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and {"draw_w", "limit_w"} <= set(value)
        and all(non_negative(v) for v in value.values())
    )


_SECONDS = list_of(list_of(positive))


def _from_options() -> tuple[tuple[Field, ...], tuple[Field, ...]]:
    """The run options' CONFIG and POINT entries, from how each says a result stores it
    (the option table's `stored`): a sweep axis's POINT entry is one point's value and its
    CONFIG entry the list of them; any other option's CONFIG entry is its value."""
    config, point = [], []
    for option in RUN_OPTIONS:
        stored = option.stored
        if option.field is None or stored is None:  # another spelling of one
            continue
        if not option.sweeps:
            config.append(Field(option.field, stored.check, stored.expected, stored.since,
                                stored.older, stored.required))  # fmt: skip
            continue
        older = UNSET if stored.older is UNSET else [stored.older]
        words = f"a list, each {stored.expected}"
        config.append(Field(option.field, list_of(stored.check), words, stored.since, older))
        if option.point_axis:
            point.append(Field(option.one, stored.check, stored.expected, stored.since,
                               stored.older, stored.required))  # fmt: skip
    return tuple(config), tuple(point)


_OPTIONS_CONFIG, _OPTIONS_POINT = _from_options()


# One point of a sweep (bench/result/point.py Point), in the order load checks them.
POINT = (
    *_OPTIONS_POINT,  # its sweep axes' values (batch_size, precision, ...)
    Field("status", one_of(*STATUSES), "one of " + ", ".join(STATUSES), required=True),
    Field("error", *TEXT_OR_NULL),
    Field("warmup_times_s", _SECONDS, "lists of seconds from 1e-12 to 1e21"),
    Field("step_times_s", _SECONDS, "lists of seconds from 1e-12 to 1e21", required=True),
    Field("epoch_times_s", optional(_SECONDS), "lists of seconds from 1e-12 to 1e21, or null"),
    Field("peak_memory_bytes", list_of(optional(byte_count)), "a list of byte counts"),
    Field("memory_kind", *TEXT_OR_NULL),
    Field("memory_unavailable", *TEXT_OR_NULL),
    Field("loss_first", list_of(optional(number_or_nan)), "a list of numbers"),
    Field("loss_last", list_of(optional(number_or_nan)), "a list of numbers"),
    Field("parameters", optional(byte_count), "a whole number or null"),
    Field("devices", whole(1), WHOLE_TEXT),
    Field("flops_per_sample", optional(positive), NUMBER_TEXT),
    Field("energy", list_of(optional(an_object)), "a list of objects", since=2, older=[]),
    Field("energy_unavailable", *TEXT_OR_NULL, since=2,
          older="not measured (result schema 1 had no energy)"),
    Field("power_before", list_of(optional(dict_of(_power_reading))),
          "a list of {device: {draw_w, limit_w}} or null", since=3, older=[]),
    Field("noise", *TEXT_OR_NULL, since=3),
    Field("ranks", list_of(optional(_ranks_record)), "a list of rank records or null", since=4,
          older=[]),
    Field("busy", list_of(optional(_busy_record)), "a list of busy-machine records or null",
          since=4, older=[]),
    Field("details", an_object, "an object"),
    Field("runtime", optional(dict_of(optional(text))), "an object of text or null", since=5),
    Field("input_wait_s", list_of(list_of(non_negative)), "lists of seconds (0, or 1e-12 to 1e21)",
          since=8, older=[]),
    Field("synthetic_step_times_s", list_of(positive), "a list of seconds from 1e-12 to 1e21",
          since=8, older=[]),
    Field("accuracy", list_of(optional(record(ACCURACY))),
          "a list of {metric, target, epochs: [{epoch, top1, train_s, eval_s}]} or null", since=8,
          older=[]),
    Field("loss", list_of(optional(record(LOSS, _tokens_forward))),
          "a list of {target, curve: [{step, tokens, loss, train_s, eval_s}]} or null", since=12,
          older=[]),
)  # fmt: skip
# Each repeat's energy window of a point (its `energy`, where measured).
ENERGY = (
    Field("per_device_j", dict_of(non_negative), "joules (0, or 1e-12 to 1e21) by device",
          required=True),
    Field("window_s", positive, "seconds from 1e-12 to 1e21", required=True),
    Field("sources", dict_of(text), "source names by device", required=True),
    Field("epoch_j", optional(list_of(non_negative)), "a list of joules or null", required=True),
)  # fmt: skip
# How a probe ran: the first in its child (as a process of its own), after other probes
# in the same child, in a fork of a probing child that had imported the framework and
# run nothing (as a fresh child, on the CPU), or the search's answer again in a fresh
# child (bench.run.runner).
PROBE_KINDS = ("fresh", "in-process", "forked", "confirm")
# One probe of a max-batch search (Probe).
PROBE = (
    Field("batch_size", whole(1), WHOLE_TEXT, required=True),
    Field("status", one_of(*STATUSES), "one of " + ", ".join(STATUSES), required=True),
    Field("error", *TEXT_OR_NULL),
    Field("peak_memory_bytes", optional(byte_count), "a byte count or null"),
    Field("seq_len", optional(whole(1)), "a whole number or null", since=11),
    Field("child", optional(whole(1)), "a whole number or null", since=15),
    Field("kind", optional(one_of(*PROBE_KINDS)), "one of " + ", ".join(PROBE_KINDS) + ", or null",
          since=15),
    Field("seconds", optional(non_negative), "seconds or null", since=16),
    Field("step_times_s", optional(list_of(non_negative)), "a list of seconds or null",
          since=16),
)  # fmt: skip
# What a search looks for: the largest batch, or the longest sequence at one batch.
SEARCH_AXES = ("batch_size", "seq_len")
# One max-batch (or sequence-length) search (MaxBatch).
MAX_BATCH = (
    Field("precision", text, "text", required=True),
    Field("memory_format", text, "text"),
    Field("compile", *TEXT_OR_NULL),
    Field("largest_ok", optional(whole(1)), "a whole number or null"),
    Field("first_failing", optional(whole(1)), "a whole number or null"),
    Field("status", one_of("running", "done", "error"), "one of running, done, error"),
    Field("error", *TEXT_OR_NULL),
    Field("probes", list_of(an_object), "a list of objects"),
    Field("resolution", whole(1), "a whole number >= 1", since=3, older=1),
    Field("axis", one_of(*SEARCH_AXES), "one of " + ", ".join(SEARCH_AXES), since=11,
          older="batch_size"),
)  # fmt: skip
# The document (Result).
RESULT = (
    Field("schema_version", None),  # load reads it first, and migrates by it
    Field("config", an_object, "an object", required=True),
    Field("points", list_of(an_object), "a list of objects", required=True),
    Field("max_batch", list_of(an_object), "a list of objects"),
    Field("status", one_of("running", "complete", "interrupted"),
          "one of running, complete, interrupted"),
    Field("started", text, "text"),
    Field("finished", *TEXT_OR_NULL),
    Field("command", list_of(text), "a list of text"),
    Field("pricing", optional(an_object), "an object or null", since=2, older=None),
    Field("peak_tflops", optional(positive), NUMBER_TEXT, since=2),
    Field("label", optional(label), LABEL_WORDS + ", or null", since=3),
    Field("integrity", None, since=3),  # bench/result/integrity.py checks it, before migrations
    Field("ladder", list_of(_rung), "a list of ladder rungs {rung, point, kept, why}", since=5),
    Field("tune", optional(record(TUNE)), "null or {budget_s, rounds: [{round, steps, points}]}",
          since=6, older=None),
    Field("environment", optional(an_object), "an object or null"),
)  # fmt: skip
# The config (RunConfig, bench/config/run_config.py): types and numbers (what they mean RunConfig
# checks itself), whole numbers as the command line takes them, so that `bench rerun` of
# a crafted file asks nothing absurd (a sweep of billions of points RunConfig refuses).
# The run config: every run option's (above), and the search's settings no option sets.
CONFIG = (
    *_OPTIONS_CONFIG,
    Field("max_batch_start", *COUNT, since=3),
    Field("probe_steps", *NUMBER_OF),
    Field("eval_every_unit", one_of("tokens", "sequences"), "tokens or sequences", since=12,
          older="tokens"),
)  # fmt: skip
# What readers take from the provenance (table titles, machine labels, peaks, prices).
_SECTION = (optional(an_object), "an object or null")
ENVIRONMENT = (
    *(Field(name, *_SECTION)
      for name in ("bench", "host", "cpu", "accelerator", "framework", "image", "env")),
    Field("nodes", optional(list_of(an_object)), "a list of objects or null"),
    Field("nodes_differ", optional(list_of(text)), "a list of field names or null"),
)  # fmt: skip
ENVIRONMENT_SECTIONS = {
    "accelerator": (
        Field("accelerator", *TEXT_OR_NULL),
        Field("accelerator_count", optional(whole(0)), "a whole number or null"),
    ),
    "cpu": (
        Field("model", *TEXT_OR_NULL),
        Field("physical_cores", optional(whole(1)), "a whole number or null"),
        Field("max_mhz", optional(positive), NUMBER_TEXT),
        Field("flags", optional(list_of(text)), "a list of text"),
    ),
    # What rebuilds the image (bench.run.provenance.image_file, from the image's own record):
    # the hash of its build's inputs, its base's digest or image id, what a local base was
    # made from (debootstrap's suite, mirror or snapshot, date), its Debian packages' source.
    "image": (
        Field("name", *TEXT_OR_NULL),
        *(
            Field(name, *TEXT_OR_NULL, since=17)
            for name in ("inputs_sha256", "base_digest", "base_origin", "debian_source")
        ),
    ),
    "host": (Field("hostname", *TEXT_OR_NULL), Field("dmi", *_SECTION)),
}
# The machine's price (--instance, --price-per-hour).
PRICING = (
    Field("usd_per_hour", optional(positive), "a number of USD from 1e-12 to 1e21, or null",
          required=True),
    Field("instance", *TEXT_OR_NULL),
    Field("source", *TEXT_OR_NULL),
)  # fmt: skip
# Every table of an object with fields added over the versions: (table, where it is).
VERSIONED = {"result": RESULT, "config": CONFIG, "points": POINT, "max_batch": MAX_BATCH}
