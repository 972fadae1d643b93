from typing import NamedTuple

from bench.workloads.base import WorkloadSpec


class Size(NamedTuple):
    hidden: int
    layers: int
    heads: int


# GPT-2's small (124 M parameters) and medium (355 M) sizes (Radford et al. 2019).
SIZES = {"gpt2": Size(768, 12, 12), "gpt2-medium": Size(1024, 24, 16)}
CONTEXT = 1024  # learned positions: the longest sequence

WORKLOADS = tuple(
    WorkloadSpec(
        name=name,
        description=(
            f"GPT-2 {'small' if name == 'gpt2' else 'medium'} decoder ({size.layers} layers, "
            f"hidden {size.hidden}) trained on next tokens; fused causal attention"
        ),
        task="causal-lm",
        num_classes=50_257,  # GPT-2's byte-level BPE vocabulary
        default_batch_size=8 if name == "gpt2" else 4,
        epoch_samples=100_000,
        dataset="random token sequences",
        default_seq_len=1024,
        max_seq_len=CONTEXT,
    )
    for name, size in SIZES.items()
)
