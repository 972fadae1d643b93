"""JPEGs decoded on the device (--decode device, bench.frameworks._torch_decode): the same
function run with device="cpu" on a generated ImageNet-layout folder gives the batch the
host would have sent (shape, dtype, range, and the same crop and flip as Pillow's), a file
the device's decoder may not take (a PNG named .JPEG) is decoded on the host, a torchvision
built without CUDA is one line, and the CPU refuses --decode device in one line, in the
parent."""

from __future__ import annotations

import pytest

from bench import datasets, registry
from bench.frameworks import _torch_decode
from bench.frameworks._torch_data import SplitSamples
from tests.conftest import run_bench
from tests.fake_data import write_imagenet

torch = pytest.importorskip("torch")
pytest.importorskip("torchvision")


@pytest.fixture(scope="module")
def imagenet(tmp_path_factory):
    return write_imagenet(tmp_path_factory.mktemp("imagenet"), classes=2, train=6, val=2,
                          size=96)  # fmt: skip


def _split(folder, workload="cnn-s", which="train"):
    dataset = datasets.open_dataset(
        datasets.parse(f"imagenet:{folder}"), registry.workload(workload)
    )
    return getattr(dataset, which)


def _both(split, train: bool):
    """The device path's batch (on the CPU) and the host's float32 batch, of the same
    samples with the same augmentation."""
    encoded = _torch_decode.EncodedSamples(split, seed=3, epoch=1, train=train)
    host = SplitSamples(split, seed=3, epoch=1, train=train)
    indices = range(len(split))
    batch = _torch_decode.collate([encoded[i] for i in indices])
    inputs, targets = _torch_decode.decoder(split, torch.device("cpu"))(batch)
    expected = torch.stack([host[i][0] for i in indices])
    labels = torch.tensor([host[i][1] for i in indices])
    return inputs, targets, expected, labels


@pytest.mark.parametrize("train", [True, False], ids=["random crop and flip", "centre crop"])
def test_the_device_s_batch_is_the_host_s_decoded_by_another_decoder(imagenet, train):
    split = _split(imagenet)
    inputs, targets, expected, labels = _both(split, train)
    height, width = split.size
    assert inputs.shape == (len(split), 3, height, width) == expected.shape
    assert inputs.dtype == torch.float32 and torch.equal(targets, labels)
    # normalised as the host normalises: pixels 0-255 by ImageNet's mean and deviation
    low = (0 - split.mean.max()) / split.std.min()
    high = (1 - split.mean.min()) / split.std.min()
    assert low - 1e-4 <= inputs.min() and inputs.max() <= high + 1e-4
    # the same region, resize and flip as Pillow's on the host: close pixel for pixel,
    # much closer than another image of the batch (a wrong crop or flip is far)
    same = (inputs - expected).abs().mean(dim=(1, 2, 3))
    other = (inputs - expected.roll(1, dims=0)).abs().mean(dim=(1, 2, 3))
    assert same.max() < 0.02, same
    assert (same * 5 < other).all(), (same, other)
    if train:  # the flip was drawn for some and not others: each matches its own
        flips = [_torch_decode.EncodedSamples(split, 3, 1, True)[i][2] for i in range(len(split))]
        assert any(flips) and not all(flips)
        mirrored = (inputs.flip(-1) - expected).abs().mean(dim=(1, 2, 3))
        assert (same * 5 < mirrored).all()


def test_a_jpeg_goes_as_its_bytes_and_a_png_named_jpeg_decoded_on_the_host(imagenet, tmp_path):
    from PIL import Image

    folder = write_imagenet(tmp_path / "png", classes=2, train=3, val=1, size=64)
    first = sorted((folder / "train" / "n00000000").iterdir())[0]
    Image.open(first).convert("RGB").save(first, format="PNG")  # as ImageNet's one PNG
    split = _split(folder)
    index = split.files.index(str(first))
    png = _torch_decode.EncodedSamples(split, 0, 0, False)[index][0]
    jpeg = _torch_decode.EncodedSamples(split, 0, 0, False)[(index + 1) % len(split)][0]
    assert png.dim() == 3 and png.shape[0] == 3 and png.dtype == torch.uint8
    assert jpeg.dim() == 1 and bytes(jpeg[:2].tolist()) == b"\xff\xd8"  # the file itself
    inputs, _, expected, _ = _both(split, train=False)
    assert (inputs - expected).abs().mean() < 0.1


def test_a_torchvision_built_without_cuda_is_one_line(tmp_path):
    cpu_only, cuda = tmp_path / "cpu.py", tmp_path / "cuda.py"
    cpu_only.write_text("__version__ = '0.29.1+cpu'\ngit_version = 'x'\ncuda = None\n")
    cuda.write_text("__version__ = '0.29.1'\ncuda = '13.0'\n")
    said = _torch_decode.built_without_cuda(cpu_only)
    assert said is not None and said.startswith("decode: device needs a torchvision built")
    assert "\n" not in said
    assert _torch_decode.built_without_cuda(cuda) is None
    assert _torch_decode.built_without_cuda(tmp_path / "none.py").startswith("decode: ")


def test_the_parent_refuses_decoding_on_the_cpu_s_device_in_one_line(imagenet, tmp_path):
    done = run_bench("cnn-s", "--data", f"imagenet:{imagenet}", "--epochs", "1", "--decode",
                     "device", "--device", "cpu", "--output-dir", str(tmp_path))  # fmt: skip
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--decode: cpu has no JPEG decoder" in lines[0], done.stderr
    assert not list(tmp_path.glob("*.json"))  # refused before any child
