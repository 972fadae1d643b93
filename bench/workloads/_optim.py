"""What decoders (gpt2, llama3) train with in every framework: AdamW as torchtitan and
nanoGPT train them, decoupled weight decay on every parameter (torchtitan's way;
nanoGPT spares biases and norms). _torch, _flax and _keras build it from these numbers,
so that the same workload does the same work whichever framework runs it."""

LR = 3e-4
BETAS = (0.9, 0.95)
EPS = 1e-8
WEIGHT_DECAY = 0.1


def label(**implementation: object) -> str:
    """How it reads in a result, as PyTorch's are described (bench.frameworks.torch):
    'AdamW(lr=0.0003, betas=(0.9, 0.95), weight_decay=0.1)', then the implementation."""
    settings = {"lr": LR, "betas": BETAS, "weight_decay": WEIGHT_DECAY}
    return "AdamW(" + ", ".join(f"{k}={v}" for k, v in {**settings, **implementation}.items()) + ")"
