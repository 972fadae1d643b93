#!/bin/bash
# The runs behind docs/results/<gpu>/ and docs/performance.md's GPU table, on one NVIDIA GPU with
# bench installed natively. Five parts of under ten minutes each:
#   benchmarks/cuda_campaign.sh throughput RESULTS_DIR   # precision x format, compile, BERT
#   benchmarks/cuda_campaign.sh fidelity RESULTS_DIR     # overhead, batch, epochs, max batch
#   benchmarks/cuda_campaign.sh llm RESULTS_DIR          # Llama 3 on one GPU: tokens/s, MFU,
#       memory at 2k/4k/8k, checkpointing, compile, fp8 (bench[float8]), max micro-batch,
#       the 8B refusal (on a GPU of under 120 GiB)
#   benchmarks/cuda_campaign.sh llm-peers RESULTS_DIR    # gpt2, JAX, and bench against the
#       bare FSDP2 loop
#   benchmarks/cuda_campaign.sh levers RESULTS_DIR       # ResNet-50's levers: fused SGD,
#       CUDA graphs (inductor:reduce-overhead), plain inductor
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
*) echo "usage: $0 throughput|fidelity|llm|llm-peers|levers RESULTS_DIR [LOGS_DIR]" >&2; exit 2 ;;
esac
