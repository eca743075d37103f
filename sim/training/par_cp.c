/* par_cp: context parallelism (parallel.cp) as a plug-in of the block walker (parallelism.h): it
 * emits the attention block's kernels and the KV exchanges of the CP group, and the other
 * plug-ins wrap them as they wrap a dense attention block.
 *
 * Megatron-LM splits each sequence over the cp ranks of a context-parallel group in 2 cp chunks,
 * rank i keeping chunks i and 2 cp - 1 - i (megatron/training/utils.py
 * get_batch_on_this_cp_rank), so that every kernel runs on s / cp tokens (workload.c's
 * segment_time) and causal attention's work is even over the ranks. The attention core runs in
 * TransformerEngine (transformer_engine/pytorch/attention/dot_product_attention/
 * context_parallel.py, cp_comm_type from Megatron-LM's --cp-comm-type):
 * - p2p (AttnFuncWithCPAndKVP2P): a ring over the CP group in cp steps. Forward: at step i the
 *   rank posts the send of the K and V it holds to the next rank and the receive of the previous
 *   rank's (flash_attn_p2p_communicate, for i < cp - 1), then runs step i's attention on the KV
 *   it received at step i - 1 ("wait until KV is received"): cp - 1 exchanges, each of
 *   b (s / cp) 2 kv_width / tp elements (K and V of the rank's tokens), every member sending to
 *   the next at once (COLL_SENDRECV), overlapped with the attention of the step that issued it;
 *   step i + 1 waits for exchange i. Backward: cp steps, each posting at its start the exchange
 *   of the KV (step 0), of the KV and the dKV accumulated so far (twice the bytes: steps 1 to
 *   cp - 2, p2p_comm_buffers of shape (2, *kv.shape)), or of the final dKV (step cp - 1); step
 *   i's exchange carries the dKV that step i - 1 added, so it waits for step i - 1's kernels;
 *   the rest of the block's backward waits for the last exchange. 2 (cp - 1) KV per backward.
 *   Work: step 0 is causal attention over the rank's own s / cp tokens, each later step one of
 *   the rank's two chunks against a chunk of the other's, (s / 2cp) x (s / cp) pairs with no
 *   mask: the same count (to the diagonal) as the first, so each step is timed as the causal
 *   core over s / cp tokens, cp of them s^2 / (2 cp) pairs per (sequence, head): 1/cp of the
 *   full causal attention, not (s / cp)^2 / 2.
 * - all_gather (AttnFuncWithCPAndKVAllGather): forward, K and V each allgathered over the group
 *   (gather_along_first_dim: two allgathers of cp times the rank's K bytes) before the core;
 *   backward, gathered again, then the core's backward and a reduce-scatter of dK and of dV
 *   (reduce_scatter_along_first_dim). The core's work is the p2p ring's, not overlapped.
 * The exchanges run on the tensor-parallel stream: both frameworks keep model-parallel
 * communication there, and in the attention block nothing else of it is in flight but sequence
 * parallelism's weight-gradient allgather, issued before the block's backward. Selective
 * recomputation redoes the core's forward ring (its kernels and exchanges) at the start of the
 * core's backward. Gradients over dp x cp and memory divided by cp: layout.h, workload.c,
 * model.c. */
#include "parallelism.h"

#include <string.h>

/* Its state for a stage (blocks_state): the attention segment on s / cp tokens, by pass, before
 * the core (0), one step of the core (1), after it (2); and one ring exchange's bytes. */
typedef struct {
    SimTime time[PASS_COUNT][3]; /* picoseconds */
    int kernels[PASS_COUNT][3];
    double kv_bytes; /* K and V of the rank's s / cp tokens */
} CpState;

extern const Parallelism par_cp; /* defined below, its state's key */

static CpState *state(const Builder *b) {
    return blocks_state(b, &par_cp);
}

static gboolean cp_enabled(const Scenario *sc) {
    return sc->cp > 1;
}

/* its dimension's size, which is also the factor each rank's tokens are split by */
static int cp_size(const Scenario *sc) {
    return sc->cp;
}

static gboolean cp_owns(const Builder *b, const Block *k) {
    (void)b;
    return k->kind == BLOCK_ATTN;
}

/* The attention segment's kernels on s / cp tokens, split around the core: before it (part 0),
 * one step of it (1), after it (2), for each pass. */
static void cp_prepare(Builder *b) {
    const Scenario *sc = b->sc;
    CpState *st = state(b);
    g_autoptr(GArray) ops = g_array_new(FALSE, FALSE, sizeof(ModelOp));
    for (int pass = 0; pass < PASS_COUNT; pass++) {
        g_array_set_size(ops, 0);
        model_segment_ops(&sc->model, SEG_ATTN, pass, sc->micro_batch, sc->seq_len / sc->cp, sc->tp,
                          sc->precision, ops);
        int part = 0;
        for (guint i = 0; i < ops->len; i++) {
            ModelOp *op = &g_array_index(ops, ModelOp, i);
            if (model_op_is_weight_cast(op)) /* before the block (Builder.wcast) */
                continue;
            part = op->attn_core ? 1 : part == 1 ? 2 : part;
            st->time[pass][part] = sim_time_add(st->time[pass][part], seg_op_time(b, op));
            st->kernels[pass][part]++;
        }
    }
    st->kv_bytes = (double)sc->micro_batch * (sc->seq_len / sc->cp) * 2.0 *
                   (double)model_kv_width(&sc->model) / sc->tp * b->e;
}

static guint32 part(Builder *b, const Block *k, Phase ph, Pass pass, int p, int times, guint32 dep1,
                    guint32 dep2) {
    const CpState *st = state(b);
    return compute_k(b, st->time[pass][p] * times, st->kernels[pass][p] * times, ph, k->layer,
                     k->micro, dep1, dep2);
}

static guint32 exchange(Builder *b, const Block *k, Phase ph, CollOp op, double bytes,
                        guint32 after) {
    return collective(b, op, DIM_CP, bytes, ph, k->layer, k->micro, after);
}

/* The core's forward after task `kv` (K and V exist); returns its last kernel. */
static guint32 core_forward(Builder *b, const Block *k, Phase ph, guint32 kv) {
    int cp = b->sc->cp;
    if (b->sc->cp_comm == CP_COMM_ALL_GATHER) {
        guint32 g = exchange(b, k, ph, COLL_ALLGATHER, cp * state(b)->kv_bytes / 2, kv); /* K */
        g = exchange(b, k, ph, COLL_ALLGATHER, cp * state(b)->kv_bytes / 2, g);          /* V */
        return part(b, k, ph, PASS_FWD, 1, cp, g, NO_TASK);
    }
    guint32 x = NO_TASK, c = NO_TASK;
    for (int i = 0; i < cp; i++) {
        guint32 next = i < cp - 1
                           ? exchange(b, k, ph, COLL_SENDRECV, state(b)->kv_bytes, i == 0 ? kv : x)
                           : NO_TASK;
        c = part(b, k, ph, PASS_FWD, 1, 1, x, NO_TASK); /* step i: the KV of exchange i - 1 */
        x = next;
    }
    return c;
}

/* The core's backward after task `in`; returns the task the rest of the block waits for. */
static guint32 core_backward(Builder *b, const Block *k, guint32 in) {
    int cp = b->sc->cp;
    if (b->sc->cp_comm == CP_COMM_ALL_GATHER) {
        guint32 g = exchange(b, k, PHASE_BWD, COLL_ALLGATHER, cp * state(b)->kv_bytes / 2, in);
        g = exchange(b, k, PHASE_BWD, COLL_ALLGATHER, cp * state(b)->kv_bytes / 2, g);
        guint32 c = part(b, k, PHASE_BWD, PASS_BWD, 1, cp, g, NO_TASK);
        c = exchange(b, k, PHASE_BWD, COLL_REDUCE_SCATTER, cp * state(b)->kv_bytes / 2, c); /* dK */
        return exchange(b, k, PHASE_BWD, COLL_REDUCE_SCATTER, cp * state(b)->kv_bytes / 2, c);
    }
    guint32 x = NO_TASK, c = in;
    for (int i = 0; i < cp; i++) {
        double bytes = (i == 0 || i == cp - 1 ? 1 : 2) * state(b)->kv_bytes; /* KV, KV + dKV, dKV */
        guint32 next = exchange(b, k, PHASE_BWD, COLL_SENDRECV, bytes, c);
        c = part(b, k, PHASE_BWD, PASS_BWD, 1, 1, x, NO_TASK);
        x = next;
    }
    return x; /* the final dKV, after the last step's kernels on the stream */
}

static guint32 cp_body(Builder *b, const Block *k, guint32 dep1, guint32 dep2, guint32 *seg_task) {
    if (k->ph != PHASE_BWD) {
        guint32 c = part(b, k, k->ph, PASS_FWD, 0, 1, dep1, dep2);
        c = core_forward(b, k, k->ph, c);
        return part(b, k, k->ph, PASS_FWD, 2, 1, c, NO_TASK);
    }
    guint32 c = part(b, k, PHASE_BWD, PASS_BWD, 0, 1, dep1, dep2);
    if (b->sc->recompute == RECOMPUTE_SELECTIVE) /* the core's forward, redone */
        c = core_forward(b, k, PHASE_RECOMPUTE, c);
    guint32 x = core_backward(b, k, c);
    return seg_task[SEG_ATTN] = part(b, k, PHASE_BWD, PASS_BWD, 2, 1, b->last_compute, x);
}

const Parallelism par_cp = {.name = "cp",
                            .state_size = sizeof(CpState),
                            .dim = DIM_CP,
                            .stream = STREAM_TP,
                            .size = cp_size,
                            .dedup_images = TRUE,
                            .report_class = DIM_CP,
                            .enabled = cp_enabled,
                            .seq_split = cp_size,
                            .prepare = cp_prepare,
                            .owns = cp_owns,
                            .body = cp_body};
