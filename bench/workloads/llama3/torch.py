"""The Llama 3 decoder in plain PyTorch: RMSNorm, rotary position embeddings (theta
500,000), grouped-query attention through scaled_dot_product_attention(is_causal=True)
(flash or memory-efficient kernels where the GPU has them), SwiGLU feed-forward, no
biases. Initialised locally (nothing is downloaded). --attention holds attention to one
kernel (bench.workloads._attention); the model computes its own loss from its last
hidden states (bench.workloads._loss: --loss chunked, a vocabulary padded by --pad-vocab).

The model knows nothing of how it is sharded: bench.parallel applies FSDP2 to it from
outside, after building it on the meta device; init_weights() then fills the weights
on the rank's device (also the rotary table, a buffer that is not a parameter).
"""

import math
from typing import Protocol

import torch
import torch.nn.functional as F
from torch import nn

from bench.workloads import _loss
from bench.workloads._attention import attend
from bench.workloads._torch import adamw, next_token_batch, next_token_loss, next_token_pairs
from bench.workloads.llama3 import SIZES, Size


class Rotary(Protocol):
    """What a rotary table is made from (a Llama's Size, a mixture of experts' Size)."""

    @property
    def head_dim(self) -> int: ...
    @property
    def rope_theta(self) -> float: ...
    @property
    def max_seq_len(self) -> int: ...


def rotary_table(size: Rotary, device: torch.device | None = None) -> torch.Tensor:
    """cos and sin of each position's angle per frequency pair: (max_seq_len, 2, head_dim/2),
    so that each position's cos (and sin) is contiguous: rotate reads them with stride 1."""
    half = size.head_dim // 2
    frequencies = size.rope_theta ** (
        -torch.arange(half, device=device, dtype=torch.float32) / half
    )
    angles = torch.outer(torch.arange(size.max_seq_len, device=device, dtype=torch.float32),
                         frequencies)  # fmt: skip
    return torch.stack((angles.cos(), angles.sin()), dim=-2)


def rotate(x: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """Rotary embedding of (batch, length, heads, head_dim), dimension pairs (2i, 2i+1)
    rotated by position x frequency i (Meta's interleaved layout), in float32."""
    pairs = x.float().unflatten(-1, (-1, 2))
    cos, sin = table[: x.shape[1], None, 0], table[: x.shape[1], None, 1]
    even, odd = pairs[..., 0], pairs[..., 1]
    rotated = torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1)
    return rotated.flatten(-2).type_as(x)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        normed = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
        return normed.type_as(x) * self.weight


class Attention(nn.Module):
    def __init__(self, size: Size, kernel: str = "auto") -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = size.heads, size.kv_heads, size.head_dim
        self.kernel = kernel
        self.wq = nn.Linear(size.dim, size.heads * size.head_dim, bias=False)
        self.wk = nn.Linear(size.dim, size.kv_heads * size.head_dim, bias=False)
        self.wv = nn.Linear(size.dim, size.kv_heads * size.head_dim, bias=False)
        self.wo = nn.Linear(size.heads * size.head_dim, size.dim, bias=False)

    def forward(self, x: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        batch, length, _ = x.shape
        q = rotate(self.wq(x).view(batch, length, self.heads, self.head_dim), table)
        k = rotate(self.wk(x).view(batch, length, self.kv_heads, self.head_dim), table)
        v = self.wv(x).view(batch, length, self.kv_heads, self.head_dim)
        # Each K/V head serves heads / kv_heads query heads.
        repeat = self.heads // self.kv_heads
        k, v = (t.repeat_interleave(repeat, dim=2) for t in (k, v))
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        attended = attend(q, k, v, self.kernel)
        return self.wo(attended.transpose(1, 2).reshape(batch, length, -1))


class FeedForward(nn.Module):
    """SwiGLU: w2(silu(w1 x) * w3 x)."""

    def __init__(self, size: Size) -> None:
        super().__init__()
        self.w1 = nn.Linear(size.dim, size.ffn, bias=False)
        self.w2 = nn.Linear(size.ffn, size.dim, bias=False)
        self.w3 = nn.Linear(size.dim, size.ffn, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, size: Size, attention: str = "auto") -> None:
        super().__init__()
        self.attention_norm = RMSNorm(size.dim, size.norm_eps)
        self.attention = Attention(size, attention)
        self.ffn_norm = RMSNorm(size.dim, size.norm_eps)
        self.feed_forward = FeedForward(size)

    def forward(self, x: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.attention_norm(x), table)
        return x + self.feed_forward(self.ffn_norm(x))


class Llama(nn.Module):
    rotary: torch.Tensor

    def __init__(
        self, size: Size, attention: str = "auto", chunked_loss: bool = False, pad_vocab: int = 0
    ) -> None:
        super().__init__()
        self.size, self.chunked_loss = size, chunked_loss
        # The embedding and output layer padded to a multiple of pad_vocab rows; only the
        # first size.vocab are ever a token or a logit.
        rows = _loss.padded(size.vocab, pad_vocab)
        self.embedding = nn.Embedding(rows, size.dim)
        # A ModuleDict, as torchtitan's: blocks keep their names when wrapped.
        self.layers = nn.ModuleDict({str(i): Block(size, attention) for i in range(size.layers)})
        self.norm = RMSNorm(size.dim, size.norm_eps)
        self.output = None if size.tied else nn.Linear(size.dim, rows, bias=False)
        self.register_buffer("rotary", rotary_table(size), persistent=False)
        self.init_weights()

    @torch.no_grad()
    def init_weights(self, device: torch.device | None = None) -> None:
        """Normal(0, 0.02) weights, output projections of each block scaled down by
        depth (as torchtitan and GPT-2); norms at one; the rotary table. Works on the
        meta device (shapes only) and on DTensor shards after FSDP2."""
        if self.rotary.device.type != "meta" or device is not None:
            self.rotary = rotary_table(self.size, device or self.rotary.device)
        depth_std = 0.02 / math.sqrt(2 * self.size.layers)
        for name, parameter in self.named_parameters():
            if name.endswith("norm.weight"):
                nn.init.ones_(parameter)
            elif name.endswith(("wo.weight", "w2.weight")):
                nn.init.normal_(parameter, std=depth_std)
            else:
                nn.init.normal_(parameter, std=0.02)

    @property
    def padding_parameters(self) -> int:
        """Parameters of the padded rows, which no token reaches (not counted)."""
        rows = (self.embedding.num_embeddings - self.size.vocab) * self.size.dim
        return rows * (1 if self.output is None else 2)

    def forward(self, tokens: torch.Tensor, targets: torch.Tensor | None = None) -> torch.Tensor:
        """The logits of the real vocabulary; given targets, the mean next-token loss."""
        x = self.embedding(tokens)
        for block in self.layers.values():
            x = block(x, self.rotary)
        x = self.norm(x)
        weight = self.embedding.weight if self.output is None else self.output.weight
        if targets is None:
            return _loss.logits(x, weight, self.size.vocab)
        return _loss.next_token_loss(x, weight, targets, self.size.vocab, self.chunked_loss)


def build_model(spec, point) -> nn.Module:
    return Llama(SIZES[spec.name], point.attention, point.cross_entropy == "chunked",
                 point.pad_vocab)  # fmt: skip


make_batch = next_token_batch  # random tokens; each position's target is the next one
token_batch = next_token_pairs  # windows of a token file (--data tokens:PATH), alike
loss = next_token_loss  # of the logits model(inputs) returns; training calls train_loss


def train_loss(model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The model's own next-token loss (plain or chunked, over the real vocabulary)."""
    return model(inputs, targets)


optimizer = adamw  # AdamW as torchtitan and nanoGPT train decoders (fused where it can)
