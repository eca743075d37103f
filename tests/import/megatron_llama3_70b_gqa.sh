# Llama-3 70B with Megatron-LM: grouped-query attention (8 query groups), SwiGLU's width given,
# RMSNorm, no biases, full recomputation, TP 8 x PP 8 with 2 model chunks per stage (interleaved 1F1B), fp8 through Transformer Engine.
--tensor-model-parallel-size 8 --pipeline-model-parallel-size 8 --num-layers-per-virtual-pipeline-stage 5
--num-layers 80 --hidden-size 8192 --ffn-hidden-size 28672 --num-attention-heads 64
--group-query-attention --num-query-groups 8
--seq-length 8192 --max-position-embeddings 8192
--micro-batch-size 1 --global-batch-size 128
--swiglu --normalization RMSNorm --disable-bias-linear --untie-embeddings-and-output-weights
--position-embedding-type rope --vocab-size 128256 --make-vocab-size-divisible-by 1
--attention-dropout 0 --hidden-dropout 0
--bf16 --fp8-format hybrid --use-flash-attn --use-distributed-optimizer
--recompute-granularity full --recompute-method uniform --recompute-num-layers 1
