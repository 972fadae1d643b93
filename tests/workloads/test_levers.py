"""The decoders' levers: the attention kernel, the chunked loss and the padded
vocabulary each leave the maths as it was (within a stated tolerance, in fp32 on the
CPU), are refused in one line where they cannot run, and are rungs of a GPU's ladder."""

import dataclasses

import pytest
import torch

from bench.config.run_config import PointConfig, RunConfig
from bench.util.errors import UsageError
from bench.workloads import _loss
from bench.workloads._torch import next_token_loss
from bench.workloads.gpt2 import Size as Gpt2Size
from bench.workloads.gpt2.torch import GPT2
from bench.workloads.llama3 import SIZES
from bench.workloads.llama3.torch import Llama

TINY = SIZES["llama3-tiny"]  # vocabulary 512
# fp32 on the CPU: kernels and chunks sum in another order, nothing else differs.
LOSS_TOL = {"rtol": 1e-5, "atol": 1e-6}
GRAD_TOL = {"rtol": 1e-4, "atol": 1e-6}


def batch(vocab: int, length: int = 32, size: int = 4, seed: int = 0):
    tokens = torch.randint(
        0, vocab, (size, length + 1), generator=torch.Generator().manual_seed(seed)
    )
    return tokens[:, :-1], tokens[:, 1:]


def loss_and_grads(model, inputs, targets):
    model.zero_grad(set_to_none=True)
    loss = model(inputs, targets)
    loss.backward()
    return loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}


def llama(**levers) -> Llama:
    torch.manual_seed(0)
    return Llama(TINY, **levers)


def tiny_gpt2(**levers) -> GPT2:
    torch.manual_seed(0)
    return GPT2(1000, Gpt2Size(32, 2, 4), **levers)


@pytest.mark.parametrize(
    "kernel", ["flash", "math"]
)  # the CPU's (Platform.torch_attention_kernels)
@pytest.mark.parametrize("build", [llama, tiny_gpt2], ids=["llama3-tiny", "gpt2-tiny"])
def test_each_attention_kernel_the_cpu_has_gives_autos_loss_and_gradients(kernel, build):
    inputs, targets = batch(512)
    auto = build().eval()  # gpt2: no dropout, so every kernel sees the same attention
    held = build(attention=kernel).eval()
    want_loss, want_grads = loss_and_grads(auto, inputs, targets)
    loss, grads = loss_and_grads(held, inputs, targets)
    torch.testing.assert_close(loss, want_loss, **LOSS_TOL)
    for name, grad in grads.items():
        torch.testing.assert_close(grad, want_grads[name], **GRAD_TOL, msg=name)


def test_the_chunked_loss_equals_the_plain_one_and_so_do_its_gradients():
    """Over more tokens than one chunk and a last chunk that is shorter, with padded rows."""
    tokens = 2 * _loss.CHUNK_TOKENS + 77
    generator = torch.Generator().manual_seed(1)
    hidden = torch.randn(1, tokens, 16, generator=generator, requires_grad=True)
    weight = torch.randn(130, 16, generator=generator, requires_grad=True)  # 100 real rows
    targets = torch.randint(0, 100, (1, tokens), generator=generator)
    plain = _loss.next_token_loss(hidden, weight, targets, vocab=100)
    grads = torch.autograd.grad(plain, (hidden, weight))
    chunked = _loss.next_token_loss(hidden, weight, targets, vocab=100, chunked=True)
    chunked_grads = torch.autograd.grad(chunked, (hidden, weight))
    torch.testing.assert_close(chunked, plain, **LOSS_TOL)
    for got, want in zip(chunked_grads, grads, strict=True):
        torch.testing.assert_close(got, want, **GRAD_TOL)
    assert not weight.grad and chunked_grads[1][100:].abs().max() == 0  # padded rows: none


def test_a_model_with_the_chunked_loss_trains_as_with_the_plain_one():
    inputs, targets = batch(512, length=250, size=9)  # 2,250 tokens: three chunks
    want_loss, want_grads = loss_and_grads(llama(), inputs, targets)
    loss, grads = loss_and_grads(llama(chunked_loss=True), inputs, targets)
    torch.testing.assert_close(loss, want_loss, **LOSS_TOL)
    for name, grad in grads.items():
        torch.testing.assert_close(grad, want_grads[name], **GRAD_TOL, msg=name)


def test_the_models_own_plain_loss_is_the_loss_of_its_logits_as_before():
    model, (inputs, targets) = llama(), batch(512)
    torch.testing.assert_close(model(inputs, targets), next_token_loss(model(inputs), targets))


def with_real_rows_of(padded, plain):
    """The padded model with the plain one's weights; its padded rows left as drawn."""
    with torch.no_grad():
        for name, parameter in padded.named_parameters():
            source = dict(plain.named_parameters())[name]
            parameter[: source.shape[0]].copy_(source)
    return padded


@pytest.mark.parametrize(
    "build, vocab, multiple",
    [(llama, 512, 100), (tiny_gpt2, 1000, 64)],  # 512 -> 600 rows; 1,000 -> 1,024
    ids=["llama3-tiny", "gpt2-tiny"],
)
def test_a_padded_vocabulary_trains_to_the_same_losses(build, vocab, multiple):
    plain, padded = build(), build(pad_vocab=multiple)
    assert padded.padding_parameters == (_loss.padded(vocab, multiple) - vocab) * (
        32 if build is tiny_gpt2 else TINY.dim * 2  # llama3-tiny's output is not tied
    )
    with_real_rows_of(padded, plain)
    assert padded(batch(vocab)[0]).shape[-1] == vocab  # logits: the real vocabulary's
    losses = {}
    for name, model in (("plain", plain), ("padded", padded)):
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
        torch.manual_seed(0)  # gpt2's dropout masks: the same draws in both
        losses[name] = []
        for _ in range(4):
            optimizer.zero_grad()
            loss = model(*batch(vocab))  # one batch, learnt step by step
            loss.backward()
            optimizer.step()
            losses[name].append(loss.item())
    assert losses["padded"] == pytest.approx(losses["plain"], rel=1e-5)
    assert losses["plain"][-1] < losses["plain"][0]  # it trained


def test_the_session_counts_the_real_vocabularys_parameters():
    from bench import registry
    from bench.frameworks.torch import TorchSession

    def session(**levers):
        point = PointConfig(workload="llama3-tiny", batch_size=2, steps=1, **levers)
        return TorchSession(point, registry.platform("cpu"))

    plain, padded = session(), session(pad_vocab=100, cross_entropy="chunked")
    assert padded.parameters == plain.parameters
    assert padded.details["padding_parameters"] == 88 * TINY.dim * 2
    assert "padding_parameters" not in plain.details
    assert padded.model.embedding.num_embeddings == 600
    assert torch.isfinite(padded.step())


@pytest.mark.parametrize(
    "config, message",
    [
        (
            dict(workload="llama3-tiny", attentions=("cudnn",)),
            "attention: 'cudnn' is not available on cpu; it has: auto, flash, math",
        ),
        (
            dict(workload="gpt2", attentions=("flash",)),
            "attention: 'flash' on the cpu takes no attention dropout (this workload trains "
            "with it); use math or auto",
        ),
        (
            dict(workload="tiny", cross_entropies=("chunked",)),
            "cross_entropy: 'tiny' does not take it; it applies to gpt2, gpt2-medium, "
            "llama3-1b, llama3-8b, llama3-tiny",
        ),
        (
            dict(workload="llama3-tiny", framework="jax", pad_vocabs=(64,)),
            "pad_vocab: 64 is not available with jax; it applies to torch",
        ),
        (
            dict(workload="llama3-tiny", pad_vocabs=(0, 8192)),
            "pad_vocab: 8192 is not allowed; use at most 4096",
        ),
        (
            dict(workload="llama3-tiny", attentions=("sparse",)),
            "attention: 'sparse' is not allowed; choose from: auto, flash, efficient, cudnn, math",
        ),
    ],
)
def test_a_lever_that_cannot_run_is_refused_in_one_line_before_any_point(config, message):
    with pytest.raises(UsageError) as refused:
        RunConfig(**config)
    assert str(refused.value) == message


def test_the_levers_sweep_and_a_gpu_has_every_kernel():
    config = RunConfig(workload="llama3-tiny", attentions=("math", "flash"),
                       cross_entropies=("plain", "chunked"), pad_vocabs=(0, 64))  # fmt: skip
    assert {(p.attention, p.cross_entropy, p.pad_vocab) for p in config.points()} == {
        (a, c, v) for a in ("math", "flash") for c in ("plain", "chunked") for v in (0, 64)
    }
    from bench import registry

    assert registry.platform("cuda").attention_unsupported("cudnn", dropout=True) is None
    assert registry.platform("rocm").attention_unsupported("cudnn") is not None


def test_a_gpus_ladder_tries_the_levers_where_they_change_something():
    from bench.search.ladder import not_applicable, steps

    rungs = dict(steps("torch", "cuda"))
    assert list(rungs)[-3:] == ["flash attention", "chunked loss", "vocabulary padded to 64"]
    gpt2 = PointConfig(workload="gpt2", device="cuda", batch_size=8, precision="bf16")
    for name in ("flash attention", "chunked loss", "vocabulary padded to 64"):
        assert not_applicable(gpt2, rungs[name]) is None
    llama3 = dataclasses.replace(gpt2, workload="llama3-8b")
    assert not_applicable(llama3, rungs["vocabulary padded to 64"]) == (
        "llama3-8b's vocabulary (128,256) is a multiple of 64 already"
    )
    resnet = PointConfig(workload="resnet50", device="cuda", batch_size=8)
    assert not_applicable(resnet, rungs["chunked loss"]).startswith(
        "cross_entropy: 'resnet50' does not take it"
    )
