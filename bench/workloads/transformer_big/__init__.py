"""transformer-big: the workload's spec (bench.workloads.base.WorkloadSpec); a module beside
this one builds the model in each framework that runs it."""

from bench.workloads.base import Task, WorkloadSpec

WORKLOADS = (
    WorkloadSpec(
        name="transformer-big",
        description=(
            "Transformer (big) for translation: 6+6 layers, d_model 1024, 16 heads, shared "
            "37k vocabulary, label-smoothed loss (WMT English-German-sized)"
        ),
        task=Task.TRANSLATION,
        parameter_count=214_249_472,  # the paper's 213 M, a 37k shared vocabulary
        num_classes=37_000,  # the paper's shared English-German BPE vocabulary, about 37,000
        default_batch_size=32,
        epoch_samples=4_500_000,  # WMT 2014 English-German sentence pairs
        dataset="random source and target token sequences",
        default_seq_len=128,  # source and target length, each
        max_seq_len=1024,
    ),
)

# "Attention Is All You Need" (Vaswani et al. 2017), table 3, the big model.
D_MODEL, FFN, HEADS, LAYERS, DROPOUT, LABEL_SMOOTHING = 1024, 4096, 16, 6, 0.3, 0.1
PAD = 0  # the padding token id
