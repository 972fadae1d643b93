"""The attention kernel of the decoders' torch models (--attention): PyTorch's
scaled_dot_product_attention, left to choose its backend ("auto") or held to one
(torch.nn.attention.sdpa_kernel). Which kernels a device has is its platform's answer
(Platform.torch_attention_kernels), asked in the parent before any point runs; a
kernel the device lacks for this shape or precision (flash in fp32 on a GPU) fails in
the child, in one line, as PyTorch says it."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

# --attention's names (bench.config.options.ATTENTION_KERNELS but "auto") -> the backend.
BACKENDS = {
    "flash": SDPBackend.FLASH_ATTENTION,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
    "cudnn": SDPBackend.CUDNN_ATTENTION,
    "math": SDPBackend.MATH,
}


def attend(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, kernel: str = "auto",
    dropout_p: float = 0.0,
) -> torch.Tensor:  # fmt: skip
    """Causal attention of (batch, heads, length, head_dim) queries, keys and values
    through `kernel`; its backward runs the same kernel's."""
    if kernel == "auto":
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, is_causal=True)
    with sdpa_kernel(BACKENDS[kernel]):
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, is_causal=True)
