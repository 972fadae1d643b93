"""The max-batch search (--find-max-batch, --find-max-seq-len): the largest batch or
sequence length that trains, for each precision, format and compiler, found by probes
the parent runs one at a time and saves as each answers (a Runner's, `find_max`).

The rule is `search_largest` (doubling, then bisection on multiples of a step; a guess
from the line through the probes' memory peaks, bench.run.cost, may name the next probe).
Where the probes may share a child (`shares_a_child`) they train one after another in a
probing child (bench.run.launchers.probing) and the answer is trained again in a fresh one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from bench import registry
from bench.config.run_config import PointConfig, RunConfig
from bench.result import MaxBatch, Probe, Result
from bench.result.response import Response
from bench.run import cost, launchers
from bench.run.progress import Progress, Reporter
from bench.workloads import memory_floor


class ProbingChild(Protocol):
    """A child that trains a search's probes one after another (launchers.ProbingChild;
    a stand-in in tests): `answered` probes so far, `alive` until it has ended."""

    answered: int
    alive: bool

    def probe(self, point: PointConfig, on_progress: Progress) -> Response | dict[str, Any]: ...
    def close(self) -> None: ...


class SearchHost(Protocol):
    """What a search asks of the Runner it runs for."""

    config: RunConfig
    result: Result
    reporter: Reporter
    probing: Callable[[], ProbingChild] | None

    def _spawn(self, point: PointConfig, job: str = "measure") -> Response: ...
    def _environment(self, response: Response) -> None: ...
    def _save(self) -> None: ...


def search_largest(
    fits: Callable[[int], str],
    limit: int,
    start: int = 1,
    step: int = 1,
    fine: int = 1,
    guess: Callable[[int], int | None] | None = None,
) -> tuple[int | None, int | None]:
    """Largest whole number (a batch, a sequence length) for which fits() says 'ok', and
    the first that does not.

    From `start`, doubles until one fails (or, when `start` fails, halves until one
    fits), then bisects between the last success and the first failure: O(log n)
    probes. Above `step` it probes multiples of `step` and stops once the two are
    `step` apart (a useful resolution: batch 1,536 and 1,544, not one sample); below
    it, it bisects until they are `fine` apart (1: the exact number; `step`: only the
    halvings of `start`, powers of two from a power of two). fits() returns 'ok' or
    'oom'; it raises to stop the search. Returns (largest_ok, first_failing);
    largest_ok is None when even 1 fails, first_failing is None when `limit` was
    reached without failing. `guess(value)`, asked after each success while growing, may
    name the next probe instead of the doubling (the runner's: from the line through the
    probes' memory peaks, first the batch predicted to use 90% of the memory, then the
    first predicted to exceed it): a guess narrows the bracket, every answer is still a
    probe's.
    """
    value = max(1, min(start, limit))
    if fits(value) == "ok":
        low = value
        while True:
            if value >= limit:
                return low, None
            ahead = guess(value) if guess is not None else None
            if ahead is not None and ahead >= step:
                ahead -= ahead % step  # probes above the step are its multiples
            value = min(ahead if ahead is not None and ahead > value else value * 2, limit)
            if fits(value) != "ok":
                high = value
                break
            low = value
    else:
        high = value
        while True:
            if value == 1:
                return None, 1
            value //= 2
            if fits(value) == "ok":
                low = value
                break
            high = value
    while high - low > (step if low >= step else fine):
        middle = (low + high) // 2
        rounded = middle - middle % step
        if low >= step and rounded > low:
            middle = rounded
        if fits(middle) == "ok":
            low = middle
        else:
            high = middle
    return low, high


# The sequence-length search's resolution: above it, multiples of it (as torchtitan's
# configs and kernels' tiles use); below it, only halvings of the start (powers of two
# from a power of two).
SEQ_LEN_STEP = 128


class ProbeFailed(Exception):
    """A probe failed for a reason other than memory: the search cannot go on."""


def _next_guess(
    config: RunConfig, search: MaxBatch, unit: int, step: int, value: int
) -> int | None:
    """The micro-batch to probe after `value` trained, from the line through the
    peaks of this search's probes that trained (bench.run.cost.memory_line, as tune and
    the ladder use it): the one predicted at HEADROOM of the memory a rank has, once
    past it the first predicted above all of it; None without a line, a known
    memory, or a prediction above `value` (the search doubles)."""
    limit = cost.memory_limit(config)
    peaks = {
        p.batch_size // unit: p.peak_memory_bytes
        for p in search.probes
        if p.status == "ok" and isinstance(p.peak_memory_bytes, int) and p.peak_memory_bytes
    }
    line = cost.memory_line(peaks)
    if limit is None or line is None:
        return None
    _, high, slope = line
    high_peak = peaks[high]
    for share, past in ((cost.HEADROOM, 0), (1.0, step)):
        predicted = int(high + (share * limit - high_peak) / slope) + past
        if predicted >= step:  # the search probes multiples of its step above it
            predicted -= predicted % step
        if predicted > value:
            return predicted
    return None


def find_max(runner: SearchHost) -> None:
    """The largest batch (--find-max-batch) or sequence length (--find-max-seq-len)
    that trains, for each precision, format and compiler: a search of probes of
    `probe_steps` steps, saved as it goes; the probes share a probing child where
    they can (_shares_a_child), and its answer is then confirmed in a fresh child.
    Over several ranks the batch is searched in whole micro-batches (the global
    batch a multiple of the ranks: the probes split evenly); a sequence length at
    the config's one batch."""
    config = runner.config
    spec = registry.workload(config.workload)
    ranks = (config.devices[0] or 1) * config.nnodes
    if config.find_max_seq_len:  # lengths of 128 tokens above 128, powers of two below
        axis, unit, limit = "seq_len", 1, spec.max_seq_len or 1
        start, step, fine = (
            config.seq_len or spec.default_seq_len or 1,
            SEQ_LEN_STEP,
            SEQ_LEN_STEP,
        )
    else:  # micro-batches: the global batch over `ranks`
        axis, unit, limit = "batch_size", ranks, max(1, config.max_batch_limit // ranks)
        start = max(spec.min_batch_size, config.max_batch_start or 1)
        start, step, fine = -(-start // ranks), max(1, config.max_batch_step // ranks), 1
    what = "seq len" if axis == "seq_len" else "batch"
    for precision in config.precisions:
        for fmt in config.memory_formats:
            for compiler in config.compilers:
                if any(
                    (m.precision, m.memory_format, m.compile) == (precision, fmt, compiler)
                    for m in runner.result.max_batch
                ):  # finished before this run was resumed
                    continue
                search = MaxBatch(
                    precision=precision,
                    memory_format=fmt,
                    compile=compiler,
                    resolution=step * unit,
                    axis=axis,
                )
                runner.result.max_batch.append(search)
                cannot = memory_floor.shortfall(config, config.devices[0])
                if cannot is not None:  # nothing fits: the answer, without a probe
                    search.status, search.error = "done", cannot
                    runner.reporter.finish(f"max {what} {search.label}", "done", cannot)
                    runner._save()
                    continue
                probes = _SearchProbes(runner, search, unit, ranks == 1)

                def guess(value: int, search: MaxBatch = search) -> int | None:
                    if axis == "seq_len":  # memory grows with length otherwise than linearly
                        return None
                    return _next_guess(config, search, unit, step, value)

                try:
                    largest, failing = probes.find(limit, start, step, fine, guess)
                    search.largest_ok = largest * unit if largest else None
                    search.first_failing = failing * unit if failing else None
                    search.status = "done"
                except ProbeFailed as error:
                    search.status, search.error = "error", str(error)
                finally:
                    probes.close()
                runner.reporter.finish(f"max {what} {search.label}", search.status, search.display)
                runner._save()


class _SearchProbes:
    """One search's probes, each recorded and saved as it answers. Where they may share
    a child (shares_a_child) they are trained one after another in a probing child
    (bench.run.launchers.probing): only its first pays the process's start. Its answer (the
    largest that trained) is then trained again in a fresh child, as every probe was
    before: where that one runs out, the search goes on below it, as if that probe had
    said so. Elsewhere each probe is a fresh child's, or where the platform forks them
    (Platform.probes_fork) a fork's of the probing child, neither needing a confirmation."""

    def __init__(self, runner: SearchHost, search: MaxBatch, unit: int, one_rank: bool) -> None:
        self.runner, self.search, self.unit = runner, search, unit
        framework = registry.framework(runner.config.framework)
        shares = shares_a_child(framework, search.compile, one_rank)
        self.probing = runner.probing if shares else None
        self.children = 0  # the search's children so far (Probe.child)
        self.child: ProbingChild | None = None
        self.child_number = 0  # the probing child's number among them
        self.heard: dict[int, str] = {}  # what the search was told of each value
        self._unanswered = False  # the last probe's probing child ended without its answer

    def find(
        self, limit: int, start: int, step: int, fine: int, guess: Callable[[int], int | None]
    ) -> tuple[int | None, int | None]:
        """search_largest over the probes; where they shared a child, until its answer
        trains in a fresh child too (or nothing trains)."""

        def fits(value: int) -> str:
            if value not in self.heard:
                self.heard[value] = self._probe(value)
            return self.heard[value]

        guessed: dict[int, int | None] = {}

        def guessing(value: int) -> int | None:  # the same guess again when the search replays
            if value not in guessed:
                guessed[value] = guess(value)
            return guessed[value]

        while True:  # each time, the search replays what it heard up to the confirmed value
            largest, failing = search_largest(fits, limit, start, step, fine, guessing)
            if largest is None or self._fresh_ok(largest):
                return largest, failing
            confirmed = self._run(largest, "confirm")
            if confirmed.status == "error":
                raise ProbeFailed(confirmed.error or "unknown error")
            self.heard[largest] = confirmed.status

    def _fresh_ok(self, value: int) -> bool:
        """Whether a fresh child trained `value` (its own first probe, a fork of a probing
        child, or a confirmation)."""
        trial = self._trial(value)
        return any(
            (p.batch_size, p.seq_len, p.status) == (trial.batch_size, self._tokens(trial), "ok")
            and p.kind != "in-process"
            for p in self.search.probes
        )

    def _trial(self, value: int) -> PointConfig:
        config, search = self.runner.config, self.search
        batch, seq_len = (
            (config.batch_sizes[0], value)
            if search.axis == "seq_len"
            else (value * self.unit, None)
        )
        return config.probe(
            batch, search.precision, search.memory_format, search.compile, seq_len=seq_len
        )

    def _tokens(self, trial: PointConfig) -> int | None:
        spec = trial.spec
        return spec.input_shape(trial.seq_len)[0] if spec.takes_seq_len else None

    def _probe(self, value: int) -> str:
        """The probe of `value`: in the probing child where the probes share one; there,
        one that ended without an answer (a crash, a timeout) after other probes may
        have ended of theirs, and is tried again in a fresh child."""
        if self.probing is None:
            response = self._run(value, "fresh")
        else:
            response = self._run(value, "shared")
            if self.search.probes[-1].kind == "in-process" and self._unanswered:
                response = self._run(value, "shared")
        if response.status == "error":
            raise ProbeFailed(response.error or "unknown error")
        return response.status

    def _run(self, value: int, how: str) -> Response:
        """Train the probe of `value`: `how` 'fresh' or 'confirm' in a fresh child,
        'shared' in the search's probing child (started if it has none); record it."""
        runner, trial = self.runner, self._trial(value)
        verb = "confirm" if how == "confirm" else "probe"
        what = "seq len" if self.search.axis == "seq_len" else "batch"
        shown = trial.seq_len if self.search.axis == "seq_len" else trial.batch_size
        runner.reporter.start(f"max {what} {self.search.label}: {verb} {shown}", trial.steps)
        self._unanswered = False
        began = time.monotonic()
        if how == "shared" and self.probing is not None:
            if self.child is None:
                self.child = self.probing()
                self.children += 1
                self.child_number = self.children
            number, child, answered = self.child_number, self.child, self.child.answered
            if registry.platform(trial.device).probes_fork:
                kind = "forked"  # as a fresh child: from the memory before any probe
            else:
                kind = "fresh" if answered == 0 else "in-process"
            response = launchers.read(child.probe(trial, runner.reporter.progress))
            runner._environment(response)
            if not child.alive:
                self.child = None
                self._unanswered = child.answered == answered
        else:
            self.children += 1
            number, kind = self.children, how
            response = runner._spawn(trial)
        self.search.probes.append(
            Probe(trial.batch_size, response.status, response.error, response.peak_memory_bytes,
                  seq_len=self._tokens(trial), child=number, kind=kind,
                  seconds=round(time.monotonic() - began, 3),
                  step_times_s=list(response.step_times_s) or None)
        )  # fmt: skip
        runner._save()
        return response

    def close(self) -> None:
        if self.child is not None:
            self.child.close()
            self.child = None


def shares_a_child(framework: Any, compiler: str | None, one_rank: bool) -> bool:
    """Whether a search's probes may share a probing child: one process (torchrun's
    ranks start their own), no compiler (its caches keep the graphs of the earlier
    shapes, and dynamo compiles a second batch as a dynamic shape: not what a fresh
    child measures) and a framework that frees a probe's memory in its process
    (`Framework.probes_in_process`: PyTorch's caching allocator empties; XLA's peak
    counters cannot be reset, and TensorFlow keeps what it took)."""
    return one_rank and compiler is None and framework.probes_in_process
