/* emit_moe: the per-layer communication of a mixture-of-experts layer with expert parallelism,
 * an emitter of the table in emit_tp.c (EMIT_MOE). Every unit but a MoE layer is the TP emitter's.
 *
 * A MoE layer (model_moe.c has its kernels and sources) is the Megatron TP attention block and
 * its allreduce, then in place of the MLP (DeepSpeed-MoE, Rajbhandari et al. 2022, Sec. 5;
 * deepspeed/moe/sharded_moe.py MOELayer.forward; Megatron-LM's alltoall token dispatcher):
 *   forward (and its full recomputation): route (norm, router, top-k, permute into [E, C, h]),
 *     all-to-all dispatch over the EP group, the rank's E/ep experts, all-to-all combine back,
 *     unpermute and residual, then the TP allreduce of b s h the dense MLP ends with;
 *   backward: the combine's backward, the all-to-all of the slots' gradients to the experts, the
 *     experts' backward (their gradients exist: the expert bucket, workload.c), the all-to-all of
 *     the inputs' gradients back, the routing's backward, the TP allreduce of the block's input
 *     gradient, then the attention block as the TP emitter has it.
 * Each all-to-all moves imbalance x E x C x h elements per rank (model_moe_rows: the dispatched
 * [E, C, h] tensor, C = ceil(k b s / E x c)): per MoE layer per micro-batch 2 forward, 2 backward
 * and, with full recomputation, 2 more. They run on the TP stream: DeepSpeed's _AllToAll and
 * Megatron's dispatcher issue them on the compute stream's critical path, as TP's allreduces.
 * With TP > 1 each TP rank runs its own all-to-all of its full buffer and holds 1/tp of every
 * local expert (Megatron-core's expert tensor parallelism equal to TP); DeepSpeed's drop_tokens
 * over TP and Megatron's sequence-parallel dispatch are not modelled. */
#include "workload_internal.h"

static guint32 after(guint32 t, guint32 c) {
    return t != NO_TASK ? t : c;
}

static guint32 part(Builder *b, MoePart p, gboolean bwd, Phase ph, int layer, int micro,
                    guint32 dep1, guint32 dep2) {
    return compute_k(b, bwd ? b->moe_bwd[p] : b->moe_fwd[p], bwd ? b->moe_nbwd[p] : b->moe_nfwd[p],
                     ph, layer, micro, dep1, dep2);
}

static guint32 a2a(Builder *b, Phase ph, int layer, int micro, guint32 c) {
    return after(collective(b, COLL_ALL_TO_ALL, DIM_EP, b->moe_a2a_bytes, ph, layer, micro, c), c);
}

guint32 moe_forward(Builder *b, const ParamUnit *u, Phase ph, int micro, guint32 in, guint32 ag) {
    if (u->kind != UNIT_LAYER || !model_moe_layer(&b->sc->model, u->layer))
        return emitter_get(EMIT_TP)->forward(b, u, ph, micro, in, ag);
    int layer = u->layer;
    guint32 c = seg_compute(b, SEG_ATTN, FALSE, ph, layer, micro, in, ag);
    guint32 ar = collective(b, COLL_ALLREDUCE, DIM_TP, b->act_bytes, ph, layer, micro, c);
    c = part(b, MOE_ROUTE, FALSE, ph, layer, micro, ar, NO_TASK);
    c = a2a(b, ph, layer, micro, c); /* dispatch */
    c = part(b, MOE_EXPERTS, FALSE, ph, layer, micro, c, NO_TASK);
    c = a2a(b, ph, layer, micro, c); /* combine */
    c = part(b, MOE_COMBINE, FALSE, ph, layer, micro, c, NO_TASK);
    return after(collective(b, COLL_ALLREDUCE, DIM_TP, b->act_bytes, ph, layer, micro, c), c);
}

guint32 moe_backward(Builder *b, const ParamUnit *u, int micro, guint32 in, guint32 ag,
                     guint32 *seg_task) {
    const Scenario *sc = b->sc;
    if (u->kind != UNIT_LAYER || !model_moe_layer(&sc->model, u->layer))
        return emitter_get(EMIT_TP)->backward(b, u, micro, in, ag, seg_task);
    int layer = u->layer;
    guint32 c = part(b, MOE_COMBINE, TRUE, PHASE_BWD, layer, micro, in, ag);
    c = a2a(b, PHASE_BWD, layer, micro, c); /* the slots' gradients to the experts */
    c = b->moe_expert_ready = part(b, MOE_EXPERTS, TRUE, PHASE_BWD, layer, micro, c, NO_TASK);
    c = a2a(b, PHASE_BWD, layer, micro, c); /* the inputs' gradients back */
    c = seg_task[SEG_MLP] = part(b, MOE_ROUTE, TRUE, PHASE_BWD, layer, micro, c, NO_TASK);
    guint32 ar = collective(b, COLL_ALLREDUCE, DIM_TP, b->act_bytes, PHASE_BWD, layer, micro, c);
    gboolean sel = sc->recompute == RECOMPUTE_SELECTIVE; /* the attention core redone first */
    SimTime attn = sim_time_add(b->bwd[SEG_ATTN], sel ? b->attn_core : 0);
    int nattn = b->nbwd[SEG_ATTN] + (sel ? b->ncore : 0);
    c = seg_task[SEG_ATTN] = compute_k(b, attn, nattn, PHASE_BWD, layer, micro, ar, NO_TASK);
    return after(collective(b, COLL_ALLREDUCE, DIM_TP, b->act_bytes, PHASE_BWD, layer, micro, c),
                 c);
}

void moe_prepare(Builder *b, const DeviceSpec *dev) {
    const Scenario *sc = b->sc;
    const ModelConfig *m = &sc->model;
    g_autoptr(GArray) ops = g_array_new(FALSE, FALSE, sizeof(ModelOp));
    for (int p = 0; p < MOE_PART_COUNT; p++)
        for (int pass = 0; pass < PASS_COUNT; pass++) {
            g_array_set_size(ops, 0);
            model_moe_ops(m, p, pass, sc->micro_batch, sc->seq_len, sc->tp, sc->ep, sc->precision,
                          ops);
            SimTime total = 0;
            for (guint i = 0; i < ops->len; i++)
                total = sim_time_add(
                    total, device_op_time(dev, &g_array_index(ops, ModelOp, i), sc->precision));
            (pass == PASS_FWD ? b->moe_fwd : b->moe_bwd)[p] = total;
            (pass == PASS_FWD ? b->moe_nfwd : b->moe_nbwd)[p] = (int)ops->len;
        }
    b->moe_a2a_bytes = model_moe_rows(m, (int64_t)sc->micro_batch * sc->seq_len) * m->hidden * b->e;
}
