"""GPT-2 (pre-LN decoder, tied embeddings), initialised locally. Attention is PyTorch's
scaled_dot_product_attention with is_causal=True, so a fused kernel (flash or
memory-efficient) runs where the hardware has one, and attention memory stays linear
in the sequence length."""

import torch
import torch.nn.functional as F
from torch import nn

from bench.workloads._torch import (
    adamw,
    next_token_batch,
    next_token_loss,
    next_token_pairs,
    normal_init,
)
from bench.workloads.gpt2 import CONTEXT, SIZES, Size


class Block(nn.Module):
    def __init__(self, size: Size) -> None:
        super().__init__()
        self.heads = size.heads
        self.attention_norm = nn.LayerNorm(size.hidden)
        self.qkv = nn.Linear(size.hidden, 3 * size.hidden)
        self.attention_out = nn.Linear(size.hidden, size.hidden)
        self.mlp_norm = nn.LayerNorm(size.hidden)
        self.mlp = nn.Sequential(
            nn.Linear(size.hidden, 4 * size.hidden),
            nn.GELU(approximate="tanh"),
            nn.Linear(4 * size.hidden, size.hidden),
            nn.Dropout(0.1),
        )
        self.dropout = nn.Dropout(0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, hidden = x.shape
        q, k, v = (
            t.view(batch, length, self.heads, hidden // self.heads).transpose(1, 2)
            for t in self.qkv(self.attention_norm(x)).split(hidden, dim=2)
        )
        dropout = 0.1 if self.training else 0.0
        attended = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout, is_causal=True)
        attended = attended.transpose(1, 2).reshape(batch, length, hidden)
        x = x + self.dropout(self.attention_out(attended))
        return x + self.mlp(self.mlp_norm(x))


class GPT2(nn.Module):
    def __init__(self, vocab: int, size: Size) -> None:
        super().__init__()
        self.words = nn.Embedding(vocab, size.hidden)
        self.positions = nn.Embedding(CONTEXT, size.hidden)
        self.dropout = nn.Dropout(0.1)
        # `layers`: where FSDP2 and activation checkpointing find the blocks.
        self.layers = nn.ModuleList(Block(size) for _ in range(size.layers))
        self.norm = nn.LayerNorm(size.hidden)
        self.init_weights()

    def init_weights(self, device: torch.device | None = None) -> None:
        """GPT-2's initialisation: linear and embedding weights N(0, 0.02), biases zero,
        norms at one. Also after FSDP2 built the model on the meta device and gave each
        rank its shards (bench.parallel.fsdp.materialize)."""
        normal_init(self)
        for module in self.modules():
            if isinstance(module, nn.LayerNorm):
                module.reset_parameters()

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.dropout(self.words(tokens) + self.positions(positions))
        for block in self.layers:
            x = block(x)
        return self.norm(x) @ self.words.weight.T  # the output layer is the embedding (tied)


def build_model(spec, point) -> nn.Module:
    return GPT2(spec.num_classes, SIZES[spec.name])


make_batch = next_token_batch  # random tokens; each position's target is the next one
token_batch = next_token_pairs  # windows of a token file (--data tokens:PATH), alike
loss = next_token_loss
optimizer = adamw  # AdamW as torchtitan and nanoGPT train decoders (fused where it can)
