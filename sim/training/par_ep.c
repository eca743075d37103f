/* par_ep: expert parallelism as a plug-in of the block walker (parallelism.h): the kernels and
 * all-to-alls of a mixture-of-experts layer's MLP block; the other plug-ins wrap them as they
 * wrap a dense MLP (tensor parallelism's allreduces, sequence parallelism's allgather and
 * reduce-scatter).
 *
 * A MoE layer (model_moe.c has its kernels and sources) is the attention block, then in place of
 * the MLP (DeepSpeed-MoE, Rajbhandari et al. 2022, Sec. 5;
 * deepspeed/moe/sharded_moe.py MOELayer.forward; Megatron-LM's alltoall token dispatcher):
 *   forward (and its full recomputation): route (norm, router, top-k, permute into [E, C, h]),
 *     all-to-all dispatch over the EP group, the rank's E/ep experts, all-to-all combine back,
 *     unpermute and residual; tensor parallelism's allreduce of b s h the dense MLP ends with
 *     follows (par_tp.c);
 *   backward: the combine's backward, the all-to-all of the slots' gradients to the experts, the
 *     experts' backward (their gradients exist: the expert bucket, grads.c), the all-to-all of
 *     the inputs' gradients back, the routing's backward; tensor parallelism's allreduce of the
 *     block's input gradient follows.
 * Each all-to-all moves imbalance x E x C x h elements per rank (model_moe_rows: the dispatched
 * [E, C, h] tensor, C = ceil(k b s / E x c)): per MoE layer per micro-batch 2 forward, 2 backward
 * and, with full recomputation, 2 more. They run on the TP stream: DeepSpeed's _AllToAll and
 * Megatron's dispatcher issue them on the compute stream's critical path, as TP's allreduces.
 * With TP > 1 each TP rank runs its own all-to-all of its full buffer and holds 1/tp of every
 * local expert (Megatron-core's expert tensor parallelism equal to TP). With sequence parallelism
 * the block is wrapped as a dense MLP is: an allgather of the sequence before the router (every
 * TP rank routes the whole micro-batch) and a reduce-scatter after the combine. Megatron-core's
 * own sequence-parallel dispatch (each TP rank routing its s/t tokens, token_dispatcher.py) and
 * DeepSpeed's drop_tokens over TP are not modelled. */
#include "parallelism.h"

static guint32 after(guint32 t, guint32 c) {
    return t != NO_TASK ? t : c;
}

static guint32 part(Builder *b, MoePart p, const Block *k, guint32 dep1, guint32 dep2) {
    gboolean bwd = k->ph == PHASE_BWD;
    return compute_k(b, bwd ? b->moe_bwd[p] : b->moe_fwd[p], bwd ? b->moe_nbwd[p] : b->moe_nfwd[p],
                     k->ph, k->layer, k->micro, dep1, dep2);
}

static guint32 a2a(Builder *b, const Block *k, guint32 c) {
    return after(
        collective(b, COLL_ALL_TO_ALL, DIM_EP, b->moe_a2a_bytes, k->ph, k->layer, k->micro, c), c);
}

static gboolean ep_enabled(const Scenario *sc) {
    return sc->model.moe.experts > 0;
}

static gboolean ep_owns(const Builder *b, const Block *k) {
    return k->kind == BLOCK_MLP && model_moe_layer(&b->sc->model, k->u->layer);
}

static guint32 ep_body(Builder *b, const Block *k, guint32 dep1, guint32 dep2, guint32 *seg_task) {
    if (k->ph != PHASE_BWD) {
        guint32 c = part(b, MOE_ROUTE, k, dep1, dep2);
        c = a2a(b, k, c); /* dispatch */
        c = part(b, MOE_EXPERTS, k, c, NO_TASK);
        c = a2a(b, k, c); /* combine */
        return part(b, MOE_COMBINE, k, c, NO_TASK);
    }
    guint32 c = part(b, MOE_COMBINE, k, dep1, dep2);
    c = a2a(b, k, c); /* the slots' gradients to the experts */
    c = b->moe_expert_ready = part(b, MOE_EXPERTS, k, c, NO_TASK);
    c = a2a(b, k, c); /* the inputs' gradients back */
    return seg_task[SEG_MLP] = part(b, MOE_ROUTE, k, c, NO_TASK);
}

static void ep_prepare(Builder *b) {
    const Scenario *sc = b->sc;
    const DeviceSpec *dev = b->dev;
    const ModelConfig *m = &sc->model;
    g_autoptr(GArray) ops = g_array_new(FALSE, FALSE, sizeof(ModelOp));
    for (int p = 0; p < MOE_PART_COUNT; p++)
        for (int pass = 0; pass < PASS_COUNT; pass++) {
            g_array_set_size(ops, 0);
            model_moe_ops(m, p, pass, sc->micro_batch, sc->seq_len, sc->tp, sc->ep, sc->precision,
                          ops);
            SimTime total = 0;
            int n = 0;
            for (guint i = 0; i < ops->len; i++) {
                const ModelOp *op = &g_array_index(ops, ModelOp, i);
                SimTime t = device_op_time(dev, op, sc->precision);
                if (model_op_is_weight_cast(op)) { /* forward: before the block (blocks.c) */
                    g_assert(pass == PASS_FWD);
                    b->moe_wcast = sim_time_add(b->moe_wcast, t);
                    b->moe_nwcast++;
                    continue;
                }
                total = sim_time_add(total, t);
                n++;
            }
            (pass == PASS_FWD ? b->moe_fwd : b->moe_bwd)[p] = total;
            (pass == PASS_FWD ? b->moe_nfwd : b->moe_nbwd)[p] = n;
        }
    b->moe_a2a_bytes = model_moe_rows(m, (int64_t)sc->micro_batch * sc->seq_len) * m->hidden * b->e;
}

/* Expert gradients are reduced, and ZeRO partitions them, over the expert-data-parallel group
 * (dp / ep ranks; DP itself when ep is 1): DeepSpeed keeps expert parameters in their own groups
 * over expert_data_parallel_group (runtime/engine.py _reduce_expert_gradients,
 * zero/stage_1_and_2.py), Megatron-LM over its expert-data-parallel group. */
static Dim ep_grad_dim(const Scenario *sc, ParamClass c) {
    return c == PARAMS_EXPERT && sc->ep > 1 ? DIM_EDP : DIM_COUNT;
}

/* Expert parallelism ties ep DP replicas together by all-to-alls whose fabric traffic differs
 * between EP groups: one replica cannot stand for the others. */
static gboolean ep_replicas_differ(const Scenario *sc) {
    return sc->ep > 1;
}

static int ep_size(const Scenario *sc) {
    return sc->ep;
}

const Parallelism par_ep = {.name = "ep",
                            .dim = DIM_EP,
                            .stream = STREAM_TP,
                            .size = ep_size,
                            .report_class = DIM_EDP,
                            .enabled = ep_enabled,
                            .prepare = ep_prepare,
                            .owns = ep_owns,
                            .body = ep_body,
                            .grad_dim = ep_grad_dim,
                            .replicas_differ = ep_replicas_differ};
