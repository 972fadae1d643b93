"""bert-base and bert-large: the workloads' specs (bench.workloads.base.WorkloadSpec); a
module beside this one builds the model in each framework that runs it."""

from typing import NamedTuple

from bench.workloads.base import Task, WorkloadSpec


class Size(NamedTuple):
    hidden: int
    layers: int
    heads: int
    ffn: int


# BERT's two published sizes (Devlin et al. 2019).
SIZES = {"bert-base": Size(768, 12, 12, 3072), "bert-large": Size(1024, 24, 16, 4096)}
# As counted: a masked-LM head tied to the embedding, no pooler.
PARAMETERS = {"bert-base": 109_514_298, "bert-large": 335_174_458}

WORKLOADS = tuple(
    WorkloadSpec(
        name=name,
        description=(
            f"BERT-{name.removeprefix('bert-')} encoder ({size.layers} layers, "
            f"hidden {size.hidden}, {size.heads} heads) trained on masked tokens"
        ),
        task=Task.MASKED_LM,
        parameter_count=PARAMETERS[name],
        num_classes=30_522,  # the vocabulary of BERT's uncased WordPiece tokenizer
        default_batch_size=16 if name == "bert-base" else 8,
        epoch_samples=100_000,
        dataset="random token sequences",
        default_seq_len=128,
        max_seq_len=512,
    )
    for name, size in SIZES.items()
)

MAX_POSITIONS = 512
MASK_TOKEN, MASK_FRACTION = 103, 0.15
