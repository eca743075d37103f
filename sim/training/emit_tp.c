/* emit_tp: the per-layer communication of each parallelism, one emitter per parallelism in a
 * table (LayerEmitter, workload_internal.h).
 *
 * Megatron-LM tensor parallelism as GPT-NeoX uses it (Shoeybi et al. 2019), the study's Eq. 6:
 * - embedding: VocabParallelEmbedding's allreduce of the partial embeddings (b s h);
 * - layer forward (and its recomputation): the attention block's RowParallelLinear allreduces its
 *   output, then the MLP's (b s h each). GPT-NeoX's gpt_j_residual (parallel_residual): both
 *   blocks read the layer's input, their RowParallelLinears skip the allreduce (parallel_output)
 *   and one reduce_from_model_parallel_region sums attention + MLP (megatron/model/transformer.py,
 *   ParallelTransformerLayer.forward);
 * - layer backward: the MLP's, then the attention's, each ending in the allreduce of its input
 *   gradient (copy_to_model_parallel_region's backward before each ColumnParallelLinear); with a
 *   parallel residual the attention's backward does not wait for the MLP's allreduce. Selective
 *   recomputation redoes the attention core first;
 * - head: the vocabulary-parallel logits, then the vocabulary-parallel cross entropy's three
 *   allreduces of b s fp32 values (the logits' max, the target logit, the sum of exponentials:
 *   mpu/cross_entropy.py _VocabParallelCrossEntropy.forward); backward, the allreduce of the head's
 *   input gradient (ColumnParallelLinear).
 * Per layer per micro-batch 2 allreduces forward, 2 in recomputation, 2 backward: 6 per layer + 1.
 *
 * Adding an emitter: a forward and a backward function and one entry in `table` below, with its
 * EmitterId (workload_internal.h); workload.c picks it from the scenario (emitter_of). */
#include "workload_internal.h"

/* The TP collective op of bytes after task c; returns it, or c itself when TP is one rank. */
static guint32 tp_comm(Builder *b, CollOp op, double bytes, Phase ph, int layer, int micro,
                       guint32 c) {
    guint32 t = collective(b, op, DIM_TP, bytes, ph, layer, micro, c);
    return t != NO_TASK ? t : c;
}

static guint32 tp_forward(Builder *b, const ParamUnit *u, Phase ph, int micro, guint32 in,
                          guint32 ag) {
    int layer = unit_layer(b, u);
    switch (u->kind) {
    case UNIT_EMBED: {
        guint32 c = seg_compute(b, SEG_EMBED, FALSE, ph, layer, micro, in, ag);
        return tp_comm(b, COLL_ALLREDUCE, b->act_bytes, ph, layer, micro, c);
    }
    case UNIT_HEAD: {
        guint32 last = seg_compute(b, SEG_HEAD, FALSE, ph, layer, micro, in, ag);
        for (int k = 0; k < 3; k++)
            last = tp_comm(b, COLL_ALLREDUCE, b->ce_bytes, ph, layer, micro, last);
        return last;
    }
    case UNIT_LAYER:
        break;
    }
    guint32 c = seg_compute(b, SEG_ATTN, FALSE, ph, layer, micro, in, ag);
    guint32 ar = NO_TASK; /* parallel residual: the MLP does not wait for the attention's */
    if (!b->sc->model.parallel_residual)
        ar = collective(b, COLL_ALLREDUCE, DIM_TP, b->act_bytes, ph, layer, micro, c);
    c = seg_compute(b, SEG_MLP, FALSE, ph, layer, micro, ar, NO_TASK);
    return tp_comm(b, COLL_ALLREDUCE, b->act_bytes, ph, layer, micro, c);
}

static guint32 tp_backward(Builder *b, const ParamUnit *u, int micro, guint32 in, guint32 ag,
                           guint32 *seg_task) {
    const Scenario *sc = b->sc;
    int layer = unit_layer(b, u);
    switch (u->kind) {
    case UNIT_HEAD: {
        guint32 c = seg_task[SEG_HEAD] =
            seg_compute(b, SEG_HEAD, TRUE, PHASE_BWD, layer, micro, in, ag);
        return tp_comm(b, COLL_ALLREDUCE, b->act_bytes, PHASE_BWD, layer, micro, c);
    }
    case UNIT_EMBED:
        return seg_task[SEG_EMBED] =
                   seg_compute(b, SEG_EMBED, TRUE, PHASE_BWD, layer, micro, in, ag);
    case UNIT_LAYER:
        break;
    }
    guint32 c = seg_compute(b, SEG_MLP, TRUE, PHASE_BWD, layer, micro, in, ag);
    seg_task[SEG_MLP] = c;
    guint32 ar = collective(b, COLL_ALLREDUCE, DIM_TP, b->act_bytes, PHASE_BWD, layer, micro, c);
    gboolean sel = sc->recompute == RECOMPUTE_SELECTIVE; /* the attention core redone first */
    SimTime attn = sim_time_add(b->bwd[SEG_ATTN], sel ? b->attn_core : 0);
    int nattn = b->nbwd[SEG_ATTN] + (sel ? b->ncore : 0);
    guint32 attn_dep = sc->model.parallel_residual ? in : ar;
    c = compute_k(b, attn, nattn, PHASE_BWD, layer, micro, attn_dep, NO_TASK);
    seg_task[SEG_ATTN] = c;
    return tp_comm(b, COLL_ALLREDUCE, b->act_bytes, PHASE_BWD, layer, micro, c);
}

static const LayerEmitter table[EMIT_COUNT] = {
    [EMIT_TP] = {"tp", tp_forward, tp_backward},
};

const LayerEmitter *emitter_get(EmitterId id) {
    g_assert(id < EMIT_COUNT);
    return &table[id];
}
