"""The optimizer of bench's PyTorch session: SGD with momentum, unless the workload
trains with its own (GANs: Adam; decoders: AdamW); on a dataset, its recipe
(bench.datasets.recipe) with its schedule and loss."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bench.config.run_config import PointConfig
    from bench.workloads.contract import TorchWorkload

# --optimize fused: bench's SGD with momentum through torch's fused kernel (one kernel for
# every parameter's update) where this torch has one for the device, else foreach.
FUSED = "fused"


def describe(optimizer: Any) -> str:
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


def optimizer_for(
    impl: TorchWorkload, point: PointConfig, model: Any, training: Any
) -> tuple[Any, Callable[[Any, Any, Any], Any] | None]:
    """(the optimizer, the recipe's training loss or None: the workload's own)."""
    import torch

    if training is not None:
        recipe = training.recipe
        optimizer = torch.optim.SGD(
            model.parameters(), lr=recipe.peak_lr(point.batch_size),
            momentum=recipe.momentum, nesterov=recipe.nesterov,
            weight_decay=recipe.weight_decay, **_sgd_kernel(point, model),
        )  # fmt: skip
        smoothing = recipe.label_smoothing

        def smoothed(model: Any, x: Any, y: Any) -> Any:
            return torch.nn.functional.cross_entropy(model(x), y, label_smoothing=smoothing)

        return optimizer, smoothed
    if impl.optimizer is not None:
        return impl.optimizer(model.parameters()), None
    sgd = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, **_sgd_kernel(point, model))
    return sgd, None


def schedule_for(optimizer: Any, training: Any) -> Any:
    """The recipe's learning-rate schedule, stepped once a step; None off a dataset."""
    if training is None:
        return None
    import torch

    return torch.optim.lr_scheduler.LambdaLR(optimizer, training.lr_factor)
