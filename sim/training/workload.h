/* workload: each rank's program for one training iteration.
 *
 * For: the order of forward, recompute, backward and optimizer work per layer and micro-batch, and
 * the collectives that data parallelism (DDP, ZeRO-1/2/3), Megatron tensor parallelism and pipeline
 * parallelism (GPipe, 1F1B) put between them, with their dependencies.
 * Not for: running them (executor.c) or timing communication (collectives.c).
 *
 * Every rank of one pipeline stage runs the same program; only its groups differ. So a program is
 * built once per stage, O(stages x tasks) memory however many ranks there are, and a rank is a
 * cursor over its stage's program. */
#ifndef SIM_WORKLOAD_H
#define SIM_WORKLOAD_H

#include "collectives.h"
#include "layout.h"
#include "scenario.h"

/* A GPU runs work in streams: in order within a stream, concurrently across streams. */
typedef enum {
    STREAM_COMPUTE,
    STREAM_TP,
    STREAM_DP,           /* gradient reductions; ZeRO-1/2 parameter allgathers after the step */
    STREAM_DP_GATHER,    /* ZeRO-3 parameter allgathers (DeepSpeed's separate allgather stream) */
    STREAM_PP_SEND_FWD,  /* activations to the next stage */
    STREAM_PP_RECV_FWD,  /* activations from the previous stage */
    STREAM_PP_SEND_BWD,  /* gradients to the previous stage */
    STREAM_PP_RECV_BWD,  /* gradients from the next stage */
    STREAM_DP_ALLREDUCE, /* FSDP HYBRID_SHARD's all-reduce of each gradient shard across shard
                            groups (torch's _all_reduce_stream, grads.c) */
    /* ZB-V's chunk 1, the V's way back (schedule_virtual_stage): its activations go to the
       previous stage and its gradients to the next, each on streams of its own so that neither
       chunk's messages wait behind the other's */
    STREAM_PP_SEND_FWD_V, /* chunk 1's activations to the previous stage */
    STREAM_PP_RECV_FWD_V, /* ... from the next stage */
    STREAM_PP_SEND_BWD_V, /* chunk 1's gradients to the next stage */
    STREAM_PP_RECV_BWD_V, /* ... from the previous stage */
    STREAM_COUNT
} StreamId;

/* Pipeline channels: what a receiver gets on which receive stream, from which neighbour.
 * 0 activations from the previous stage, 1 gradients from the next, 2 ZB-V chunk 1's activations
 * from the next, 3 its gradients from the previous: bit 0 says gradients, bit 1 the V's way back.
 * -1 for a stream that is not a pipeline send or receive. */
static inline int workload_pp_channel(int stream) {
    switch (stream) {
    case STREAM_PP_SEND_FWD:
    case STREAM_PP_RECV_FWD:
        return 0;
    case STREAM_PP_SEND_BWD:
    case STREAM_PP_RECV_BWD:
        return 1;
    case STREAM_PP_SEND_FWD_V:
    case STREAM_PP_RECV_FWD_V:
        return 2;
    case STREAM_PP_SEND_BWD_V:
    case STREAM_PP_RECV_BWD_V:
        return 3;
    default:
        return -1;
    }
}

/* Whether channel c's sender is the receiver's previous stage (else its next). */
static inline gboolean workload_pp_from_prev(int c) {
    return c == 0 || c == 3;
}

#define WORKLOAD_PP_CHANNELS 4

/* TASK_KERNEL: a kernel on a communication stream that is part of a communication (ZeRO++'s
 * quantization kernels): it takes its duration there, counts as that communication in flight for
 * (op, dim), and does not occupy the compute stream. */
typedef enum { TASK_COMPUTE, TASK_COLL, TASK_SEND, TASK_RECV, TASK_KERNEL } TaskKind;
typedef enum {
    PHASE_FWD,
    PHASE_RECOMPUTE,
    PHASE_BWD,
    PHASE_OPTIMIZER,
    PHASE_GRADS,
    PHASE_PARAMS
} Phase;

/* 32 bytes: a 512-micro-batch pipeline's programs hold about a million tasks. */
typedef struct {
    uint8_t kind;          /* TaskKind */
    uint8_t stream;        /* StreamId */
    uint8_t op;            /* CollOp, for communication tasks */
    uint8_t dim;           /* Dim, for communication tasks */
    uint8_t phase;         /* Phase */
    uint8_t host_sync : 1; /* the host synchronises with the device before issuing this task */
    uint8_t hooks : 7;     /* DeepSpeed's per-parameter gradient hooks the host runs after it */
    uint16_t kernels;      /* compute tasks: kernels the GPU runs for it */
    int32_t layer;         /* transformer layer; -1 embedding, layers = head, -2 none */
    int32_t micro;         /* micro-batch, -1 none */
    uint32_t dep_first;    /* first of dep_count entries in Program.deps */
    uint16_t dep_count;
    uint16_t host_ops; /* compute tasks: ATen operators the host dispatches for it */
    union {
        SimTime duration; /* TASK_COMPUTE and TASK_KERNEL: picoseconds */
        double bytes;     /* TASK_COLL, TASK_SEND, TASK_RECV: message size m, bytes */
    };
} Task;

/* A dependency in Program.deps: the task at position seq of stream s, as TASK_DEP(s, seq) (a
 * stream's position is what a rank's progress counts, so checking one reads no task). */
#define TASK_DEP_SEQ_BITS 28
#define TASK_DEP(s, seq) ((guint32)(s) << TASK_DEP_SEQ_BITS | (guint32)(seq))
#define TASK_DEP_STREAM(d) ((d) >> TASK_DEP_SEQ_BITS)
#define TASK_DEP_POS(d) ((d) & ((1u << TASK_DEP_SEQ_BITS) - 1))

typedef struct {
    /* plain arrays in the workload's arena (bigmem.h), valid while the workload lives */
    Task *tasks; /* ntasks, in issue order */
    guint32 ntasks;
    guint32 *deps;                  /* TASK_DEP(stream, position) each task waits for */
    guint32 *streams[STREAM_COUNT]; /* task indices, in stream order, nstream[s] of them */
    guint32 nstream[STREAM_COUNT];
    double params;        /* parameters one rank of the stage holds */
    double gathered_peak; /* ZeRO-3: most gathered parameters alive at once */
} Program;

typedef struct Workload Workload;

Workload *workload_new(const Scenario *sc, const Topology *topo);
void workload_free(Workload *wl);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Workload, workload_free)

const Scenario *workload_scenario(const Workload *wl);
const Program *workload_program(const Workload *wl, int stage);

/* Which rank is which coordinate, its groups and pipeline neighbours (layout.h); rank r runs on
 * GPU r. */
const Layout *workload_layout(const Workload *wl);
/* The layout's shape a scenario asks for. */
LayoutShape workload_layout_shape(const Scenario *sc);
/* Whether one block of DP replicas (DIM_DP_INTRA) may stand for the others: not where an enabled
 * parallelism says the replicas differ (parallelism.h replicas_differ: expert parallelism's
 * all-to-alls), nor where FSDP's HYBRID_SHARD groups or ZeRO++'s hpZ partitions are smaller
 * than, or straddle, the blocks of replicas a node's pipeline stages share (their sends would
 * load node links and NICs the block leaves idle); then every rank is simulated
 * (sim_dedup_mode). */
gboolean workload_replicas_exact(const Scenario *sc);

/* Parameters by where their gradients are reduced and their ZeRO partitions are cut: the dense
 * ones (attention, dense MLPs, embedding, head) and a MoE layer's experts. */
typedef enum { PARAMS_DENSE, PARAMS_EXPERT } ParamClass;
/* The dimension whose group reduces a class's gradients and holds its ZeRO partitions, as the
 * enabled parallelisms declare it (parallelism.h, grad_dim): data parallelism's group (with
 * context parallelism, dp x cp ranks: layout.h) unless one claims the class (expert
 * parallelism: the experts' over DIM_EDP). */
Dim workload_grad_dim(const Scenario *sc, ParamClass c);
/* Whether deduplicated runs issue the collectives of traffic class cls with the replicas' groups
 * as images (parallelism.h, dedup_images: context parallelism's) */
gboolean workload_dim_images(Dim cls);
/* Whether reports show link traffic class cls for sc: always, but for a class a parallelism
 * owns, only where it is on (parallelism.h, report_class) */
gboolean workload_class_reported(const Scenario *sc, Dim cls);
/* The ranks of that group. */
int workload_grad_ranks(const Scenario *sc, ParamClass c);
/* The parameters one rank of stage 0 updates in the optimizer step, ZeRO's partition of them
 * (dense ones over their gradient group): what device_ops_in_range sizes the optimizer kernel by
 * before a run is built. */
double workload_first_stage_opt_params(const Scenario *sc);

/* FLOPs of one iteration counted as model FLOPs (no recomputation), whole job: of the scenario
 * alone, without building its programs. */
double workload_model_flops(const Scenario *sc);

/* FLOPs of one iteration, whole job, as GPT-NeoX's get_flops counts them (model_neox_flops):
 * recomputation included when the scenario recomputes full layers (GPT-NeoX's
 * checkpoint_activations; selective recomputation has no GPT-NeoX switch and counts 3x). */
double workload_neox_flops(const Scenario *sc);

/* Memory of the rank with the largest footprint. */
ModelMemory workload_memory(const Workload *wl);

/* Bytes one micro-batch holds on pipeline stage `stage` from its B pass until its W pass under a
 * zero-bubble schedule (M_W of Qi et al. 2024, Table 1): every weight GEMM's input and output
 * gradient (wgrad.c). */
double workload_wgrad_held_bytes(const Scenario *sc, int stage);
/* The same for the micro-batch's pass through chunk `chunk` of the stage alone. */
double workload_wgrad_chunk_bytes(const Scenario *sc, int stage, int chunk);

#endif
