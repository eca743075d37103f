/* workload: rank programs built from the scenario.
 *
 * Schedules, with their sources:
 * - Megatron-LM tensor parallelism (Shoeybi et al. 2019): per layer one allreduce of the
 *   activations (b s h elements) after the attention block and one after the MLP block, forward;
 *   the same two in activation recomputation; two in backward (the f operators' gradients); one at
 *   the vocabulary-parallel embedding. This is the study's Eq. 6 count, 6 per layer + 1.
 * - Pipelines: GPipe (all forwards, then all backwards) and 1F1B (Narayanan et al. 2021: p - s - 1
 *   warm-up forwards on stage s, then one forward and one backward alternately, then cool-down
 *   backwards). Stages exchange b s h activations forward and as many gradients backward.
 * - Data parallelism by framework (framework.c): gradient buckets filled tensor by tensor as
 *   backward produces them, reduced while it runs or after it; DDP and ZeRO-1 in the last
 *   micro-batch of an accumulation, ZeRO-2 and ZeRO-3 in every one (their gradients are
 *   partitioned); ZeRO-1/2 allgather the updated parameters after the optimizer (Rajbhandari et
 *   al. 2020).
 * - ZeRO-3: each unit's parameters gathered before its forward and again before its recomputation
 *   and backward, on their own stream, issued by DeepSpeed's prefetch window (zero3_plan).
 * - Tensor parallelism beyond Eq. 6: the head's input-gradient allreduce, the vocabulary-parallel
 *   cross entropy's three, and GPT-NeoX's parallel residual (layer_forward, head_forward).
 * - Host synchronisations (Task.host_sync): before the optimizer, and with GPT-NeoX's
 *   synchronize_each_layer at every checkpointed layer's entry and exit. */
#include "workload.h"

#include "device.h"
#include "framework.h"
#include "zeropp.h"

#define NO_TASK G_MAXUINT32

struct Workload {
    const Scenario *sc;
    const Topology *topo;
    Program *programs; /* one per pipeline stage */
};

static const char *const dim_names[DIM_COUNT] = {"dp", "tp", "pp", "ep", "dp_intra", "dp_inter"};

const char *workload_dim_name(Dim d) {
    return dim_names[d];
}

Dim workload_dim_class(Dim d) {
    return d == DIM_DP_INTRA || d == DIM_DP_INTER ? DIM_DP : d;
}

/* --- building one stage's program ----------------------------------------------------------- */

/* One use of a unit's parameters under ZeRO-3: its forward, or its recomputation and backward. */
typedef struct {
    guint unit;       /* index in Builder.units */
    int micro;        /* micro-batch */
    guint front;      /* the use at whose start these parameters are gathered (<= this one) */
    gboolean again;   /* not the unit's first use of the iteration (ZeRO++ hpZ: secondary) */
    guint32 gathered; /* its last allgather task, once emitted */
} UnitUse;

/* One pass of the schedule: a micro-batch's forward or backward. */
typedef struct {
    gboolean fwd;
    int micro;
} PassRef;

typedef struct {
    const Scenario *sc;
    const Framework *fw;
    const DeviceSpec *dev;
    Program *pg;
    int stage;
    GArray *units;          /* ParamUnit, forward order */
    SimTime fwd[SEG_COUNT]; /* forward time of each segment, picoseconds */
    SimTime bwd[SEG_COUNT]; /* backward time of each segment, picoseconds */
    SimTime attn_core;      /* attention scores, softmax, dropout, context: what selective
                               recomputation redoes */
    int nfwd[SEG_COUNT];    /* kernels of each segment's forward */
    int nbwd[SEG_COUNT];    /* kernels of each segment's backward */
    int ncore;              /* kernels of the attention core */
    double act_bytes;       /* b s h activations, bytes */
    double ce_bytes;        /* b s fp32 values: one vocabulary-parallel cross-entropy reduction */
    int e;                  /* bytes per element */
    double bucket_params;   /* gradients waiting in the open bucket, parameters */
    guint32 bucket_ready;   /* task after which the open bucket's gradients exist */
    int buckets_flushed;    /* in this reduction pass (PyTorch caps the first bucket lower) */
    guint32 last_dp;        /* last task on the DP reduction stream */
    guint32 last_compute;   /* last compute task emitted */
    guint32 *loss;          /* per micro-batch on the last stage: the task that ends the loss */
    GArray *uses;           /* UnitUse: ZeRO-3 parameter uses in program order; NULL without */
    guint use_next;         /* the use the program reaches next */
    guint gather_next;      /* the first use whose gathers are not emitted yet */
    gboolean sync_layers;   /* the host synchronises at checkpointed layers' boundaries */
    gboolean sync_next;     /* the next task emitted is such a boundary */
} Builder;

static guint32 emit(Builder *b, Task t, const guint32 *deps, int ndeps) {
    Program *pg = b->pg;
    t.host_sync = b->sync_next;
    b->sync_next = FALSE;
    t.seq = pg->streams[t.stream]->len;
    t.dep_first = pg->deps->len;
    t.dep_count = 0;
    for (int i = 0; i < ndeps; i++) {
        if (deps[i] == NO_TASK)
            continue;
        g_array_append_val(pg->deps, deps[i]);
        t.dep_count++;
    }
    guint32 idx = pg->tasks->len;
    g_array_append_val(pg->tasks, t);
    g_array_append_val(pg->streams[t.stream], idx);
    return idx;
}

static guint32 compute_k(Builder *b, SimTime dur, int kernels, Phase ph, int layer, int micro,
                         guint32 dep1, guint32 dep2) {
    Task t = {.kind = TASK_COMPUTE,
              .stream = STREAM_COMPUTE,
              .phase = ph,
              .kernels = (uint16_t)MIN(kernels, G_MAXUINT16),
              .layer = layer,
              .micro = micro,
              .duration = dur};
    guint32 deps[2] = {dep1, dep2};
    return b->last_compute = emit(b, t, deps, 2);
}

/* One segment's kernels in one pass (bwd FALSE: forward or its recomputation) as one compute
 * task. */
static guint32 seg_compute(Builder *b, Segment seg, gboolean bwd, Phase ph, int layer, int micro,
                           guint32 dep1, guint32 dep2) {
    return compute_k(b, bwd ? b->bwd[seg] : b->fwd[seg], bwd ? b->nbwd[seg] : b->nfwd[seg], ph,
                     layer, micro, dep1, dep2);
}

/* A collective on dimension dim and stream s, after `after`. Returns NO_TASK when the group is one
 * rank. */
static guint32 collective_on(Builder *b, StreamId s, CollOp op, Dim dim, double bytes, Phase ph,
                             int layer, int micro, guint32 after) {
    int n = dim == DIM_TP ? b->sc->tp : dim == DIM_DP ? b->sc->dp : zeropp_group_size(b->sc, dim);
    if (n <= 1)
        return NO_TASK;
    Task t = {.kind = TASK_COLL,
              .stream = s,
              .op = op,
              .dim = dim,
              .phase = ph,
              .layer = layer,
              .micro = micro,
              .bytes = bytes};
    guint32 idx = emit(b, t, &after, 1);
    if (s == STREAM_DP)
        b->last_dp = idx;
    return idx;
}

static guint32 collective(Builder *b, CollOp op, Dim dim, double bytes, Phase ph, int layer,
                          int micro, guint32 after) {
    return collective_on(b, dim == DIM_TP ? STREAM_TP : STREAM_DP, op, dim, bytes, ph, layer, micro,
                         after);
}

/* ZeRO++: a chain of collectives and kernels (zeropp.h) on stream s, after `after`; returns its
 * last task. */
static guint32 emit_steps(Builder *b, StreamId s, const ZppStep *steps, int n, Phase ph, int layer,
                          int micro, guint32 after) {
    for (int k = 0; k < n; k++) {
        const ZppStep *z = &steps[k];
        guint32 t = NO_TASK;
        if (z->kernel) {
            Task kt = {.kind = TASK_KERNEL,
                       .stream = s,
                       .op = z->op,
                       .dim = z->dim,
                       .phase = ph,
                       .kernels = 1,
                       .layer = layer,
                       .micro = micro,
                       .duration = z->duration};
            t = emit(b, kt, &after, 1);
            if (s == STREAM_DP)
                b->last_dp = t;
        } else {
            t = collective_on(b, s, z->op, z->dim, z->bytes, ph, layer, micro, after);
        }
        if (t != NO_TASK)
            after = t;
    }
    return after;
}

static guint32 p2p(Builder *b, TaskKind kind, StreamId stream, Phase ph, int micro, guint32 after) {
    Task t = {.kind = kind,
              .stream = stream,
              .op = kind == TASK_SEND ? COLL_SEND : COLL_RECV,
              .dim = DIM_PP,
              .phase = ph,
              .layer = -2,
              .micro = micro,
              .bytes = b->act_bytes};
    return emit(b, t, &after, 1);
}

static int unit_layer(const Builder *b, const ParamUnit *u) {
    return u->kind == UNIT_EMBED ? -1 : u->kind == UNIT_HEAD ? b->sc->model.layers : u->layer;
}

/* --- data-parallel gradients (framework.c says whose rules) ---------------------------------- */

static CollOp grad_op(const Builder *b) {
    return b->sc->zero == 0 ? COLL_ALLREDUCE : COLL_REDUCE_SCATTER;
}

/* Close the open gradient bucket: one DP collective over its gradients. */
static void flush_bucket(Builder *b, int micro) {
    if (b->bucket_params <= 0)
        return;
    ZppStep steps[ZPP_MAX_STEPS]; /* ZeRO++ qgZ: the hierarchical quantized all-to-all instead */
    int n = zeropp_grad_steps(b->sc, b->dev, b->bucket_params, steps);
    if (n > 0)
        emit_steps(b, STREAM_DP, steps, n, PHASE_GRADS, -2, micro, b->bucket_ready);
    else
        collective(b, grad_op(b), DIM_DP, b->bucket_params * b->e, PHASE_GRADS, -2, micro,
                   b->bucket_ready);
    b->bucket_params = 0;
    b->buckets_flushed++;
}

/* One gradient tensor of `params` parameters exists once task `ready` is done. Tensors arrive in
 * the order the framework assigns them to buckets. */
static void add_grad(Builder *b, double params, guint32 ready, int micro) {
    const Framework *fw = b->fw;
    double cap = b->buckets_flushed == 0 && fw->first_bucket_bytes > 0 ? fw->first_bucket_bytes
                                                                       : b->sc->bucket_bytes;
    if (fw->close_before_overflow && b->bucket_params > 0 &&
        (b->bucket_params + params) * b->e > cap) {
        flush_bucket(b, micro);
        cap = b->sc->bucket_bytes;
    }
    b->bucket_params += params;
    if (ready != NO_TASK && (b->bucket_ready == NO_TASK || ready > b->bucket_ready))
        b->bucket_ready = ready;
    if (!fw->close_before_overflow && b->bucket_params * b->e >= cap)
        flush_bucket(b, micro);
}

/* Whether this micro-batch's backward reduces gradients while it runs: ZeRO-2/3 every
 * micro-batch (their gradients are partitioned); DDP and ZeRO-1 only in the last, and DDP only
 * if the framework overlaps it (DeepSpeed reduces after backward). */
static gboolean reduces_in_backward(const Builder *b, gboolean last_micro) {
    const Scenario *sc = b->sc;
    if (sc->dp <= 1)
        return FALSE;
    if (sc->zero >= 2)
        return TRUE;
    return last_micro && (sc->zero == 1 || b->fw->ddp_overlap);
}

/* Gradients of unit u exist: its tensors whose gradient segment `seg` produced are ready once
 * task seg_task[seg] is done. Tensors go in reverse registration order, which for a GPT-NeoX
 * layer is its MLP's tensors (done first in backward) and then its attention's. */
static void grads_ready(Builder *b, const ParamUnit *u, int micro, const guint32 *seg_task) {
    double sizes[32];
    Segment segs[32];
    int n =
        model_unit_tensor_segments(&b->sc->model, u, b->sc->seq_len, b->sc->tp, sizes, segs, 32);
    static const Segment order[] = {SEG_HEAD, SEG_MLP, SEG_ATTN, SEG_EMBED};
    for (size_t o = 0; o < G_N_ELEMENTS(order); o++)
        for (int k = n - 1; k >= 0; k--)
            if (segs[k] == order[o])
                add_grad(b, sizes[k], seg_task[segs[k]], micro);
}

/* DeepSpeed without ZeRO: after the last backward, every gradient in forward order, in buckets,
 * all ready when backward ends. */
static void reduce_after_backward(Builder *b, int micro) {
    for (guint i = 0; i < b->units->len; i++) {
        const ParamUnit *u = &g_array_index(b->units, ParamUnit, i);
        double sizes[32];
        int n = model_unit_tensors(&b->sc->model, u, b->sc->seq_len, b->sc->tp, sizes, 32);
        for (int k = 0; k < n; k++)
            add_grad(b, sizes[k], b->last_compute, micro);
    }
    flush_bucket(b, micro);
}

/* --- ZeRO-3 parameters --------------------------------------------------------------------- */

/* ZeRO-3's parameter uses, planned before the program is built. DeepSpeed's stage 3 fetches a
 * module's parameters one allgather per tensor (the study saw mostly kilobyte-sized ZeRO-3
 * allgathers: biases and norms) on the PartitionedParameterCoordinator's own allgather stream, and
 * its pre-forward hooks prefetch from the recorded trace up to stage3_prefetch_bucket_size new
 * elements each, several hooks per unit, while fewer than stage3_max_live_parameters are
 * available (partitioned_param_coordinator.py, fetch_sub_module). We model the steady state: the
 * gathers of use j are issued when use front(j) starts, the oldest use such that the parameters of
 * uses front(j)..j fit in max_live_parameters; with prefetch_bucket_size 0 front(j) = j (fetched
 * when it starts). A unit's recomputation and backward share one use. The gathered buffers peak
 * at the largest such window. */
static void zero3_plan(Builder *b, const GArray *passes) {
    const Scenario *sc = b->sc;
    if (sc->zero != 3 || sc->dp <= 1)
        return;
    b->uses = g_array_new(FALSE, FALSE, sizeof(UnitUse));
    guint n = b->units->len;
    for (guint p = 0; p < passes->len; p++) {
        const PassRef *pr = &g_array_index(passes, PassRef, p);
        for (guint k = 0; k < n; k++) {
            UnitUse use = {
                .unit = pr->fwd ? k : n - 1 - k, .micro = pr->micro, .gathered = NO_TASK};
            g_array_append_val(b->uses, use);
        }
    }
    guint first = 0;
    double live = 0;
    g_autofree gboolean *seen = g_new0(gboolean, n);
    for (guint j = 0; j < b->uses->len; j++) {
        UnitUse *u = &g_array_index(b->uses, UnitUse, j);
        u->again = seen[u->unit];
        seen[u->unit] = TRUE;
        double params = g_array_index(b->units, ParamUnit, u->unit).params;
        live += params;
        while (first < j && live > sc->max_live_elems) {
            guint unit = g_array_index(b->uses, UnitUse, first).unit;
            live -= g_array_index(b->units, ParamUnit, unit).params;
            first++;
        }
        if (sc->prefetch_elems <= 0) {
            first = j;
            live = params;
        }
        u->front = first;
        b->pg->gathered_peak = MAX(b->pg->gathered_peak, live);
    }
}

/* The program reaches the next ZeRO-3 use: issue the gathers of every use whose window starts
 * here (after the compute before it), and return the last gather this use waits for. */
static guint32 zero3_use(Builder *b) {
    if (!b->uses)
        return NO_TASK;
    guint now = b->use_next++;
    g_assert(now < b->uses->len);
    guint32 after = b->last_compute;
    for (; b->gather_next < b->uses->len; b->gather_next++) {
        UnitUse *u = &g_array_index(b->uses, UnitUse, b->gather_next);
        if (u->front > now)
            break;
        const ParamUnit *pu = &g_array_index(b->units, ParamUnit, u->unit);
        double sizes[32];
        int n = model_unit_tensors(&b->sc->model, pu, b->sc->seq_len, b->sc->tp, sizes, 32);
        for (int k = 0; k < n; k++) {
            ZppStep steps[ZPP_MAX_STEPS]; /* ZeRO++ qwZ / hpZ: quantized or within the node */
            int ns = zeropp_gather_steps(b->sc, b->dev, sizes[k], b->e, u->again, steps);
            if (ns > 0)
                u->gathered = emit_steps(b, STREAM_DP_GATHER, steps, ns, PHASE_PARAMS,
                                         unit_layer(b, pu), u->micro, after);
            else
                u->gathered =
                    collective_on(b, STREAM_DP_GATHER, COLL_ALLGATHER, DIM_DP, sizes[k] * b->e,
                                  PHASE_PARAMS, unit_layer(b, pu), u->micro, after);
        }
    }
    return g_array_index(b->uses, UnitUse, now).gathered;
}

/* --- tensor parallelism (Megatron-LM as GPT-NeoX uses it) ------------------------------------ */

/* One transformer layer's forward (or its recomputation): attention, MLP and their allreduces.
 * Sequential residual: the attention block's RowParallelLinear allreduces, then the MLP's
 * (Megatron, the study's Eq. 6). GPT-NeoX's gpt_j_residual (parallel_residual): both blocks read
 * the layer's input, their RowParallelLinears skip the allreduce (parallel_output) and one
 * reduce_from_model_parallel_region sums attention + MLP (megatron/model/transformer.py,
 * ParallelTransformerLayer.forward). Returns the task the next layer waits for. */
static guint32 layer_forward(Builder *b, Phase ph, int layer, int micro, guint32 in, guint32 ag) {
    guint32 c = seg_compute(b, SEG_ATTN, FALSE, ph, layer, micro, in, ag);
    guint32 ar = NO_TASK;
    if (!b->sc->model.parallel_residual)
        ar = collective(b, COLL_ALLREDUCE, DIM_TP, b->act_bytes, ph, layer, micro, c);
    c = seg_compute(b, SEG_MLP, FALSE, ph, layer, micro, ar, NO_TASK);
    guint32 out = collective(b, COLL_ALLREDUCE, DIM_TP, b->act_bytes, ph, layer, micro, c);
    return out != NO_TASK ? out : c;
}

/* A layer's backward: the MLP's, then the attention's, each ending in the allreduce of its input
 * gradient (copy_to_model_parallel_region's backward before each ColumnParallelLinear). With a
 * parallel residual the attention's backward does not wait for the MLP's allreduce. seg_task
 * receives the task that ends each segment's backward. Returns what the previous layer waits for.
 */
static guint32 layer_backward(Builder *b, int layer, int micro, guint32 dep, guint32 ag,
                              guint32 *seg_task) {
    const Scenario *sc = b->sc;
    guint32 c = seg_compute(b, SEG_MLP, TRUE, PHASE_BWD, layer, micro, dep, ag);
    seg_task[SEG_MLP] = c;
    guint32 ar = collective(b, COLL_ALLREDUCE, DIM_TP, b->act_bytes, PHASE_BWD, layer, micro, c);
    gboolean sel = sc->recompute == RECOMPUTE_SELECTIVE; /* the attention core redone first */
    SimTime attn = sim_time_add(b->bwd[SEG_ATTN], sel ? b->attn_core : 0);
    int nattn = b->nbwd[SEG_ATTN] + (sel ? b->ncore : 0);
    guint32 attn_dep = sc->model.parallel_residual ? dep : ar;
    c = compute_k(b, attn, nattn, PHASE_BWD, layer, micro, attn_dep, NO_TASK);
    seg_task[SEG_ATTN] = c;
    guint32 out = collective(b, COLL_ALLREDUCE, DIM_TP, b->act_bytes, PHASE_BWD, layer, micro, c);
    return out != NO_TASK ? out : c;
}

/* The output layer's forward: the vocabulary-parallel logits, then the vocabulary-parallel cross
 * entropy's three allreduces of b s fp32 values (the logits' max, the target logit, the sum of
 * exponentials: mpu/cross_entropy.py _VocabParallelCrossEntropy.forward). */
static guint32 head_forward(Builder *b, int layer, int micro, guint32 in, guint32 ag) {
    guint32 last = seg_compute(b, SEG_HEAD, FALSE, PHASE_FWD, layer, micro, in, ag);
    for (int k = 0; k < 3; k++) {
        guint32 ar =
            collective(b, COLL_ALLREDUCE, DIM_TP, b->ce_bytes, PHASE_FWD, layer, micro, last);
        if (ar != NO_TASK)
            last = ar;
    }
    return last;
}

static void forward_pass(Builder *b, int micro) {
    const Scenario *sc = b->sc;
    guint32 in = NO_TASK;
    if (b->stage > 0)
        in = p2p(b, TASK_RECV, STREAM_PP_RECV_FWD, PHASE_FWD, micro, NO_TASK);
    for (guint i = 0; i < b->units->len; i++) {
        const ParamUnit *u = &g_array_index(b->units, ParamUnit, i);
        gboolean ckpt = u->kind == UNIT_LAYER && b->sync_layers;
        b->sync_next |= ckpt; /* CheckpointFunction.forward synchronises on entry */
        guint32 ag = zero3_use(b);
        int layer = unit_layer(b, u);
        switch (u->kind) {
        case UNIT_EMBED: { /* VocabParallelEmbedding: allreduce of the partial embeddings */
            guint32 c = seg_compute(b, SEG_EMBED, FALSE, PHASE_FWD, layer, micro, in, ag);
            in = collective(b, COLL_ALLREDUCE, DIM_TP, b->act_bytes, PHASE_FWD, layer, micro, c);
            if (in == NO_TASK)
                in = c;
            break;
        }
        case UNIT_LAYER:
            in = layer_forward(b, PHASE_FWD, layer, micro, in, ag);
            break;
        case UNIT_HEAD:
            in = head_forward(b, layer, micro, in, ag);
            break;
        }
        b->sync_next |= ckpt; /* ... and on exit */
    }
    if (b->stage < sc->pp - 1)
        p2p(b, TASK_SEND, STREAM_PP_SEND_FWD, PHASE_FWD, micro, in);
    else
        b->loss[micro] = in;
}

static void backward_pass(Builder *b, int micro, gboolean last_micro) {
    const Scenario *sc = b->sc;
    guint32 in = b->loss[micro];
    if (b->stage < sc->pp - 1)
        in = p2p(b, TASK_RECV, STREAM_PP_RECV_BWD, PHASE_BWD, micro, NO_TASK);
    gboolean overlap = reduces_in_backward(b, last_micro);
    b->buckets_flushed = 0;
    for (int i = (int)b->units->len - 1; i >= 0; i--) {
        const ParamUnit *u = &g_array_index(b->units, ParamUnit, i);
        gboolean ckpt = u->kind == UNIT_LAYER && b->sync_layers;
        b->sync_next |= ckpt; /* CheckpointFunction.backward synchronises on entry */
        guint32 ag = zero3_use(b);
        int layer = unit_layer(b, u);
        guint32 seg_task[SEG_COUNT] = {NO_TASK, NO_TASK, NO_TASK, NO_TASK};
        switch (u->kind) {
        case UNIT_HEAD: { /* ColumnParallelLinear's input gradient is allreduced */
            guint32 c = seg_compute(b, SEG_HEAD, TRUE, PHASE_BWD, layer, micro, in, ag);
            seg_task[SEG_HEAD] = c;
            in = collective(b, COLL_ALLREDUCE, DIM_TP, b->act_bytes, PHASE_BWD, layer, micro, c);
            if (in == NO_TASK)
                in = c;
            break;
        }
        case UNIT_LAYER:
            if (sc->recompute == RECOMPUTE_FULL) { /* rerun the layer's forward, with its ARs */
                in = layer_forward(b, PHASE_RECOMPUTE, layer, micro, in, ag);
                ag = NO_TASK;
            }
            in = layer_backward(b, layer, micro, in, ag, seg_task);
            break;
        case UNIT_EMBED:
            in = seg_compute(b, SEG_EMBED, TRUE, PHASE_BWD, layer, micro, in, ag);
            seg_task[SEG_EMBED] = in;
            break;
        }
        if (overlap) /* gradient hooks fire inside the layer's backward */
            grads_ready(b, u, micro, seg_task);
        b->sync_next |= ckpt; /* ... and on exit */
    }
    if (overlap)
        flush_bucket(b, micro);
    else if (last_micro && sc->zero == 0 && sc->dp > 1)
        reduce_after_backward(b, micro);
    if (b->stage > 0)
        p2p(b, TASK_SEND, STREAM_PP_SEND_BWD, PHASE_BWD, micro, in);
}

/* Time of one segment's kernels in one pass, picoseconds; attn_core (when not NULL) receives the
 * time of the attention core's kernels (what selective recomputation redoes), ncore their number;
 * *kernels the number of kernels. */
static SimTime segment_time(const Scenario *sc, const DeviceSpec *dev, Segment seg, Pass pass,
                            SimTime *attn_core, int *ncore, int *kernels) {
    g_autoptr(GArray) ops = g_array_new(FALSE, FALSE, sizeof(ModelOp));
    model_segment_ops(&sc->model, seg, pass, sc->micro_batch, sc->seq_len, sc->tp, sc->precision,
                      ops);
    SimTime total = 0;
    for (guint i = 0; i < ops->len; i++) {
        const ModelOp *op = &g_array_index(ops, ModelOp, i);
        SimTime t = device_op_time(dev, op, sc->precision);
        total = sim_time_add(total, t);
        if (attn_core && op->attn_core) {
            *attn_core = sim_time_add(*attn_core, t);
            ++*ncore;
        }
    }
    *kernels = (int)ops->len;
    return total;
}

/* The order of a stage's passes. GPipe: every forward, then every backward. 1F1B (Narayanan et
 * al. 2021): p - stage - 1 warm-up forwards, then one forward and one backward alternately, then
 * the cool-down backwards. */
static GArray *schedule_passes(const Scenario *sc, int stage) {
    GArray *out = g_array_new(FALSE, FALSE, sizeof(PassRef));
    int m = sc->grad_accum;
    int warm = sc->schedule == SCHED_GPIPE ? m : MIN(sc->pp - stage - 1, m);
    for (int mb = 0; mb < warm; mb++)
        g_array_append_val(out, ((PassRef){TRUE, mb}));
    for (int i = 0; i < m - warm; i++) {
        g_array_append_val(out, ((PassRef){TRUE, warm + i}));
        g_array_append_val(out, ((PassRef){FALSE, i}));
    }
    for (int mb = m - warm; mb < m; mb++)
        g_array_append_val(out, ((PassRef){FALSE, mb}));
    return out;
}

static void build_stage(Workload *wl, int stage) {
    const Scenario *sc = wl->sc;
    const DeviceSpec *dev = &topo_spec(wl->topo)->device;
    Program *pg = &wl->programs[stage];
    pg->tasks = g_array_new(FALSE, FALSE, sizeof(Task));
    pg->deps = g_array_new(FALSE, FALSE, sizeof(guint32));
    for (int s = 0; s < STREAM_COUNT; s++)
        pg->streams[s] = g_array_new(FALSE, FALSE, sizeof(guint32));
    Builder b = {.sc = sc,
                 .fw = framework_get(sc->framework),
                 .dev = dev,
                 .pg = pg,
                 .stage = stage,
                 .last_dp = NO_TASK,
                 .last_compute = NO_TASK,
                 .bucket_ready = NO_TASK,
                 .sync_layers = sc->sync_each_layer && sc->recompute == RECOMPUTE_FULL,
                 .loss = g_new(guint32, sc->grad_accum)};
    for (int mb = 0; mb < sc->grad_accum; mb++)
        b.loss[mb] = NO_TASK;
    b.units = model_stage_units(&sc->model, sc->seq_len, sc->tp, sc->pp, stage);
    b.e = model_elem_bytes(sc->precision);
    b.act_bytes = (double)sc->micro_batch * sc->seq_len * sc->model.hidden * b.e;
    b.ce_bytes = (double)sc->micro_batch * sc->seq_len * 4;
    for (int s = 0; s < SEG_COUNT; s++) {
        b.fwd[s] = segment_time(sc, dev, s, PASS_FWD, s == SEG_ATTN ? &b.attn_core : NULL, &b.ncore,
                                &b.nfwd[s]);
        b.bwd[s] = segment_time(sc, dev, s, PASS_BWD, NULL, NULL, &b.nbwd[s]);
    }
    pg->params = 0;
    pg->gathered_peak = 0;
    for (guint i = 0; i < b.units->len; i++)
        pg->params += g_array_index(b.units, ParamUnit, i).params;

    g_autoptr(GArray) passes = schedule_passes(sc, stage);
    zero3_plan(&b, passes);
    for (guint k = 0; k < passes->len; k++) {
        const PassRef *pr = &g_array_index(passes, PassRef, k);
        if (pr->fwd)
            forward_pass(&b, pr->micro);
        else
            backward_pass(&b, pr->micro, pr->micro == sc->grad_accum - 1);
    }

    /* Optimizer step over the local (ZeRO: partitioned) parameters, once gradients are reduced;
     * the host synchronises before it (executor.c: the overflow check). */
    b.sync_next = TRUE;
    double opt_params = pg->params / (sc->zero >= 1 ? sc->dp : 1);
    guint32 opt = compute_k(&b, device_optimizer_time(dev, opt_params, sc->precision), 1,
                            PHASE_OPTIMIZER, -2, -1, b.last_dp, NO_TASK);
    if (sc->zero == 1 || sc->zero == 2) { /* gather the updated parameters, in buckets */
        double open = 0;
        for (guint i = 0; i < b.units->len; i++) {
            open += g_array_index(b.units, ParamUnit, i).params;
            if (open * b.e >= sc->bucket_bytes || i + 1 == b.units->len) {
                collective(&b, COLL_ALLGATHER, DIM_DP, open * b.e, PHASE_PARAMS, -2, -1, opt);
                open = 0;
            }
        }
    }
    if (b.uses)
        g_array_unref(b.uses);
    g_free(b.loss);
    g_array_unref(b.units);
}

Workload *workload_new(const Scenario *sc, const Topology *topo) {
    Workload *wl = g_new0(Workload, 1);
    wl->sc = sc;
    wl->topo = topo;
    wl->programs = g_new0(Program, sc->pp);
    for (int s = 0; s < sc->pp; s++)
        build_stage(wl, s);
    return wl;
}

void workload_free(Workload *wl) {
    if (!wl)
        return;
    for (int s = 0; s < wl->sc->pp; s++) {
        Program *pg = &wl->programs[s];
        g_array_unref(pg->tasks);
        g_array_unref(pg->deps);
        for (int i = 0; i < STREAM_COUNT; i++)
            g_array_unref(pg->streams[i]);
    }
    g_free(wl->programs);
    g_free(wl);
}

const Scenario *workload_scenario(const Workload *wl) {
    return wl->sc;
}

const Program *workload_program(const Workload *wl, int stage) {
    return &wl->programs[stage];
}

int workload_stage_of(const Workload *wl, int rank) {
    return rank / (wl->sc->dp * wl->sc->tp);
}

int workload_dp_index(const Workload *wl, int rank) {
    return rank / wl->sc->tp % wl->sc->dp;
}

int workload_tp_index(const Workload *wl, int rank) {
    return rank % wl->sc->tp;
}

int workload_replica_span(const Workload *wl) {
    return zeropp_replica_span(wl->sc);
}

int workload_group_size(const Workload *wl, Dim dim) {
    if (dim == DIM_DP_INTRA || dim == DIM_DP_INTER)
        return zeropp_group_size(wl->sc, dim);
    return dim == DIM_TP ? wl->sc->tp : dim == DIM_DP ? wl->sc->dp : 2;
}

int workload_group_count(const Workload *wl, Dim dim) {
    const Scenario *sc = wl->sc;
    if (dim == DIM_DP_INTRA || dim == DIM_DP_INTER)
        return zeropp_group_count(sc, dim);
    return dim == DIM_TP ? sc->dp * sc->pp : sc->tp * sc->pp;
}

int workload_group(const Workload *wl, Dim dim, int rank, int *members) {
    const Scenario *sc = wl->sc;
    if (dim == DIM_DP_INTRA || dim == DIM_DP_INTER)
        return zeropp_group(sc, dim, rank, members);
    int stage = workload_stage_of(wl, rank), d = workload_dp_index(wl, rank),
        t = workload_tp_index(wl, rank);
    int base = stage * sc->dp * sc->tp;
    if (dim == DIM_TP) {
        for (int i = 0; i < sc->tp; i++)
            members[i] = base + d * sc->tp + i;
        return stage * sc->dp + d;
    }
    g_assert(dim == DIM_DP);
    for (int i = 0; i < sc->dp; i++)
        members[i] = base + i * sc->tp + t;
    return stage * sc->tp + t;
}

int workload_group_members(const Workload *wl, Dim dim, int group, int *members) {
    const Scenario *sc = wl->sc;
    int first;
    if (dim == DIM_DP_INTRA || dim == DIM_DP_INTER)
        first = zeropp_group_first(sc, dim, group);
    else if (dim == DIM_TP) /* group = stage * dp + dp_idx */
        first = group / sc->dp * sc->dp * sc->tp + group % sc->dp * sc->tp;
    else /* group = stage * tp + tp_idx */
        first = group / sc->tp * sc->dp * sc->tp + group % sc->tp;
    workload_group(wl, dim, first, members);
    return workload_group_size(wl, dim);
}

double workload_model_flops(const Workload *wl) {
    const Scenario *sc = wl->sc;
    /* forward + backward (2x forward), no recomputation: the MFU convention of Chowdhery et al.
     * 2022 and Narayanan et al. 2021 */
    return 3.0 * model_forward_flops(&sc->model, 1, sc->seq_len, sc->tp) * (double)sc->global_batch;
}

double workload_neox_flops(const Workload *wl) {
    const Scenario *sc = wl->sc;
    return model_neox_flops(&sc->model, sc->global_batch, sc->seq_len, sc->tp,
                            sc->recompute == RECOMPUTE_FULL);
}

ModelMemory workload_memory(const Workload *wl) {
    const Scenario *sc = wl->sc;
    ModelMemory best = {0};
    int e = model_elem_bytes(sc->precision);
    for (int s = 0; s < sc->pp; s++) {
        /* build_stage runs GPipe as all forwards, then all backwards, whatever pp is: every
         * micro-batch is in flight at once, pp = 1 included. 1F1B holds p - stage (1 at pp 1). */
        int inflight =
            sc->schedule == SCHED_GPIPE ? sc->grad_accum : MIN(sc->grad_accum, sc->pp - s);
        ModelMemory m = model_memory(&sc->model, sc->seq_len, sc->micro_batch, sc->tp, sc->pp, s,
                                     sc->dp, sc->zero, sc->precision, sc->recompute, inflight);
        /* The bucket a reduction flattens gradients into (DeepSpeed's IPG buffer and its
         * buffered_allreduce_fallback's flat copy, PyTorch's and Megatron's bucket storage), at
         * most the stage's gradients; and ZeRO-3's gathered parameters at their peak. */
        const Program *pg = &wl->programs[s];
        if (sc->dp > 1)
            m.buffers_bytes = MIN(sc->bucket_bytes, pg->params * e) + pg->gathered_peak * e;
        m.hpz_bytes = zeropp_secondary_bytes(sc, pg->params, e); /* ZeRO++ hpZ's second shard */
        m.total_bytes += m.buffers_bytes + m.hpz_bytes;
        if (m.total_bytes > best.total_bytes)
            best = m;
    }
    return best;
}
