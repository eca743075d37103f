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
#include "scenario.h"

/* DIM_DP_INTRA and DIM_DP_INTER split data parallelism for ZeRO++ (zeropp.h): the DP ranks of one
 * node (hpZ's secondary partition, qgZ's first all-to-all) and the DP ranks at the same place in
 * every node (qgZ's second all-to-all). Their traffic is data-parallel traffic on the links
 * (workload_dim_class). */
typedef enum { DIM_DP, DIM_TP, DIM_PP, DIM_EP, DIM_DP_INTRA, DIM_DP_INTER, DIM_COUNT } Dim;
#define DIM_LINK_CLASSES (DIM_EP + 1) /* the traffic classes links count bytes by */
const char *workload_dim_name(Dim d);
/* The link traffic class of a dimension's communication: dp, tp, pp or ep. */
Dim workload_dim_class(Dim d);

/* A GPU runs work in streams: in order within a stream, concurrently across streams. */
typedef enum {
    STREAM_COMPUTE,
    STREAM_TP,
    STREAM_DP,          /* gradient reductions; ZeRO-1/2 parameter allgathers after the step */
    STREAM_DP_GATHER,   /* ZeRO-3 parameter allgathers (DeepSpeed's separate allgather stream) */
    STREAM_PP_SEND_FWD, /* activations to the next stage */
    STREAM_PP_RECV_FWD, /* activations from the previous stage */
    STREAM_PP_SEND_BWD, /* gradients to the previous stage */
    STREAM_PP_RECV_BWD, /* gradients from the next stage */
    STREAM_COUNT
} StreamId;

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

typedef struct {
    uint8_t kind;       /* TaskKind */
    uint8_t stream;     /* StreamId */
    uint8_t op;         /* CollOp, for communication tasks */
    uint8_t dim;        /* Dim, for communication tasks */
    uint8_t phase;      /* Phase */
    uint8_t host_sync;  /* the host synchronises with the device before issuing this task */
    uint16_t kernels;   /* compute tasks: kernels the host launches for it */
    int32_t layer;      /* transformer layer; -1 embedding, layers = head, -2 none */
    int32_t micro;      /* micro-batch, -1 none */
    uint32_t seq;       /* position within its stream */
    uint32_t dep_first; /* first of dep_count entries in Program.deps */
    uint32_t dep_count;
    SimTime duration; /* compute and kernel tasks, picoseconds */
    double bytes;     /* message size m of a collective or a send/recv, bytes */
} Task;

typedef struct {
    GArray *tasks;                 /* Task, in issue order */
    GArray *deps;                  /* guint32 task indices each task waits for */
    GArray *streams[STREAM_COUNT]; /* guint32 task indices, in stream order */
    double params;                 /* parameters one rank of the stage holds */
    double gathered_peak;          /* ZeRO-3: most gathered parameters alive at once */
} Program;

typedef struct Workload Workload;

Workload *workload_new(const Scenario *sc, const Topology *topo);
void workload_free(Workload *wl);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Workload, workload_free)

const Scenario *workload_scenario(const Workload *wl);
const Program *workload_program(const Workload *wl, int stage);

/* Data-parallel indices simulated when replicas are simulated once: 0 .. span-1 (1 unless ZeRO++
 * splits data parallelism by node, zeropp_replica_span). */
int workload_replica_span(const Workload *wl);

/* Rank layout (Megatron order: TP fastest, then DP, then PP):
 * rank = pp_idx * dp * tp + dp_idx * tp + tp_idx; rank r runs on GPU r. */
int workload_stage_of(const Workload *wl, int rank);
int workload_dp_index(const Workload *wl, int rank);
int workload_tp_index(const Workload *wl, int rank);
/* Group of `rank` in dimension dim (TP or DP): writes members (group size entries, ascending) and
 * returns the group's index among groups of that dimension. */
int workload_group(const Workload *wl, Dim dim, int rank, int *members);
/* Members of group `group` of dimension dim (ascending); returns the group size. */
int workload_group_members(const Workload *wl, Dim dim, int group, int *members);
int workload_group_size(const Workload *wl, Dim dim);
int workload_group_count(const Workload *wl, Dim dim);

/* FLOPs of one iteration counted as model FLOPs (no recomputation), whole job. */
double workload_model_flops(const Workload *wl);

/* FLOPs of one iteration, whole job, as GPT-NeoX's get_flops counts them (model_neox_flops):
 * recomputation included when the scenario recomputes full layers (GPT-NeoX's
 * checkpoint_activations; selective recomputation has no GPT-NeoX switch and counts 3x). */
double workload_neox_flops(const Workload *wl);

/* Memory of the rank with the largest footprint. */
ModelMemory workload_memory(const Workload *wl);

#endif
