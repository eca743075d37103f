M#!/bin/bash
# Llama-3 8B with fp8 on one DGX H100, written by hand for `sim import`'s tests in the style of
# Megatron-LM's examples/llama/train_llama3_8b_h100_fp8.sh: variables with defaults from the
# script's arguments, bash arrays, an fp8 block chosen by an if on a variable, quoted array
# elements that hold a flag and its value, and the torchrun line that expands every array.

export CUDA_DEVICE_MAX_CONNECTIONS=${CUDA_DEVICE_MAX_CONNECTIONS:-1}

CHECKPOINT_PATH=${1:-"checkpoints/llama3_8b_fp8"}
TOKENIZER_ARG=${2:-"MOCK"}
mkdir -p "$(dirname "$CHECKPOINT_PATH")"

GPUS_PER_NODE=8
NUM_NODES=1
MASTER_ADDR=${MASTER_ADDR:-localhost}
WORLD_SIZE=$(($GPUS_PER_NODE*$NUM_NODES))

TP_SIZE=1
MICRO_BATCH_SIZE=1
GLOBAL_BATCH_SIZE=128
NUM_LAYERS=32
DTYPE="fp8"
SEQ_LENGTH=8192

DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
    --nnodes $NUM_NODES
    --master_addr $MASTER_ADDR
)

MODEL_ARGS=(
    --use-mcore-models
    --num-layers $NUM_LAYERS
    --hidden-size 4096
    --ffn-hidden-size 14336
    --num-attention-heads 32
    --group-query-attention
    --num-query-groups 8
    --seq-length $SEQ_LENGTH
    --max-position-embeddings ${SEQ_LENGTH}
    --position-embedding-type rope
    --normalization RMSNorm
    --swiglu
    --attention-backend fused
    --untie-embeddings-and-output-weights
    --disable-bias-linear
)

TRAINING_ARGS=(
    --micro-batch-size $MICRO_BATCH_SIZE
    --global-batch-size $GLOBAL_BATCH_SIZE
    --lr 0.00015   # the peak
    --bf16
    --save "$CHECKPOINT_PATH"
)

DTYPE_ARGS=()
if [[ "$DTYPE" == "fp8" ]]; then
    DTYPE_ARGS+=(
        "--fp8-format hybrid"
        "--fp8-amax-history-len 1024"
        "--fp8-param-gather"
    )
fi

DATA_ARGS=()
if [[ "$TOKENIZER_ARG" == "MOCK" ]] || [[ -z "$TOKENIZER_ARG" ]]; then
    DATA_ARGS+=("--mock-data" "--vocab-size 128256")
else
    DATA_ARGS+=(--tokenizer-model "$TOKENIZER_ARG" --vocab-size 1)
fi

PARALLEL_ARGS=(
    --tensor-model-parallel-size $TP_SIZE
    --use-distributed-optimizer
    --overlap-grad-reduce
    --overlap-param-gather
)

if [ ! -f pretrain_gpt.py ]; then
    echo "pretrain_gpt.py not found" >&2
fi

torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py \
    ${MODEL_ARGS[@]} \
    ${TRAINING_ARGS[@]} \
    ${DTYPE_ARGS[@]} \
    ${DATA_ARGS[@]} \
    ${PARALLEL_ARGS[@]}
