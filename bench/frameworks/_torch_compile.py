"""torch.compile for bench's PyTorch session: which backend and mode a --compile value
names, and whether the compiled steps replay CUDA graphs."""

from __future__ import annotations

from typing import Any

from bench.util.errors import UsageError

# torch.compile's modes, named after the backend (--compile inductor:reduce-overhead).
# reduce-overhead and max-autotune replay the compiled forward and backward as CUDA graphs
# on a GPU (one launch instead of hundreds); max-autotune also times kernel choices.
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
_CUDA_GRAPH_MODES = ("reduce-overhead", "max-autotune")


def check_compile(compile: str | None) -> None:
    """A backend alone (any name torch.compile knows), or inductor with one of its modes."""
    if compile is None or ":" not in compile:
        return
    backend, _, mode = compile.partition(":")
    if backend != "inductor" or mode not in COMPILE_MODES:
        modes = ", ".join(f"inductor:{mode}" for mode in COMPILE_MODES)
        raise UsageError(
            f"compile: {compile!r} is not allowed; a backend alone (inductor) or one of {modes}"
        )


def compile_arguments(compile: str) -> tuple[str, str | None]:
    """torch.compile's backend and mode for a --compile value: 'BACKEND' or
    'inductor:MODE' (checked by check_compile); None: torch's default."""
    backend, _, mode = compile.partition(":")
    return backend, mode or None


def uses_cuda_graphs(compile: str | None) -> bool:
    return compile is not None and compile.partition(":")[2] in _CUDA_GRAPH_MODES


def apply_compile(model: Any, compile: str | None) -> Any:
    """The model torch.compile'd as --compile says, or the model itself."""
    if not compile:
        return model
    import torch

    backend, mode = compile_arguments(compile)
    return torch.compile(model, backend=backend, mode=mode)
