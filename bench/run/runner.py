"""The parent process: runs a sweep point by point, each in a fresh child.

The parent never imports a framework or touches a device. A launcher (bench.run.launchers)
starts each point's child: one process, or torchrun's ranks. The parent saves the
result file after every point so nothing finished is lost when a later point fails or
the run is interrupted. While it runs it holds a claim on that file (bench.util.files), so
two runs, suites or tunes in one folder never write one file: each run creates its own
(exclusively, never over another's), and going on with a file another bench is still
writing is refused.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from bench import registry, result
from bench.config.run_config import PointConfig, RunConfig
from bench.result import POINT_AXES, Point, Result, point_axes
from bench.result.response import Response
from bench.run import launchers, max_batch, provenance
from bench.run.max_batch import ProbingChild
from bench.run.progress import Progress, Reporter, SilentReporter
from bench.util import files
from bench.util.errors import BenchError, UsageError

# spawn(point, job, on_progress) -> the answer of a fresh child; job is "measure" or
# "count_flops". launchers.spawn answers a Response; a stand-in may answer the JSON a
# child writes, read here once (launchers.read).
Spawn = Callable[[PointConfig, str, Progress], Response | dict[str, Any]]


def _synthetic(point: PointConfig) -> PointConfig:
    """The point on synthetic data (its model's FLOPs do not depend on the dataset)."""
    return dataclasses.replace(
        point, data="synthetic", num_workers=0, prefetch_factor=None, input_dtype="float32",
        pin_memory=None, decode="cpu", epochs=None, epoch_samples=None, train_to=None,
    )  # fmt: skip


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
                max_batch.find_max(self)
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

    def _spawn(self, point: PointConfig, job: str = "measure") -> Response:
        try:
            response = launchers.read(self.spawn(point, job, self.reporter.progress))
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
