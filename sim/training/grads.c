/* grads: data-parallel gradients as each framework reduces them (framework.c says whose rules):
 * buckets filled tensor by tensor as backward produces them, reduced while it runs or after it;
 * DeepSpeed ZeRO-1/2's reduce per partition owner, its per-parameter hooks; ZeRO++ qgZ tensor by
 * tensor; FSDP's reduce-scatter per unit. Part of building a stage's program (workload.c). */
#include <math.h>

#include "workload_internal.h"
#include "zeropp.h"

/* --- data-parallel gradients (framework.c says whose rules) ---------------------------------- */

static CollOp grad_op(const Builder *b) {
    return b->sc->zero == 0 ? COLL_ALLREDUCE : COLL_REDUCE_SCATTER;
}

/* Whether ZeRO-1/2 buckets are reduced per partition owner (DeepSpeed, framework.c). */
static gboolean per_owner(const Builder *b) {
    return b->fw->reduce_per_owner && (b->sc->zero == 1 || b->sc->zero == 2);
}

/* DeepSpeed ZeRO-1/2's bucket of `params` gradients at *at in the flat order of partitions of
 * `part` parameters each: one rooted reduce of each partition's slice of the bucket, one after
 * another on the reduction stream. Filled in backward order (hooks during backward) the bucket
 * ends at *at, and the highest partition comes first (the order average_tensor meets them);
 * filled in forward order (b->grads_ascending: grads_after_backward) it starts there, the lowest
 * first. *at moves past the bucket. A ring or chain reduce is timed alike whichever member is its
 * root (coll_streams.c), so the root is not carried. */
static void reduce_per_owner(Builder *b, Dim dim, double params, double *at, double part,
                             guint32 ready, int micro) {
    gboolean up = b->grads_ascending;
    double lo = up ? *at : MAX(0.0, *at - params), top = up ? *at + params : *at;
    *at = up ? top : lo;
    double first = up ? floor(lo / part) : ceil(top / part) - 1;
    double last = up ? ceil(top / part) - 1 : floor(lo / part);
    for (double p = first; up ? p <= last : p >= last; p += up ? 1 : -1) {
        double slice = MIN(top, (p + 1) * part) - MAX(lo, p * part);
        if (slice > 0)
            collective(b, COLL_REDUCE, dim, slice * b->ge, PHASE_GRADS, -2, micro, ready);
    }
}

/* FSDP HYBRID_SHARD's reduction of one unit's flat gradient of `bytes` (framework.c), as torch
 * 2.1-2.4's _runtime_utils.py _reduce_grad (from _post_backward_hook) issues it: a
 * reduce_scatter_tensor over the shard group (state.process_group: DIM_DP_INTRA) on the
 * post-backward stream; then _all_reduce_stream.wait_stream(_post_backward_stream) and, on that
 * stream, an all_reduce of the shard it produced (new_sharded_grad: 1/q of the gradient, in the
 * reduce dtype) over the replicate group (state._inter_node_pg: DIM_DP_INTER). The all-reduce
 * stream is torch's own (_init_streams: "Stream to run HSDP's all-reduce as async"), so the next
 * unit's reduce-scatter does not wait for it; torch gives the unshard and post-backward streams a
 * higher priority under limit_all_gathers, which the executor's streams do not model. */
static void hybrid_shard_reduce(Builder *b, double bytes, guint32 ready, int micro) {
    guint32 rs =
        collective(b, COLL_REDUCE_SCATTER, DIM_DP_INTRA, bytes, PHASE_GRADS, -2, micro, ready);
    int q = layout_group_size(b->lay, DIM_DP_INTRA);
    guint32 ar = collective_on(b, STREAM_DP_ALLREDUCE, COLL_ALLREDUCE, DIM_DP_INTER, bytes / q,
                               PHASE_GRADS, -2, micro, rs);
    if (ar != NO_TASK)
        b->last_hsdp = ar;
}

/* Close the open gradient bucket: one DP collective over its gradients (DeepSpeed ZeRO-1/2: one
 * reduce per partition owner; FSDP HYBRID_SHARD: a reduce-scatter and an all-reduce). */
void grads_flush(Builder *b, int micro) {
    if (b->bucket_params <= 0)
        return;
    if (zeropp_qgz(b->sc)) { /* ZeRO++ qgZ: tensor by tensor, zeropp_grad_steps */
        for (guint32 i = 0; i < b->bucket_tensors.n; i++) {
            const BucketTensor *bt = &((const BucketTensor *)b->bucket_tensors.v)[i];
            ZppStep steps[ZPP_MAX_STEPS];
            int n = zeropp_grad_steps(b->sc, b->dev, bt->n, bt->width, steps);
            emit_steps(b, STREAM_DP, steps, n, PHASE_GRADS, -2, micro, b->bucket_ready);
        }
    } else if (b->sc->fsdp_shard > 0) {
        hybrid_shard_reduce(b, b->bucket_params * b->ge, b->bucket_ready, micro);
    } else if (per_owner(b) && layout_group_size(b->lay, b->grad_dim) > 1) /* dp x cp */
        reduce_per_owner(b, b->grad_dim, b->bucket_params, &b->grad_at, b->part_params,
                         b->bucket_ready, micro);
    else
        collective(b, grad_op(b), b->grad_dim, b->bucket_params * b->ge, PHASE_GRADS, -2, micro,
                   b->bucket_ready);
    b->bucket_params = 0;
    b->bucket_tensors.n = 0;
    b->buckets_flushed++;
}

/* One gradient tensor of `params` parameters (width: model_unit_tensor_widths) exists once task
 * `ready` is done. Tensors arrive in the order the framework assigns them to buckets. */
static void add_grad(Builder *b, double params, double width, guint32 ready, int micro) {
    const Framework *fw = b->fw;
    double cap = b->buckets_flushed == 0 && fw->first_bucket_bytes > 0 ? fw->first_bucket_bytes
                                                                       : b->sc->bucket_bytes;
    /* FSDP: the unit's flat gradient, whatever its size, reduced when the unit's backward ends */
    gboolean capped = !b->unit_buckets;
    if (capped && fw->close_before_overflow && b->bucket_params > 0 &&
        (b->bucket_params + params) * b->ge > cap) {
        grads_flush(b, micro);
        cap = b->sc->bucket_bytes;
    }
    b->bucket_params += params;
    *(BucketTensor *)buf_push(&b->bucket_tensors, sizeof(BucketTensor)) =
        (BucketTensor){params, width};
    if (ready != NO_TASK && (b->bucket_ready == NO_TASK || ready > b->bucket_ready))
        b->bucket_ready = ready;
    if (capped && !fw->close_before_overflow && b->bucket_params * b->ge >= cap)
        grads_flush(b, micro);
}

/* Expert gradients (a MoE layer's E/ep experts, model_moe.c) go to buckets of their own of the
 * same size, reduced over their own group (xgrad_dim: par_ep.c says which). */
void grads_flush_experts(Builder *b, int micro) {
    if (b->xbucket_params <= 0)
        return;
    Dim dim = b->xgrad_dim;
    if (per_owner(b))
        reduce_per_owner(b, dim, b->xbucket_params, &b->xgrad_at, b->xpart_params, b->xbucket_ready,
                         micro);
    else
        collective(b, grad_op(b), dim, b->xbucket_params * b->ge, PHASE_GRADS, -2, micro,
                   b->xbucket_ready);
    b->xbucket_params = 0;
}

static void add_expert_grads(Builder *b, const ParamUnit *u, guint32 ready, int micro) {
    const Scenario *sc = b->sc;
    int local = sc->model.moe.experts / sc->ep;
    double params = model_unit_expert_params(&sc->model, u, sc->tp, sc->ep);
    for (int x = 0; params > 0 && x < local; x++) { /* one expert's tensors at a time */
        b->xbucket_params += params / local;
        b->xbucket_ready = ready;
        if (b->xbucket_params * b->ge >= b->sc->bucket_bytes)
            grads_flush_experts(b, micro);
    }
}

/* Whether DeepSpeed's pipeline engine reduces this stage's gradients after its last backward
 * (framework.h pipe_reduces_after): with pipeline parallelism, DDP and ZeRO-1 (the engine refuses
 * ZeRO-2 and 3). */
gboolean grads_after_pipeline(const Builder *b) {
    return b->fw->pipe_reduces_after && b->sc->pp > 1 && b->sc->zero <= 1;
}

/* Whether this micro-batch's backward reduces gradients while it runs: ZeRO-2/3 every
 * micro-batch (their gradients are partitioned); DDP and ZeRO-1 only in the last, and DDP only
 * if the framework overlaps it (DeepSpeed reduces after backward, and its pipeline engine ZeRO-1
 * too). */
gboolean grads_reduce_in_backward(const Builder *b, gboolean last_micro) {
    const Scenario *sc = b->sc;
    if (layout_group_size(b->lay, b->grad_dim) <= 1 || grads_after_pipeline(b)) /* dp x cp */
        return FALSE;
    if (sc->zero >= 2)
        return TRUE;
    return last_micro && (sc->zero == 1 || b->fw->ddp_overlap);
}

/* Gradients of unit u exist: its tensors whose gradient segment `seg` produced are ready once
 * task seg_task[seg] is done. Tensors go in reverse registration order, which for a GPT-NeoX
 * layer is its MLP's tensors (done first in backward) and then its attention's. */
void grads_ready(Builder *b, const ParamUnit *u, int micro, const guint32 *seg_task) {
    double sizes[32], widths[32];
    Segment segs[32];
    int n =
        model_unit_tensor_segments(&b->sc->model, u, b->sc->seq_len, b->sc->tp, sizes, segs, 32);
    model_unit_tensor_widths(&b->sc->model, u, b->sc->seq_len, b->sc->tp, sizes, widths, 32);
    add_expert_grads(b, u, b->moe_expert_ready, micro);
    static const Segment order[] = {SEG_HEAD, SEG_MLP, SEG_ATTN, SEG_EMBED};
    for (size_t o = 0; o < G_N_ELEMENTS(order); o++)
        for (int k = n - 1; k >= 0; k--)
            if (segs[k] == order[o])
                add_grad(b, sizes[k], widths[k], seg_task[segs[k]], micro);
}

/* Unit i's gradients exist (seg_task, grads_ready) in a pass that reduces them; FSDP
 * reduce-scatters each unit's flat gradient there (_post_backward_hook). The root's flat
 * parameter (gathers.c root_prepare) spans the stage's embedding and head: autograd hands its
 * AccumulateGrad the gradient once every use of it has one, so its _post_backward_hook, and the
 * one reduce-scatter of all its units' gradients, come after its last unit's backward (the
 * first unit's, the embedding's with one stage); the head's wait until then. */
void grads_unit(Builder *b, guint i, int micro, const guint32 *seg_task) {
    const ParamUnit *u = &g_array_index(b->units, ParamUnit, i);
    if (b->fsdp_root && u->kind != UNIT_LAYER) {
        if (i != b->root_first)
            return; /* its gradients join the root's last unit's */
        guint32 none[SEG_COUNT];
        for (int s = 0; s < SEG_COUNT; s++)
            none[s] = NO_TASK;
        for (guint k = i + 1; k < b->units->len; k++) /* ready before this unit's */
            if (g_array_index(b->units, ParamUnit, k).kind != UNIT_LAYER)
                grads_ready(b, &g_array_index(b->units, ParamUnit, k), micro, none);
    }
    grads_ready(b, u, micro, seg_task);
    if (b->unit_buckets)
        grads_flush(b, micro);
}

/* DeepSpeed ZeRO-1/2 register a hook on every parameter's gradient accumulator
 * (stage_1_and_2.py create_reduce_and_remove_grad_hooks) that runs in every backward, after the
 * kernel that produced the gradient: it copies the gradient into the IPG bucket (or accumulates
 * it) in Python. The host pays for each once the segment's task is issued (Task.hooks). */
void grads_hooks(Builder *b, const ParamUnit *u, const guint32 *seg_task) {
    double sizes[32];
    Segment segs[32];
    int n =
        model_unit_tensor_segments(&b->sc->model, u, b->sc->seq_len, b->sc->tp, sizes, segs, 32);
    for (int k = 0; k < n; k++) {
        if (seg_task[segs[k]] == NO_TASK)
            continue;
        Task *t = &((Task *)b->tasks.v)[seg_task[segs[k]]];
        if (t->hooks < 127)
            t->hooks++;
    }
}

/* DeepSpeed without ZeRO, and its pipeline engine (grads_after_pipeline): after the last
 * backward, every gradient in forward order, in buckets, all ready when backward ends; ZeRO-1's
 * per-owner reduces from the lowest partition up. */
void grads_after_backward(Builder *b, int micro) {
    b->grads_ascending = TRUE;
    b->grad_at = b->xgrad_at = 0; /* the buckets start at the bottom of the flat order */
    for (guint i = 0; i < b->units->len; i++) {
        const ParamUnit *u = &g_array_index(b->units, ParamUnit, i);
        double sizes[32], widths[32];
        int n = model_unit_tensor_widths(&b->sc->model, u, b->sc->seq_len, b->sc->tp, sizes, widths,
                                         32);
        for (int k = 0; k < n; k++)
            add_grad(b, sizes[k], widths[k], b->last_compute, micro);
        add_expert_grads(b, u, b->last_compute, micro);
    }
    grads_flush(b, micro);
    grads_flush_experts(b, micro);
    b->grads_ascending = FALSE;
}

void grads_begin_pass(Builder *b, int chunk) {
    const Scenario *sc = b->sc;
    b->buckets_flushed = 0;
    b->grad_at = b->xgrad_at = 0; /* this chunk's gradients end where its parameters do */
    for (guint i = 0; i < b->chunk_first[chunk + 1]; i++) {
        const ParamUnit *u = &g_array_index(b->units, ParamUnit, i);
        double x = model_unit_expert_params(&sc->model, u, sc->tp, sc->ep);
        b->grad_at += u->params - x;
        b->xgrad_at += x;
    }
}
