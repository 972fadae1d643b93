"""bench: reproducible benchmarks of deep-learning training across hardware."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("bench")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"
