"""benchmarks/llm_peer.py takes bench's decoder levers (--attention, --loss, --pad-vocab)
written plainly: with each, on bench's weights, it computes bench's loss and gradients
(fp32 on the CPU, within 1e-5), so bench-vs-peer can be measured lever by lever."""

import pytest

from bench import registry
from bench.config.run_config import PointConfig
from tests.benchmarks.test_llm_peer import _peer

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(
    "attention, loss, pad_vocab",
    [("flash", "plain", 0), ("math", "chunked", 0), ("auto", "plain", 100),
     ("auto", "chunked", 64)],
)  # fmt: skip
def test_the_peer_with_a_lever_computes_bench_s_loss_and_gradients(attention, loss, pad_vocab):
    peer, spec = _peer(), registry.workload("llama3-tiny")
    point = PointConfig(workload="llama3-tiny", attention=attention, cross_entropy=loss,
                        pad_vocab=pad_vocab)  # fmt: skip
    torch.manual_seed(0)
    ours = spec.implementation("torch").build_model(spec, point)
    torch.manual_seed(0)
    theirs = peer.Llama(peer.SIZES["llama3-tiny"], attention, loss == "chunked", pad_vocab)
    theirs.load_state_dict(ours.state_dict())
    tokens = torch.randint(0, 512, (9, 251), generator=torch.Generator().manual_seed(1))
    inputs, targets = tokens[:, :-1], tokens[:, 1:]  # 2,250 tokens: three chunks
    ours_loss, theirs_loss = ours(inputs, targets), theirs(inputs, targets)
    torch.testing.assert_close(theirs_loss, ours_loss, rtol=1e-5, atol=1e-6)
    ours_loss.backward()
    theirs_loss.backward()
    for (name, a), b in zip(ours.named_parameters(), theirs.parameters(), strict=True):
        torch.testing.assert_close(b.grad, a.grad, rtol=1e-4, atol=1e-6, msg=name)
    assert theirs(inputs).shape[-1] == 512  # the real vocabulary's logits
