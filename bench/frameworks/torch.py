"""PyTorch: eager or torch.compile, autocast for fp16/bf16, TF32 only when asked; under
torchrun, DistributedDataParallel over the ranks (each its own device and data), or
FSDP2 for workloads that declare it (bench.parallel.fsdp: sharded parameters, its own
mixed precision)."""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from bench import datasets, ranks, registry
from bench.datasets import pipeline, tokens
from bench.errors import BenchError, UsageError
from bench.frameworks import _ipex
from bench.frameworks.base import Framework, Session
from bench.trackers.timing import EventTimer, RankTimer, StepTimer

if TYPE_CHECKING:
    import torch

    from bench.config import PointConfig
    from bench.platforms.base import Platform
    from bench.workloads.base import WorkloadSpec

_OOM_MESSAGES = ("out of memory", "can't allocate memory", "cannot allocate memory")

# torch.compile's modes, named after the backend (--compile inductor:reduce-overhead).
# reduce-overhead and max-autotune replay the compiled forward and backward as CUDA graphs
# on a GPU (one launch instead of hundreds); max-autotune also times kernel choices.
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
_CUDA_GRAPH_MODES = ("reduce-overhead", "max-autotune")
# --optimize fused: bench's SGD with momentum through torch's fused kernel (one kernel for
# every parameter's update) where this torch has one for the device, else foreach.
FUSED = "fused"


def compile_arguments(compile: str) -> tuple[str, str | None]:
    """torch.compile's backend and mode for a --compile value: 'BACKEND' or
    'inductor:MODE' (checked by TorchFramework.check_compile); None: torch's default."""
    backend, _, mode = compile.partition(":")
    return backend, mode or None


def uses_cuda_graphs(compile: str | None) -> bool:
    return compile is not None and compile.partition(":")[2] in _CUDA_GRAPH_MODES


def _set_tf32(enabled: bool) -> None:
    """TF32 for float32 matmuls and convolutions exactly when precision is tf32.

    PyTorch's default leaves cuDNN convolutions on TF32, which would make an 'fp32'
    ResNet quietly a TF32 one.
    """
    import torch

    mode = "tf32" if enabled else "ieee"
    backends: Any = torch.backends  # the fp32_precision attributes are not in torch's stubs
    if hasattr(backends.cuda.matmul, "fp32_precision"):  # PyTorch >= 2.9
        backends.cuda.matmul.fp32_precision = mode
        backends.cudnn.conv.fp32_precision = mode
        backends.cudnn.rnn.fp32_precision = mode
    else:
        backends.cuda.matmul.allow_tf32 = enabled
        backends.cudnn.allow_tf32 = enabled


class _SyntheticSamples:
    """Sample i of a fixed random dataset, made on the host (for --data loader)."""

    def __init__(self, impl: Any, point: PointConfig, length: int, offset: int = 0) -> None:
        self.impl, self.point, self.length, self.offset = impl, point, length, offset

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int):
        import torch

        sample = self.offset + index  # each rank its own samples
        generator = torch.Generator().manual_seed(self.point.seed * 1_000_003 + sample)
        batch = self.impl.make_batch(self.point.spec, self.point, 1, generator)
        return _tree_map(lambda tensor: tensor[0], batch)


class _SplitSamples:
    """A dataset split as a map-style dataset: CHW tensors, augmented as epoch `epoch`
    of the shared order (bench.datasets.pipeline)."""

    def __init__(self, split: datasets.Split, seed: int, epoch: int, train: bool) -> None:
        self.split, self.seed, self.epoch, self.train = split, seed, epoch, train

    def __len__(self) -> int:
        return len(self.split)

    def __getitem__(self, index: int):
        import numpy as np
        import torch

        rng = pipeline.sample_rng(self.seed, self.epoch, index) if self.train else None
        image, label = self.split.sample(index, rng)
        return torch.from_numpy(np.ascontiguousarray(image.transpose(2, 0, 1))), label


def _tree_map(function: Callable[[Any], Any], batch: Any) -> Any:
    """`function` on every tensor of a batch: a tensor, or tuples, lists and dicts of them
    (detection targets are a dict of boxes, labels and masks)."""
    if isinstance(batch, tuple | list):
        return type(batch)(_tree_map(function, item) for item in batch)
    if isinstance(batch, dict):
        return {key: _tree_map(function, item) for key, item in batch.items()}
    return function(batch)


def _describe(optimizer: Any) -> str:
    """'SGD(lr=0.01, momentum=0.9)': the optimiser and its settings that are not zero,
    with the implementation asked for ('fused=True', 'foreach=True') where one was."""
    settings = ", ".join(
        f"{name}={optimizer.defaults[name]}"
        for name in ("lr", "momentum", "betas", "weight_decay", "fused", "foreach")
        if optimizer.defaults.get(name)
    )
    return f"{type(optimizer).__name__}({settings})"


def _sgd_kernel(point: PointConfig, model: Any) -> dict[str, bool]:
    """SGD's implementation: fused with --optimize fused where this torch has the kernel
    for every parameter's device (else torch's default, foreach on a GPU)."""
    if point.optimize != FUSED:
        return {}
    from bench.workloads._torch import fused_devices

    devices = fused_devices()
    return {"fused": all(p.device.type in devices for p in model.parameters())}


def _model_loss(impl: Any) -> Callable[[Any, Any, Any], Any]:
    """The training loss of a workload: its own `train_loss(model, inputs, targets)` when
    the model computes its losses (detection, GANs), else `loss(model(inputs), targets)`."""
    if hasattr(impl, "train_loss"):
        return impl.train_loss
    return lambda model, inputs, targets: impl.loss(model(inputs), targets)


class TorchSession(Session):
    def __init__(
        self, point: PointConfig, platform: Platform, rank: ranks.Rank | None = None
    ) -> None:
        import torch

        self.point, self.platform, self.rank = point, platform, rank
        self.impl = point.spec.implementation("torch")
        self.train_loss = _model_loss(self.impl)
        # Each rank trains its share of the GLOBAL batch, on its own data.
        self.devices = rank.world_size if rank else 1
        self.batch_size = point.batch_size // self.devices
        if rank is not None:
            import torch.distributed as dist

            dist.init_process_group(platform.distributed_backend)
        if point.threads:
            torch.set_num_threads(point.threads)
        elif rank is not None and self.platform.torch_device == "cpu":
            # torchrun sets OMP_NUM_THREADS=1; a CPU rank uses the cores it was given.
            torch.set_num_threads(len(os.sched_getaffinity(0)))
        torch.manual_seed(point.seed)  # the same weights on every rank (DDP checks)
        _set_tf32(point.precision == "tf32")
        self.device = torch.device(platform.torch_device)
        if self.device.type == "cuda":  # the rank's GPU (bind_rank set it), or GPU 0
            self.device = torch.device("cuda", torch.cuda.current_device())
        if rank is not None and rank.world_size > 1:
            self._prove(rank)  # before any model, parameter broadcast or DDP/FSDP set-up
        self.channels_last = point.memory_format == "channels_last"
        # Fixed shapes: let cuDNN (MIOpen on ROCm) time its algorithms once, in warm-up,
        # and keep the fastest, as every published GPU training benchmark does.
        self.cudnn_benchmark = self.device.type == "cuda"
        torch.backends.cudnn.benchmark = self.cudnn_benchmark

        if _ipex.used_by(point.optimize, point.compile):
            _ipex.register_backend()  # imported right after torch, as IPEX asks

        # fp8: the linear layers in float8, everything else in bf16 (bench.parallel.float8).
        self.amp_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp8": torch.bfloat16}.get(
            point.precision
        )
        self.float8: dict[str, Any] | None = None
        # Over ranks, a workload that declares it (LLMs) is sharded with FSDP2: built on
        # the meta device, sharded, then each rank allocates and fills only its shards.
        # Its bf16/fp16 is FSDP2's mixed-precision policy, never autocast.
        # Activation checkpointing wraps the blocks before FSDP2 shards them.
        self.sharding: dict[str, Any] | None = None
        if rank is not None and point.spec.sharding == "fsdp":
            from bench.parallel import fsdp

            with torch.device("meta"):
                model = self._checkpointed(self.impl.build_model(point.spec, point))
            self.sharding = fsdp.apply_fsdp(
                model, rank.world_size, self.device.type,
                param_dtype=self.amp_dtype, reduce_dtype=torch.float32,
            )  # fmt: skip
            fsdp.materialize(model, self.device)
            self.amp_dtype = None
        elif point.spec.sharding == "fsdp":
            # One process: built on the meta device and filled where it trains (a 1B
            # decoder's initialisation on the host took 20 s before its first step).
            from bench.parallel import fsdp

            with torch.device("meta"):
                model = self._checkpointed(self.impl.build_model(point.spec, point))
            fsdp.materialize(model, self.device)
        else:
            model = self._checkpointed(self.impl.build_model(point.spec, point))
            model = model.to(self.device)
        if self.channels_last:
            model = model.to(memory_format=torch.channels_last)
        self.parameters = sum(p.numel() for p in model.parameters() if p.requires_grad)
        # SGD with momentum, unless the workload trains with its own (GANs: Adam; decoders:
        # AdamW); on a dataset, its recipe (bench.datasets.recipe) with its schedule.
        make_optimizer = getattr(self.impl, "optimizer", None)
        self.training = datasets.training(point) if point.dataset else None
        if self.training is not None:
            recipe = self.training.recipe
            self.optimizer = torch.optim.SGD(
                model.parameters(), lr=recipe.peak_lr(point.batch_size),
                momentum=recipe.momentum, nesterov=recipe.nesterov,
                weight_decay=recipe.weight_decay, **_sgd_kernel(point, model),
            )  # fmt: skip
            smoothing = recipe.label_smoothing
            self.train_loss = lambda model, x, y: torch.nn.functional.cross_entropy(
                model(x), y, label_smoothing=smoothing
            )
        elif make_optimizer:
            self.optimizer = make_optimizer(model.parameters())
        else:
            self.optimizer = torch.optim.SGD(
                model.parameters(), lr=0.01, momentum=0.9, **_sgd_kernel(point, model)
            )
        ipex_applied = None
        if point.optimize == _ipex.NAME:  # on the bare model, before DDP wraps it
            model, self.optimizer, ipex_applied = _ipex.optimize(
                model, self.optimizer, self.amp_dtype or torch.float32, bool(point.compile)
            )
        self.eager_model = model
        self.schedule = None
        if self.training is not None:
            self.schedule = torch.optim.lr_scheduler.LambdaLR(
                self.optimizer, self.training.lr_factor
            )
        if rank is not None and self.sharding is None:
            device_ids = [self.device.index] if self.device.type == "cuda" else None
            model = torch.nn.parallel.DistributedDataParallel(model, device_ids=device_ids)
        # fp16 gradients underflow without loss scaling; bf16 has fp32's range.
        self.scaler = torch.amp.GradScaler(self.device.type) if point.precision == "fp16" else None
        self.model = model
        if point.compile:
            backend, mode = compile_arguments(point.compile)
            self.model = torch.compile(model, backend=backend, mode=mode)
        # CUDA graphs replay into the same output buffers: each step begins a new replay,
        # and a step's loss is copied out before the next one overwrites it.
        self.cuda_graphs = uses_cuda_graphs(point.compile) and self.device.type == "cuda"
        self.token_file: tokens.TokenFile | None = None
        if point.tokens is not None:  # checked whole in the parent; each batch again here
            self.token_file = tokens.for_point(point)
        self.batches = self._batches()
        self.details = {
            "threads": torch.get_num_threads(),
            "optimizer": _describe(self.optimizer),
            "grad_scaler": self.scaler is not None,
            "autocast_dtype": str(self.amp_dtype) if self.amp_dtype else None,
            "cudnn_benchmark": self.cudnn_benchmark,
        }
        if self.token_file is not None:  # hashed once, by rank 0 (or the one process)
            self.details["dataset"] = self.token_file.describe(hashed=not rank or rank.rank == 0)
        if point.activation_checkpointing != "none":
            self.details["activation_checkpointing"] = {
                "mode": point.activation_checkpointing, "blocks": self.checkpointed_blocks,
            }  # fmt: skip
        if ipex_applied is not None:
            self.details["ipex_optimize"] = ipex_applied
        if self.float8 is not None:
            self.details["float8"] = self.float8
        self.details["sharding"] = self.sharding["kind"] if self.sharding else None
        if rank is not None:
            self.details["data_parallel"] = {
                "kind": "FSDP2" if self.sharding else "DistributedDataParallel",
                "backend": platform.distributed_backend,
                "world_size": rank.world_size,
                "nodes": point.nnodes,
                "per_rank_batch": self.batch_size,
                "launcher": "torchrun",
            }
            if self.sharding:
                self.details["data_parallel"]["fsdp"] = self.sharding

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

        return _tree_map(move, batch)

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
            _SyntheticSamples(self.impl, point, length, offset),  # type: ignore[arg-type]
            batch_size=self.batch_size,
            num_workers=point.num_workers,
            pin_memory=self.device.type == "cuda",
            drop_last=True,
            persistent_workers=point.num_workers > 0,
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

        make = getattr(self.impl, "token_batch", None)
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
        import torch

        plan = self.training
        rank, ranks = (self.rank.rank, self.rank.world_size) if self.rank else (0, 1)
        loader: Any = torch.utils.data.DataLoader(
            _SplitSamples(split, plan.seed, epoch, train),  # type: ignore[arg-type]
            batch_sampler=[c.tolist() for c in pipeline.indices(
                split, self.point.batch_size, plan.seed, epoch, train, rank, ranks)],
            num_workers=plan.workers,
            pin_memory=self.device.type == "cuda",
        )  # fmt: skip
        try:
            for inputs, targets in loader:
                yield self._to_device(inputs), self._to_device(targets)
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

    def _prove(self, rank: ranks.Rank) -> None:
        """Every rank proves it knows the point's secret (bench.ranks.authenticate), in
        messages of ranks.PROOF_BYTES each: an unproven peer can make no rank allocate
        more than world size times that."""
        secret = ranks.held()
        if secret is None:
            raise BenchError("a rank of several needs the point's secret to prove it belongs")

        def exchange(mine: dict[str, Any]) -> list[dict[str, Any]]:
            return self._exchange_proof(mine, rank.world_size)

        ranks.authenticate(exchange, secret.value, rank, ranks.Group.from_env(), secret.name)

    def _exchange_proof(self, mine: dict[str, Any], world_size: int) -> list[dict[str, Any]]:
        """One round of the proof: every rank's message, fixed in size (never announced)."""
        import torch
        import torch.distributed as dist

        data = bytearray(ranks.encode_proof(mine))
        sent = torch.frombuffer(data, dtype=torch.uint8).to(self.device)
        received = [torch.zeros_like(sent) for _ in range(world_size)]
        try:
            dist.all_gather(received, sent)
        except RuntimeError as error:  # a peer that left, or sent more than PROOF_BYTES
            first = (str(error).strip().splitlines() or [""])[0][:200]
            raise BenchError(
                f"the ranks' proof of this run's secret broke off ({first}): stopped"
            ) from None
        return [ranks.decode_proof(t.cpu().numpy().tobytes()) for t in received]

    def gather(self, mine: dict[str, Any]) -> list[dict[str, Any]]:
        """Every rank's `mine` as JSON in a uint8 tensor, never a pickle (a peer's pickle
        runs its code here): the lengths first, checked against a bound before anything
        that large is allocated, then the bytes padded to the longest, then each
        decoded as a JSON object or refused in one line (bench.ranks)."""
        if self.rank is None:
            return [mine]
        import torch
        import torch.distributed as dist

        data = ranks.encode_share(mine)
        # On the backend's device, as in evaluate(): gloo's CPU, NCCL's GPU.
        length = torch.tensor([len(data)], dtype=torch.int64, device=self.device)
        lengths = [torch.zeros_like(length) for _ in range(self.rank.world_size)]
        dist.all_gather(lengths, length)
        sizes = [int(n) for n in lengths]
        ranks.check_share_sizes(sizes)
        padded = torch.zeros(max(sizes), dtype=torch.uint8)
        padded[: len(data)] = torch.frombuffer(bytearray(data), dtype=torch.uint8)
        padded = padded.to(self.device)
        received = [torch.empty_like(padded) for _ in sizes]
        dist.all_gather(received, padded)
        return [
            ranks.decode_share(r, tensor[:size].cpu().numpy().tobytes())
            for r, (tensor, size) in enumerate(zip(received, sizes, strict=True))
        ]

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
        if self.device.type != "cuda":  # CUDA and ROCm (HIP) have timing events
            if self.rank is not None:  # ranks meet at the window's ends, not every step
                return RankTimer(self.synchronize, self.platform.synchronize, clock)
            return super().timer(clock)
        import torch

        return EventTimer(self.synchronize, lambda: torch.cuda.Event(enable_timing=True), clock)

    def count_flops(self) -> float | None:
        """Forward + backward FLOPs per sample, counted by PyTorch's FlopCounterMode.

        It counts matmuls, convolutions and attention (2 FLOPs per multiply-add), not
        elementwise work: the usual 'model FLOPs'. Counted on the eager model, before
        warm-up, at the workload's smallest batch: where only one sample fits on the
        device, the count still runs (2 where batch norm needs two values per channel).
        """
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

    def check_platform(
        self,
        platform: Platform,
        compilers: tuple[str | None, ...],
        optimizations: tuple[str | None, ...],
    ) -> None:
        _ipex.check_platform(platform, (*compilers, *optimizations))

    def check_compile(self, compile: str | None) -> None:
        if compile is None or ":" not in compile:
            return
        backend, _, mode = compile.partition(":")
        if backend != "inductor" or mode not in COMPILE_MODES:
            modes = ", ".join(f"inductor:{mode}" for mode in COMPILE_MODES)
            raise UsageError(
                f"compile: {compile!r} is not allowed; a backend alone (inductor) or one of {modes}"
            )

    def preflight(self, points: Iterable[PointConfig]) -> None:
        points = list(points)
        _ipex.check(tuple(p.optimize for p in points), tuple(p.compile for p in points))
        if any(p.precision == "fp8" for p in points):
            registry.require("--precision fp8 (float8 training)", "torchao")

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
            model = spec.implementation("torch").build_model(spec, point)
        return sum(p.numel() for p in model.parameters() if p.requires_grad)

    def is_out_of_memory(self, error: BaseException) -> bool:
        import torch

        if isinstance(error, torch.OutOfMemoryError | MemoryError):
            return True
        return isinstance(error, RuntimeError) and any(m in str(error) for m in _OOM_MESSAGES)


FRAMEWORK = TorchFramework()
