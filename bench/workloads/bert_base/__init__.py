from bench.workloads.base import WorkloadSpec

WORKLOADS = (
    WorkloadSpec(
        name="bert-base",
        description="BERT-base encoder (12 layers, hidden 768, 12 heads) trained on masked tokens",
        task="masked-lm",
        num_classes=30_522,  # the vocabulary of BERT's uncased WordPiece tokenizer
        default_batch_size=16,
        epoch_samples=100_000,
        dataset="random token sequences",
        default_seq_len=128,
        max_seq_len=512,
    ),
)

# Architecture, shared by every framework's implementation.
HIDDEN, LAYERS, HEADS, FFN, MAX_POSITIONS = 768, 12, 12, 3072, 512
MASK_TOKEN, MASK_FRACTION = 103, 0.15
