"""The result document: a run's config, provenance and points, as bench saves and loads
them. Its parts, each a module of its own:

    schema.py      the schema version, its history, one table of every stored field
    checks.py      what a stored value may be: the checks and the bounds they apply
    validate.py    a loaded document checked against the table, one line per problem
    migrations.py  an older document brought to the current version
    point.py       Point: one point of a sweep (axes, raw values per repeat, status)
    document.py    Result, MaxBatch, Probe: a run
    derive.py      statistics derived from the raw values (throughput, energy, MFU)
    io.py          atomic save, bounded and validating load
    checked.py     the verdicts of files already checked, for readers of many files
    response.py    Response: the child's answer for one point, checked as it is read
"""

from bench.result.derive import THROUGHPUT_UNIT, EnergySummary, ToAccuracy
from bench.result.document import MaxBatch, Probe, Result, moment, now_iso
from bench.result.io import (
    ResultError,
    create,
    default_name,
    dumps,
    from_document,
    load,
    read_document,
    update,
)
from bench.result.migrations import MIGRATIONS
from bench.result.point import Point, point_axes, variant_label
from bench.result.schema import POINT_AXES, SCHEMA_VERSION, STATUSES
from bench.result.validate import InvalidField, validate

__all__ = [
    "MIGRATIONS",
    "POINT_AXES",
    "SCHEMA_VERSION",
    "STATUSES",
    "THROUGHPUT_UNIT",
    "EnergySummary",
    "InvalidField",
    "MaxBatch",
    "Point",
    "Probe",
    "Result",
    "ResultError",
    "ToAccuracy",
    "create",
    "default_name",
    "dumps",
    "from_document",
    "load",
    "moment",
    "now_iso",
    "point_axes",
    "read_document",
    "update",
    "validate",
    "variant_label",
]
