"""What the ranks of bench's PyTorch session send each other through torch.distributed:
the proof that each knows the point's secret, and every rank's JSON share of the result,
in uint8 tensors on the backend's device (gloo's CPU, NCCL's GPU), never a pickle."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bench.parallel import ranks
from bench.util.errors import BenchError

if TYPE_CHECKING:
    import torch


def prove(rank: ranks.Rank, device: torch.device) -> None:
    """Every rank proves it knows the point's secret (bench.parallel.ranks.authenticate), in
    messages of ranks.PROOF_BYTES each: an unproven peer can make no rank allocate
    more than world size times that."""
    secret = ranks.held()
    if secret is None:
        raise BenchError("a rank of several needs the point's secret to prove it belongs")

    def exchange(mine: dict[str, Any]) -> list[dict[str, Any]]:
        return _exchange_proof(mine, rank.world_size, device)

    ranks.authenticate(exchange, secret.value, rank, ranks.Group.from_env(), secret.name)


def _exchange_proof(
    mine: dict[str, Any], world_size: int, device: torch.device
) -> list[dict[str, Any]]:
    """One round of the proof: every rank's message, fixed in size (never announced)."""
    import torch
    import torch.distributed as dist

    data = bytearray(ranks.encode_proof(mine))
    sent = torch.frombuffer(data, dtype=torch.uint8).to(device)
    received = [torch.zeros_like(sent) for _ in range(world_size)]
    try:
        dist.all_gather(received, sent)
    except RuntimeError as error:  # a peer that left, or sent more than PROOF_BYTES
        first = (str(error).strip().splitlines() or [""])[0][:200]
        raise BenchError(
            f"the ranks' proof of this run's secret broke off ({first}): stopped"
        ) from None
    return [ranks.decode_proof(t.cpu().numpy().tobytes()) for t in received]


def gather(mine: ranks.RankShare, rank: ranks.Rank, device: torch.device) -> list[ranks.RankShare]:
    """Every rank's share as JSON in a uint8 tensor, never a pickle (a peer's pickle
    runs its code here): the lengths first, checked against a bound before anything
    that large is allocated, then the bytes padded to the longest, then each decoded
    as a JSON object and read as a RankShare, or refused in one line (bench.parallel.ranks)."""
    import torch
    import torch.distributed as dist

    data = ranks.encode_share(mine.to_json())
    length = torch.tensor([len(data)], dtype=torch.int64, device=device)
    lengths = [torch.zeros_like(length) for _ in range(rank.world_size)]
    dist.all_gather(lengths, length)
    sizes = [int(n) for n in lengths]
    ranks.check_share_sizes(sizes)
    padded = torch.zeros(max(sizes), dtype=torch.uint8)
    padded[: len(data)] = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    padded = padded.to(device)
    received = [torch.empty_like(padded) for _ in sizes]
    dist.all_gather(received, padded)
    return [
        ranks.RankShare.from_json(r, ranks.decode_share(r, tensor[:size].cpu().numpy().tobytes()))
        for r, (tensor, size) in enumerate(zip(received, sizes, strict=True))
    ]
