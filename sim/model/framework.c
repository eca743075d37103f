/* framework: the behaviour table.
 *
 * DeepSpeed (v0.14, what the study's GPT-NeoX ran):
 * - pipeline parallelism (deepspeed/runtime/pipe/engine.py, the same in EleutherAI's DeeperSpeed
 *   fork GPT-NeoX runs): PipelineEngine.__init__ sets is_pipe_partitioned = is_grad_partitioned
 *   = is_model_parallel (TP > 1; later DeepSpeed reads them from the pipeline config's
 *   pipe_partitioned / grad_partitioned, default true). _exec_forward_pass wraps a non-last
 *   stage's output in a PartitionedTensor over the slice (TP) group and keeps only its part
 *   (first_output.data = torch.zeros(1)), so each TP rank sends its 1/t; a non-first stage's
 *   forward starts with part_input.full(), an all_gather of the received parts over the TP
 *   group. _exec_send_grads partitions the input gradient the same way; a non-last stage's
 *   _exec_backward_pass first gathers its own output back (part_output.full()), then the
 *   received gradient (part_grad.full()), then runs the backward (pipe_partitioned,
 *   pipe_regathers_output; workload.c pp_receive).
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
 *   optimizer) reduce-scatters them and is ZeRO stage 1. Stage 3 is Megatron-FSDP
 *   (--use-megatron-fsdp, formerly --use-custom-fsdp, with --data-parallel-sharding-strategy
 *   optim_grads_params, megatron/core/distributed/custom_fsdp/fully_sharded_data_parallel.py
 *   FullyShardedDataParallel): fsdp_unit_modules = [TransformerLayer], one parameter group (one
 *   bucket, one all_gather_into_tensor of its bf16 shard) per layer; _register_fsdp_hooks'
 *   _pre_forward queues the layer's bucket and prefetches the next in forward order
 *   (AllGatherPipeline.all_gather_params, PrefetchOrder.FORWARD_PASS_ORDER) with no rate
 *   limit, _post_forward releases it, _pre_backward gathers it again and prefetches the next in
 *   backward order; each parameter's gradient-accumulation hook marks it ready and the
 *   GradReducePipeline reduce-scatters a layer's bucket once all its gradients exist, every
 *   micro-batch (is_delay_grad_reduce is False for optim_grads_params), in the grad buffer's
 *   dtype (fp32 with bf16: grad_reduce_in_fp32, below). The module's other parameters (the
 *   embedding, final norm and head: no unit of their own) are gathered in the forward of the
 *   modules that hold them and released by no layer hook: the model treats them as FSDP1's root
 *   (gathers.c), gathered once per micro-batch and reduce-scattered after the embedding's
 *   backward. So stage 3 under megatron is PyTorch FSDP's flat-unit gathers with
 *   forward_prefetch on, limit_all_gathers off and BACKWARD_PRE (scenario_fsdp.c sets them)
 *   and Megatron's bytes. Megatron's stage 2 (optim_grads) is not modelled.
 *   Tensor parallelism (megatron/core/tensor_parallel/layers.py,
 *   LinearWithGradAccumulationAndAsyncCommunication.backward, the column-parallel linears'):
 *   the input-gradient GEMM, then the input gradient's all_reduce (allreduce_dgrad, on by
 *   default at TP > 1 without sequence parallelism) or, under sequence parallelism, its
 *   reduce_scatter_tensor issued with async_op=True, then the weight-gradient GEMM, then
 *   handle.wait(): CUDA_DEVICE_MAX_CONNECTIONS=1 makes the reduction start before the GEMM
 *   (dgrad_overlap; blocks.c). Under sequence parallelism the gather of the stored input is
 *   issued before the input-gradient GEMM and waited for after it, before the weight gradient.
 *   GPT-NeoX's mpu (DeepSpeed here) reduces the input gradient synchronously in
 *   copy_to_model_parallel_region's backward, after the block.
 * PyTorch DDP (torch/nn/parallel/distributed.py): bucket_cap_mb = 25 MiB, the first bucket
 *   capped at dist._DEFAULT_FIRST_BUCKET_BYTES = 1 MiB, filled parameter by parameter in reverse
 *   registration order (compute_bucket_assignment_by_size closes a bucket once it reaches the
 *   cap), each allreduced once all its gradients exist.
 * PyTorch FSDP (torch/distributed/fsdp, FSDP1 as of torch 2.1-2.4) is what zero 2 and 3 mean
 *   with framework pytorch: ShardingStrategy SHARD_GRAD_OP and FULL_SHARD, one FlatParameter per
 *   wrap unit (transformer_auto_wrap_policy: each layer; the root holds the embedding and head).
 *   _runtime_utils.py _pre_forward_unshard / _pre_backward_hook unshard the unit with one
 *   all_gather_into_tensor of its flat shard; with BackwardPrefetch.BACKWARD_PRE (the default)
 *   the pre-backward hook issues the next unit's allgather before the current unit's backward;
 *   in forward (forward_prefetch False) limit_all_gathers' _rate_limiter makes the host wait on
 *   the free event of the unit two back before the next allgather (_limiter_utils.py
 *   _FreeEventQueue, _max_num_inflight_all_gathers = 2): either way unit j's allgather is issued
 *   as unit j - 1 starts (GATHER_FLAT_UNIT). _post_backward_hook reduce-scatters the unit's flat
 *   gradient as soon as its backward ends, every micro-batch. FULL_SHARD reshards after forward
 *   and gathers again for backward; SHARD_GRAD_OP keeps the unit whole from forward to backward.
 *   The root's one flat parameter (the embedding, final norm and head) is not resharded after
 *   forward under any strategy (_post_forward_reshard skips the root): gathered once per
 *   micro-batch, kept to the embedding's backward, reduce-scattered once then (gathers.c).
 *   HYBRID_SHARD and _HYBRID_SHARD_ZERO2 (parallel.hybrid_shard) do the same within a shard group
 *   and all-reduce each gradient shard across the groups after its reduce-scatter, on a stream
 *   of its own (gathers.c, grads.c hybrid_shard_reduce). There is no FSDP ZeRO-1 (torch's
 *   ZeroRedundancyOptimizer is not modelled). */
#include "framework.h"

const char *const framework_names[] = {"deepspeed", "megatron", "pytorch", NULL};

static const Framework frameworks[FW_COUNT] = {
    [FW_DEEPSPEED] = {.name = "deepspeed",
                      .ddp_overlap = FALSE,
                      .close_before_overflow = TRUE,
                      .first_bucket_bytes = 0,
                      .reduce_per_owner = TRUE,
                      .zero_stages = 0xf,
                      .gather = GATHER_COORDINATOR,
                      /* PipelineEngine.__init__: is_pipe_partitioned = is_grad_partitioned =
                       * is_model_parallel (above) */
                      .pipe_partitioned = TRUE,
                      .pipe_regathers_output = TRUE,
                      /* PipelineEngine.__init__: enable_backward_allreduce = False ("We schedule
                       * the all-reduces"); TrainSchedule's last step runs ReduceTiedGrads and
                       * ReduceGrads: _exec_reduce_grads -> allreduce_gradients ->, at ZeRO-1,
                       * stage_1_and_2.py reduce_gradients(pipeline_parallel=True), which walks
                       * each group's parameters in order through the IPG buckets
                       * (reduce_ready_partitions_and_remove_grads, average_tensor) */
                      .pipe_reduces_after = TRUE},
    [FW_MEGATRON] = {.name = "megatron",
                     .ddp_overlap = TRUE,
                     .close_before_overflow = FALSE,
                     .first_bucket_bytes = 0,
                     .zero_stages = 0xb, /* DDP, distributed optimizer, Megatron-FSDP */
                     .gather = GATHER_FLAT_UNIT,
                     .reduce_per_unit = TRUE,
                     /* custom_fsdp's _pre_forward prefetches the next layer with no limit */
                     .gather_fwd_prefetch = TRUE,
                     .gather_limit = FALSE,
                     .dgrad_overlap = TRUE,
                     .fp8_weight_cache = TRUE},
    [FW_PYTORCH] = {.name = "pytorch",
                    .ddp_overlap = TRUE,
                    .close_before_overflow = FALSE,
                    .first_bucket_bytes = 1024.0 * 1024.0,
                    .zero_stages = 0xd, /* DDP, FSDP SHARD_GRAD_OP and FULL_SHARD */
                    .gather = GATHER_FLAT_UNIT,
                    .zero2_gathers_in_forward = TRUE,
                    .reduce_per_unit = TRUE,
                    /* FullyShardedDataParallel.__init__: forward_prefetch False,
                     * limit_all_gathers True */
                    .gather_fwd_prefetch = FALSE,
                    .gather_limit = TRUE},
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
 *   Megatron-FSDP keeps the same per parameter, all of it sharded (the memory model's stage 3):
 *   its ParamAndGradBuffer holds a bf16 model-weight shard, an fp32 main-weight shard
 *   (preserve_fp32_weights) and an fp32 main-grad shard (grad_reduce_in_fp32), and the
 *   optimizer its moments; it gathers bf16 and reduce-scatters fp32.
 * - PyTorch DDP: mixed precision is torch.autocast over fp32 parameters (the AMP recipe,
 *   torch/amp/autocast_mode.py): fp32 weights and gradients, so DDP's buckets and its allreduce
 *   are fp32, and AdamW keeps momentum and variance (8 bytes), the weights being their own
 *   master copy; autocast caches the half-precision copy of every weight it casts
 *   (autocast_mode.cpp cached_casts) until the autocast region exits, and autograd keeps it for
 *   backward: e bytes more per parameter.
 * - PyTorch FSDP (zero 2, 3) with MixedPrecision(param_dtype = the training precision): fp32
 *   sharded parameters, gradients and AdamW state (4 + 4 + 8, all sharded by the memory model);
 *   the unit is allgathered in param_dtype (the unsharded copy lives in the gathered buffers) and
 *   its gradient reduce-scattered in it too (reduce_dtype None "takes on the param_dtype value",
 *   fsdp/api.py MixedPrecision), then cast to fp32 for the shard. */
FrameworkBytes framework_bytes(FrameworkId id, int zero, Precision prec) {
    int e = model_elem_bytes(prec);
    if (prec == PREC_FP32)
        return (FrameworkBytes){4, 4, 8.0, 4, 4};
    switch (id) {
    case FW_MEGATRON: {
        int g = prec == PREC_FP16 ? e : 4;
        return (FrameworkBytes){e, g, 12.0, g, e};
    }
    case FW_PYTORCH:
        if (zero >= 2)
            return (FrameworkBytes){4, 4, 8.0, e, e};
        /* and autocast's cast cache: a half copy of each weight, made at its first use in forward
         * and held for backward */
        return (FrameworkBytes){4 + e, 4, 8.0, 4, e};
    case FW_DEEPSPEED:
    default:
        return (FrameworkBytes){e, e, 12.0, e, e};
    }
}

gboolean framework_has_zero(FrameworkId id, int zero) {
    return zero >= 0 && zero < 4 && (framework_get(id)->zero_stages >> zero & 1u);
}

/* DeepSpeed (runtime/zero/parameter_offload.py _register_hooks_recursively) hooks every module,
 * with or without parameters: _pre_forward_module_hook -> fetch_sub_module and
 * _post_forward_module_hook -> release_sub_module, and the same pair around its backward
 * (_pre_backward_module_hook, _post_backward_module_hook). FSDP runs one pre- and one post- hook
 * per wrap unit and pass (_pre_forward / _post_forward, _pre_backward_hook /
 * _post_backward_hook). */
int framework_gather_hooks(FrameworkId id, int modules) {
    return framework_get(id)->gather == GATHER_FLAT_UNIT ? 2 : 2 * modules;
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
