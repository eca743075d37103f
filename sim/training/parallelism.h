/* parallelism: the plug-ins through which each parallelism puts its communication and kernels
 * into a stage's program, and the walkers (blocks.c) that compose them.
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
 * group, data parallelism (last in the table) the rest for the data-parallel group; every
 * reduction, partition and optimizer shard of the stage reads it there (workload_grad_dim).
 *
 * Data and pipeline parallelism do not wrap blocks: they act between units and passes, through
 * the pass hooks below, which workload.c's and wgrad.c's pass walkers call for every enabled
 * plug-in in table order. Pipeline parallelism (par_pp.c, with pp_calls.c and pp_batch.c) gives a
 * pass its input and takes its output (receive, send, a V's turn, the loss); data parallelism
 * (par_dp.c, with gathers.c and grads.c) gathers a unit's parameters before it and releases them
 * after (ZeRO-3, FSDP) and reduces the gradients a backward or W pass produces.
 *
 * Adding a parallelism: its dimension, stream and hooks in a par_NAME.c, one entry in blocks.c's
 * table (its place there is its wrapping order), and where it needs a new one, the dimension in
 * layout.h. Its scenario keys and checks are its entry in sim/input/scenario_par.h. Not for use
 * outside sim/training/. */
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
    /* its dimension's size in the scenario (the layout's shape: workload_layout_shape), 1 where
     * it is off; NULL where it has no dimension of its own */
    int (*size)(const Scenario *sc);
    /* deduplicated replicas (sim_dedup_mode): TRUE where its groups, which may cross nodes, carry
     * the groups of the replicas the simulated one stands for as images (COLL_IMAGES), so that
     * the links those share are loaded as the replicas' own would load them */
    gboolean dedup_images;
    /* a link traffic class of its own that reports show only where it is on (context
     * parallelism's DIM_CP, expert parallelism's DIM_EDP: workload_class_reported); 0 (DIM_DP,
     * always shown): none */
    Dim report_class;
    /* whether the scenario enables it (its hooks run only then); NULL: always */
    gboolean (*enabled)(const Scenario *sc);
    /* bytes of its state for a stage (blocks_state: zeroed before prepare, freed with the stage's
     * Builder); 0: none */
    size_t state_size;
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
    /* the factor it splits each sequence's tokens by on a rank (context parallelism: cp); NULL:
     * none. Every segment's kernels, the activations' bytes and memory use the rank's tokens
     * (workload_tokens). */
    int (*seq_split)(const Scenario *sc);
    /* its symmetry claim for deduplication: TRUE where its communication makes the data-parallel
     * replicas differ, so that one cannot stand for the others (every rank is then simulated:
     * workload_replicas_exact); NULL: replicas stay images of one another */
    gboolean (*replicas_differ)(const Scenario *sc);

    /* Pass hooks (data and pipeline parallelism). plan: once per stage, before its passes, with
     * the schedule's passes; pass_in: a pass's input (`in`: NO_TASK for a forward, the loss for a
     * backward) and what its first unit waits for instead; pass_out: after its last unit, what
     * that produced; after_pass: after pass k of passes (-1: before the first; plan calls it);
     * finish: after the last pass, before the optimizer. */
    void (*plan)(Builder *b, const GArray *passes);
    guint32 (*pass_in)(Builder *b, int chunk, gboolean fwd, int micro, guint32 in);
    void (*pass_out)(Builder *b, int chunk, gboolean fwd, int micro, guint32 out);
    void (*after_pass)(Builder *b, const GArray *passes, int k);
    void (*finish)(Builder *b);
    /* Unit hooks: unit_in before a unit's forward, recomputation or backward, a task its kernels
     * also wait for (NO_TASK: none); unit_out after it, the unit's tasks being from `from` on. */
    guint32 (*unit_in)(Builder *b);
    void (*unit_out)(Builder *b, const ParamUnit *u, guint32 from);
    /* Gradient hooks of a backward pass and, under a split schedule, of a W pass (wgrad.c):
     * grads_begin before its units (last_micro: the chunk's last backward of the iteration;
     * reduces: the pass produces weight gradients, FALSE for a split schedule's B pass),
     * grads_unit after unit i's backward (seg_task: the task after which each segment's weight
     * gradients exist), grads_end after its last unit (last_pass: the stage's last pass). */
    void (*grads_begin)(Builder *b, int chunk, gboolean last_micro, gboolean reduces);
    void (*grads_unit)(Builder *b, guint i, int micro, const guint32 *seg_task);
    void (*grads_end)(Builder *b, int micro, gboolean last_pass);
};

/* The plug-ins (par_*.c) are declared where their table is (blocks.c): adding one touches its
 * file and the table. */

/* blocks.c: the walker. Set up the stage's enabled plug-ins (once per stage, after the segment
 * times); emit unit u's forward (ph PHASE_FWD or PHASE_RECOMPUTE) or backward after task `in`
 * and the ZeRO-3 gather `ag`; each returns the task the next unit waits for. seg_task receives
 * the task that ends each segment's backward (gradient hooks). */
void blocks_prepare(Builder *b);
/* The state of plug-in p (enabled, with a state_size) for the stage; blocks_release frees every
 * plug-in's once the stage is built. */
void *blocks_state(const Builder *b, const Parallelism *p);
void blocks_release(Builder *b);
/* The stream a collective of dim runs on: the stream of the plug-in whose dimension it is, else
 * STREAM_DP (data parallelism's other groups: dp_intra, dp_inter, edp). */
StreamId blocks_stream(Dim dim);
/* The ranks each sequence's tokens are split over (the enabled plug-ins' seq_split, multiplied),
 * and the tokens of each sequence a rank holds. */
int workload_seq_split(const Scenario *sc);
int workload_tokens(const Scenario *sc);
/* Whether an enabled plug-in says the data-parallel replicas differ (replicas_differ). */
/* Every plug-in's dimension size into shape (layout_shape_set) */
void blocks_shape(const Scenario *sc, LayoutShape *shape);
gboolean blocks_replicas_differ(const Scenario *sc);
guint32 blocks_forward(Builder *b, const ParamUnit *u, Phase ph, int micro, guint32 in, guint32 ag);
guint32 blocks_backward(Builder *b, const ParamUnit *u, int micro, guint32 in, guint32 ag,
                        guint32 *seg_task);

/* The pass hooks of the enabled plug-ins, in table order (each skips those without the hook). */
void pass_plan(Builder *b, const GArray *passes);
guint32 pass_in(Builder *b, int chunk, gboolean fwd, int micro, guint32 in);
void pass_out(Builder *b, int chunk, gboolean fwd, int micro, guint32 out);
void pass_after(Builder *b, const GArray *passes, int k);
void pass_finish(Builder *b);
guint32 pass_unit_in(Builder *b);
void pass_unit_out(Builder *b, const ParamUnit *u, guint32 from);
void pass_grads_begin(Builder *b, int chunk, gboolean last_micro, gboolean reduces);
void pass_grads_unit(Builder *b, guint i, int micro, const guint32 *seg_task);
void pass_grads_end(Builder *b, int micro, gboolean last_pass);

/* A collective on dim's stream after `after`, or `after` itself when the group is one rank. */
guint32 comm_or(Builder *b, CollOp op, Dim dim, double bytes, const Block *k, guint32 after);

#endif
