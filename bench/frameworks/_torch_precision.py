"""Precision in bench's PyTorch session: autocast's dtype, TF32 only when asked, and
loss scaling for fp16."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch


def autocast_dtype(precision: str) -> torch.dtype | None:
    """autocast's dtype for a precision; None: float32 throughout. fp8: the linear
    layers in float8 (bench.parallel.float8), everything else in bf16."""
    import torch

    return {"fp16": torch.float16, "bf16": torch.bfloat16, "fp8": torch.bfloat16}.get(precision)


def set_tf32(enabled: bool) -> None:
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


def grad_scaler(device: torch.device, precision: str) -> Any:
    """fp16 gradients underflow without loss scaling; bf16 has fp32's range."""
    import torch

    return torch.amp.GradScaler(device.type) if precision == "fp16" else None
