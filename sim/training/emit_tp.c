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

/* A block's forward (segment seg after dep1, dep2) ending in `op` of its b s h output on TP.
 * With parallel.tp_comm_overlap (a what-if after T3, Pati et al. 2024, arXiv 2401.16677, and
 * Megatron-LM's --tp-comm-overlap) the producer GEMM (model_segment_producer) runs in k row
 * chunks, each chunk's 1/k of the collective issued as soon as it is done, so it runs under the
 * next chunk (slowed by the interference model like any hidden communication); only the last
 * share is exposed. The chunks cost compute: k GEMMs of ceil(m/k) rows (weights read k times,
 * smaller waves) instead of one. Returns the (last) collective, or the compute at TP 1. */
static guint32 block_out(Builder *b, Segment seg, Phase ph, int layer, int micro, guint32 dep1,
                         guint32 dep2, CollOp op) {
    if (b->chunks < 2 || b->prod[seg] == 0) {
        guint32 c = seg_compute(b, seg, FALSE, ph, layer, micro, dep1, dep2);
        return tp_comm(b, op, b->act_bytes, ph, layer, micro, c);
    }
    guint32 c =
        compute_k(b, b->fwd[seg] - b->prod[seg], b->nfwd[seg] - 1, ph, layer, micro, dep1, dep2);
    guint32 last = c;
    for (int k = 0; k < b->chunks; k++) {
        c = compute_k(b, b->chunk[seg], 1, ph, layer, micro, NO_TASK, NO_TASK);
        last = tp_comm(b, op, b->act_bytes / b->chunks, ph, layer, micro, c);
    }
    return last;
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
    guint32 ar = NO_TASK; /* parallel residual: the MLP does not wait for the attention's */
    if (!b->sc->model.parallel_residual) {
        ar = block_out(b, SEG_ATTN, ph, layer, micro, in, ag, COLL_ALLREDUCE);
        if (b->sc->tp <= 1)
            ar = NO_TASK; /* as before: the MLP waits on nothing but its stream */
    } else {
        seg_compute(b, SEG_ATTN, FALSE, ph, layer, micro, in, ag);
    }
    return block_out(b, SEG_MLP, ph, layer, micro, ar, NO_TASK, COLL_ALLREDUCE);
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

/* --- with sequence parallelism (Korthikanti et al. 2022, Sec. 4.2.2; Megatron-LM's
 * --sequence-parallel, megatron/core/tensor_parallel/mappings.py and layers.py) ----------------
 * Between the tensor-parallel blocks the activations are split along the sequence (layer norms,
 * dropout and residual adds run on s/t tokens, workload.c's segment_time). The conjugate g / g-bar
 * pair becomes an allgather of the b s h input before each column-parallel block and a
 * reduce-scatter after each row-parallel one, forward and in recomputation; in backward the
 * reduce-scatter's gradient is an allgather of the output gradient, the allgather's a
 * reduce-scatter of the input gradient, and the column-parallel linear gathers its (sharded,
 * stored) input again for its weight gradient (LinearWithGradAccumulationAndAsyncCommunication's
 * backward), asynchronously under its input-gradient GEMM: issued with the block's backward, no
 * compute waits for it. Per layer: forward 2 allgathers + 2 reduce-scatters, backward 4
 * allgathers + 2 reduce-scatters, each of b s h (message), (t-1)/t of it per rank. The embedding
 * reduce-scatters its output (reduce_scatter_embeddings) and gathers its gradient back; the head
 * (its output the loss, not split) gathers its input, again for its weight gradient, and
 * reduce-scatters its input gradient; the cross entropy's three allreduces stay. */

static guint32 sp_comm(Builder *b, CollOp op, Phase ph, int layer, int micro, guint32 after) {
    return tp_comm(b, op, b->act_bytes, ph, layer, micro, after);
}

static guint32 sp_forward(Builder *b, const ParamUnit *u, Phase ph, int micro, guint32 in,
                          guint32 ag) {
    int layer = unit_layer(b, u);
    switch (u->kind) {
    case UNIT_EMBED: {
        guint32 c = seg_compute(b, SEG_EMBED, FALSE, ph, layer, micro, in, ag);
        return sp_comm(b, COLL_REDUCE_SCATTER, ph, layer, micro, c);
    }
    case UNIT_HEAD: {
        guint32 g = sp_comm(b, COLL_ALLGATHER, ph, layer, micro, in);
        guint32 last = seg_compute(b, SEG_HEAD, FALSE, ph, layer, micro, g, ag);
        for (int k = 0; k < 3; k++)
            last = tp_comm(b, COLL_ALLREDUCE, b->ce_bytes, ph, layer, micro, last);
        return last;
    }
    case UNIT_LAYER:
        break;
    }
    guint32 g = sp_comm(b, COLL_ALLGATHER, ph, layer, micro, in);
    guint32 r = block_out(b, SEG_ATTN, ph, layer, micro, g, ag, COLL_REDUCE_SCATTER);
    g = sp_comm(b, COLL_ALLGATHER, ph, layer, micro, r);
    return block_out(b, SEG_MLP, ph, layer, micro, g, NO_TASK, COLL_REDUCE_SCATTER);
}

/* One block's backward (the MLP's, the attention's or the head's, dur and kernels given): gather
 * the output gradient (gather_out: not for the head, whose output is the loss), gather the stored
 * input again (no compute waits for it), compute, reduce-scatter the input gradient. *seg receives
 * the compute task. */
static guint32 sp_block_backward(Builder *b, SimTime dur, int kernels, gboolean gather_out,
                                 int layer, int micro, guint32 in, guint32 ag, guint32 *seg) {
    guint32 g = gather_out ? sp_comm(b, COLL_ALLGATHER, PHASE_BWD, layer, micro, in) : in;
    collective(b, COLL_ALLGATHER, DIM_TP, b->act_bytes, PHASE_BWD, layer, micro, g);
    guint32 c = *seg = compute_k(b, dur, kernels, PHASE_BWD, layer, micro, g, ag);
    return sp_comm(b, COLL_REDUCE_SCATTER, PHASE_BWD, layer, micro, c);
}

static guint32 sp_backward(Builder *b, const ParamUnit *u, int micro, guint32 in, guint32 ag,
                           guint32 *seg_task) {
    int layer = unit_layer(b, u);
    switch (u->kind) {
    case UNIT_HEAD: /* the output layer is column-parallel: its input gathered again */
        return sp_block_backward(b, b->bwd[SEG_HEAD], b->nbwd[SEG_HEAD], FALSE, layer, micro, in,
                                 ag, &seg_task[SEG_HEAD]);
    case UNIT_EMBED: { /* the reduce-scatter's gradient: the full output gradient */
        guint32 g = sp_comm(b, COLL_ALLGATHER, PHASE_BWD, layer, micro, in);
        return seg_task[SEG_EMBED] =
                   seg_compute(b, SEG_EMBED, TRUE, PHASE_BWD, layer, micro, g, ag);
    }
    case UNIT_LAYER:
        break;
    }
    guint32 r = sp_block_backward(b, b->bwd[SEG_MLP], b->nbwd[SEG_MLP], TRUE, layer, micro, in, ag,
                                  &seg_task[SEG_MLP]);
    gboolean sel = b->sc->recompute == RECOMPUTE_SELECTIVE; /* the attention core redone first */
    SimTime attn = sim_time_add(b->bwd[SEG_ATTN], sel ? b->attn_core : 0);
    int nattn = b->nbwd[SEG_ATTN] + (sel ? b->ncore : 0);
    return sp_block_backward(b, attn, nattn, TRUE, layer, micro, r, NO_TASK, &seg_task[SEG_ATTN]);
}

static const LayerEmitter table[EMIT_COUNT] = {
    [EMIT_TP] = {"tp", tp_forward, tp_backward},
    [EMIT_TP_SP] = {"tp_sp", sp_forward, sp_backward},
    [EMIT_MOE] = {"moe", moe_forward, moe_backward},
};

const LayerEmitter *emitter_get(EmitterId id) {
    g_assert(id < EMIT_COUNT);
    return &table[id];
}
