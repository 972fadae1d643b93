"""PyTorch: eager or torch.compile, autocast for fp16/bf16, TF32 only when asked; under
torchrun, DistributedDataParallel over the ranks (each its own device and data), or
FSDP2 for workloads that declare it (bench.parallel.fsdp: sharded parameters, its own
mixed precision)."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from bench import datasets, registry
from bench.datasets import pipeline, tokens
from bench.frameworks import _ipex, _torch_compile, _torch_data, _torch_precision, _torch_ranks
from bench.frameworks._torch_compile import uses_cuda_graphs
from bench.frameworks._torch_data import SyntheticSamples, prefetch, split_loader, tree_map
from bench.frameworks._torch_decode import check_decode, device_batches
from bench.frameworks._torch_optimizer import FUSED, describe, optimizer_for, schedule_for
from bench.frameworks.base import Framework, Session
from bench.parallel import ranks
from bench.result import catalog
from bench.trackers.timing import EventTimer, RankTimer, StepTimer
from bench.workloads.contract import TorchWorkload

if TYPE_CHECKING:
    import torch

    from bench.config.run_config import PointConfig
    from bench.platforms.base import Platform
    from bench.workloads.base import WorkloadSpec

_OOM_MESSAGES = ("out of memory", "can't allocate memory", "cannot allocate memory")


class TorchSession(Session):
    """A point's model, optimizer and data in PyTorch, built in the order of __init__'s
    steps; what differs between devices is asked of the platform (bench/platforms/)."""

    def __init__(
        self, point: PointConfig, platform: Platform, rank: ranks.Rank | None = None
    ) -> None:
        self.point, self.platform, self.rank = point, platform, rank
        self.impl = TorchWorkload.load(point.spec)
        self.train_loss = self.impl.training_loss()
        # Each rank trains its share of the GLOBAL batch, on its own data.
        self.devices = rank.world_size if rank else 1
        self.batch_size = point.batch_size // self.devices
        self._open_device()
        self.amp_dtype = _torch_precision.autocast_dtype(point.precision)
        self.float8: dict[str, Any] | None = None
        model = self._build_model()
        # A padded vocabulary's rows (--pad-vocab) are no token's: the real model's count.
        self.padding_parameters = getattr(model, "padding_parameters", 0)
        self.parameters = (
            sum(p.numel() for p in model.parameters() if p.requires_grad) - self.padding_parameters
        )
        self.training = datasets.training(point) if point.dataset else None
        self.optimizer, recipe_loss = optimizer_for(self.impl, point, model, self.training)
        self.train_loss = recipe_loss or self.train_loss
        self.model = self._wrap(model)
        self.token_file: tokens.TokenFile | None = None
        if point.tokens is not None:  # checked whole in the parent; each batch again here
            self.token_file = tokens.for_point(point)
        self.batches = self._batches()
        self.details = self._setup_details()

    def _open_device(self) -> None:
        """Join the ranks' process group, set threads, seed and TF32, open this process's
        device, prove the ranks share the point's secret, and let the convolution library
        time its algorithms where it does."""
        import torch

        point, platform, rank = self.point, self.platform, self.rank
        if rank is not None:
            import torch.distributed as dist

            dist.init_process_group(platform.distributed_backend)
        threads = point.threads or (platform.torch_rank_threads() if rank is not None else None)
        if threads:
            torch.set_num_threads(threads)
        torch.manual_seed(point.seed)  # the same weights on every rank (DDP checks)
        _torch_precision.set_tf32(point.precision == "tf32")
        self.device = platform.torch_device_here()
        if rank is not None and rank.world_size > 1:
            _torch_ranks.prove(
                rank, self.device
            )  # before any model, parameter broadcast or DDP/FSDP set-up
        self.channels_last = point.memory_format == "channels_last"
        self.cudnn_benchmark = platform.torch_autotunes_convolutions
        torch.backends.cudnn.benchmark = self.cudnn_benchmark
        if _ipex.used_by(point.optimize, point.compile):
            _ipex.register_backend()  # imported right after torch, as IPEX asks

    def _build_model(self) -> Any:
        """The workload's model on the device. Over ranks, a workload that declares it
        (LLMs) is sharded with FSDP2: built on the meta device, sharded, then each rank
        allocates and fills only its shards; its bf16/fp16 is FSDP2's mixed-precision
        policy, never autocast. Activation checkpointing wraps the blocks before FSDP2
        shards them."""
        import torch

        point, rank = self.point, self.rank
        self.sharding: dict[str, Any] | None = None
        if point.spec.sharding == "fsdp":
            from bench.parallel import fsdp

            with torch.device("meta"):
                model = self._checkpointed(self.impl.build_model(point.spec, point))
            if rank is not None:
                self.sharding = fsdp.apply_fsdp(
                    model, rank.world_size, self.device.type,
                    param_dtype=self.amp_dtype, reduce_dtype=torch.float32,
                )  # fmt: skip
            # One process: built on the meta device and filled where it trains (a 1B
            # decoder's initialisation on the host took 20 s before its first step).
            fsdp.materialize(model, self.device)
            if rank is not None:
                self.amp_dtype = None
        else:
            model = self._checkpointed(self.impl.build_model(point.spec, point))
            model = model.to(self.device)
        if self.channels_last:
            model = model.to(memory_format=torch.channels_last)
        return model

    def _wrap(self, model: Any) -> Any:
        """What wraps the built model, in order: ipex.optimize (on the bare model), the
        schedule, DistributedDataParallel over ranks (unless FSDP2 shards it), loss
        scaling, torch.compile."""
        import torch

        point = self.point
        self.ipex_applied = None
        if point.optimize == _ipex.NAME:  # on the bare model, before DDP wraps it
            model, self.optimizer, self.ipex_applied = _ipex.optimize(
                model, self.optimizer, self.amp_dtype or torch.float32, bool(point.compile)
            )
        self.eager_model = model
        self.schedule = schedule_for(self.optimizer, self.training)
        if self.rank is not None and self.sharding is None:
            device_ids = self.platform.torch_ddp_device_ids(self.device)
            model = torch.nn.parallel.DistributedDataParallel(model, device_ids=device_ids)
        self.scaler = _torch_precision.grad_scaler(self.device, point.precision)
        # CUDA graphs replay into the same output buffers: each step begins a new replay,
        # and a step's loss is copied out before the next one overwrites it.
        self.cuda_graphs = uses_cuda_graphs(point.compile) and self.platform.torch_replays_graphs
        return _torch_compile.apply_compile(model, point.compile)

    def _setup_details(self) -> dict[str, Any]:
        """The facts of this setup that belong in the result."""
        import torch

        point, rank = self.point, self.rank
        details: dict[str, Any] = {
            "threads": torch.get_num_threads(),
            "optimizer": describe(self.optimizer),
            "grad_scaler": self.scaler is not None,
            "autocast_dtype": str(self.amp_dtype) if self.amp_dtype else None,
            "cudnn_benchmark": self.cudnn_benchmark,
        }
        if self.padding_parameters:
            details["padding_parameters"] = self.padding_parameters  # not in `parameters`
        if self.token_file is not None:  # hashed once, by rank 0 (or the one process)
            details["dataset"] = self.token_file.describe(hashed=not rank or rank.rank == 0)
        if point.activation_checkpointing != "none":
            details["activation_checkpointing"] = {
                "mode": point.activation_checkpointing, "blocks": self.checkpointed_blocks,
            }  # fmt: skip
        if self.ipex_applied is not None:
            details["ipex_optimize"] = self.ipex_applied
        if self.float8 is not None:
            details["float8"] = self.float8
        details["sharding"] = self.sharding["kind"] if self.sharding else None
        if rank is not None:
            details["data_parallel"] = {
                "kind": "FSDP2" if self.sharding else "DistributedDataParallel",
                "backend": self.platform.distributed_backend,
                "world_size": rank.world_size,
                "nodes": point.nnodes,
                "per_rank_batch": self.batch_size,
                "launcher": "torchrun",
            }
            if self.sharding:
                details["data_parallel"]["fsdp"] = self.sharding
        return details

    def _checkpointed(self, model: Any) -> Any:
        """The plain model with what applies before sharding: float8 linears first, then
        activation checkpointing around the blocks (torchtitan's order)."""
        from bench.parallel.checkpoint import apply_ac

        if self.point.precision == "fp8":
            from bench.parallel.float8 import apply_float8

            self.float8 = apply_float8(model)
        self.checkpointed_blocks = apply_ac(model, self.point.activation_checkpointing)
        return model

    def _to_device(self, batch: Any) -> Any:
        import torch

        def move(tensor: torch.Tensor) -> torch.Tensor:
            tensor = tensor.to(self.device, non_blocking=True)
            if self.channels_last and tensor.dim() == 4:
                tensor = tensor.contiguous(memory_format=torch.channels_last)
            return tensor

        return tree_map(move, batch)

    def _batches(self) -> Iterator[tuple[Any, Any]]:
        import torch

        point = self.point
        if point.dataset is not None:  # batches come from train_batches, epoch by epoch
            return iter(())
        if self.token_file is not None:
            return self._token_batches(self.token_file)
        if point.data == "synthetic":
            # Made once, on the device: the host is not part of the measurement.
            rank = self.rank.rank if self.rank else 0
            generator = torch.Generator().manual_seed(point.seed + 1_000_003 * rank)
            inputs, targets = self.impl.make_batch(point.spec, point, self.batch_size, generator)
            return itertools.repeat((self._to_device(inputs), self._to_device(targets)))
        steps = point.warmup_steps + point.measured_steps
        length = steps * self.batch_size
        offset = (self.rank.rank if self.rank else 0) * length
        loader: Any = torch.utils.data.DataLoader(
            # A map-style dataset by protocol (__len__, __getitem__); torch stays a lazy import.
            SyntheticSamples(self.impl, point, length, offset),  # type: ignore[arg-type]
            batch_size=self.batch_size,
            num_workers=point.num_workers,
            pin_memory=_torch_data.pins(self.platform, self.point.pin_memory),
            drop_last=True,
            persistent_workers=point.num_workers > 0,
            prefetch_factor=prefetch(point.num_workers, point.prefetch_factor),
        )
        return (
            (self._to_device(x), self._to_device(y))
            for x, y in itertools.chain.from_iterable(itertools.repeat(loader))
        )

    def _token_batches(self, file: tokens.TokenFile) -> Iterator[tuple[Any, Any]]:
        """Each step's windows of the token file (bench.datasets.tokens), this rank's
        slice of the global batch, read on the host and checked against the vocabulary
        inside the step, as a training loop reads its next batch."""
        import torch

        make = self.impl.token_batch
        if make is None:
            raise datasets.DatasetError(
                f"data: {self.point.workload} has no token_batch in torch; it trains on "
                "synthetic tokens only"
            )
        rank, ranks = (self.rank.rank, self.rank.world_size) if self.rank else (0, 1)
        for step in itertools.count():
            windows = file.batch(step, self.point.batch_size, self.point.spec, rank, ranks)
            inputs, targets = make(torch.from_numpy(windows))
            yield self._to_device(inputs), self._to_device(targets)

    def _loader(self, split: datasets.Split, epoch: int, train: bool) -> Iterator[Any]:
        """A DataLoader over the split in the shared order, its workers decoding and
        augmenting on the host; batches land on the device."""
        plan = self.training
        rank, ranks = (self.rank.rank, self.rank.world_size) if self.rank else (0, 1)
        if self.point.decode == "device":  # the workers send the files' bytes
            yield from device_batches(self, split, epoch, train, rank, ranks)
            return
        pins = _torch_data.pins(self.platform, self.point.pin_memory)
        raw = self.point.input_dtype == "uint8"
        loader = split_loader(
            split, self.point.batch_size, seed=plan.seed, epoch=epoch, train=train,
            workers=plan.workers, pin_memory=pins, prefetch_factor=self.point.prefetch_factor,
            rank=rank, ranks=ranks, raw=raw,
        )  # fmt: skip
        normalise = _torch_data.normaliser(split, self.device) if raw else None
        try:
            for inputs, targets in loader:
                inputs = self._to_device(inputs)
                yield normalise(inputs) if normalise else inputs, self._to_device(targets)
        except Exception as error:  # a worker's DatasetError arrives wrapped
            pipeline.reraise(error)
            raise

    def train_batches(self, epoch: int) -> Iterator[Any]:
        return self._loader(self.training.dataset.train, epoch, train=True)

    def evaluate(self) -> tuple[int, int]:
        """Top-1 with the eager model in eval mode (a compiled one would recompile for
        eval mode and for the last, smaller batch). Ranks each count their share of the
        split and add up: every rank gets the whole split's figures (and stops at the
        same epoch)."""
        import torch

        model = self.eager_model
        model.eval()
        correct = torch.zeros((), dtype=torch.int64, device=self.device)
        seen = 0
        with (
            torch.no_grad(),
            torch.autocast(
                self.device.type, dtype=self.amp_dtype, enabled=self.amp_dtype is not None
            ),
        ):
            for inputs, targets in self._loader(self.training.dataset.val, 0, train=False):
                correct += (model(inputs).argmax(1) == targets).sum()
                seen += len(targets)
        model.train()
        if self.rank is not None:
            import torch.distributed as dist

            totals = torch.stack([correct, torch.tensor(seen, device=self.device)])
            dist.all_reduce(totals)  # on the backend's device: gloo's CPU, NCCL's GPU
            return int(totals[0]), int(totals[1])
        return int(correct), seen

    def synthetic_batch(self) -> Any:
        import torch

        generator = torch.Generator().manual_seed(self.point.seed)
        inputs, targets = self.impl.make_batch(
            self.point.spec, self.point, self.batch_size, generator
        )
        return self._to_device(inputs), self._to_device(targets)

    def step(self) -> Any:
        return self.train_on(next(self.batches))

    def train_on(self, batch: Any) -> Any:
        import torch

        inputs, targets = batch
        if self.cuda_graphs:
            torch.compiler.cudagraph_mark_step_begin()
        self.optimizer.zero_grad(set_to_none=True)
        with torch.autocast(
            self.device.type, dtype=self.amp_dtype, enabled=self.amp_dtype is not None
        ):
            loss = self.train_loss(self.model, inputs, targets)
        if self.scaler is not None:
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            loss.backward()
            self.optimizer.step()
        if self.schedule is not None:
            self.schedule.step()
        return loss.detach().clone() if self.cuda_graphs else loss.detach()

    def loss_value(self, handle: Any) -> float:
        return float(handle)

    def synchronize(self) -> None:
        """The device, then (as a rank) a barrier: a clock read on rank 0 follows
        every rank's finished work."""
        self.platform.synchronize()
        if self.rank is not None:
            import torch.distributed as dist

            dist.barrier()

    def moe_report(self, step_times_s: list[float]) -> dict[str, Any] | None:
        """The workload's `moe_report` (its contract's), summed over ranks by a collective
        every rank joins."""
        report = self.impl.moe_report
        return None if report is None else report(self.eager_model, step_times_s)

    def gather(self, mine: ranks.RankShare) -> list[ranks.RankShare]:
        """Every rank's share, in rank order, as JSON (bench.frameworks._torch_ranks)."""
        return [mine] if self.rank is None else _torch_ranks.gather(mine, self.rank, self.device)

    def close(self) -> None:
        """A rank's process group is left to the process's end (bench.child.worker leaves by
        os._exit once it has reported), never destroyed here. Destroying it lets the DDP
        Reducer, freed as the session goes, drop the group's last reference: the group's
        destructor then joins gloo's threads while holding the GIL, and a gloo thread
        still freeing a finished all_gather's tensors waits for the GIL. Two-rank runs
        deadlocked there in 6 of 10 in bench:cuda12 (PyTorch 2.7.1) and 3 of 9 in
        bench:xeon-ipex (2.8.0); with the group left, 0 of 20 in each (py-spy: the
        main thread in ~ProcessGroupGloo under the Reducer's dealloc, a gloo thread in
        ~AsyncAllgatherWork waiting for the GIL)."""

    def timer(self, clock: Callable[[], float] = time.perf_counter) -> StepTimer:
        event = self.platform.torch_timing_event()  # CUDA and ROCm (HIP) have them
        if event is not None:
            return EventTimer(self.synchronize, event, clock)
        if self.rank is not None:  # ranks meet at the window's ends, not every step
            return RankTimer(self.synchronize, self.platform.synchronize, clock)
        return super().timer(clock)

    def count_flops(self) -> float | None:
        """Forward + backward model FLOPs per sample by FlopCounterMode (matmuls,
        convolutions, attention; 2 per multiply-add), on the eager model before warm-up,
        at the workload's smallest batch (where one sample fits, the count still runs)."""
        import torch
        from torch.utils.flop_counter import FlopCounterMode

        batch = self.point.spec.min_batch_size
        generator = torch.Generator().manual_seed(self.point.seed)
        inputs, targets = self.impl.make_batch(self.point.spec, self.point, batch, generator)
        counter = FlopCounterMode(display=False)
        with counter:
            self.train_loss(
                self.eager_model, self._to_device(inputs), self._to_device(targets)
            ).backward()
        self.optimizer.zero_grad(set_to_none=True)
        return counter.get_total_flops() / batch


class TorchFramework(Framework):
    name = "torch"
    data_sources = ("synthetic", "loader", "dataset", "tokens")
    default_compiler = "inductor"
    launches_ranks = True
    optimizations = (_ipex.NAME, FUSED)
    activation_checkpointing = True
    float8 = True
    llm_levers = True
    probes_in_process = True
    prefetches_batches = True
    pins_memory = True
    sends_uint8 = True
    decodes_on_device = True

    def check_platform(
        self,
        platform: Platform,
        compilers: tuple[str | None, ...],
        optimizations: tuple[str | None, ...],
    ) -> None:
        _ipex.check_platform(platform, (*compilers, *optimizations))

    def check_compile(self, compile: str | None) -> None:
        _torch_compile.check_compile(compile)

    def known_flops(self, point: PointConfig) -> float | None:
        """The shipped table's count where this PyTorch release made it (no child)."""
        return catalog.torch_reference_flops(point.workload, point.spec.input_shape(point.seq_len))

    def unused_optimization(self, spec: WorkloadSpec, optimize: str) -> str | None:
        if optimize != FUSED or not spec.defines(self.name, "optimizer"):
            return None
        return (
            f"fused changes nothing on {spec.name}: it trains with its own optimizer (its "
            "torch module's `optimizer`; the decoders' AdamW is fused already where torch "
            "has the kernel); fused applies to bench's SGD"
        )

    def preflight(self, points: Iterable[PointConfig]) -> None:
        points = list(points)
        _ipex.check(tuple(p.optimize for p in points), tuple(p.compile for p in points))
        if any(p.precision == "fp8" for p in points):
            registry.require("--precision fp8 (float8 training)", "torchao")
        check_decode(points)

    def optimization_note(self, platform: Platform, optimize: str) -> str | None:
        return platform.torch_ipex_unfit() if optimize == _ipex.NAME else None

    def usable_optimizations(self, platform: Platform) -> tuple[str, ...]:
        return (_ipex.NAME,) if _ipex.runs_on(platform) and not _ipex.unavailable() else ()

    def versions(self) -> dict[str, Any]:
        import numpy
        import torch
        import torchvision

        return {
            "torch": torch.__version__,
            "torchvision": torchvision.__version__,
            "numpy": numpy.__version__,
            "torch_cuda": torch.version.cuda,
            "torch_hip": getattr(torch.version, "hip", None),
            "torch_git": getattr(torch.version, "git_version", None),
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "mkldnn": torch.backends.mkldnn.is_available(),
            "intra_op_threads": torch.get_num_threads(),
            "intel_extension_for_pytorch": _ipex.version(),
        }

    def prepare(self, point: PointConfig, platform: Platform) -> Session:
        return TorchSession(point, platform, ranks.current())

    def count_parameters(self, spec: WorkloadSpec, point: PointConfig) -> int:
        import torch

        with torch.device("meta"):  # shapes only: no memory, no initialisation cost
            model = TorchWorkload.load(spec).build_model(spec, point)
        return sum(p.numel() for p in model.parameters() if p.requires_grad)

    def is_out_of_memory(self, error: BaseException) -> bool:
        import torch

        if isinstance(error, torch.OutOfMemoryError | MemoryError):
            return True
        return isinstance(error, RuntimeError) and any(m in str(error) for m in _OOM_MESSAGES)


FRAMEWORK = TorchFramework()
