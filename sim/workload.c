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
 * - DDP (Li et al. 2020, PyTorch DDP): gradients allreduced in buckets as backward produces them,
 *   in the last micro-batch of an accumulation.
 * - ZeRO (Rajbhandari et al. 2020, DeepSpeed): stage 1 reduce-scatters gradient buckets in the last
 *   micro-batch, stage 2 in every micro-batch (its gradients are partitioned); both allgather the
 *   updated parameters after the optimizer. Stage 3 allgathers each unit's parameters before its
 *   forward and again before its backward (prefetching up to two units ahead) and reduce-scatters
 *   its gradients after its backward. */
#include "workload.h"

#include "device.h"

#define NO_TASK G_MAXUINT32

struct Workload {
    const Scenario *sc;
    const Topology *topo;
    Program *programs; /* one per pipeline stage */
};

static const char *const dim_names[DIM_COUNT] = {"dp", "tp", "pp", "ep"};

const char *workload_dim_name(Dim d) {
    return dim_names[d];
}

/* --- building one stage's program ----------------------------------------------------------- */

typedef struct {
    const Scenario *sc;
    const Topology *topo;
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
    int e;                  /* bytes per element */
    double bucket_params;   /* gradients waiting in the open bucket, parameters */
    guint32 bucket_ready;   /* task after which the open bucket's gradients exist */
    guint32 last_dp;        /* last task on the DP stream */
    guint32 *unit_done_fwd; /* per unit: compute task that ended its forward, this pass */
    guint32 *unit_done_bwd;
} Builder;

static guint32 emit(Builder *b, Task t, const guint32 *deps, int ndeps) {
    Program *pg = b->pg;
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
    return emit(b, t, deps, 2);
}

/* The kernels of the segment of pass ph whose time is dur (b's segment tables), for the host's
 * launch count; 1 for a time that is no segment's (the optimizer step). Found by time so that the
 * passes' calls to compute() need not change; two segments of one pass with equal times (to the
 * picosecond) would both get the first one's count. */
static int kernels_of(const Builder *b, SimTime dur, Phase ph) {
    gboolean fwd = ph == PHASE_FWD || ph == PHASE_RECOMPUTE, bwd = ph == PHASE_BWD;
    for (int s = 0; s < SEG_COUNT; s++) {
        if (fwd && dur == b->fwd[s])
            return b->nfwd[s];
        if (bwd && dur == b->bwd[s])
            return b->nbwd[s];
        if (bwd && s == SEG_ATTN && dur == b->bwd[s] + b->attn_core)
            return b->nbwd[s] + b->ncore;
    }
    return 1;
}

static guint32 compute(Builder *b, SimTime dur, Phase ph, int layer, int micro, guint32 dep1,
                       guint32 dep2) {
    return compute_k(b, dur, kernels_of(b, dur, ph), ph, layer, micro, dep1, dep2);
}

/* A collective on dimension dim, after `after`. Returns NO_TASK when the group is one rank. */
static guint32 collective(Builder *b, CollOp op, Dim dim, double bytes, Phase ph, int layer,
                          int micro, guint32 after) {
    int n = dim == DIM_TP ? b->sc->tp : b->sc->dp;
    if (n <= 1)
        return NO_TASK;
    Task t = {.kind = TASK_COLL,
              .stream = dim == DIM_TP ? STREAM_TP : STREAM_DP,
              .op = op,
              .dim = dim,
              .phase = ph,
              .layer = layer,
              .micro = micro,
              .bytes = bytes};
    guint32 idx = emit(b, t, &after, 1);
    if (dim == DIM_DP)
        b->last_dp = idx;
    return idx;
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

/* Close the open gradient bucket: one DP collective over its gradients. */
static void flush_bucket(Builder *b, CollOp op, int micro) {
    if (b->bucket_params <= 0)
        return;
    collective(b, op, DIM_DP, b->bucket_params * b->e, PHASE_GRADS, -2, micro, b->bucket_ready);
    b->bucket_params = 0;
}

/* Gradients of unit u exist once task `ready` is done. */
static void grads_ready(Builder *b, const ParamUnit *u, int micro, gboolean last_micro,
                        guint32 ready) {
    const Scenario *sc = b->sc;
    if (sc->zero == 3) {
        collective(b, COLL_REDUCE_SCATTER, DIM_DP, u->params * b->e, PHASE_GRADS, unit_layer(b, u),
                   micro, ready);
        return;
    }
    if (sc->zero < 2 && !last_micro)
        return; /* DDP and ZeRO-1 accumulate locally until the last micro-batch */
    b->bucket_params += u->params;
    b->bucket_ready = ready;
    if (b->bucket_params * b->e >= sc->bucket_bytes)
        flush_bucket(b, sc->zero == 0 ? COLL_ALLREDUCE : COLL_REDUCE_SCATTER, micro);
}

/* ZeRO-3: gather unit i's parameters, at most two units ahead of the compute using them. */
static guint32 zero3_gather(Builder *b, guint i, const guint32 *done, int step, Phase ph,
                            int micro) {
    if (b->sc->zero != 3)
        return NO_TASK;
    const ParamUnit *u = &g_array_index(b->units, ParamUnit, i);
    int back = (int)i - 2 * step; /* the unit two before this one in this pass */
    guint32 after = back >= 0 && back < (int)b->units->len ? done[back] : NO_TASK;
    /* one allgather per parameter tensor, as DeepSpeed's stage 3 fetches a module's parameters
     * (the study saw mostly kilobyte-sized ZeRO-3 allgathers: biases and norms) */
    double sizes[32];
    int n = model_unit_tensors(&b->sc->model, u, b->sc->seq_len, b->sc->tp, sizes, 32);
    guint32 last = NO_TASK;
    for (int k = 0; k < n; k++)
        last = collective(b, COLL_ALLGATHER, DIM_DP, sizes[k] * b->e, ph, unit_layer(b, u), micro,
                          after);
    return last;
}

static void forward_pass(Builder *b, int micro) {
    const Scenario *sc = b->sc;
    guint32 in = NO_TASK;
    if (b->stage > 0)
        in = p2p(b, TASK_RECV, STREAM_PP_RECV_FWD, PHASE_FWD, micro, NO_TASK);
    guint32 last = NO_TASK;
    for (guint i = 0; i < b->units->len; i++)
        b->unit_done_fwd[i] = NO_TASK;
    for (guint i = 0; i < b->units->len; i++) {
        const ParamUnit *u = &g_array_index(b->units, ParamUnit, i);
        guint32 ag = zero3_gather(b, i, b->unit_done_fwd, 1, PHASE_PARAMS, micro);
        int layer = unit_layer(b, u);
        switch (u->kind) {
        case UNIT_EMBED:
            last = compute(b, b->fwd[SEG_EMBED], PHASE_FWD, layer, micro, in, ag);
            in = collective(b, COLL_ALLREDUCE, DIM_TP, b->act_bytes, PHASE_FWD, layer, micro, last);
            break;
        case UNIT_LAYER: {
            guint32 c = compute(b, b->fwd[SEG_ATTN], PHASE_FWD, layer, micro, in, ag);
            guint32 ar =
                collective(b, COLL_ALLREDUCE, DIM_TP, b->act_bytes, PHASE_FWD, layer, micro, c);
            last = compute(b, b->fwd[SEG_MLP], PHASE_FWD, layer, micro, ar, NO_TASK);
            in = collective(b, COLL_ALLREDUCE, DIM_TP, b->act_bytes, PHASE_FWD, layer, micro, last);
            break;
        }
        case UNIT_HEAD:
            last = compute(b, b->fwd[SEG_HEAD], PHASE_FWD, layer, micro, in, ag);
            in = NO_TASK;
            break;
        }
        b->unit_done_fwd[i] = last;
    }
    if (b->stage < sc->pp - 1)
        p2p(b, TASK_SEND, STREAM_PP_SEND_FWD, PHASE_FWD, micro, in != NO_TASK ? in : last);
}

static void backward_pass(Builder *b, int micro, gboolean last_micro) {
    const Scenario *sc = b->sc;
    guint32 in = NO_TASK, last = NO_TASK;
    if (b->stage < sc->pp - 1)
        in = p2p(b, TASK_RECV, STREAM_PP_RECV_BWD, PHASE_BWD, micro, NO_TASK);
    int n = (int)b->units->len;
    for (int i = 0; i < n; i++)
        b->unit_done_bwd[i] = NO_TASK;
    for (int i = n - 1; i >= 0; i--) {
        const ParamUnit *u = &g_array_index(b->units, ParamUnit, i);
        guint32 ag = zero3_gather(b, (guint)i, b->unit_done_bwd, -1, PHASE_PARAMS, micro);
        int layer = unit_layer(b, u);
        switch (u->kind) {
        case UNIT_HEAD:
            last = compute(b, b->bwd[SEG_HEAD], PHASE_BWD, layer, micro, in, ag);
            in = NO_TASK;
            break;
        case UNIT_LAYER: {
            guint32 dep = in;
            if (sc->recompute == RECOMPUTE_FULL) { /* rerun the layer's forward, with its ARs */
                guint32 c = compute(b, b->fwd[SEG_ATTN], PHASE_RECOMPUTE, layer, micro, dep, ag);
                guint32 ar = collective(b, COLL_ALLREDUCE, DIM_TP, b->act_bytes, PHASE_RECOMPUTE,
                                        layer, micro, c);
                c = compute(b, b->fwd[SEG_MLP], PHASE_RECOMPUTE, layer, micro, ar, NO_TASK);
                dep = collective(b, COLL_ALLREDUCE, DIM_TP, b->act_bytes, PHASE_RECOMPUTE, layer,
                                 micro, c);
                ag = NO_TASK;
                if (dep == NO_TASK)
                    dep = c;
            }
            guint32 c = compute(b, b->bwd[SEG_MLP], PHASE_BWD, layer, micro, dep, ag);
            guint32 ar =
                collective(b, COLL_ALLREDUCE, DIM_TP, b->act_bytes, PHASE_BWD, layer, micro, c);
            SimTime attn =
                b->bwd[SEG_ATTN] + (sc->recompute == RECOMPUTE_SELECTIVE ? b->attn_core : 0);
            last = compute(b, attn, PHASE_BWD, layer, micro, ar, NO_TASK);
            in = collective(b, COLL_ALLREDUCE, DIM_TP, b->act_bytes, PHASE_BWD, layer, micro, last);
            break;
        }
        case UNIT_EMBED:
            last = compute(b, b->bwd[SEG_EMBED], PHASE_BWD, layer, micro, in, ag);
            in = NO_TASK;
            break;
        }
        b->unit_done_bwd[i] = last;
        grads_ready(b, u, micro, last_micro, last);
    }
    if (sc->zero < 3 && (sc->zero == 2 || last_micro))
        flush_bucket(b, sc->zero == 0 ? COLL_ALLREDUCE : COLL_REDUCE_SCATTER, micro);
    if (b->stage > 0)
        p2p(b, TASK_SEND, STREAM_PP_SEND_BWD, PHASE_BWD, micro, in != NO_TASK ? in : last);
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
        total += t;
        if (attn_core && op->attn_core) {
            *attn_core += t;
            ++*ncore;
        }
    }
    *kernels = (int)ops->len;
    return total;
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
                 .topo = wl->topo,
                 .pg = pg,
                 .stage = stage,
                 .last_dp = NO_TASK,
                 .bucket_ready = NO_TASK};
    b.units = model_stage_units(&sc->model, sc->seq_len, sc->tp, sc->pp, stage);
    b.e = model_elem_bytes(sc->precision);
    b.act_bytes = (double)sc->micro_batch * sc->seq_len * sc->model.hidden * b.e;
    for (int s = 0; s < SEG_COUNT; s++) {
        b.fwd[s] = segment_time(sc, dev, s, PASS_FWD, s == SEG_ATTN ? &b.attn_core : NULL, &b.ncore,
                                &b.nfwd[s]);
        b.bwd[s] = segment_time(sc, dev, s, PASS_BWD, NULL, NULL, &b.nbwd[s]);
    }
    b.unit_done_fwd = g_new(guint32, b.units->len);
    b.unit_done_bwd = g_new(guint32, b.units->len);
    pg->params = 0;
    for (guint i = 0; i < b.units->len; i++)
        pg->params += g_array_index(b.units, ParamUnit, i).params;

    int m = sc->grad_accum, p = sc->pp;
    if (sc->schedule == SCHED_GPIPE) {
        for (int mb = 0; mb < m; mb++)
            forward_pass(&b, mb);
        for (int mb = 0; mb < m; mb++)
            backward_pass(&b, mb, mb == m - 1);
    } else {
        int warm = MIN(p - stage - 1, m);
        for (int mb = 0; mb < warm; mb++)
            forward_pass(&b, mb);
        for (int i = 0; i < m - warm; i++) {
            forward_pass(&b, warm + i);
            backward_pass(&b, i, i == m - 1);
        }
        for (int mb = m - warm; mb < m; mb++)
            backward_pass(&b, mb, mb == m - 1);
    }

    /* Optimizer step over the local (ZeRO: partitioned) parameters, once gradients are reduced. */
    double opt_params = pg->params / (sc->zero >= 1 ? sc->dp : 1);
    guint32 opt = compute(&b, device_optimizer_time(dev, opt_params, sc->precision),
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
    g_free(b.unit_done_fwd);
    g_free(b.unit_done_bwd);
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

int workload_group_size(const Workload *wl, Dim dim) {
    return dim == DIM_TP ? wl->sc->tp : dim == DIM_DP ? wl->sc->dp : 2;
}

int workload_group_count(const Workload *wl, Dim dim) {
    const Scenario *sc = wl->sc;
    return dim == DIM_TP ? sc->dp * sc->pp : sc->tp * sc->pp;
}

int workload_group(const Workload *wl, Dim dim, int rank, int *members) {
    const Scenario *sc = wl->sc;
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
    if (dim == DIM_TP) /* group = stage * dp + dp_idx */
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
    return 3.0 * model_forward_flops(&sc->model, 1, sc->seq_len) * (double)sc->global_batch;
}

ModelMemory workload_memory(const Workload *wl) {
    const Scenario *sc = wl->sc;
    ModelMemory best = {0};
    for (int s = 0; s < sc->pp; s++) {
        int inflight = sc->pp == 1                   ? 1
                       : sc->schedule == SCHED_GPIPE ? sc->grad_accum
                                                     : MIN(sc->grad_accum, sc->pp - s);
        ModelMemory m = model_memory(&sc->model, sc->seq_len, sc->micro_batch, sc->tp, sc->pp, s,
                                     sc->dp, sc->zero, sc->precision, sc->recompute, inflight);
        if (m.total_bytes > best.total_bytes)
            best = m;
    }
    return best;
}
