"""Errors that reach the user as one line (see cli.main)."""


class BenchError(Exception):
    """Any error bench reports without a traceback."""

    exit_code = 1


class UsageError(BenchError, ValueError):
    """Bad input from the user: an option, a value, a file. Exit status 2."""

    exit_code = 2
