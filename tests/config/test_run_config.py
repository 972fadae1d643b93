import dataclasses

import pytest

from bench.config.run_config import PointConfig, RunConfig
from bench.util.errors import UsageError


def test_sweep_is_the_cross_product_with_batch_fastest():
    config = RunConfig(
        workload="tiny",
        batch_sizes=(8, 16),
        precisions=("fp32", "bf16"),
        memory_formats=("contiguous", "channels_last"),
    )
    points = list(config.points())
    assert len(points) == 8
    assert [(p.precision, p.memory_format, p.batch_size) for p in points[:3]] == [
        ("fp32", "contiguous", 8),
        ("fp32", "contiguous", 16),
        ("fp32", "channels_last", 8),
    ]
    assert all(p.warmup_steps == 5 and p.steps == 20 for p in points)


def test_defaults_come_from_the_workload():
    assert RunConfig(workload="resnet50").batch_sizes == (32,)
    epoch = RunConfig(workload="cnn-s", epochs=2)
    assert epoch.warmup_steps == 0  # epoch 1 is the warm-up in epoch mode
    assert next(epoch.points()).epoch_samples == 50_000


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"workload": "nope"}, "unknown workload 'nope'; choose from: "),
        (
            {"workload": "tiny", "batch_sizes": (0,)},
            "batch_size: 0 is not allowed; use a positive whole number",
        ),
        ({"workload": "tiny", "batch_sizes": (-4,)}, "batch_size: -4"),
        (
            {"workload": "tiny", "precisions": ("fp4",)},
            "precision: 'fp4' is not allowed; choose from: fp32, tf32, fp16, bf16, fp8",
        ),
        (
            {"workload": "tiny", "precisions": ("tf32",)},
            "precision 'tf32' is not available on cpu; cpu supports: bf16, fp16, fp32",
        ),
        (
            {"workload": "tiny", "device": "quantum"},
            "unknown device 'quantum'; choose from: auto, ",
        ),
        ({"workload": "tiny", "framework": "caffe"}, "unknown framework 'caffe'"),
        ({"workload": "tiny", "seq_len": 64}, "seq_len: workload 'tiny' takes no sequence length"),
        (
            {"workload": "bert-base", "seq_len": 1024},
            "seq_len: 1024 is longer than bert-base's maximum 512",
        ),
        ({"workload": "tiny", "epoch_samples": 100}, "epoch_samples: only applies with epochs"),
        (
            {"workload": "tiny", "epochs": 2, "epoch_samples": 4, "batch_sizes": (8,)},
            "smaller than one batch",
        ),
        ({"workload": "tiny", "workers": (2,)}, "num_workers: only applies with a loader"),
        (
            {"workload": "tiny", "data": "loader", "prefetch_factors": (4,)},
            "prefetch_factor: batches a loader worker prepares ahead; it needs --num-workers",
        ),
        (
            {"workload": "tiny", "data": "loader", "workers": (1,), "prefetch_factors": (0,)},
            "prefetch_factor",
        ),
        (
            {"workload": "tiny", "data": "loader", "input_dtypes": ("uint8",)},
            "input_dtype: uint8 is a dataset's pixels as the host decoded them; it needs --data",
        ),
        (
            {
                "workload": "cnn-s",
                "data": "imagenet:/x",
                "epochs": 1,
                "framework": "jax",
                "input_dtypes": ("float32", "uint8"),
            },
            "input_dtype: jax's input pipeline sends float32; uint8 normalised on the device is",
        ),
        ({"workload": "tiny", "input_dtypes": ("int4",)}, "input_dtype: 'int4' is not allowed"),
        (  # a lever that does not apply here, said by the platform (Platform.pin_memory_unfit)
            {"workload": "tiny", "data": "loader", "pin_memories": ("off", "on"), "device": "cpu"},
            "pin_memory: cpu has no copy from page-locked host memory to speed up",
        ),
        (
            {"workload": "tiny", "pin_memories": ("off",)},
            "pin_memory: host memory of a loader's batches; it needs --data loader",
        ),
        (  # JPEGs decoded on the device: not on the CPU, said by the platform
            {"workload": "cnn-s", "data": "imagenet:/x", "epochs": 1, "decodes": ("cpu", "device")},
            "decode: cpu has no JPEG decoder of its own that bench drives",
        ),
        (  # nor where nothing is a JPEG
            {
                "workload": "cnn-s",
                "data": "cifar10:/x",
                "epochs": 1,
                "decodes": ("device",),
                "device": "cuda",
            },
            "decode: device decodes a dataset's JPEG files; it needs --data imagenet:PATH",
        ),
        (
            {"workload": "tiny", "data": "loader", "decodes": ("device",), "device": "cuda"},
            "decode: device decodes a dataset's JPEG files; it needs --data imagenet:PATH",
        ),
        (
            {
                "workload": "cnn-s",
                "data": "imagenet:/x",
                "epochs": 1,
                "framework": "jax",
                "decodes": ("device",),
                "device": "cuda",
            },
            "decode: jax's input pipeline decodes on the host; JPEGs decoded on the device",
        ),
        ({"workload": "tiny", "decodes": ("gpu",)}, "decode: 'gpu' is not allowed"),
        ({"workload": "tiny", "data": "disk"}, "data: 'disk' is not allowed"),
        ({"workload": "tiny", "batch_sizes": (8, 8)}, "without repeats"),
        ({"workload": "tiny", "repeats": 0}, "repeats: 0"),
        ({"workload": "tiny", "target_rsd": 2.0}, "target_rsd"),
        ({"workload": "resnet50-cifar", "batch_sizes": (1,)}, "below resnet50-cifar's minimum 2"),
        (
            {"workload": "tiny", "find_max_batch": True, "epochs": 2},
            "cannot be combined with epochs",
        ),
        (
            {"workload": "tiny", "find_max_seq_len": True},
            "find_max_seq_len: workload 'tiny' takes no sequence length; choose one of bert-base",
        ),
        (
            {"workload": "llama3-tiny", "find_max_seq_len": True, "find_max_batch": True},
            "find_max_seq_len: cannot be combined with find_max_batch",
        ),
        (
            {"workload": "llama3-tiny", "find_max_seq_len": True, "batch_sizes": (4, 8)},
            "batch_sizes: the sequence-length search takes one value, not a sweep",
        ),
        (
            {"workload": "llama3-tiny", "find_max_seq_len": True, "devices": (1, 2)},
            "devices: the sequence-length search takes one value, not a sweep",
        ),
    ],
)
def test_bad_values_name_the_field_and_what_is_allowed(kwargs, message):
    with pytest.raises(UsageError) as error:
        RunConfig(**kwargs)
    assert message in str(error.value)
    assert "\n" not in str(error.value)


def test_configs_are_frozen_and_round_trip():
    config = RunConfig(workload="tiny", batch_sizes=(2, 4), compilers=(None, "eager"), repeats=None)
    with pytest.raises(AttributeError):
        config.steps = 3  # type: ignore[misc]
    assert RunConfig.from_dict(config.to_dict()) == config
    point = next(config.points())
    assert PointConfig.from_dict(point.to_dict()) == point


def test_unknown_config_fields_are_named():
    data = RunConfig(workload="tiny").to_dict() | {"warp_speed": 9}
    with pytest.raises(UsageError, match=r"unknown field.*warp_speed"):
        RunConfig.from_dict(data)


def test_probe_points_are_short():
    probe = RunConfig(workload="tiny", probe_steps=2).probe(64, "bf16", "contiguous", None)
    assert (probe.batch_size, probe.warmup_steps, probe.steps, probe.precision) == (
        64,
        0,
        2,
        "bf16",
    )


def test_the_sweep_axes_are_declared_once_and_every_config_reads_them():
    """bench.config.sweep reads each axis's RunConfig tuple, PointConfig field and option from
    bench.config.options (tests/config/test_options.py checks the dataclasses against it);
    the sweep runs in its order, the batch size fastest."""
    from bench.config import sweep

    point_fields = {f.name for f in dataclasses.fields(PointConfig)}
    for axis in sweep.AXES:
        assert axis.one in point_fields and axis.flag.startswith("--")
    assert sweep.NAMES[-1] == "batch_sizes"
    config = RunConfig(workload="tiny", batch_sizes=(1, 2), precisions=("fp32", "bf16"))
    assert [(p.precision, p.batch_size) for p in config.points()] == [
        ("fp32", 1), ("fp32", 2), ("bf16", 1), ("bf16", 2)]  # fmt: skip


def test_a_lever_refused_names_the_workloads_whose_spec_takes_it(monkeypatch):
    """bench.config.levers names no workload: a new one whose spec shards with FSDP2 and
    keeps its blocks where checkpointing finds them is named with no other file edited."""
    from bench.config import discovery

    specs = dict(discovery.workloads())
    specs["new-decoder"] = dataclasses.replace(specs["gpt2"], name="new-decoder")
    monkeypatch.setattr(discovery, "workloads", lambda: specs)
    with pytest.raises(UsageError, match=r"applies to the decoders \(gpt2, .*, new-decoder\)$"):
        RunConfig(workload="tiny", activation_checkpointings=("full",))
    with pytest.raises(UsageError, match=r"with FSDP2 \(gpt2, .*, new-decoder\); resnet50 "):
        RunConfig(workload="resnet50", precisions=("fp8",))
    with pytest.raises(UsageError, match=r"does not take it; it applies to gpt2, .*, new-decoder$"):
        RunConfig(workload="tiny", attentions=("math",))
