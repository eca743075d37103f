M#!/bin/bash
# Llama-2 7B pretraining with Megatron-LM (pretrain_gpt.py), in the style of Megatron-LM's
# examples: TP 2, PP 2, 4k sequences, bf16, distributed optimizer, flash attention, selective
# recomputation. Written by hand for `sim import`'s tests; `sim import` reads the --flags only.
GPUS_PER_NODE=8
torchrun --nproc_per_node $GPUS_PER_NODE --nnodes 2 pretrain_gpt.py \
    --tensor-model-parallel-size 2 \
    --pipeline-model-parallel-size 2 \
    --num-layers 32 \
    --hidden-size 4096 \
    --ffn-hidden-size 11008 \
    --num-attention-heads 32 \
    --seq-length 4096 \
    --max-position-embeddings 4096 \
    --micro-batch-size 1 \
    --global-batch-size 64 \
    --swiglu \
    --normalization RMSNorm \
    --disable-bias-linear \
    --untie-embeddings-and-output-weights \
    --position-embedding-type rope \
    --attention-dropout 0.0 \
    --hidden-dropout 0.0 \
    --vocab-size 32000 \
    --make-vocab-size-divisible-by 1 \
    --tokenizer-type Llama2Tokenizer \
    --bf16 \
    --use-flash-attn \
    --use-distributed-optimizer \
    --recompute-activations \
    --sequence-parallel \
    --lr 3.0e-4 --min-lr 3.0e-5 --lr-decay-style cosine \
    --weight-decay 0.1 --clip-grad 1.0 \
    --train-iters 250000 \
    --log-interval 10   # comment after a flag
