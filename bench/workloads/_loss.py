"""The decoders' next-token loss from their last hidden states (--loss, --pad-vocab).

plain: the output projection's logits of the whole batch, then cross-entropy in
float32: (tokens x vocabulary) float32 logits live at once, and their gradient beside
them (GPT-2 small at batch 8 x 1,024: 8,192 x 50,257 x 4 B = 1.65 GB each; Llama 3's
128,256 tokens: 4.2 GB each).
chunked: the same sum over chunks of CHUNK_TOKENS tokens, each chunk's projection and
cross-entropy checkpointed (torch.utils.checkpoint): its logits are dropped after its
forward and made again in the backward, so one chunk's float32 logits (8,192 x 50,257
-> 1,024 x 50,257: 206 MB) are the most held at once, for one more matmul per chunk.

A vocabulary padded to a multiple (--pad-vocab, nanoGPT's and llm.c's 50,257 -> 50,304)
keeps its matmul padded and its padded logits sliced off before the cross-entropy, so
no probability goes to a token that does not exist and the padded rows get no gradient.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

CHUNK_TOKENS = 1024  # tokens per chunk of the chunked loss


def padded(vocab: int, multiple: int) -> int:
    """The vocabulary rounded up to a multiple of `multiple` (0: unpadded)."""
    return vocab if multiple == 0 else -(-vocab // multiple) * multiple


def logits(hidden: torch.Tensor, weight: torch.Tensor, vocab: int) -> torch.Tensor:
    """The output projection's logits of the real vocabulary (padded rows sliced off)."""
    return (hidden @ weight.T)[..., :vocab]


def _summed(hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor,
            vocab: int) -> torch.Tensor:  # fmt: skip
    return F.cross_entropy(logits(hidden, weight, vocab).float(), targets, reduction="sum")


def next_token_loss(
    hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor, vocab: int,
    chunked: bool = False,
) -> torch.Tensor:  # fmt: skip
    """Mean cross-entropy of each position's next token, from (batch, length, dim)
    hidden states through the (padded vocabulary, dim) output weight."""
    hidden, targets = hidden.flatten(0, 1), targets.flatten()
    if not chunked:
        return F.cross_entropy(logits(hidden, weight, vocab).float(), targets)
    total = hidden.new_zeros((), dtype=torch.float32)
    for start in range(0, targets.numel(), CHUNK_TOKENS):
        end = start + CHUNK_TOKENS
        total = total + checkpoint(_summed, hidden[start:end], weight, targets[start:end],
                                   vocab, use_reentrant=False)  # fmt: skip
    return total / targets.numel()
