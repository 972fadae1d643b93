"""Every option of `bench run` that sets a RunConfig field, declared once.
Over 500 lines because it is one table: every run option in one place.

Each with its flags, type, help and default, the RunConfig field it sets, and, for a
sweep axis, the PointConfig field of one value, its allowed values and how the max-batch
search and tune treat it.

The parser (bench.commands.run_options), the mapping from options to a config
(`config_from_args`), the sweep axes (bench.config.sweep, in SWEEP_ORDER), the point axes of the
result schema (bench.result.schema.POINT_AXES), tune's grid (bench.commands.tune) and
what `bench rerun` takes from its own command line (bench.commands.rerun) are read from
RUN_OPTIONS, and so are the result schema's entries for them (each option's `stored`:
its CONFIG entry, and a sweep axis's POINT entry). RunConfig and PointConfig, and a
point's stored record (bench.result.measured), stay written out for their types, their
defaults read from here (`run_default`, `point_default`);
tests/config/test_options.py checks they declare exactly the names declared here, as
tests/result/test_schema.py checks the result's dataclasses against its tables.

Order: as `bench run --help` lists them. The options that set no config field (the
machine's price, the label, where the result goes) are the commands' own
(bench.commands.run_options).
"""

from __future__ import annotations

from typing import Any

from bench.config import bounds
from bench.config.option import FREE, KEY, MATCH, RunOption, Stored
from bench.config.option_types import (
    MAX_TOKENS,
    MAX_WHOLE,
    bounded,
    choice_list,
    compilers,
    device_count,
    eval_every,
    list_of,
    number,
    one_length,
    repeats,
    size,
    strict_int,
    tokens,
    whole,
)

PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "fp8")
MEMORY_FORMATS = ("contiguous", "channels_last")
ALLOCATORS = ("system", "tcmalloc", "jemalloc")
OPENMP_RUNTIMES = ("gnu", "intel")
NUMA_MODES = ("auto", "on", "off")
CHECKPOINTING_MODES = ("none", "selective", "full")
# The decoders' levers: scaled_dot_product_attention's kernel (auto: PyTorch
# chooses), and their loss computed whole or in chunks of tokens (bench.workloads._loss).
ATTENTION_KERNELS = ("auto", "flash", "efficient", "cudnn", "math")
LOSSES = ("plain", "chunked")
# The input pipeline's levers (torch, on a dataset of images): the batch as the host
# sends it (float32: normalised on the host; uint8: its pixels, normalised on the device),
# and page-locked host memory for its copy to a GPU (the platform's choice by default).
INPUT_DTYPES = ("float32", "uint8")
PIN_MEMORY = ("on", "off")
# Where a dataset's JPEGs are decoded: on the host by the loader's workers (Pillow), or
# on the device (torchvision's decode_jpeg: nvJPEG on a CUDA GPU), the workers sending
# the files' bytes (bench.frameworks._torch_decode).
DECODES = ("cpu", "device")
MAX_PAD_VOCAB = 4096  # --pad-vocab's multiple, at most
# A point's steps by default (None as parsed: --steps is refused beside --epochs), and its
# warm-up's (None as parsed: 0 in epoch mode or to a target loss).
STEPS, WARMUP_STEPS = 20, 5
# `--compile` without a value: the framework's own compiler (torch: inductor, tensorflow: xla).
DEFAULT_COMPILER = "default"


COUNT, NUMBER_OF = Stored(*bounds.COUNT), Stored(*bounds.NUMBER_OF)
TOKENS = (bounds.optional(bounds.whole(1, MAX_TOKENS)),
          f"a count of tokens from 1 to {MAX_TOKENS}, or null")  # fmt: skip


def _prefetch(text: str) -> int | None:
    """One --prefetch-factor of a list: a whole number, or none (PyTorch's own)."""
    if text == "none":
        return None
    value = strict_int(text)
    if not 1 <= value <= bounds.MAX_PREFETCH:
        raise ValueError(text)
    return value


def _runtime(
    flag: str, env: str, choices: tuple[str, ...], what: str, tune: bool, ladder_sets: bool
) -> RunOption:
    """The child's allocator, OpenMP runtime or NUMA binding: a sweep axis whose default is
    $BENCH_ALLOCATOR, $BENCH_OPENMP, $BENCH_NUMA (bench:xeon sets them), else the child
    runs as bench was launched."""
    one = flag[2:]
    return RunOption(
        (flag,),
        f"{what}: {', '.join(choices)}; comma-separated for a sweep "
        f"(default ${env}, else as bench was launched)",
        f"{one}s",
        choice_list(one, choices),
        default=(None,),
        env=env,
        sweep=one,
        allowed=choices,
        one_value_in_search=True,
        runtime=True,
        tune=tune,
        ladder_sets=ladder_sets,
        stored=Stored(
            bounds.optional(bounds.one_of(*choices)),
            "one of " + ", ".join(choices) + " or null",
            since=5,
        ),
    )


RUN_OPTIONS: tuple[RunOption, ...] = (
    RunOption(
        ("workload",),
        "what to train (see: bench list); a,b runs each in turn, one result each",
        "workload",
        compared=KEY, stored=Stored(bounds.text, "text", required=True),
    ),
    RunOption(
        ("--framework",),
        "torch (default), tensorflow, jax; an image sets its own default",
        "framework",
        default="torch",
        env="BENCH_FRAMEWORK",
        compared=KEY, stored=Stored(bounds.text, "text"),
    ),
    RunOption(
        ("--device",),
        "auto (default: the best available) or a device that `bench list` lists",
        "device",
        default="auto",
        env="BENCH_DEVICE",
        compared=KEY, stored=Stored(bounds.text, "text"),
    ),
    RunOption(
        ("--batch-size",),
        "global batch size(s), comma-separated for a sweep",
        "batch_sizes",
        list_of(strict_int, "batch-size", f"whole numbers up to {MAX_WHOLE}, e.g. 16,32"),
        default=(),
        sweep="batch_size",
        tune=True,
        compared=KEY, stored=Stored(bounds.whole(1), bounds.WHOLE_TEXT, required=True),
    ),
    RunOption(
        ("--precision",),
        "fp32, tf32, fp16 (with a grad scaler), bf16; comma-separated for a sweep",
        "precisions",
        choice_list("precision", PRECISIONS),
        default=("fp32",),
        sweep="precision",
        allowed=PRECISIONS,
        tune=True,
        ladder_sets=True,
        compared=KEY, stored=Stored(bounds.text, "text", required=True),
    ),
    RunOption(
        ("--memory-format",),
        "contiguous, channels_last; comma-separated for a sweep",
        "memory_formats",
        choice_list("memory-format", MEMORY_FORMATS),
        sweep="memory_format",
        allowed=MEMORY_FORMATS,
        tune=True,
        ladder_sets=True,
        compared=KEY, stored=Stored(bounds.text, "text"),
    ),
    RunOption(
        ("--channels-last",),
        "same as --memory-format channels_last",
        None,
        switch=True,
        same_as="memory_formats",
        ladder_sets=True,
    ),
    RunOption(
        ("--compile",),
        "torch: torch.compile with BACKEND (default inductor; ipex: IPEX's backend), "
        "or inductor:MODE (reduce-overhead: CUDA graphs on a GPU; max-autotune, "
        "max-autotune-no-cudagraphs, default); tensorflow: xla (jit_compile); jax always "
        "compiles; a list like none,inductor sweeps",
        "compilers",
        compilers,
        default=(None,),
        metavar="BACKEND",
        bare=(DEFAULT_COMPILER,),
        sweep="compile",
        tune=True,
        ladder_sets=True,
        compared=KEY, stored=Stored(*bounds.TEXT_OR_NULL),
    ),
    RunOption(
        ("--optimize",),
        "torch: fused trains with SGD's fused kernel where torch has one for the "
        "device; on the cpu, ipex applies ipex.optimize(model, optimizer, dtype) (Intel "
        "Extension for PyTorch, in bench:xeon-ipex); none,fused sweeps",
        "optimizations",
        compilers,
        default=(None,),
        metavar="WHAT",
        sweep="optimize",
        one_value_in_search=True,
        tune=True,
        ladder_sets=True,
        stored=Stored(*bounds.TEXT_OR_NULL, since=9, older=None),
    ),
    RunOption(
        ("--expert-parallel",),
        "mixtures of experts (moe-tiny, olmoe-1b-7b, gpt-oss-20b): split the experts "
        "over N ranks, tokens exchanged by all-to-all; FSDP2 shards the rest (default {default})",
        "expert_parallel",
        whole,
        default=1,
        metavar="N",
        stored=Stored(bounds.whole(1, 4096), "a whole number from 1 to 4096", since=13, older=1),
    ),
    RunOption(
        ("--activation-checkpointing",),
        "torch and jax, llama3: recompute blocks' activations in the backward: none, "
        "selective (every other block), full (every block); a list like none,full sweeps",
        "activation_checkpointings",
        choice_list("activation-checkpointing", CHECKPOINTING_MODES),
        default=("none",),
        metavar="MODE",
        sweep="activation_checkpointing",
        allowed=CHECKPOINTING_MODES,
        one_value_in_search=True,
        stored=Stored.one_of(CHECKPOINTING_MODES, since=10, older="none"),
    ),
    RunOption(
        ("--attention",),
        "torch, gpt2 and llama3: the attention kernel: auto (default: PyTorch chooses), "
        "flash, efficient, cudnn, math, where the device has it; a list sweeps",
        "attentions",
        choice_list("attention", ATTENTION_KERNELS),
        default=("auto",),
        metavar="KERNEL",
        sweep="attention",
        allowed=ATTENTION_KERNELS,
        off="auto",
        one_value_in_search=True,
        ladder_sets=True,
        stored=Stored.one_of(ATTENTION_KERNELS, since=14, older="auto"),
    ),
    RunOption(
        ("--loss",),
        "torch, gpt2 and llama3: plain (default: the whole batch's logits at once) or "
        "chunked (the output layer and cross-entropy over chunks of 1,024 tokens, each "
        "recomputed in the backward: one chunk's fp32 logits held at a time); a list sweeps",
        "cross_entropies",
        choice_list("loss", LOSSES),
        default=("plain",),
        metavar="HOW",
        sweep="cross_entropy",
        allowed=LOSSES,
        off="plain",
        one_value_in_search=True,
        ladder_sets=True,
        stored=Stored.one_of(LOSSES, since=14, older="plain"),
    ),
    RunOption(
        ("--pad-vocab",),
        "torch, gpt2 and llama3: pad the vocabulary's rows to a multiple of N (gpt2 with "
        "64: 50,257 -> 50,304, as nanoGPT and llm.c), the padded logits sliced off before "
        "the loss; 0: unpadded (default); a list like 0,64 sweeps",
        "pad_vocabs",
        list_of(strict_int, "pad-vocab", f"0 or whole numbers up to {MAX_PAD_VOCAB}, e.g. 0,64"),
        default=(0,),
        metavar="N",
        sweep="pad_vocab",
        one_value_in_search=True,
        ladder_sets=True,
        stored=Stored(bounds.whole(0, MAX_PAD_VOCAB), f"a whole number from 0 to {MAX_PAD_VOCAB}",
                      since=14, older=0),
    ),
    RunOption(("--threads",), "intra-op CPU threads (default: the framework's)", "threads", whole,
              stored=COUNT),
    _runtime("--allocator", "BENCH_ALLOCATOR", ALLOCATORS,
             "memory allocator preloaded in the child", tune=True, ladder_sets=True),
    _runtime("--openmp", "BENCH_OPENMP", OPENMP_RUNTIMES,
             "OpenMP runtime (gnu: libgomp, intel: libiomp5, preloaded)", tune=True,
             ladder_sets=True),
    _runtime("--numa", "BENCH_NUMA", NUMA_MODES, "bind the child with numactl to one thread per "
             "physical core and their NUMA nodes", tune=False, ladder_sets=False),
    # Ranks and machines (torch, through torchrun: the same flags torchrun takes).
    RunOption(
        ("--devices",),
        "torch: data-parallel ranks on this machine, one device each, launched by "
        "torchrun (default all: every GPU; 1 on a CPU, where N ranks get N shares of the "
        "cores); comma-separated for a scaling sweep. TensorFlow and JAX use every device",
        "devices",
        list_of(device_count, "devices", "all or whole numbers, e.g. 1,2,4,8"),
        default=("all",),
        sweep="devices",
        one_value_in_search=True,
        point_axis=False,
        rerun=True,
        ladder_sets=True,
        compared=KEY,
        stored=Stored(bounds.optional(bounds.whole(1)), "a whole number or null", since=4),
    ),
    RunOption(("--nnodes",), "machines training each point together", "nnodes", whole,
              default=1, rerun=True, compared=KEY, stored=Stored(*bounds.NUMBER_OF, since=4)),
    RunOption(("--node-rank",), "this machine's rank (0: writes)", "node_rank", whole,
              default=0, rerun=True, compared=FREE, stored=Stored(*bounds.NUMBER_OF, since=4)),
    RunOption(("--rdzv-endpoint",), "node 0's rendezvous, the same on every machine",
              "rdzv_endpoint", metavar="HOST:PORT", rerun=True,
              compared=FREE, stored=Stored(*bounds.TEXT_OR_NULL, since=4)),
    RunOption(
        ("--data",),
        "synthetic: one batch made on the device (default); loader: synthetic samples "
        "through a real DataLoader; cifar10:PATH or imagenet:PATH: train on a real dataset "
        "in its published layout, a whole epoch at a time, with top-1 after each; "
        "tokens:PATH: decoders (torch, jax) train on a token file, llm.c's .bin (its header "
        "says uint16 or uint32) or nanoGPT's train.bin (uint16, no header); "
        "tokens-u32:PATH: uint32 tokens with no header",
        "data",
        default="synthetic",
        metavar="SOURCE",
        rerun=True,
        feeds=True,
        compared=MATCH, stored=Stored(bounds.text, "text"),
    ),
    RunOption(
        ("--num-workers",),
        "input pipeline workers with --data loader or a dataset (default {default}: in the "
        "training process); comma-separated for a sweep",
        "workers",
        list_of(strict_int, "num-workers",
                f"whole numbers up to {bounds.MAX_WORKERS}, e.g. 0,1,2"),
        default=(0,),
        metavar="N",
        sweep="num_workers",
        one_value_in_search=True,
        tune=True,
        ladder_sets=True,
        feeds=True,
        # Points gain it in 19 (the config's one value before: migrations.py's step 18).
        stored=Stored(bounds.whole(0, bounds.MAX_WORKERS),
                      f"a whole number from 0 to {bounds.MAX_WORKERS}", since=19),
    ),
    RunOption(
        ("--prefetch-factor",),
        "torch, with --num-workers: batches each loader worker prepares ahead (default: "
        "PyTorch's 2); a deeper queue rides out slow images; comma-separated for a sweep",
        "prefetch_factors",
        list_of(_prefetch, "prefetch-factor",
                f"whole numbers from 1 to {bounds.MAX_PREFETCH}, e.g. 2,4"),
        default=(None,),
        metavar="N",
        sweep="prefetch_factor",
        one_value_in_search=True,
        tune=True,
        ladder_sets=True,
        feeds=True,
        stored=Stored(bounds.optional(bounds.whole(1, bounds.MAX_PREFETCH)),
                      f"a whole number from 1 to {bounds.MAX_PREFETCH}, or null", since=19),
    ),
    RunOption(
        ("--input-dtype",),
        "torch, on a dataset of images: float32 (default: decoded, cropped and normalised "
        "on the host) or uint8 (the pixels as bytes, a quarter of float32's, normalised on "
        "the device); comma-separated for a sweep",
        "input_dtypes",
        choice_list("input-dtype", INPUT_DTYPES),
        default=("float32",),
        metavar="DTYPE",
        sweep="input_dtype",
        allowed=INPUT_DTYPES,
        off="float32",
        one_value_in_search=True,
        tune=True,
        ladder_sets=True,
        feeds=True,
        # Points gain it in 20 (the config's one value before: migrations.py's step 19).
        stored=Stored.one_of(INPUT_DTYPES, since=20),
    ),
    RunOption(
        ("--pin-memory",),
        "torch, with --data loader or a dataset: on or off, page-locked host memory for the "
        "batch's copy to a GPU (default: on where the platform copies to one); "
        "comma-separated for a sweep",
        "pin_memories",
        choice_list("pin-memory", PIN_MEMORY),
        default=(None,),
        metavar="on|off",
        sweep="pin_memory",
        allowed=PIN_MEMORY,
        one_value_in_search=True,
        tune=True,
        ladder_sets=True,
        feeds=True,
        stored=Stored(bounds.optional(bounds.one_of(*PIN_MEMORY)), "on, off or null", since=20),
    ),
    RunOption(
        ("--decode",),
        "torch, on a dataset of images: where its JPEGs are decoded: cpu (default: the "
        "loader's workers, with Pillow) or device (the workers send the files' bytes; the "
        "batch is decoded, cropped and normalised on the GPU: torchvision's decode_jpeg, "
        "nvJPEG); comma-separated for a sweep",
        "decodes",
        choice_list("decode", DECODES),
        default=("cpu",),
        metavar="WHERE",
        sweep="decode",
        allowed=DECODES,
        off="cpu",
        one_value_in_search=True,
        tune=True,
        ladder_sets=True,
        feeds=True,
        stored=Stored.one_of(DECODES, since=20, older="cpu"),
    ),
    RunOption(
        ("--train-to",),
        "with a dataset: stop once top-1 on its validation split reaches TOP1 "
        "(e.g. 0.94), at most --max-epochs epochs; records time, energy and cost to it",
        "train_to",
        number,
        metavar="TOP1",
        compared=MATCH,
        stored=Stored(bounds.optional(bounds.fraction), "a fraction or null", since=8),
    ),
    # A decoder trained to a validation loss (bench.datasets.loss_target).
    RunOption(
        ("--train-to-loss",),
        "decoders on --data tokens:PATH: stop once the loss on --val-data reaches LOSS "
        "(nats per token: log perplexity, e.g. 3.28), at most --max-tokens; records time, "
        "tokens, energy and cost to it (training plus evaluation) and the loss curve",
        "train_to_loss",
        number,
        metavar="LOSS",
        stored=Stored(bounds.optional(bounds.positive), bounds.NUMBER_TEXT, since=12, older=None),
    ),
    RunOption(
        ("--val-data",),
        "with --train-to-loss: the validation token file, tokens:PATH (same format and "
        "vocabulary as --data, never the same file)",
        "val_data",
        metavar="SOURCE",
        rerun=True,
        compared=FREE, stored=Stored(*bounds.TEXT_OR_NULL, since=12, older=None),
    ),
    RunOption(
        ("--max-tokens",),
        "with --train-to-loss: the token budget, e.g. 10B (default: --steps steps)",
        "max_tokens",
        tokens,
        metavar="N",
        compared=FREE, stored=Stored(*TOKENS, since=12, older=None),
    ),
    RunOption(
        ("--eval-every",),
        "with --train-to-loss: evaluate every N training tokens (50M) or sequences "
        "(12288seq), rounded to whole steps (default: 20 evaluations over the budget)",
        "eval_every",
        eval_every,
        metavar="N",
        stored=Stored(*TOKENS, since=12, older=None),
    ),
    RunOption(
        ("--eval-sequences",),
        "with --train-to-loss: validation sequences per evaluation, the file's first M "
        "(default: up to 1,024), split evenly over the ranks",
        "eval_sequences",
        whole,
        metavar="M",
        stored=Stored(*bounds.COUNT, since=12, older=None),
    ),
    RunOption(
        ("--recipe",),
        "with --train-to-loss: AdamW's learning rate, warm-up and decay: default, "
        "llmc-gpt2-124m, mlperf-llama31-8b (bench.datasets.recipe)",
        "recipe",
        metavar="NAME",
        stored=Stored(*bounds.TEXT_OR_NULL, since=12, older=None),
    ),
    RunOption(("--warmup-steps",),
              f"unmeasured steps first (default {WARMUP_STEPS}; 0 in epoch mode)",
              "warmup_steps", whole, compared=MATCH, stored=COUNT),
    RunOption(("--steps",), f"measured steps (default {STEPS})", "steps", whole, compared=MATCH,
              stored=NUMBER_OF),
    RunOption(
        ("--epochs", "--max-epochs"),
        "epoch mode: time N epochs, summarise epochs 2..N (with --train-to: the most "
        "epochs to train)",
        "epochs",
        whole,
        compared=MATCH, stored=COUNT,
    ),
    RunOption(("--epoch-samples",), "samples per epoch (default: the dataset's size)",
              "epoch_samples", whole, compared=MATCH, stored=COUNT),
    RunOption(("--seq-len",), "sequence length, for language workloads (one a run)", "seq_len",
              one_length, compared=KEY, stored=COUNT),
    RunOption(
        ("--repeats",),
        "fresh processes per point (default {default}); auto: until the spread is under "
        "--target-rsd, between --min-repeats and --max-repeats",
        "repeats",
        repeats,
        default=1,
        child=False,
        compared=FREE, stored=COUNT,
    ),
    RunOption(("--min-repeats",), None, "min_repeats", whole, default=3, child=False,
              compared=FREE, stored=NUMBER_OF),
    RunOption(("--max-repeats",), None, "max_repeats", whole, default=10, child=False,
              compared=FREE, stored=NUMBER_OF),
    RunOption(
        ("--target-rsd",),
        "relative standard deviation that ends automatic repeats (default {default})",
        "target_rsd",
        number,
        default=0.035,
        child=False,
        compared=FREE, stored=Stored(bounds.fraction, "a fraction"),
    ),
    RunOption(
        ("--find-max-batch",),
        "search the largest batch that trains (grow, then bisect)",
        "find_max_batch",
        switch=True,
        child=False,
        ladder_sets=True,
        compared=FREE, stored=Stored(bounds.flag, "true or false"),
    ),
    RunOption(
        ("--find-max-seq-len",),
        "search the longest sequence that trains at one --batch-size, up to the "
        "workload's longest: powers of two below 128, multiples of 128 above",
        "find_max_seq_len",
        switch=True,
        child=False,
        compared=FREE, stored=Stored(bounds.flag, "true or false", since=11, older=False),
    ),
    RunOption(("--max-batch-limit",), "largest batch the search probes", "max_batch_limit",
              whole, default=4096, child=False, compared=FREE, stored=NUMBER_OF),
    RunOption(
        ("--max-batch-step",),
        "the search's resolution: above this batch it probes only its multiples "
        "(default {default}; 1 for the exact batch)",
        "max_batch_step",
        whole,
        default=8,
        child=False,
        compared=FREE, stored=Stored(*bounds.NUMBER_OF, since=3),
    ),
    RunOption(
        ("--memory-limit",),
        "cap the child's memory, e.g. 16GiB (GPU: per-process fraction; CPU: rlimit)",
        "memory_limit_bytes",
        size,
        compared=MATCH, stored=Stored(bounds.optional(bounds.byte_count), "a byte count or null"),
    ),
    RunOption(("--timeout",), "seconds per child process, from 1 to ten years", "timeout_s",
              bounded(bounds.TIMEOUT), dest="timeout_s", child=False, compared=FREE,
              stored=Stored(bounds.optional(bounds.TIMEOUT), f"{bounds.TIMEOUT.words}, or null")),
    RunOption(("--seed",), None, "seed", whole, default=0, compared=FREE, stored=NUMBER_OF),
)  # fmt: skip

# The sweep's order, slowest-varying first: a sweep's points run in this order, the
# batch size varying fastest, as in the published tables, and the device count just
# above it (a scaling table reads down one config). A sweep axis not named here varies
# slowest of all (bench.config.sweep.in_sweep_order): a new one needs no place here.
SWEEP_ORDER = ("allocators", "openmps", "numas", "optimizations", "activation_checkpointings",
               "attentions", "cross_entropies", "pad_vocabs", "precisions", "memory_formats",
               "compilers", "workers", "prefetch_factors", "input_dtypes", "pin_memories",
               "decodes", "devices", "batch_sizes")  # fmt: skip

# RunConfig's fields that no option sets as given: what config_from_args derives from
# an option (the first batch a max-batch search tries; what --eval-every counts), and
# what only the Python API sets.
DERIVED_FIELDS = {"max_batch_start": "--batch-size", "eval_every_unit": "--eval-every"}
API_FIELDS = ("probe_steps",)
POINT_DERIVED = ("eval_every_unit",)  # of DERIVED_FIELDS, those a point carries too


def flags_of(field: str) -> tuple[str, ...]:
    """Every flag that sets RunConfig's `field` (--memory-format and --channels-last)."""
    return tuple(
        flag
        for option in RUN_OPTIONS
        if field in (option.field, option.same_as)
        for flag in option.flags
    )


def run_default(field: str) -> Any:
    """RunConfig's `field` by default: the default of the option that sets it (a switch:
    off). The dataclasses read their defaults here (tests/config/test_options.py names
    the few they resolve otherwise)."""
    option = next(o for o in RUN_OPTIONS if o.field == field)
    return False if option.switch else option.default


def point_default(name: str) -> Any:
    """A point's `name` by default (PointConfig's field, a stored point's): a sweep axis's
    one value by default, or the default of the option that sets the field."""
    for option in RUN_OPTIONS:
        if option.sweep == name:
            (value,) = option.default
            return value
    return run_default(name)
