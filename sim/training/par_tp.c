/* par_tp: tensor parallelism and its sequence-parallel mode, as plug-ins of the block walker
 * (parallelism.h).
 *
 * Megatron-LM tensor parallelism as GPT-NeoX uses it (Shoeybi et al. 2019), the study's Eq. 6,
 * placed by a block's ends (megatron/core/tensor_parallel/mappings.py):
 * - a row-parallel output (the embedding's VocabParallelEmbedding, a layer's attention and MLP
 *   RowParallelLinear) allreduces its b s h partial sums forward (reduce_from_..._region);
 * - a column-parallel input (a layer's blocks, the head) allreduces its gradient backward
 *   (copy_to_..._region's backward), after the block's backward kernels;
 * - the head's vocabulary-parallel cross entropy allreduces three times b s fp32 values forward
 *   (the logits' max, the target logit, the sum of exponentials: mpu/cross_entropy.py
 *   _VocabParallelCrossEntropy.forward).
 * Per layer per micro-batch 2 allreduces forward, 2 in recomputation, 2 backward: 6 per layer + 1
 * (with GPT-NeoX's parallel residual one forward allreduce sums both blocks: blocks.c).
 *
 * Sequence parallelism (Korthikanti et al. 2022, Sec. 4.2.2; Megatron-LM's --sequence-parallel,
 * which needs TP > 1): between the tensor-parallel blocks the activations are split along the
 * sequence (layer norms, dropout and residual adds run on s/t tokens, workload.c's
 * segment_time). The conjugate pair becomes an allgather of the b s h input before each
 * column-parallel block and a reduce-scatter after each row-parallel one, forward and in
 * recomputation; in backward the reduce-scatter's gradient is an allgather of the output
 * gradient, the allgather's a reduce-scatter of the input gradient, and the column-parallel
 * linear gathers its (sharded, stored) input again for its weight gradient
 * (LinearWithGradAccumulationAndAsyncCommunication's backward), asynchronously under its
 * input-gradient GEMM: issued before the block's backward, no compute waits for it. Per layer:
 * forward 2 allgathers + 2 reduce-scatters, backward 4 allgathers + 2 reduce-scatters, each of
 * b s h (message), (t-1)/t of it per rank. The embedding reduce-scatters its output
 * (reduce_scatter_embeddings) and gathers its gradient back; the head (its output the loss, not
 * split) gathers its input, again for its weight gradient, and reduce-scatters its input
 * gradient; the cross entropy's three allreduces stay tensor parallelism's. The two modes are
 * two plug-ins; with sequence parallelism on, tensor parallelism's own allreduces give way to it
 * (Builder.sp). */
#include "parallelism.h"

static gboolean tp_enabled(const Scenario *sc) {
    (void)sc; /* at one rank its collectives issue nothing (collective()) */
    return TRUE;
}

static guint32 tp_leave(Builder *b, const Block *k, guint32 c, int parts) {
    if (k->kind == BLOCK_HEAD) { /* the vocabulary-parallel cross entropy */
        guint32 last = c;
        for (int i = 0; i < 3; i++)
            last = comm_or(b, COLL_ALLREDUCE, DIM_TP, b->ce_bytes, k, last);
        return last != c ? last : NO_TASK;
    }
    if (b->sp || !k->row_out)
        return NO_TASK;
    return collective(b, COLL_ALLREDUCE, DIM_TP, b->act_bytes / parts, k->ph, k->layer, k->micro,
                      c);
}

static guint32 tp_leave_bwd(Builder *b, const Block *k, guint32 c) {
    if (b->sp || !k->column_in)
        return NO_TASK;
    return collective(b, COLL_ALLREDUCE, DIM_TP, b->act_bytes, PHASE_BWD, k->layer, k->micro, c);
}

static int tp_size(const Scenario *sc) {
    return sc->tp;
}

const Parallelism par_tp = {.name = "tp",
                            .dim = DIM_TP,
                            .stream = STREAM_TP,
                            .size = tp_size,
                            .enabled = tp_enabled,
                            .leave = tp_leave,
                            .leave_bwd = tp_leave_bwd};

static gboolean sp_enabled(const Scenario *sc) {
    return sc->sequence_parallel && sc->tp > 1;
}

static guint32 sp_enter(Builder *b, const Block *k, guint32 in) {
    return k->column_in ? comm_or(b, COLL_ALLGATHER, DIM_TP, b->act_bytes, k, in) : in;
}

static guint32 sp_leave(Builder *b, const Block *k, guint32 c, int parts) {
    if (!k->row_out)
        return NO_TASK;
    return collective(b, COLL_REDUCE_SCATTER, DIM_TP, b->act_bytes / parts, k->ph, k->layer,
                      k->micro, c);
}

static guint32 sp_enter_bwd(Builder *b, const Block *k, guint32 in) {
    guint32 g = k->row_out ? comm_or(b, COLL_ALLGATHER, DIM_TP, b->act_bytes, k, in) : in;
    if (k->column_in) /* the stored input, for the weight gradient: nothing but that waits
                         for it (blocks.c, where the weight-gradient GEMM runs apart) */
        b->wgrad_input =
            collective(b, COLL_ALLGATHER, DIM_TP, b->act_bytes, PHASE_BWD, k->layer, k->micro, g);
    return g;
}

static guint32 sp_leave_bwd(Builder *b, const Block *k, guint32 c) {
    if (!k->column_in)
        return NO_TASK;
    return collective(b, COLL_REDUCE_SCATTER, DIM_TP, b->act_bytes, PHASE_BWD, k->layer, k->micro,
                      c);
}

const Parallelism par_sp = {.name = "sp",
                            .dim = DIM_COUNT, /* tensor parallelism's group and stream */
                            .stream = STREAM_TP,
                            .enabled = sp_enabled,
                            .enter = sp_enter,
                            .leave = sp_leave,
                            .enter_bwd = sp_enter_bwd,
                            .leave_bwd = sp_leave_bwd};
