/* workload_internal: what workload.c and the parallelisms' plug-ins (parallelism.h) share while a
 * stage's program is built. Not for use outside sim/training/. */
#ifndef SIM_WORKLOAD_INTERNAL_H
#define SIM_WORKLOAD_INTERNAL_H

#include "device.h"
#include "framework.h"
#include "workload.h"
#include "zeropp.h"

#define NO_TASK G_MAXUINT32
#define PP_BATCH_MAX 4 /* sends and receives in one batched pipeline call */

typedef struct Builder Builder;

/* A parallelism's plug-in (parallelism.h) */
typedef struct Parallelism Parallelism;
#define PAR_MAX 6 /* plug-ins (blocks.c's table) */

/* What a use's gathers wait for on the GPU besides the gather stream's order (gathers.c
 * fsdp_order: PyTorch FSDP's prefetch settings). */
typedef enum {
    WAIT_ISSUE,   /* the compute before the use they are issued at (front): every default */
    WAIT_USE,     /* the end of use wait_use's compute (forward_prefetch's rate limiter) */
    WAIT_NOTHING, /* nothing (limit_all_gathers off in forward) */
    WAIT_REDUCE,  /* the reduce-scatter the use before issued, else its compute (backward_prefetch
                     None: NCCL runs the gather after it) */
} GatherWait;

/* One use of a unit's parameters under ZeRO-3: its forward, or its recomputation and backward. */
typedef struct {
    guint unit;       /* index in Builder.units */
    int micro;        /* micro-batch */
    guint front;      /* the use at whose start these parameters are gathered (<= this one) */
    gboolean bwd;     /* the recomputation and backward, not the forward */
    gboolean again;   /* not the unit's first use of the iteration (ZeRO++ hpZ: secondary) */
    gboolean kept;    /* its parameters are still whole from an earlier use (FSDP SHARD_GRAD_OP's
                         backward; FSDP's root between its gather and its reshard): nothing to
                         gather */
    gboolean root;    /* a use of FSDP's root flat parameter (Builder.fsdp_root): what it gathers
                         is the whole root's */
    guint32 gathered; /* its last allgather task, once emitted */
    GatherWait wait;  /* what its gathers wait for (FSDP; WAIT_ISSUE otherwise) */
    guint wait_use;   /* WAIT_USE: the use whose compute they follow (< front) */
    guint32 done;     /* its last compute task, once the next use starts */
    guint32 dp0;      /* Builder.last_dp as it started */
    guint32 rs;       /* the last reduction it issued, once the next use starts; NO_TASK: none */
} UnitUse;

/* One gradient tensor in the open bucket: its size and the larger of its two dimensions (0: a
 * vector), model_unit_tensor_widths. */
typedef struct {
    double n, width;
} BucketTensor;

/* A pipeline send DeepSpeed's engine leaves for the next step (pp_calls.c): its direction
 * (activations or gradients), micro-batch and the task that produced it. */
typedef struct {
    gboolean set, fwd;
    int micro;
    guint32 after;
} DsPending;

/* A growable array of fixed-size elements the builder appends to inline (emit runs once per task
 * of every micro-batch: a GArray's out-of-line append was a fifth of building a long pipeline). */
typedef struct {
    void *v;
    guint32 n, cap; /* elements in use, allocated */
} Buf;

static inline void *buf_push(Buf *a, size_t size) {
    if (a->n == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 256;
        a->v = g_realloc_n(a->v, a->cap, size);
    }
    return (char *)a->v + (size_t)a->n++ * size;
}

struct Builder {
    const Scenario *sc;
    const Layout *lay;
    const Framework *fw;
    const DeviceSpec *dev; /* the GPU (ZeRO++'s quantization kernels) */
    Program *pg;           /* its scalars; the tasks, deps and streams build in the Bufs below and
                              move into pg's arrays when the stage is done */
    Buf tasks;             /* Task, issue order */
    Buf deps;              /* guint32 */
    Buf streams[STREAM_COUNT]; /* guint32 task indices */
    Buf dep_of;                /* guint32 by task: TASK_DEP(its stream, its position there) */
    int stage;
    const Parallelism *par[PAR_MAX]; /* the plug-ins the scenario enables, in wrapping order */
    void *par_state[PAR_MAX];        /* each one's state for the stage (blocks_state), or NULL */
    int npar;
    gboolean sp;              /* sequence parallelism (par_sp) replaces TP's allreduces */
    gboolean sg;              /* pipeline sends split over TP and gathered (workload.c sg_gather) */
    GArray *units;            /* ParamUnit, forward order, chunk after chunk */
    int v;                    /* model chunks on this stage */
    guint *chunk_first;       /* units of chunk c: [chunk_first[c], chunk_first[c + 1]) */
    SimTime fwd[SEG_COUNT];   /* forward time of each segment, picoseconds, its fp8 weight casts
                                 apart (wcast) */
    SimTime wcast[SEG_COUNT]; /* the segment's fp8 weight casts (MODEL_FP8_WEIGHT_CAST): run
                                 before a forward block's kernels where TE has no cached copy
                                 (blocks.c weight_casts) */
    int nwcast[SEG_COUNT];    /* their kernels */
    SimTime bwd[SEG_COUNT];   /* backward time of each segment, picoseconds */
    SimTime attn_core;        /* attention scores, softmax, dropout, context: what selective
                                 recomputation redoes */
    int nfwd[SEG_COUNT];      /* kernels of each segment's forward */
    int nbwd[SEG_COUNT];      /* kernels of each segment's backward */
    int ncore;                /* kernels of the attention core */
    /* ATen operators the host dispatches per kernel the model runs (model_host.c's measured
     * counts over this model's kernels of a dense layer): forward, backward, backward while
     * gradients accumulate */
    double host_per_kernel[3];
    gboolean hooks;           /* DeepSpeed ZeRO-1/2: a gradient hook per parameter tensor */
    gboolean grads_reduce;    /* the pass under way produces weight gradients (par_dp.c) */
    gboolean grads_overlap;   /* ... and reduces them as they appear, not after backward */
    int chunks;               /* tp_comm_overlap: chunks of each producer GEMM (0: not split) */
    SimTime prod[SEG_COUNT];  /* forward time of the segment's producer GEMM, picoseconds */
    SimTime chunk[SEG_COUNT]; /* of one of its row chunks, picoseconds */
    /* Framework.dgrad_overlap: per segment, its backward's last weight-gradient GEMM (the
     * column-parallel input linear's) and the kernels after it (the norm's backward), which
     * blocks.c runs apart so that the input gradient's reduction overlaps the GEMM; colw 0 where
     * the split does not apply (no tensor parallelism, a split backward, another framework) */
    SimTime colw[SEG_COUNT], tail[SEG_COUNT];
    int ncolw[SEG_COUNT], ntail[SEG_COUNT];
    guint32 wgrad_input;   /* sequence parallelism: the backward's gather of the stored input */
    double act_bytes;      /* b s h activations, bytes */
    double ce_bytes;       /* b s fp32 values: one vocabulary-parallel cross-entropy reduction */
    int e;                 /* bytes per element */
    int ge;                /* bytes per gradient element, as the framework reduces them */
    int pe;                /* bytes per parameter element, as ZeRO-3 / FSDP gathers them */
    gboolean unit_buckets; /* FSDP: one reduce-scatter per unit, whatever the bucket size */
    gboolean logger;       /* DeepSpeed's comms_logger synchronises around its calls */
    double bucket_params;  /* gradients waiting in the open bucket, parameters */
    Buf bucket_tensors;    /* BucketTensor: its tensors, in order (qgZ takes them one by one) */
    guint32 bucket_ready;  /* task after which the open bucket's gradients exist */
    int buckets_flushed;   /* in this reduction pass (PyTorch caps the first bucket lower) */
    /* FSDP (gathers.c): the stage's units outside the wrapped transformer layers (embedding,
     * head with the final norm) are the root FullyShardedDataParallel's one flat parameter:
     * gathered once per micro-batch, kept to its last use in backward, reduce-scattered once */
    gboolean fsdp_root;
    guint root_first;   /* the root's first unit in forward order (its backward is the root's
                           last use in a micro-batch); meaningful when root_units > 0 */
    int root_units;     /* units in the root: 0 (a middle pipeline stage), 1 or 2 */
    double root_params; /* their parameters, gathered and reduce-scattered together */
    /* DeepSpeed ZeRO-1/2's reduce per partition owner (framework.c): the stage's dense parameters
     * flattened in forward order and split into dp partitions of part_params each. Gradients
     * arrive in reverse order from backward's hooks, so the open bucket ends at grad_at in that
     * flat order; after backward (grads_after_backward, grads_ascending) they go in forward order
     * and it starts there. The same for the experts' own groups over the expert-data-parallel
     * ranks (xpart_params, xgrad_at). */
    double part_params, grad_at, xpart_params, xgrad_at;
    gboolean grads_ascending;
    Dim grad_dim, xgrad_dim; /* the dense parameters' and the experts' gradient group
                                (workload_grad_dim) */
    guint32 last_dp;         /* last task on the DP reduction stream */
    guint32 last_hsdp;    /* last task on STREAM_DP_ALLREDUCE (FSDP HYBRID_SHARD), NO_TASK: none */
    guint32 last_compute; /* last compute task emitted */
    /* pipeline sends and receives the next compute task waits for (NO_TASK: none): a send
     * (p2p_block[0]), or the tasks of a batch (pp_batch.c) */
    guint32 p2p_block[PP_BATCH_MAX];
    /* Megatron-LM's batched pipeline calls under the interleaved schedule (pp_batch.c): each
     * direction's receive posted for the next pass (0 activations, 1 gradients) and the send its
     * step has to post (its micro-batch; -1 none); batch_in NO_TASK when none */
    gboolean batched;
    guint32 batch_in[2];
    int batch_out_micro[2];
    /* DeepSpeed's pipeline engine (pp_calls.c): its step order, and the send a pass leaves for
     * the next step's exchange */
    gboolean ds_steps;
    DsPending ds_pend;
    guint32 *loss;         /* per micro-batch on the last stage: the task that ends the loss */
    gboolean vshape;       /* ZB-V's chunks in a V (schedule_virtual_stage) */
    guint32 *turn;         /* with vshape, per micro-batch on the last stage: chunk 0's output,
                              which chunk 1's forward reads, then chunk 1's input gradient, which
                              chunk 0's B reads (the V's turn: no send) */
    GArray *uses;          /* UnitUse: ZeRO-3 parameter uses in program order; NULL without */
    guint use_next;        /* the use the program reaches next */
    guint gather_next;     /* the first use whose gathers are not emitted yet */
    gboolean sync_layers;  /* the host synchronises at checkpointed layers' boundaries */
    gboolean sync_next;    /* the next task emitted is such a boundary */
    gboolean sync_compute; /* the next compute task is (after pipeline sends and receives) */
    /* mixture of experts (par_ep.c) */
    SimTime moe_fwd[MOE_PART_COUNT]; /* forward time of each MoE part, picoseconds, the fp8
                                        weight casts apart (moe_wcast) */
    SimTime moe_wcast;               /* a MoE MLP block's fp8 weight casts, as wcast */
    int moe_nwcast;
    SimTime moe_bwd[MOE_PART_COUNT]; /* backward time of each MoE part, picoseconds */
    int moe_nfwd[MOE_PART_COUNT];    /* kernels of each part's forward */
    int moe_nbwd[MOE_PART_COUNT];    /* kernels of each part's backward */
    double moe_a2a_bytes;            /* one dispatch or combine all-to-all, bytes per rank */
    guint32 moe_expert_ready;        /* the task after which the last MoE layer's expert
                                        gradients exist (set by its backward) */
    double xbucket_params;           /* expert gradients in the open expert bucket, parameters */
    guint32 xbucket_ready;           /* task after which they exist */
    /* zero-bubble schedules (wgrad.c): with `split` the emitters' backward is the input-gradient
     * pass B (bwd[] and moe_bwd[] hold B's part) and each unit's weight gradients run in its W
     * pass, where its gradients become ready */
    gboolean split;
    SimTime wgrad[SEG_COUNT];          /* W time of each segment, picoseconds */
    int nwgrad[SEG_COUNT];             /* its kernels */
    SimTime moe_wgrad[MOE_PART_COUNT]; /* W time of each MoE part, picoseconds */
    int moe_nwgrad[MOE_PART_COUNT];    /* its kernels */
};

/* Append task t after deps (NO_TASK entries skipped); returns its index. */
guint32 emit(Builder *b, Task t, const guint32 *deps, int ndeps);
/* A compute task of dur picoseconds and `kernels` kernels after dep1 and dep2. */
guint32 compute_k(Builder *b, SimTime dur, int kernels, Phase ph, int layer, int micro,
                  guint32 dep1, guint32 dep2);
/* One kernel's time as the stage runs it (sequence parallelism's split applied), picoseconds. */
SimTime seg_op_time(const Builder *b, ModelOp *op);
/* One segment's kernels in one pass (bwd FALSE: forward or its recomputation). */
guint32 seg_compute(Builder *b, Segment seg, gboolean bwd, Phase ph, int layer, int micro,
                    guint32 dep1, guint32 dep2);
/* A collective on dim's stream after `after`; NO_TASK when the group is one rank. */
guint32 collective(Builder *b, CollOp op, Dim dim, double bytes, Phase ph, int layer, int micro,
                   guint32 after);
/* The transformer layer index of a unit: -1 embedding, layers for the head. */
int unit_layer(const Builder *b, const ParamUnit *u);
/* collective() on stream s. */
guint32 collective_on(Builder *b, StreamId s, CollOp op, Dim dim, double bytes, Phase ph, int layer,
                      int micro, guint32 after);
/* ZeRO++: a chain of collectives and kernels (zeropp.h) on stream s, after `after`; returns its
 * last task. */
guint32 emit_steps(Builder *b, StreamId s, const ZppStep *steps, int n, Phase ph, int layer,
                   int micro, guint32 after);

/* grads.c: data-parallel gradients. Whether this micro-batch's backward reduces while it runs;
 * unit u's gradients exist (seg_task: the task ending each segment's backward); DeepSpeed
 * ZeRO-1/2's per-parameter hooks on those tasks; DeepSpeed's reduction after the last backward
 * (zero 0); close the open bucket, the open expert bucket. */
gboolean grads_reduce_in_backward(const Builder *b, gboolean last_micro);
/* Whether DeepSpeed's pipeline engine reduces the stage's gradients after its last backward. */
gboolean grads_after_pipeline(const Builder *b);
void grads_ready(Builder *b, const ParamUnit *u, int micro, const guint32 *seg_task);
/* grads.c: unit i's gradients exist in a backward (or W pass) that reduces them: grads_ready
 * and, FSDP, the reduce-scatter of its flat gradient (the root's after its last unit). */
void grads_unit(Builder *b, guint i, int micro, const guint32 *seg_task);
void grads_hooks(Builder *b, const ParamUnit *u, const guint32 *seg_task);
void grads_after_backward(Builder *b, int micro);
void grads_flush(Builder *b, int micro);
void grads_flush_experts(Builder *b, int micro);

/* grads.c: the open bucket's place at the start of a pass that makes chunk `chunk`'s gradients
 * (backward, or W under a split schedule): DeepSpeed's flat order ends where its parameters do. */
void grads_begin_pass(Builder *b, int chunk);

/* wgrad.c: the backward split into B and W (zero-bubble schedules). Move the weight-gradient
 * kernels' time out of bwd[] and moe_bwd[] into wgrad[] and moe_wgrad[] (after moe_prepare);
 * chunk `chunk`'s W pass for one micro-batch, with the gradient hooks and reductions a
 * backward has otherwise (workload_wgrad_held_bytes in workload.h is wgrad.c's too). */
void wgrad_prepare(Builder *b, const DeviceSpec *dev);
/* Framework.dgrad_overlap's split of each segment's backward (Builder.colw, tail). */
void wgrad_dgrad_prepare(Builder *b, const DeviceSpec *dev);
void wgrad_pass(Builder *b, int micro, int chunk, gboolean last_micro, gboolean last_pass);

/* A pipeline send or receive (kind) of one micro-batch's activations (ph PHASE_FWD) or gradients
 * (PHASE_BWD) on `stream`, after `after`; nothing waits for it (workload.c's p2p does that). */
guint32 p2p_task(Builder *b, TaskKind kind, StreamId stream, Phase ph, int micro, guint32 after);

/* pp_calls.c: a pass's input from the neighbouring stage (recv FALSE at the pipeline's ends:
 * NO_TASK, though DeepSpeed's step still sends what the step before left), its output to it after
 * `after`, the send still held after the last pass, and whether the stage runs DeepSpeed's engine
 * step order (Builder.ds_steps). */
guint32 pp_receive(Builder *b, int chunk, gboolean fwd, int micro, gboolean recv);
void pp_send(Builder *b, int chunk, gboolean fwd, int micro, guint32 after);
void pp_flush(Builder *b);
gboolean pp_ds_steps(const Scenario *sc);

/* pp_batch.c: Megatron-LM's batched pipeline calls under the interleaved schedule. Whether the
 * stage's program posts them (Builder.batched); the pending receive a pass of direction dir
 * (0 forward, 1 backward) reads, taken; the send a pass leaves for its step's batch; and after
 * pass k of passes (the interleaved schedule's list), the batch that ends its step, if one
 * does (k -1: the receive before the first step). */
gboolean pp_batch_enabled(const Scenario *sc);
guint32 pp_batch_take(Builder *b, int dir);
void pp_batch_put(Builder *b, int dir, int micro);
void pp_batch_step(Builder *b, const GArray *passes, int k);

/* gathers.c: ZeRO-3 / FSDP parameters. Plan the stage's uses from its passes (nothing without
 * ZeRO-3 or FSDP; it also sets Builder's FSDP root fields); the program reaches its next use:
 * issue the gathers due and return the one the use waits for (NO_TASK: none); the use's hooks
 * onto its first compute task from task `from`. */
void gathers_plan(Builder *b, const GArray *passes);
guint32 gathers_use(Builder *b);
void gathers_hooks(Builder *b, const ParamUnit *u, guint32 from);

#endif
