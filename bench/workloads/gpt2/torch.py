"""GPT-2 (pre-LN decoder, tied embeddings), initialised locally. Attention is PyTorch's
scaled_dot_product_attention with is_causal=True, so a fused kernel (flash or
memory-efficient) runs where the hardware has one (or the one --attention names:
bench.workloads._attention), and attention memory stays linear in the sequence length.
The model computes its own loss from its last hidden states (bench.workloads._loss:
--loss chunked, a vocabulary padded by --pad-vocab)."""

import torch
from torch import nn

from bench.workloads import _loss
from bench.workloads._attention import attend
from bench.workloads._torch import (
    adamw,
    next_token_batch,
    next_token_loss,
    next_token_pairs,
    normal_init,
)
from bench.workloads.gpt2 import CONTEXT, DROPOUT, SIZES, Size


class Block(nn.Module):
    def __init__(self, size: Size, attention: str = "auto") -> None:
        super().__init__()
        self.heads, self.kernel = size.heads, attention
        self.attention_norm = nn.LayerNorm(size.hidden)
        self.qkv = nn.Linear(size.hidden, 3 * size.hidden)
        self.attention_out = nn.Linear(size.hidden, size.hidden)
        self.mlp_norm = nn.LayerNorm(size.hidden)
        self.mlp = nn.Sequential(
            nn.Linear(size.hidden, 4 * size.hidden),
            nn.GELU(approximate="tanh"),
            nn.Linear(4 * size.hidden, size.hidden),
            nn.Dropout(DROPOUT),
        )
        self.dropout = nn.Dropout(DROPOUT)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, hidden = x.shape
        q, k, v = (
            t.view(batch, length, self.heads, hidden // self.heads).transpose(1, 2)
            for t in self.qkv(self.attention_norm(x)).split(hidden, dim=2)
        )
        dropout = DROPOUT if self.training else 0.0
        attended = attend(q, k, v, self.kernel, dropout_p=dropout)
        attended = attended.transpose(1, 2).reshape(batch, length, hidden)
        x = x + self.dropout(self.attention_out(attended))
        return x + self.mlp(self.mlp_norm(x))


class GPT2(nn.Module):
    def __init__(
        self, vocab: int, size: Size, attention: str = "auto", chunked_loss: bool = False,
        pad_vocab: int = 0,
    ) -> None:  # fmt: skip
        super().__init__()
        # The embedding (and the tied output layer) padded to a multiple of pad_vocab
        # rows; only the first `vocab` are ever a token or a logit.
        self.vocab, self.chunked_loss = vocab, chunked_loss
        self.words = nn.Embedding(_loss.padded(vocab, pad_vocab), size.hidden)
        self.positions = nn.Embedding(CONTEXT, size.hidden)
        self.dropout = nn.Dropout(DROPOUT)
        # `layers`: where FSDP2 and activation checkpointing find the blocks.
        self.layers = nn.ModuleList(Block(size, attention) for _ in range(size.layers))
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

    @property
    def padding_parameters(self) -> int:
        """Parameters of the padded rows, which no token reaches (not counted)."""
        return (self.words.num_embeddings - self.vocab) * self.words.embedding_dim

    def forward(self, tokens: torch.Tensor, targets: torch.Tensor | None = None) -> torch.Tensor:
        """The logits of the real vocabulary; given targets, the mean next-token loss."""
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.dropout(self.words(tokens) + self.positions(positions))
        for block in self.layers:
            x = block(x)
        x = self.norm(x)  # the output layer is the embedding (tied)
        if targets is None:
            return _loss.logits(x, self.words.weight, self.vocab)
        return _loss.next_token_loss(x, self.words.weight, targets, self.vocab, self.chunked_loss)


def build_model(spec, point) -> nn.Module:
    return GPT2(spec.num_classes, SIZES[spec.name], point.attention,
                point.cross_entropy == "chunked", point.pad_vocab)  # fmt: skip


make_batch = next_token_batch  # random tokens; each position's target is the next one
token_batch = next_token_pairs  # windows of a token file (--data tokens:PATH), alike
loss = next_token_loss  # of the logits model(inputs) returns; training calls train_loss


def train_loss(model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The model's own next-token loss (plain or chunked, over the real vocabulary)."""
    return model(inputs, targets)


optimizer = adamw  # AdamW as torchtitan and nanoGPT train decoders (fused where it can)
