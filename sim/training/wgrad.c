/* wgrad: the backward split into an input-gradient pass B and a weight-gradient pass W, for the
 * zero-bubble pipeline schedules (schedule.c, Schedule.split). Part of building a stage's program
 * (workload.c); the block walker and its plug-ins (blocks.c, par_*.c) are unchanged: their
 * backward is B. Also the one weight-gradient GEMM a Megatron block runs beside its input
 * gradient's reduction (wgrad_dgrad_prepare, for blocks.c's Framework.dgrad_overlap).
 *
 * Not for: the order of the passes (schedule.c) or the collectives inside B (the plug-ins).
 *
 * Which kernels are W (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, arXiv
 * 2401.10241, Sec. 2 and Table 1): a linear layer's backward is two GEMMs of equal FLOPs,
 * dA = dC W^T (B: the previous layer waits for it) and dW = A^T dC (W: only the optimizer does);
 * the attention core, softmax, norms and element-wise ops have no weight gradient of their own
 * and stay in B (model_op_weight_grad). So W's time is each weight GEMM's own time on the device
 * (about 1/3 of a GPT layer's backward, the paper's T_W = 24 b s h^2 of 48 b s h^2 + 8 b s^2 h
 * FLOPs), taken from the kernels, not a fixed share. sail-sg/zero-bubble-pipeline-parallelism
 * does the same split at run time: its LinearWithGradAccumulationAndAsyncCommunication backward
 * computes grad_input and queues the wgrad GEMM in WeightGradStore
 * (megatron/core/weight_grad_store.py put / flush / pop), which the scheduler's W node runs
 * (zerobubble/runtime.py schedule_w; light/zbpp_light/zb_schedule.py schedule_w:
 * WeightGradStore.pop()).
 *
 * What moves to W: each unit's gradients exist once its W kernels have run, so DeepSpeed's
 * per-parameter hooks, the buckets and the data-parallel reductions (grads.c) follow the W
 * passes instead of the backward; the last W pass of the stage ends its reductions. Two
 * simplifications: a layer norm's and a bias's gradients, computed inside B's kernels in
 * Megatron-LM's fused norms and bias-add, are counted ready with the layer's W; and under
 * sequence parallelism the column-parallel input's second allgather (for the weight gradient)
 * stays where the emitter issues it, in B.
 *
 * Memory (Qi et al. 2024, Table 1): F keeps M_B per micro-batch until B; B frees all but M_W,
 * what W reads: each weight GEMM's input A and output gradient dC, 32 b s h bytes per GPT layer
 * at 2-byte activations and TP 1 (workload_wgrad_held_bytes derives it from the same kernels). */
#include "parallelism.h"

/* The backward kernels of one segment (or MoE part, moe >= 0) as the device runs them, on the
 * rank's s / cp tokens (segment_time's; CP is refused with MoE and with a split backward). */
static void backward_ops(const Scenario *sc, Segment seg, int moe, GArray *ops) {
    g_array_set_size(ops, 0);
    if (moe >= 0)
        model_moe_ops(&sc->model, moe, PASS_BWD, sc->micro_batch, sc->seq_len, sc->tp, sc->ep,
                      sc->precision, ops);
    else
        model_segment_ops(&sc->model, seg, PASS_BWD, sc->micro_batch, workload_tokens(sc), sc->tp,
                          sc->precision, ops);
    for (guint i = 0; sc->sequence_parallel && moe < 0 && i < ops->len; i++)
        model_op_sequence_split(&g_array_index(ops, ModelOp, i), sc->tp); /* as segment_time */
}

/* The weight-gradient kernels' time of ops and their number, moved out of *bwd and *nbwd. */
static void take_wgrad(const Builder *b, const GArray *ops, SimTime *bwd, int *nbwd, SimTime *w,
                       int *nw) {
    *w = 0;
    *nw = 0;
    for (guint i = 0; i < ops->len; i++) {
        const ModelOp *op = &g_array_index(ops, ModelOp, i);
        if (!model_op_weight_grad(op))
            continue;
        *w = sim_time_add(*w, device_op_time(b->dev, op, b->sc->precision));
        ++*nw;
    }
    g_assert(*w <= *bwd && *nw <= *nbwd);
    *bwd -= *w;
    *nbwd -= *nw;
}

void wgrad_prepare(Builder *b, const DeviceSpec *dev) {
    const Scenario *sc = b->sc;
    (void)dev; /* b->dev is the same device */
    g_autoptr(GArray) ops = g_array_new(FALSE, FALSE, sizeof(ModelOp));
    for (int s = 0; s < SEG_COUNT; s++) {
        backward_ops(sc, s, -1, ops);
        take_wgrad(b, ops, &b->bwd[s], &b->nbwd[s], &b->wgrad[s], &b->nwgrad[s]);
    }
    for (int p = 0; sc->model.moe.experts > 0 && p < MOE_PART_COUNT; p++) {
        backward_ops(sc, 0, p, ops);
        take_wgrad(b, ops, &b->moe_bwd[p], &b->moe_nbwd[p], &b->moe_wgrad[p], &b->moe_nwgrad[p]);
    }
}

/* One W compute task (nothing when the part has no weight-gradient kernel). Its B ran earlier
 * on the same compute stream, which runs in order: no dependency needed. */
static guint32 w_task(Builder *b, SimTime dur, int kernels, int layer, int micro) {
    if (kernels == 0)
        return NO_TASK;
    return compute_k(b, dur, kernels, PHASE_BWD, layer, micro, NO_TASK, NO_TASK);
}

void wgrad_pass(Builder *b, int micro, int chunk, gboolean last_micro, gboolean last_pass) {
    const Scenario *sc = b->sc;
    pass_grads_begin(b, chunk, last_micro, TRUE);
    for (int i = (int)b->chunk_first[chunk + 1] - 1; i >= (int)b->chunk_first[chunk]; i--) {
        const ParamUnit *u = &g_array_index(b->units, ParamUnit, i);
        int layer = unit_layer(b, u);
        guint32 seg_task[SEG_COUNT] = {NO_TASK, NO_TASK, NO_TASK, NO_TASK};
        if (u->kind == UNIT_LAYER && sc->model.moe.experts > 0 &&
            model_moe_layer(&sc->model, u->layer)) { /* the experts', then the router's */
            b->moe_expert_ready =
                w_task(b, b->moe_wgrad[MOE_EXPERTS], b->moe_nwgrad[MOE_EXPERTS], layer, micro);
            seg_task[SEG_MLP] =
                w_task(b, b->moe_wgrad[MOE_ROUTE], b->moe_nwgrad[MOE_ROUTE], layer, micro);
        } else if (u->kind == UNIT_LAYER) {
            seg_task[SEG_MLP] = w_task(b, b->wgrad[SEG_MLP], b->nwgrad[SEG_MLP], layer, micro);
        }
        Segment seg = u->kind == UNIT_LAYER  ? SEG_ATTN
                      : u->kind == UNIT_HEAD ? SEG_HEAD
                                             : SEG_EMBED;
        seg_task[seg] = w_task(b, b->wgrad[seg], b->nwgrad[seg], layer, micro);
        pass_grads_unit(b, (guint)i, micro, seg_task);
    }
    pass_grads_end(b, micro, last_pass);
}

/* What W reads of one segment's (or MoE part's) weight GEMMs, bytes: each one's operands A and
 * dC, its bytes less its output dW (m x n elements). */
static double held(const Scenario *sc, Segment seg, int moe, GArray *ops) {
    backward_ops(sc, seg, moe, ops);
    double bytes = 0, e = model_elem_bytes(sc->precision);
    for (guint i = 0; i < ops->len; i++) {
        const ModelOp *op = &g_array_index(ops, ModelOp, i);
        if (model_op_weight_grad(op) && op->kind == OP_GEMM)
            bytes += op->bytes - (double)op->m * (double)op->n * op->batch * e;
    }
    return bytes;
}

double workload_wgrad_chunk_bytes(const Scenario *sc, int stage, int chunk) {
    g_autoptr(GArray) ops = g_array_new(FALSE, FALSE, sizeof(ModelOp));
    double seg[SEG_COUNT], moe = 0, total = 0;
    for (int s = 0; s < SEG_COUNT; s++)
        seg[s] = held(sc, s, -1, ops);
    for (int p = 0; sc->model.moe.experts > 0 && p < MOE_PART_COUNT; p++)
        moe += held(sc, 0, p, ops);
    int v = sc->virtual_stages;
    gboolean vshape = schedule_get(sc->schedule)->vshape;
    g_autoptr(GArray) units =
        model_stage_units_ep(&sc->model, sc->seq_len, sc->tp, sc->ep, sc->pp * v,
                             schedule_virtual_stage(vshape, sc->pp, stage, chunk));
    for (guint i = 0; i < units->len; i++) {
        const ParamUnit *u = &g_array_index(units, ParamUnit, i);
        if (u->kind == UNIT_LAYER)
            total += seg[SEG_ATTN] + (model_moe_layer(&sc->model, u->layer) ? moe : seg[SEG_MLP]);
        else
            total += seg[u->kind == UNIT_HEAD ? SEG_HEAD : SEG_EMBED];
    }
    return total;
}

double workload_wgrad_held_bytes(const Scenario *sc, int stage) {
    double total = 0;
    for (int c = 0; c < sc->virtual_stages; c++)
        total += workload_wgrad_chunk_bytes(sc, stage, c);
    return total;
}

/* Framework.dgrad_overlap (blocks.c block_backward): per segment with an input gradient to reduce
 * (not the embedding, whose input is token ids), its backward's last weight-gradient GEMM (the
 * column-parallel input linear's: qkv, mlp_fc1, logits) and the kernels after it (the norm's
 * backward), timed as segment_time times them, so that the parts sum to b->bwd. */
void wgrad_dgrad_prepare(Builder *b, const DeviceSpec *dev) {
    g_autoptr(GArray) ops = g_array_new(FALSE, FALSE, sizeof(ModelOp));
    for (Segment seg = SEG_ATTN; seg <= SEG_HEAD; seg++) {
        if (seg == SEG_EMBED)
            continue;
        backward_ops(b->sc, seg, -1, ops);
        int last = -1;
        for (guint i = 0; i < ops->len; i++)
            if (model_op_weight_grad(&g_array_index(ops, ModelOp, i)))
                last = (int)i;
        for (guint i = last < 0 ? ops->len : (guint)last; i < ops->len; i++) {
            SimTime t = device_op_time(dev, &g_array_index(ops, ModelOp, i), b->sc->precision);
            if ((int)i == last) {
                b->colw[seg] = t;
                b->ncolw[seg] = 1;
            } else {
                b->tail[seg] = sim_time_add(b->tail[seg], t);
                b->ntail[seg]++;
            }
        }
    }
}
