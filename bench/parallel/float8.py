"""Float8 training applied to a plain model (torchao's convert_to_float8_training), as
torchtitan does before it shards: every nn.Linear but the output layer becomes a
Float8Linear, whose matmuls run in float8 (e4m3 in the forward, e5m2 for gradients)
with tensor-wise dynamic scales; everything else runs in bf16 (FSDP2's parameter
dtype, or autocast on one device). Needs a GPU with float8 tensor cores (compute
capability 8.9: Ada, Hopper, Blackwell) and torchao (pip install 'bench[float8]').
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torch import nn

NAME = "float8"
# The output layer stays in bf16 (torchtitan's default: a vocabulary-wide projection
# loses the most precision in float8).
KEPT = ("output",)


def apply_float8(model: nn.Module) -> dict[str, Any]:
    """Swap the model's linear layers in place; what was applied, for the point's details."""
    from importlib.metadata import version

    import torch
    from torchao.float8 import Float8LinearConfig, convert_to_float8_training

    def converted(module: nn.Module, name: str) -> bool:
        return isinstance(module, torch.nn.Linear) and name.rpartition(".")[2] not in KEPT

    chosen = [name for name, module in model.named_modules() if converted(module, name)]
    convert_to_float8_training(model, config=Float8LinearConfig(), module_filter_fn=converted)
    return {
        "kind": NAME,
        "linears": len(chosen),
        "kept_in_bf16": list(KEPT),
        "recipe": "tensorwise dynamic scaling: e4m3 forward, e5m2 gradients",
        "torchao": version("torchao"),
    }
