#!/bin/bash
# The runs behind docs/results/<gpu>/ and docs/performance.md's GPU table, on one NVIDIA GPU with
# bench installed natively. Parts of under ten minutes each:
#   benchmarks/cuda_campaign.sh throughput RESULTS_DIR   # precision x format, compile, BERT
#   benchmarks/cuda_campaign.sh fidelity RESULTS_DIR     # overhead, batch, epochs, max batch
#   benchmarks/cuda_campaign.sh llm RESULTS_DIR          # Llama 3 on one GPU: tokens/s, MFU,
#       memory at 2k/4k/8k, checkpointing, compile, fp8 (bench[float8]), max micro-batch,
#       the 8B refusal (on a GPU of under 120 GiB)
#   benchmarks/cuda_campaign.sh llm-peers RESULTS_DIR    # gpt2, JAX, and bench against the
#       bare FSDP2 loop
#   benchmarks/cuda_campaign.sh levers RESULTS_DIR       # ResNet-50's levers: fused SGD,
#       CUDA graphs (inductor:reduce-overhead), plain inductor
#   benchmarks/cuda_campaign.sh checkpointing RESULTS_DIR  # llama3-1b with and without full
#       activation checkpointing (3 repeats at 8k), its largest micro-batch
#   benchmarks/cuda_campaign.sh caps RESULTS_DIR         # ResNet-50's largest batch at 80, 24
#       and 16 GiB (--memory-limit)
#   benchmarks/cuda_campaign.sh jax RESULTS_DIR          # llama3-1b in JAX; JAX ResNet-50
#       against a bare JAX loop (JAX_ROUNDS rounds, default 1)
#   benchmarks/cuda_campaign.sh to-loss RESULTS_DIR      # GPT-2 124M to a byte-level loss
#   benchmarks/cuda_campaign.sh repeats RESULTS_DIR      # ResNet-50's headline, 3 repeats
#   benchmarks/cuda_campaign.sh ladders RESULTS_DIR      # bench ladder on resnet50, then gpt2
#       (each resumed from its file in RESULTS_DIR where a call's limit cut it short)
#   benchmarks/cuda_campaign.sh moe RESULTS_DIR          # mixtures of experts on one GPU:
#       moe-tiny's grouped GEMM in bf16, olmoe-1b-7b's tokens/s and MFU where its 103 GiB
#       of state fit (an H200), else its one-line refusal
#   benchmarks/cuda_campaign.sh ladders-llama RESULTS_DIR  # bench ladder on llama3-1b, 2,048
#   benchmarks/cuda_campaign.sh decode RESULTS_DIR       # ResNet-50 on a generated ImageNet-layout
#       folder of 500x375 JPEGs: JPEGs decoded by the loader's workers against nvJPEG
#       (--decode cpu,device), 4 workers, with the input-bound share; the loader alone
# Each step has a time limit (a part's limits add up to under 600 s, a lent GPU's longest
# command); a step stopped by it keeps its finished points (SIGTERM).
set -u
part=$1 results=$2 logs=${3:-$2}
mkdir -p "$results" "$logs"
step() {  # step NAME SECONDS COMMAND...
    local name=$1 limit=$2 started=$SECONDS
    shift 2
    echo "=== $name (limit ${limit}s)"
    timeout "$limit" "$@" --output-dir "$results" >"$logs/$name.log" 2>&1
    echo "exit $? after $((SECONDS - started)) s"
    grep -E "^(│|┃|result:|energy|bench:)" "$logs/$name.log" | cut -c1-150
}
r50=(python3 -m bench resnet50 --device cuda)
case $part in
throughput)
    step eager 330 "${r50[@]}" --batch-size 256 --precision fp32,tf32,bf16,fp16 \
        --memory-format contiguous,channels_last --repeats 2
    step compile 170 "${r50[@]}" --batch-size 256 --precision bf16 --channels-last \
        --compile --repeats 2
    step bert128 60 python3 -m bench bert-base --device cuda --precision bf16 --seq-len 128 \
        --batch-size 64
    ;;
fidelity)
    step eager-rest 190 "${r50[@]}" --batch-size 256 --precision bf16,fp16,tf32 \
        --memory-format channels_last,contiguous
    for batch in 256 32; do
        echo "=== overhead batch $batch"
        timeout 100 python3 benchmarks/overhead.py --device cuda --precision bf16 \
            --memory-format channels_last --batch-size "$batch" --warmup-steps 10 --steps 30 \
            --rounds 2 2>&1 | tail -5
    done
    step bert512 45 python3 -m bench bert-base --device cuda --precision bf16 --seq-len 512 \
        --batch-size 16
    step cnn-s 35 python3 -m bench cnn-s --device cuda --epochs 3 --batch-size 128
    step resnet50-cifar 40 python3 -m bench resnet50-cifar --device cuda --epochs 3 \
        --epoch-samples 12800 --batch-size 128 --precision bf16
    step batches 60 "${r50[@]}" --batch-size 64,512 --precision bf16 --channels-last
    ;;
llm)
    # --seq-len takes one length: one run per length. Measured on an H200: a llama3-1b
    # point takes about 20 s in eager (its child builds the model), 70 s compiled.
    l1b=(python3 -m bench llama3-1b --device cuda)
    for seq in 2048 4096 8192; do
        step "l1b-eager-$seq" 70 "${l1b[@]}" --precision bf16 --seq-len "$seq" --batch-size 1 \
            --activation-checkpointing none,full
    done
    step l1b-compile 85 "${l1b[@]}" --precision bf16 --seq-len 2048 --batch-size 1 --compile
    step l1b-fp8 110 "${l1b[@]}" --precision fp8 --seq-len 2048 --batch-size 1 --compile
    step l1b-max-batch 110 "${l1b[@]}" --precision bf16 --seq-len 2048 --find-max-batch
    step l8b-does-not-fit 25 python3 -m bench llama3-8b --device cuda --precision bf16 \
        --seq-len 2048 --batch-size 1
    ;;
llm-peers)
    step gpt2 30 python3 -m bench gpt2 --device cuda --precision bf16 --seq-len 1024 \
        --batch-size 16
    step l1b-jax 120 python3 -m bench llama3-1b --device cuda --framework jax --precision bf16 \
        --seq-len 2048 --batch-size 1
    echo "=== llm overhead (bench against benchmarks/llm_peer.py)"
    timeout 120 python3 benchmarks/llm_overhead.py --workload llama3-1b --device cuda \
        --precision bf16 --seq-len 2048 --batch-size 2 --warmup-steps 5 --steps 20 \
        --rounds 2 2>&1 | tail -5
    ;;
levers)
    step r50-fused 45 "${r50[@]}" --batch-size 256 --precision bf16 --channels-last \
        --optimize none,fused
    step r50-cuda-graphs 90 "${r50[@]}" --batch-size 256 --precision bf16 --channels-last \
        --optimize fused --compile inductor:reduce-overhead
    step r50-inductor 80 "${r50[@]}" --batch-size 256 --precision bf16 --channels-last \
        --optimize fused --compile inductor
    ;;
checkpointing)
    # Full activation checkpointing beside none, three repeats at 8,192 tokens (95%
    # intervals), then the largest micro-batch at 2,048.
    l1b=(python3 -m bench llama3-1b --device cuda --precision bf16 --batch-size 1)
    step l1b-ac-2048 50 "${l1b[@]}" --seq-len 2048 --activation-checkpointing none,full
    step l1b-ac-8192 110 "${l1b[@]}" --seq-len 8192 --activation-checkpointing none,full \
        --repeats 3
    step l1b-max-batch 100 python3 -m bench llama3-1b --device cuda --precision bf16 \
        --seq-len 2048 --find-max-batch
    ;;
caps)
    # The 2020 GPU comparison's question on one large GPU: the largest ResNet-50 batch
    # (fp32, its default) on cards of 80, 24 and 16 GiB, emulated with --memory-limit.
    # On an H200 a probe is a fresh process of 15-20 s (40 s at batch 768): 70 s a cap
    # answered none; a search takes about 7 probes.
    for cap in 16GiB 24GiB 80GiB; do
        step "r50-max-batch-$cap" 180 "${r50[@]}" --find-max-batch --memory-limit "$cap"
    done
    ;;
jax)
    # JAX: Llama 3.2 1B (Flax), and bench's JAX ResNet-50 against a bare JAX loop.
    step l1b-jax 120 python3 -m bench llama3-1b --device cuda --framework jax \
        --precision bf16 --seq-len 2048 --batch-size 1
    echo "=== jax overhead (bench against a bare JAX loop)"
    timeout 130 python3 benchmarks/jax_overhead.py --device cuda --precision bf16 \
        --batch-size 256 --warmup-steps 5 --steps 20 --rounds "${JAX_ROUNDS:-1}" 2>&1 | tail -6
    ;;
to-loss)
    # Time to a target loss on data every machine has: the bytes of its Python's standard
    # library (benchmarks/byte_tokens.py), GPT-2 124M, nats per byte.
    data=${TMPDIR:-/tmp}/bytes
    python3 benchmarks/byte_tokens.py "$(python3 -c 'import sysconfig
print(sysconfig.get_paths()["stdlib"])')" "$data"
    step gpt2-to-loss 100 python3 -m bench gpt2 --device cuda --precision bf16 \
        --seq-len 1024 --batch-size 16 --data "tokens:$data/train.bin" \
        --val-data "tokens:$data/val.bin" --train-to-loss 2.0 --max-tokens 16M \
        --eval-every 1M --eval-sequences 256 --warmup-steps 0
    ;;
repeats)
    step r50-repeats 50 "${r50[@]}" --batch-size 256 --precision bf16 --channels-last \
        --repeats 3
    ;;
ladders)
    # The GPU ladders against the published rates (GPT-2 124M: llm.c's ~468k tokens/s per
    # H100; ResNet-50: MLPerf's ~7,000 images/s; Llama 3.2 1B: 50k tokens/s at 2,048).
    # Measured on an H100 (2026-11-27): an eager GPT-2 rung of 2 processes took about
    # 45 s, a compiled one about 55 s; the GPT-2 climb's 8 rungs took 413 s. A climb cut
    # short by its limit keeps its rungs and the next call goes on with --resume.
    climb() {  # climb NAME SECONDS WORKLOAD OPTIONS...
        local name=$1 limit=$2 workload=$3 file
        shift 3
        file=$(ls -t "$results/$workload"-torch-cuda-*.json 2>/dev/null | head -1)
        local resume=()
        if [ -n "$file" ] && python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(not (d["command"][1:2] == ["ladder"] and d["status"] != "complete"))' "$file"; then
            resume=(--resume "$file")  # a climb this script cut short: go on with it
        fi
        step "$name" "$limit" python3 -m bench ladder "$workload" --device cuda --repeats 2 \
            "$@" "${resume[@]}"
    }
    climb ladder-resnet50 380 resnet50 --batch-size 256
    climb ladder-gpt2 200 gpt2 --seq-len 1024 --batch-size 16,32 --steps 15
    ;;
moe)
    step moe-tiny 90 python3 -m bench moe-tiny --device cuda --precision bf16 --seq-len 256 \
        --batch-size 32,128 --repeats 2
    step olmoe 400 python3 -m bench olmoe-1b-7b --device cuda --precision bf16 --seq-len 2048 \
        --batch-size 1,2 --steps 10 --repeats 2
    ;;
decode)
    # 8 classes x 160 training and 10 validation JPEGs of 500x375 (a random 16x12 grid
    # resized bicubically, Gaussian noise of sigma 12, quality 90: ~75 KB, as a photo).
    folder=$results/imagenet-500x375
    [ -d "$folder/val" ] || python3 - "$folder" <<'PY'
import sys
from pathlib import Path
import numpy as np
from PIL import Image
root, rng = Path(sys.argv[1]), np.random.default_rng(0)
for split, count in (("train", 160), ("val", 10)):
    for label in range(8):
        where = root / split / f"n{label:08d}"
        where.mkdir(parents=True, exist_ok=True)
        for i in range(count):
            grid = Image.fromarray(rng.integers(0, 256, (12, 16, 3), dtype=np.uint8))
            big = np.asarray(grid.resize((500, 375), Image.Resampling.BICUBIC), np.float32)
            big = np.clip(big + rng.normal(0, 12, big.shape), 0, 255).astype(np.uint8)
            Image.fromarray(big).save(where / f"img_{i}.JPEG", quality=90)
PY
    step decode 300 "${r50[@]}" --data "imagenet:$folder" --epochs 2 --batch-size 64 \
        --precision bf16 --channels-last --num-workers 4 --decode cpu,device --repeats 2
    step loader 120 python3 -m bench loader resnet50 --data "imagenet:$folder" \
        --num-workers 0,2,4,8 --batch-size 64 --steps 10 --decode device
    ;;
ladders-llama)
    step ladder-llama3-1b 560 python3 -m bench ladder llama3-1b --device cuda --seq-len 2048 \
        --batch-size 1,2 --repeats 2 --steps 10
    ;;
*)
    echo "usage: $0 throughput|fidelity|llm|llm-peers|levers|checkpointing|caps|jax|to-loss|repeats|ladders|ladders-llama|moe|decode" \
        "RESULTS_DIR [LOGS_DIR]" >&2
    exit 2
    ;;
esac
