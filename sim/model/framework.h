/* framework: what the training framework being modelled does with data-parallel gradients and
 * ZeRO-3 parameters, as a table of behaviours with their sources.
 *
 * For: the choices that differ between DeepSpeed (what GPT-NeoX, and so the study, runs),
 * Megatron-LM and PyTorch DDP: whether gradients are reduced while backward runs or after it, how
 * buckets are filled and how large they are, which ZeRO stages exist, and ZeRO-3's prefetching.
 * Not for: building the programs (workload.c) or timing anything.
 *
 * In model/, below input, although the workload (training/) is what applies it: the scenario
 * (input/) names the framework, checks which ZeRO stages it has and takes its default bucket
 * from it, so the table must sit below input (SIM_LAYERS, tests/layering.sh). Like the rest of
 * model/ it is pure data: bytes per parameter beside model.c's memory, no time and no I/O. */
#ifndef SIM_FRAMEWORK_H
#define SIM_FRAMEWORK_H

#include <glib.h>

#include "model.h"

typedef enum { FW_DEEPSPEED, FW_MEGATRON, FW_PYTORCH, FW_COUNT } FrameworkId;

/* How ZeRO-3 (and FSDP's SHARD_GRAD_OP) gathers parameters before a unit's use (framework.c says
 * whose code does which). */
typedef enum {
    /* DeepSpeed's PartitionedParameterCoordinator: the prefetch window of
     * stage3_max_live_parameters, one coalesced allgather per fetch of at most
     * stage3_prefetch_bucket_size elements, parameters under stage3_param_persistence_threshold
     * kept whole, a Python hook before and after every module's every pass */
    GATHER_COORDINATOR,
    /* PyTorch FSDP and Megatron-FSDP: one flat allgather per wrap unit (a layer), the next
     * unit's issued as the current one starts (BACKWARD_PRE, and the rate limiter's two in
     * flight in forward, or Megatron-FSDP's forward prefetch), hooks per unit */
    GATHER_FLAT_UNIT,
} GatherStyle;

typedef struct {
    const char *name; /* the scenario's training.framework value */
    /* Plain data parallelism (zero 0): gradients reduced in buckets while backward runs (TRUE), or
     * all of them after the last backward of the accumulation (FALSE), in forward order. */
    gboolean ddp_overlap;
    /* A bucket closes before a tensor that would overflow it (DeepSpeed's IPG bucket) rather than
     * once it reaches the cap (PyTorch's and Megatron's bucket assignment). */
    gboolean close_before_overflow;
    double first_bucket_bytes; /* cap of the first bucket, bytes; 0: the same as the others */
    /* ZeRO-1/2 reduce a gradient bucket with one rooted reduce per partition owner the bucket
     * spans (DeepSpeed's average_tensor) rather than one reduce-scatter. */
    gboolean reduce_per_owner;
    /* The ZeRO stages the framework has, bit z for stage z. */
    unsigned zero_stages;
    GatherStyle gather; /* ZeRO-3's parameter gathers */
    /* ZeRO-2 gathers parameters before each forward and keeps them to the backward (FSDP's
     * SHARD_GRAD_OP) instead of allgathering the updated ones after the optimizer (DeepSpeed). */
    gboolean zero2_gathers_in_forward;
    /* ZeRO-2/3 reduce-scatter each unit's gradients as soon as its backward ends (FSDP's
     * post-backward hook per FlatParameter) instead of filling buckets. */
    gboolean reduce_per_unit;
    /* The flat-unit gathers' defaults where no setting overrides them (scenario_fsdp.c): the
     * next unit's allgather issued as the current one's forward starts, and at most two gathers
     * in flight (FSDP's rate limiter). */
    gboolean gather_fwd_prefetch;
    gboolean gather_limit;
    /* A column-parallel linear's backward reduces its input gradient (allreduce, or
     * reduce-scatter under sequence parallelism) asynchronously while its weight-gradient GEMM
     * runs, and waits for it only after (Megatron-LM's
     * LinearWithGradAccumulationAndAsyncCommunication), instead of after the whole block. */
    gboolean dgrad_overlap;
    /* The pipeline engine splits each pipeline send over the tensor-parallel ranks (each sends
     * its 1/t) and the receiver all-gathers it back before its pass: parallel.
     * pipeline_scatter_gather's default where the scenario does not set it. */
    gboolean pipe_partitioned;
    /* ... and a stage keeps only its 1/t of the output it sent, all-gathering it back before the
     * micro-batch's backward. */
    gboolean pipe_regathers_output;
    /* With pipeline parallelism the pipeline engine turns the backward's gradient hooks off and
     * reduces every gradient after the last backward, ZeRO-1's per-owner reduces included, in
     * the parameters' own (forward) order. */
    gboolean pipe_reduces_after;
    /* Under fp8, Transformer Engine casts each weight (and its transpose) once per step and reuses
     * it in the later micro-batches: the framework tells TE which micro-batch is the first
     * (Megatron-core: forward_step calls set_is_first_microbatch(), pipeline_parallel/
     * schedules.py, and its TE linears pass is_first_microbatch, extensions/transformer_engine.py).
     * Without it TE casts every weight in every forward. */
    gboolean fp8_weight_cache;
} Framework;

/* How a framework stores what one parameter costs, in bytes, for a compute precision: the
 * weights it keeps, the gradients it keeps and reduces, the optimizer's state (framework.c says
 * whose code says so). */
typedef struct {
    int param;        /* bytes per parameter of the weights held */
    int grad;         /* bytes per gradient element held */
    double optimizer; /* Adam's state, bytes per parameter (master copy where kept apart) */
    int reduce;       /* bytes per gradient element reduced over data parallelism */
    int gather;       /* bytes per parameter element gathered (ZeRO-3, FSDP) */
} FrameworkBytes;

FrameworkBytes framework_bytes(FrameworkId id, int zero, Precision prec);

/* Whether the framework has ZeRO stage `zero`. */
gboolean framework_has_zero(FrameworkId id, int zero);

/* The Python hooks a framework's ZeRO-3 (or FSDP) runs for one unit in one pass (forward,
 * recomputation or backward), for units of `modules` modules: DeepSpeed a fetch before and a
 * release after every module, FSDP one pair per wrap unit. */
int framework_gather_hooks(FrameworkId id, int modules);

/* The framework's behaviours; never NULL for a valid id. */
const Framework *framework_get(FrameworkId id);

/* Names, NULL-terminated, in FrameworkId order (for the scenario parser). */
extern const char *const framework_names[];

/* Default gradient bucket of the framework, bytes, for dp ranks and e bytes per gradient
 * element. */
double framework_default_bucket_bytes(FrameworkId id, int dp, int e);

/* DeepSpeed ZeRO-3 defaults (deepspeed/runtime/zero/config.py): stage3_prefetch_bucket_size
 * 5e7 elements, stage3_max_live_parameters 1e9 elements, stage3_param_persistence_threshold 1e5
 * elements. */
#define FRAMEWORK_ZERO3_PREFETCH_ELEMS 5e7
#define FRAMEWORK_ZERO3_MAX_LIVE_ELEMS 1e9
#define FRAMEWORK_ZERO3_PERSISTENCE_ELEMS 1e5
#define FRAMEWORK_ZERO3_MAX_REUSE_ELEMS 1e9 /* stage3_max_reuse_distance */

#endif
