/* parallelism: the plug-ins through which each model-splitting parallelism puts its communication
 * and kernels into a unit's program, and the walker (blocks.c) that composes them.
 *
 * A unit (embedding, transformer layer, head) is a fixed sequence of blocks: the embedding; a
 * layer's attention block then its MLP block; the head. The walker emits each block's kernels and
 * lets every enabled parallelism wrap them, in table order going in and in reverse coming out:
 *
 *   forward:   in -> enter (each plug-in) -> kernels -> leave (each plug-in, reversed) -> out
 *   backward:  in -> enter_bwd (each)     -> kernels -> leave_bwd (each, reversed)     -> out
 *
 * A block says what its ends are, which is all a plug-in needs to know to place Megatron-LM's
 * conjugate operators (megatron/core/tensor_parallel/mappings.py): a block that starts with a
 * column-parallel linear (column_in) reads an input every tensor-parallel rank holds whole, and a
 * block that ends with a row-parallel linear (row_out) produces partial sums. One plug-in may
 * also supply a block's kernels (expert parallelism: a MoE layer's MLP block; context
 * parallelism: the attention core), the others wrap them all the same.
 *
 * A plug-in also says where the parameters it splits have their gradients reduced and their ZeRO
 * partitions cut (grad_dim): expert parallelism claims the experts' for the expert-data-parallel
 * group; every reduction, partition and optimizer shard of the stage reads it there
 * (workload_grad_dim).
 *
 * Adding a parallelism: its dimension, stream and hooks in a par_NAME.c, one entry in blocks.c's
 * table (its place there is its wrapping order), and where it needs a new one, the dimension in
 * layout.h. Data and pipeline
 * parallelism do not wrap blocks: they act between units and passes (grads.c, gathers.c,
 * schedule.c, workload.c). Not for use outside sim/training/. */
#ifndef SIM_PARALLELISM_H
#define SIM_PARALLELISM_H

#include "workload_internal.h"

typedef enum { BLOCK_EMBED, BLOCK_ATTN, BLOCK_MLP, BLOCK_HEAD } BlockKind;

typedef struct {
    BlockKind kind;
    Segment seg; /* its kernels' segment (model.h) */
    const ParamUnit *u;
    int layer, micro;
    Phase ph;           /* PHASE_FWD, PHASE_RECOMPUTE or PHASE_BWD */
    gboolean column_in; /* starts with a column-parallel linear: its input whole on every TP rank */
    gboolean row_out;   /* ends with a row-parallel linear: its output partial sums over TP */
} Block;

/* Every hook may be NULL. Task arguments and results: NO_TASK is "nothing to wait for". */
struct Parallelism {
    const char *name;
    /* its layout dimension (layout.h), DIM_COUNT where it has none of its own (sequence
     * parallelism shares tensor parallelism's), and the stream its collectives run on
     * (collective() reads it there: blocks_stream) */
    Dim dim;
    StreamId stream;
    /* whether the scenario enables it (its hooks run only then) */
    gboolean (*enabled)(const Scenario *sc);
    /* once per stage, after the Builder's segment times are set */
    void (*prepare)(Builder *b);
    /* forward (and recomputation): before the block's kernels, from what they would wait for;
     * returns what they wait for instead (`in` when nothing is issued) */
    guint32 (*enter)(Builder *b, const Block *k, guint32 in);
    /* after the kernels c (or each of `parts` chunks that produces 1/parts of the output: tensor
     * parallelism's chunked overlap, blocks.c): returns the last task issued, NO_TASK if none */
    guint32 (*leave)(Builder *b, const Block *k, guint32 c, int parts);
    /* backward: before the kernels (the output's gradient arrives), after them (the input's) */
    guint32 (*enter_bwd)(Builder *b, const Block *k, guint32 in);
    guint32 (*leave_bwd)(Builder *b, const Block *k, guint32 c);
    /* kernels in place of the block's own dense ones, where owns says so: forward (dep1 the
     * entered input, dep2 a ZeRO-3 gather) or backward (seg_task[k->seg] receives the task after
     * which the block's weight gradients exist); returns the last kernel */
    gboolean (*owns)(const Builder *b, const Block *k);
    guint32 (*body)(Builder *b, const Block *k, guint32 dep1, guint32 dep2, guint32 *seg_task);
    /* the dimension that reduces class c's gradients and holds its ZeRO partitions, where this
     * parallelism decides it; DIM_COUNT where it does not (workload_grad_dim: the first enabled
     * plug-in that decides, in table order, else DIM_DP) */
    Dim (*grad_dim)(const Scenario *sc, ParamClass c);
    /* its symmetry claim for deduplication: TRUE where its communication makes the data-parallel
     * replicas differ, so that one cannot stand for the others (every rank is then simulated:
     * workload_replicas_exact); NULL: replicas stay images of one another */
    gboolean (*replicas_differ)(const Scenario *sc);
};

/* The plug-ins' hooks (par_*.c) */
extern const Parallelism par_tp, par_sp, par_cp, par_ep;

/* blocks.c: the walker. Set up the stage's enabled plug-ins (once per stage, after the segment
 * times); emit unit u's forward (ph PHASE_FWD or PHASE_RECOMPUTE) or backward after task `in`
 * and the ZeRO-3 gather `ag`; each returns the task the next unit waits for. seg_task receives
 * the task that ends each segment's backward (gradient hooks). */
void blocks_prepare(Builder *b);
/* The stream a collective of dim runs on: the stream of the plug-in whose dimension it is, else
 * STREAM_DP (data parallelism's reductions and gathers). */
StreamId blocks_stream(Dim dim);
/* Whether an enabled plug-in says the data-parallel replicas differ (replicas_differ). */
gboolean blocks_replicas_differ(const Scenario *sc);
guint32 blocks_forward(Builder *b, const ParamUnit *u, Phase ph, int micro, guint32 in, guint32 ag);
guint32 blocks_backward(Builder *b, const ParamUnit *u, int micro, guint32 in, guint32 ag,
                        guint32 *seg_task);

/* A collective on dim's stream after `after`, or `after` itself when the group is one rank. */
guint32 comm_or(Builder *b, CollOp op, Dim dim, double bytes, const Block *k, guint32 after);

#endif
