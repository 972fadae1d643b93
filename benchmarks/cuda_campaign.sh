#!/bin/bash
# The runs behind docs/results/<gpu>/ and the README's GPU table, on one NVIDIA GPU with
# bench installed natively. Two parts of under ten minutes each:
#   benchmarks/cuda_campaign.sh throughput RESULTS_DIR   # precision x format, compile, BERT
#   benchmarks/cuda_campaign.sh fidelity RESULTS_DIR     # overhead, batch, epochs, max batch
# Each step has a time limit; a step stopped by it keeps its finished points (SIGTERM).
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
*) echo "usage: $0 throughput|fidelity RESULTS_DIR [LOGS_DIR]" >&2; exit 2 ;;
esac
