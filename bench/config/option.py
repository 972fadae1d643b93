"""One run option and how a result stores its value: the types of bench.config.options's
declarations (RunOption, Stored). bench.config.sweep, the parser, the config's mapping and the
result's schema read them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.config import bounds


@dataclass(frozen=True)
class Stored:
    """How a result file stores an option's value (bench.result.schema reads it): the
    check of one value and the words for what it allows, the schema version that added
    it and what older files hold (bounds.UNSET: nothing, the dataclass's default
    applies), and whether a file without it is refused. For a sweep axis it is one
    point's value (its POINT entry); the config's list of them (its CONFIG entry)
    follows."""

    check: bounds.Check
    expected: str
    since: int = 1
    older: Any = bounds.UNSET
    required: bool = False

    @classmethod
    def one_of(cls, values: tuple[str, ...], **kwargs: Any) -> Stored:
        """One of `values`, as a choice of the command line is stored."""
        return cls(bounds.one_of(*values), "one of " + ", ".join(values), **kwargs)


# How a comparison treats two values of an option (RunOption.compared; bench.report.rows,
# bench.report.set_apart): ROW, a row of its own for each value, named in the row's setup
# by the option ('loss=chunked'): what was measured (every lever, the threads; any new
# option unless it says otherwise); KEY, a place of its own in a row's key, a column or
# the machine (workload, batch, precision, layout, compiler, sequence length, device count,
# framework, device); MATCH, how it was measured: results that differ in it are set apart
# from the baseline's (steps, data); FREE, no bearing on the figure (repeats, a timeout,
# where the ranks meet, the seed).
ROW, KEY, MATCH, FREE = "row", "key", "match", "free"
COMPARED = (ROW, KEY, MATCH, FREE)


# The stored forms most options share: a count (None: the default), a number of.


def _one(value: Any) -> bool:
    """A sweep's default: a tuple of one value (its help names the value)."""
    return isinstance(value, tuple) and len(value) == 1


@dataclass(frozen=True)
class RunOption:
    """One option of `bench run` and the config field it sets."""

    flags: tuple[str, ...]  # the first is its name; ("workload",): a positional argument
    help: str | None
    field: str | None  # the RunConfig field; None: another spelling of one (`same_as`)
    type: Callable[[str], Any] | None = None  # argparse's: text -> value, one line if bad
    default: Any = None
    env: str | None = None  # an environment variable that, when set, is the default
    metavar: str | None = None
    switch: bool = False  # takes no value (store_true)
    bare: Any = None  # the value of the flag given without one (argparse's const, nargs="?")
    dest: str | None = None  # where argparse keeps it, where not its name's
    same_as: str | None = None  # the RunConfig field this spelling sets too (config_from_args)
    # PointConfig's field of the same name, copied to every point; False: the parent's
    # alone (how often to repeat, what to search, when to give up).
    child: bool = True
    # A sweep axis: the PointConfig field of one value (its RunConfig field is a tuple).
    sweep: str | None = None
    allowed: tuple[str, ...] | None = None  # None: checked where the values are known
    # The max-batch search takes one value of it (it searches once per precision,
    # memory format and compiler, over the batch size).
    one_value_in_search: bool = False
    runtime: bool = False  # how the child is started (allocator, OpenMP, NUMA binding)
    # Tells one point of a result from another (POINT_AXES); the device count does not:
    # a point records its ranks.
    point_axis: bool = True
    tune: bool = False  # bench tune searches it where it is not given (bench.commands.tune)
    ladder_sets: bool = False  # bench ladder sets it, rung by rung, and refuses it given
    # `bench rerun` takes it from its own command line, never from the file.
    rerun: bool = False
    # How a result stores it (its entries in bench.result.schema's CONFIG and, for a
    # sweep axis, POINT); every option that sets a field has one.
    stored: Stored | None = None
    # A sweep axis's value that leaves things as they are, besides None and "none" (a
    # winner's command leaves it out): --attention auto, --loss plain.
    off: Any = None
    # How a comparison treats two values of it: ROW, KEY, MATCH or FREE (above).
    compared: str = ROW
    # The input pipeline (--data and the levers that feed a device): bench report sets a
    # run that set one beside its twin on synthetic data, every such option at its
    # default, on the same machine (bench.report.real_data).
    feeds: bool = False

    def __post_init__(self) -> None:
        if self.help and "{default}" in self.help:  # the default said once: its value
            shown = self.default[0] if _one(self.default) else self.default
            object.__setattr__(self, "help", self.help.replace("{default}", str(shown)))
        if self.compared not in COMPARED:
            raise ValueError(
                f"{self.flags[0]}: compared is one of {COMPARED}, not {self.compared!r}"
            )
        if not self.flags or (self.field is None) == (self.same_as is None):
            raise ValueError(f"{self.flags}: a run option sets one field, or is another spelling")
        if self.sweep is None and (self.allowed or self.runtime or self.one_value_in_search):
            raise ValueError(f"{self.flags[0]}: only a sweep axis (sweep=...) takes those")
        if (self.field is None) != (self.stored is None):
            raise ValueError(
                f"{self.flags[0]}: an option that sets a field says how a result stores it "
                "(stored=Stored(check, words, since=the new SCHEMA_VERSION, older=...))"
            )

    @property
    def flag(self) -> str:
        return self.flags[0]

    @property
    def name(self) -> str:
        """Its argparse dest: what a parsed namespace calls it."""
        return self.dest or self.flag.lstrip("-").replace("-", "_")

    @property
    def sweeps(self) -> bool:
        return self.sweep is not None

    @property
    def many(self) -> str:
        """A sweep axis's RunConfig field (a tuple of values)."""
        if self.sweep is None or self.field is None:
            raise ValueError(f"{self.flag} is not a sweep axis")
        return self.field

    def neutral(self, value: Any) -> bool:
        """Whether `value` leaves things as they are (None, 'none', its `off` or its
        default): a row's setup names the value only otherwise, so that an older result,
        which lacks the option and reads its neutral value, joins today's rows."""
        default = self.default
        if self.sweeps and _one(default):
            default = default[0]
        return any(value is v or value == v for v in (None, "none", self.off, default))

    def shown(self, value: Any) -> str:
        """'loss=chunked', 'threads=2': one value as a row names it, by the option's flag."""
        text = f"{value:g}" if isinstance(value, float) else str(value)
        return f"{self.flag.lstrip('-')}={text}"

    @property
    def one(self) -> str:
        """A sweep axis's PointConfig field (one value)."""
        if self.sweep is None:
            raise ValueError(f"{self.flag} is not a sweep axis")
        return self.sweep
