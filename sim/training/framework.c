/* framework: the behaviour table.
 *
 * DeepSpeed (v0.14, what the study's GPT-NeoX ran):
 * - zero 0: deepspeed/runtime/engine.py allreduce_gradients() runs after backward, only at a
 *   gradient-accumulation boundary, and calls buffered_allreduce_fallback() with
 *   elements_per_buffer = 5e8 (MEMORY_OPT_ALLREDUCE_SIZE): the gradients, in named_parameters()
 *   (forward) order, flattened into buckets of at most 5e8 elements, one allreduce each. Nothing
 *   overlaps backward.
 * - zero 1/2: runtime/zero/stage_1_and_2.py with overlap_comm (GPT-NeoX's configs set it) reduces
 *   gradients from backward hooks into an IPG bucket of reduce_bucket_size elements (5e8 in the
 *   configs) on a separate stream; the bucket is reduced before a gradient that would overflow it
 *   is added. Stage 1 does so only at the accumulation boundary, stage 2 every micro-batch.
 *   With reduce_scatter: true (the default, and GPT-NeoX's configs) the bucket is not
 *   reduce-scattered: average_tensor() splits it into one slice per partition owner
 *   (rank_and_offsets, merged by destination) and allreduce_no_retain(..., rank=dst) issues one
 *   rooted reduce per owner (allreduce_bucket: dist.reduce(..., dst)), on the reduction stream,
 *   one communicator, so they run one after another (reduce_per_owner).
 * - zero 3: runtime/zero/stage3.py the same IPG bucket on reduce_and_partition_stream, every
 *   micro-batch; parameters gathered on a separate allgather stream by the
 *   PartitionedParameterCoordinator, which prefetches from its recorded trace (see workload.c).
 * Megatron-LM (megatron/core/distributed/distributed_data_parallel.py, --overlap-grad-reduce):
 *   buckets of max(40,000,000, 1,000,000 x dp) parameters filled in reverse parameter order,
 *   each reduced once all its gradients exist; the distributed optimizer (--use-distributed-
 *   optimizer) reduce-scatters them and is ZeRO stage 1; there is no stage 2 or 3.
 * PyTorch DDP (torch/nn/parallel/distributed.py): bucket_cap_mb = 25 MiB, the first bucket
 *   capped at dist._DEFAULT_FIRST_BUCKET_BYTES = 1 MiB, filled parameter by parameter in reverse
 *   registration order (compute_bucket_assignment_by_size closes a bucket once it reaches the
 *   cap), each allreduced once all its gradients exist. ZeRO is not PyTorch DDP (FSDP is not
 *   modelled). */
#include "framework.h"

const char *const framework_names[] = {"deepspeed", "megatron", "pytorch", NULL};

static const Framework frameworks[FW_COUNT] = {
    [FW_DEEPSPEED] = {.name = "deepspeed",
                      .ddp_overlap = FALSE,
                      .close_before_overflow = TRUE,
                      .first_bucket_bytes = 0,
                      .max_zero = 3,
                      .reduce_per_owner = TRUE},
    [FW_MEGATRON] = {.name = "megatron",
                     .ddp_overlap = TRUE,
                     .close_before_overflow = FALSE,
                     .first_bucket_bytes = 0,
                     .max_zero = 1},
    [FW_PYTORCH] = {.name = "pytorch",
                    .ddp_overlap = TRUE,
                    .close_before_overflow = FALSE,
                    .first_bucket_bytes = 1024.0 * 1024.0,
                    .max_zero = 0},
};

/* What a parameter costs:
 * - DeepSpeed (fp16 or bf16 with ZeRO): fp16/bf16 weights and gradients, the optimizer's fp32
 *   master copy, momentum and variance (12 bytes; the ZeRO paper's K = 12).
 * - Megatron-LM: with bf16 megatron/training/arguments.py validate_args() forces
 *   accumulate_allreduce_grads_in_fp32 ("accumulate and all-reduce gradients in fp32 for
 *   bfloat16 data type"), so the DDP grad buffer (main_grad) is fp32 and the gradient
 *   reductions move 4 bytes per element; docs/source/distrib_optimizer.md's table gives 6 + 12/d
 *   bytes per parameter for bf16 weights with fp32 gradients (2 + 4, and 12 partitioned). fp8
 *   runs with --bf16 (Transformer Engine), so the same. fp16 keeps fp16 gradients.
 * - PyTorch (DDP, FSDP): mixed precision is torch.autocast over fp32 parameters (the AMP recipe,
 *   torch/amp/autocast_mode.py): fp32 weights and gradients, so DDP's buckets and its allreduce
 *   are fp32, and AdamW keeps momentum and variance (8 bytes), the weights being their own
 *   master copy; autocast caches the half-precision copy of every weight it casts
 *   (autocast_mode.cpp cached_casts) until the autocast region exits, and autograd keeps it for
 *   backward: e bytes more per parameter. */
FrameworkBytes framework_bytes(FrameworkId id, Precision prec) {
    int e = model_elem_bytes(prec);
    if (prec == PREC_FP32)
        return (FrameworkBytes){4, 4, 8.0};
    switch (id) {
    case FW_MEGATRON:
        return (FrameworkBytes){e, prec == PREC_FP16 ? e : 4, 12.0};
    case FW_PYTORCH: /* and autocast's cast cache: a half copy of each weight, made at its
                        first use in forward and held for backward */
        return (FrameworkBytes){4 + e, 4, 8.0};
    case FW_DEEPSPEED:
    default:
        return (FrameworkBytes){e, e, 12.0};
    }
}

const Framework *framework_get(FrameworkId id) {
    g_assert(id >= 0 && id < FW_COUNT);
    return &frameworks[id];
}

double framework_default_bucket_bytes(FrameworkId id, int dp, int e) {
    switch (id) {
    case FW_DEEPSPEED:
        return 5e8 * e; /* allreduce_bucket_size and reduce_bucket_size, 5e8 elements */
    case FW_MEGATRON:
        return MAX(4e7, 1e6 * dp) * e;
    case FW_PYTORCH:
    default:
        return 25.0 * 1024 * 1024;
    }
}
