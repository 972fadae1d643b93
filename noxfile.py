"""Sessions for developing bench: `nox -l` lists them, `nox -s NAME` runs one.

No work happens at import time, so `nox -l` works on any machine.
"""

from __future__ import annotations

import nox

nox.options.sessions = ["lint", "tests"]
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True

CONSTRAINTS = ("-c", "constraints.txt")


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite on the CPU (real training in child processes included)."""
    session.install("-e", ".[torch,dev]", *CONSTRAINTS)
    session.run("pytest", *session.posargs, env={"PYTHONUNBUFFERED": "1"})


@nox.session
def lint(session: nox.Session) -> None:
    """Check formatting and lint with ruff, and types with mypy."""
    session.install("-e", ".[torch,dev]", *CONSTRAINTS)  # mypy checks against torch's types
    session.run("ruff", "format", "--check", "bench", "tests", "benchmarks", "noxfile.py")
    session.run("ruff", "check", "bench", "tests", "benchmarks", "noxfile.py")
    session.run("mypy")


@nox.session(default=False)
def overhead(session: nox.Session) -> None:
    """Print bench's resnet50 throughput next to a bare PyTorch loop (not a test)."""
    session.install("-e", ".[torch]", *CONSTRAINTS)
    session.run("python", "benchmarks/overhead.py", *session.posargs)
