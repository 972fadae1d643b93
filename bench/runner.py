"""The parent process: runs a sweep point by point, each in a fresh child.

The parent never imports a framework or touches a device. A launcher (bench.launchers)
starts each point's child: one process, or torchrun's ranks. The parent saves the
result file after every point so nothing finished is lost when a later point fails or
the run is interrupted. While it runs it holds a claim on that file (bench.files), so
two runs, suites or tunes in one folder never write one file: each run creates its own
(exclusively, never over another's), and going on with a file another bench is still
writing is refused.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, Protocol

from bench import files, launchers, memory_floor, probe, provenance, registry, result
from bench.config import PointConfig, RunConfig
from bench.errors import BenchError, UsageError
from bench.result import POINT_AXES, MaxBatch, Point, Probe, Result, point_axes
from bench.result.response import Response

Progress = Callable[[str, int, int], None]
# spawn(point, task, on_progress) -> the answer of a fresh child; task is "measure" or
# "count_flops". launchers.spawn answers a Response; a stand-in may answer the JSON a
# child writes, read here once (launchers.read).
Spawn = Callable[[PointConfig, str, Progress], Response | dict[str, Any]]


class ProbingChild(Protocol):
    """A child that trains a search's probes one after another (launchers.ProbingChild;
    a stand-in in tests): `answered` probes so far, `alive` until it has ended."""

    answered: int
    alive: bool

    def probe(self, point: PointConfig, on_progress: Progress) -> Response | dict[str, Any]: ...
    def close(self) -> None: ...


class Reporter(Protocol):
    """What the runner tells the user; bench.report.live draws it with rich."""

    def start(self, label: str, total_steps: int | None) -> None: ...
    def progress(self, phase: str, done: int, total: int) -> None: ...
    def finish(self, label: str, status: str, summary: str) -> None: ...
    def warn(self, line: str) -> None: ...


def _synthetic(point: PointConfig) -> PointConfig:
    """The point on synthetic data (its model's FLOPs do not depend on the dataset)."""
    return dataclasses.replace(
        point, data="synthetic", num_workers=0, epochs=None, epoch_samples=None, train_to=None
    )


class SilentReporter:
    def start(self, label: str, total_steps: int | None) -> None: ...
    def progress(self, phase: str, done: int, total: int) -> None: ...
    def finish(self, label: str, status: str, summary: str) -> None: ...
    def warn(self, line: str) -> None: ...


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


class _ProbeFailed(Exception):
    """A probe failed for a reason other than memory: the search cannot go on."""


class Runner:
    # The bench command whose interrupted files this runner goes on with (None: any run's).
    bench_command: ClassVar[str | None] = None

    def __init__(
        self,
        config: RunConfig,
        output_dir: Path,
        *,
        reporter: Reporter | None = None,
        spawn: Spawn | None = None,
        command: list[str] | None = None,
        probing: Callable[[], ProbingChild] | None = None,
    ) -> None:
        """`spawn`: how a fresh child starts (launchers.spawn); `probing`: how a probing
        child does (launchers.ProbingChild; with a stand-in `spawn` and none given, every
        probe is a fresh child's)."""
        self.config = config
        self.output_dir = Path(output_dir)
        self.reporter = reporter or SilentReporter()
        self.spawn = spawn or (lambda p, t, cb: launchers.spawn(p, t, cb, config.timeout_s))
        if probing is None and spawn is None:
            probing = lambda: launchers.ProbingChild(config.timeout_s)  # noqa: E731
        self.probing = probing
        argv = sys.argv if command is None else command
        self.result = Result(config=config, command=[provenance.redact(arg) for arg in argv])
        self.path: Path | None = None
        self.save_error: OSError | None = None
        self.writes = config.node_rank == 0
        self.claim: files.FileClaim | None = None
        self._flops: dict[tuple[Any, ...], float | None] = {}

    def _claim(self, path: Path) -> None:
        """Hold `path` for this run until it ends: no other bench writes it meanwhile."""
        self.claim = files.FileClaim(path).hold(
            f"{path}: another bench is writing it now; let that one finish (or stop it) "
            "before going on with this file"
        )

    def _release(self) -> None:
        if self.claim is not None:
            self.claim.release()
            self.claim = None

    def resume(self, path: Path) -> None:
        """Go on with an interrupted run of the same config, in its own file: what it
        measured (points, finished max-batch searches) is kept and not measured again.
        Refused while another bench is still writing that file."""
        self._claim(Path(path))
        try:
            self._resume(Path(path))
        except BaseException:
            self._release()
            raise

    def _resume(self, path: Path) -> None:
        old = result.load(path)
        if old.config != self.config:
            raise UsageError(f"{path}: a run of another config; bench cannot go on with it")
        name = self.bench_command
        if name is not None and old.command[1:2] != [name]:
            raise UsageError(f"{path}: not a bench {name} result; bench {name} cannot go on")
        old.status, old.finished = "running", None
        old.max_batch = [m for m in old.max_batch if m.status != "running"]
        self.result, self.path = old, path

    @staticmethod
    def _same(measured: Point, point: PointConfig) -> bool:
        """Whether `measured` is this point's (an interrupted run's, when resuming)."""
        return point_axes(measured) == point_axes(point) and (
            point.devices is None or measured.devices == point.ranks
        )

    def _measured_before(self, point: PointConfig) -> bool:
        return any(self._same(p, point) for p in self.result.points)

    def _sweep(self) -> None:
        """The config's points, in order, each saved once measured."""
        for point in self.config.points():
            if not self._measured_before(point):
                try:
                    measured = self._measure(point)
                except launchers.Stopped as stop:  # the curve it trained before the stop
                    if stop.point is not None:
                        self.result.points.append(stop.point)
                    raise
                self.result.points.append(measured)
                self._save()

    def run(self) -> Result:
        """Measure everything; the file at self.path is complete after every point.

        A save that fails (a full disk) keeps the measured points in memory and is tried
        again after the next point and at the end; `save_error` says if the last failed.
        On several machines only node 0 writes: the others train their ranks of each
        point and hold no figures (rank 0 gathers them)."""
        try:
            self._run()
        finally:
            self._release()
        return self.result

    def _run(self) -> None:
        launchers.check(self.config)  # several machines without their secret: one line
        if self.writes and self.path is None:  # a resumed run goes on in its own file
            files.require_writable_dir(self.output_dir, "output-dir")
            try:
                path = result.create(self.result, self.output_dir)
            except OSError as error:
                raise BenchError(
                    f"output-dir: cannot write a result file in {self.output_dir} "
                    f"({error.strerror}); nothing was measured"
                ) from None
            self._claim(path)  # a name new to the folder: no other bench holds it
            self.path = path
        try:
            if self.config.searches:
                self._find_max()
            else:
                self._sweep()
            self.result.status = "complete"
        except KeyboardInterrupt:
            self.result.status = "interrupted"
            raise
        finally:
            self.result.finished = result.now_iso()
            if self.result.environment is None:
                # No child reported one (all crashed early): at least the host.
                self.result.environment = provenance.collect()
            self._save()

    def _save(self) -> None:
        if self.path is None:  # only before run() created the file
            return
        try:
            result.update(self.result, self.path)
            self.save_error = None
        except OSError as error:  # the previous complete file is still in place
            if self.save_error is None:  # said once, as it happens, not only at the end
                self.reporter.warn(
                    f"could not save {self.path} ({error.strerror}): the points stay in "
                    "memory; bench saves again after each point and prints them at the end"
                )
            self.save_error = error

    def _spawn(self, point: PointConfig, task: str = "measure") -> Response:
        try:
            response = launchers.read(self.spawn(point, task, self.reporter.progress))
        except launchers.Stopped as stop:
            self._environment(stop.response)
            raise
        self._environment(response)
        return response

    def _environment(self, response: Response) -> None:
        if self.result.environment is None and response.environment:
            self.result.environment = {**response.environment, "command": self.result.command}

    def _flops_per_sample(self, point: PointConfig) -> float | None:
        """Counted once per workload and input shape, in a child of its own (None if
        that child fails: the measurement itself does not depend on it)."""
        key = (point.workload, point.framework, point.seq_len)
        formula = point.spec.flops(point.seq_len)
        if formula is not None:  # a published convention (LLMs): no model is built for it
            return float(formula["per_sample"])
        if key not in self._flops:
            # Maybe another framework's child (the reference count): its environment
            # is not this run's, so it does not go through _spawn. One process: FLOPs
            # per sample do not depend on the ranks.
            # The model's FLOPs, not an optimisation's: without ipex.optimize, whose
            # prepacked kernels the counter does not see.
            alone = dataclasses.replace(
                _synthetic(point), devices=None, nnodes=1, node_rank=0, rdzv_endpoint=None,
                optimize=None, activation_checkpointing="none",
            )  # fmt: skip
            framework = registry.framework(point.framework)
            known = framework.known_flops(alone)  # the reference table: no child at all
            if known is None:
                self.reporter.start(f"counting FLOPs of {point.workload}", 1)
                counted = framework.flops_point(alone)
                answer = self.spawn(counted, "count_flops", self.reporter.progress)
                known = launchers.read(answer).flops_per_sample
            self._flops[key] = known
        return self._flops[key]

    def _measure(self, point: PointConfig, repeats: int | None = None) -> Point:
        """All repeats of one point: a fixed count (`repeats`, else the config's), or
        automatic until the spread is small."""
        config = dataclasses.replace(self.config, repeats=repeats) if repeats else self.config
        axes = dict(zip(POINT_AXES, point_axes(point), strict=True))
        label = Point(**axes, devices=point.ranks).label_for(not point.spec.takes_seq_len)
        flops = self._flops_per_sample(point)
        wanted = config.repeats or config.max_repeats
        responses: list[Response] = []
        measured = Point(**axes)
        while len(responses) < wanted:
            # On a dataset the child knows the steps (its size); the bar counts without a total.
            total = None if point.dataset else point.warmup_steps + point.measured_steps
            self.reporter.start(f"{label} (repeat {len(responses) + 1})", total)
            # A run to a target is one draw of its seed: repeat i trains with seed + i
            # (MLPerf's runs and the speedrun's each take their own), so the runs' spread
            # is the recipe's, not the clock's alone.
            to_target = point.train_to is not None or point.train_to_loss is not None
            run = (
                dataclasses.replace(point, seed=point.seed + len(responses)) if to_target else point
            )
            try:
                responses.append(self._spawn(run))
            except launchers.Stopped as stop:  # a point training to a target, stopped
                stop.point = Point.from_responses(axes, [*responses, stop.response], flops)
                raise
            measured = Point.from_responses(axes, responses, flops)
            if measured.status != "ok":
                break
            if config.repeats is None and len(responses) >= config.min_repeats:
                rsd = measured.throughput_rsd
                if rsd is not None and rsd <= config.target_rsd:
                    break
        rsd = measured.throughput_rsd
        if config.repeats is None and rsd is not None and rsd > config.target_rsd:
            measured = dataclasses.replace(
                measured,
                noise=f"--repeats auto stopped at {len(responses)} repeats with a spread of "
                f"{rsd:.1%}, above its {config.target_rsd:.1%} target",
            )
        tp = measured.throughput
        summary = f"{tp.value:,.1f} {tp.unit}" if tp else measured.error_line
        self.reporter.finish(label, measured.status, summary)
        return measured

    def _next_guess(self, search: MaxBatch, unit: int, step: int, value: int) -> int | None:
        """The micro-batch to probe after `value` trained, from the line through the
        peaks of this search's probes that trained (bench.probe.memory_line, as tune and
        the ladder use it): the one predicted at HEADROOM of the memory a rank has, once
        past it the first predicted above all of it; None without a line, a known
        memory, or a prediction above `value` (the search doubles)."""
        limit = probe.memory_limit(self.config)
        peaks = {
            p.batch_size // unit: p.peak_memory_bytes
            for p in search.probes
            if p.status == "ok" and isinstance(p.peak_memory_bytes, int) and p.peak_memory_bytes
        }
        line = probe.memory_line(peaks)
        if limit is None or line is None:
            return None
        _, high, slope = line
        high_peak = peaks[high]
        for share, past in ((probe.HEADROOM, 0), (1.0, step)):
            predicted = int(high + (share * limit - high_peak) / slope) + past
            if predicted >= step:  # the search probes multiples of its step above it
                predicted -= predicted % step
            if predicted > value:
                return predicted
        return None

    def _find_max(self) -> None:
        """The largest batch (--find-max-batch) or sequence length (--find-max-seq-len)
        that trains, for each precision, format and compiler: a search of probes of
        `probe_steps` steps, saved as it goes; the probes share a probing child where
        they can (_shares_a_child), and its answer is then confirmed in a fresh child.
        Over several ranks the batch is searched in whole micro-batches (the global
        batch a multiple of the ranks: the probes split evenly); a sequence length at
        the config's one batch."""
        config = self.config
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
                        for m in self.result.max_batch
                    ):  # finished before this run was resumed
                        continue
                    search = MaxBatch(
                        precision=precision,
                        memory_format=fmt,
                        compile=compiler,
                        resolution=step * unit,
                        axis=axis,
                    )
                    self.result.max_batch.append(search)
                    cannot = memory_floor.shortfall(config, config.devices[0])
                    if cannot is not None:  # nothing fits: the answer, without a probe
                        search.status, search.error = "done", cannot
                        self.reporter.finish(f"max {what} {search.label}", "done", cannot)
                        self._save()
                        continue
                    probes = _SearchProbes(self, search, unit, ranks == 1)

                    def guess(value: int, search: MaxBatch = search) -> int | None:
                        if axis == "seq_len":  # memory grows with length otherwise than linearly
                            return None
                        return self._next_guess(search, unit, step, value)

                    try:
                        largest, failing = probes.find(limit, start, step, fine, guess)
                        search.largest_ok = largest * unit if largest else None
                        search.first_failing = failing * unit if failing else None
                        search.status = "done"
                    except _ProbeFailed as error:
                        search.status, search.error = "error", str(error)
                    finally:
                        probes.close()
                    self.reporter.finish(
                        f"max {what} {search.label}", search.status, search.display
                    )
                    self._save()


class _SearchProbes:
    """One search's probes, each recorded and saved as it answers. Where they may share
    a child (_shares_a_child) they are trained one after another in a probing child
    (bench.launchers.probing): only its first pays the process's start. Its answer (the
    largest that trained) is then trained again in a fresh child, as every probe was
    before: where that one runs out, the search goes on below it, as if that probe had
    said so. Elsewhere each probe is a fresh child's, or where the platform forks them
    (Platform.probes_fork) a fork's of the probing child, neither needing a confirmation."""

    def __init__(self, runner: Runner, search: MaxBatch, unit: int, one_rank: bool) -> None:
        self.runner, self.search, self.unit = runner, search, unit
        framework = registry.framework(runner.config.framework)
        shares = _shares_a_child(framework, search.compile, one_rank)
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
                raise _ProbeFailed(confirmed.error or "unknown error")
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
            raise _ProbeFailed(response.error or "unknown error")
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
                  seq_len=self._tokens(trial), child=number, kind=kind)
        )  # fmt: skip
        runner._save()
        return response

    def close(self) -> None:
        if self.child is not None:
            self.child.close()
            self.child = None


def _shares_a_child(framework: Any, compiler: str | None, one_rank: bool) -> bool:
    """Whether a search's probes may share a probing child: one process (torchrun's
    ranks start their own), no compiler (its caches keep the graphs of the earlier
    shapes, and dynamo compiles a second batch as a dynamic shape: not what a fresh
    child measures) and a framework that frees a probe's memory in its process
    (`Framework.probes_in_process`: PyTorch's caching allocator empties; XLA's peak
    counters cannot be reset, and TensorFlow keeps what it took)."""
    return one_rank and compiler is None and bool(getattr(framework, "probes_in_process", False))
