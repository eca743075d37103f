/* Timing mechanisms of the workload pinned on closed forms: ZeRO-3's separate gather stream and
 * prefetch window (and its buffers in memory), DeepSpeed's data parallelism after backward,
 * PyTorch DDP's parameter-by-parameter buckets, GPT-NeoX's parallel residual, and the
 * vocabulary-parallel head and cross entropy. Each case is built so that every collective on the
 * critical path runs alone on the network, so its time is the one coll_time_alone gives. The host
 * and interference are off (test_host.c pins them): these cases pin the workload's structure. */
#include <math.h>

#include "util.h"

#define E 2.0 /* fp16 bytes */
#define OFF "sim.host=false", "sim.interference=false"

static double ps(SimTime t) {
    return (double)t;
}

/* Members of rank 0's groups: TP 0..t-1; DP 0, t, 2t, ... */
static int *tp_group(const Scenario *sc) {
    int *m = g_new(int, sc->tp);
    for (int i = 0; i < sc->tp; i++)
        m[i] = i;
    return m;
}

static int *dp_group(const Scenario *sc) {
    int *m = g_new(int, sc->dp);
    for (int i = 0; i < sc->dp; i++)
        m[i] = i * sc->tp;
    return m;
}

static double unit_params(const Scenario *sc, UnitKind kind) {
    g_autoptr(GArray) units = model_stage_units(&sc->model, sc->seq_len, sc->tp, 1, 0);
    for (guint i = 0; i < units->len; i++)
        if (g_array_index(units, ParamUnit, i).kind == kind)
            return g_array_index(units, ParamUnit, i).params;
    return 0;
}

/* The parameters of the stage's biggest unit that ZeRO-3 gathers (tensors under the persistence
 * threshold stay whole). */
static double biggest_gathered(const Scenario *sc) {
    g_autoptr(GArray) units = model_stage_units(&sc->model, sc->seq_len, sc->tp, 1, 0);
    double best = 0;
    for (guint i = 0; i < units->len; i++) {
        double sizes[32], sum = 0;
        int n = model_unit_tensors(&sc->model, &g_array_index(units, ParamUnit, i), sc->seq_len,
                                   sc->tp, sizes, 32);
        for (int k = 0; k < n; k++)
            sum += sizes[k] >= sc->persist_elems ? sizes[k] : 0;
        best = MAX(best, sum);
    }
    return best;
}

/* Compute idle time of rank 0 between the start of layer 1's forward and the end of layer 1's
 * backward (the steady state, past the first units and before the last). */
typedef struct {
    SimTime last_end, idle;
    gboolean in;
    int bwd_seen; /* layer 1's backward tasks ended: its MLP's, then its attention's */
} IdleWatch;

static void idle_begin(void *ctx, int rank, const Task *t, SimTime now) {
    IdleWatch *w = ctx;
    if (rank != 0 || t->kind != TASK_COMPUTE)
        return;
    if (!w->in && t->layer == 1 && t->phase == PHASE_FWD)
        w->in = TRUE;
    else if (w->in)
        w->idle += now - w->last_end;
}

static void idle_end(void *ctx, int rank, const Task *t, SimTime now) {
    IdleWatch *w = ctx;
    if (rank != 0 || t->kind != TASK_COMPUTE || !w->in)
        return;
    w->last_end = now;
    if (t->layer == 1 && t->phase == PHASE_BWD && ++w->bwd_seen == 2)
        w->in = FALSE;
}

/* ZeRO-3 with DeepSpeed's prefetch: the gathers run on their own stream ahead of compute, the
 * reduce-scatters on another, so in the steady state compute never waits: zero idle time from
 * layer 1's forward to layer 1's backward. With one reduce-scatter per tensor (a 1-byte bucket)
 * a shared in-order stream would put each layer's reduce-scatters between two gathers and idle
 * compute for a gather and a reduce-scatter per layer (4.5 ms each at 16 GCDs). */
START_TEST(test_zero3_prefetch_hides_gathers) {
    const char *sets[] = {"parallel.bucket_size=1B", OFF, NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_zero3.yaml", sets);
    IdleWatch w = {0};
    ExecObserver obs = {.ctx = &w, .begin = idle_begin, .end = idle_end};
    g_autoptr(GError) err = NULL;
    g_autoptr(SimRun) run = sim_run_observed(sc, -1, &obs, &err);
    ck_assert_msg(run, "%s", err ? err->message : "");
    ck_assert_int_eq(w.bwd_seen, 2);
    ck_assert_msg(w.idle == 0, "compute idle %.3f ms in the steady state", w.idle / 1e9);
    ck_assert_int_eq(sim_summary(run)->critical.bubble, 0);
}
END_TEST

/* Without prefetch (prefetch_bucket_size 0) every unit is fetched when it starts, so each use's
 * gathers are exposed one after another; with one bucket the gradients are reduce-scattered once,
 * after backward. Gathered buffers: only the unit in use. */
START_TEST(test_zero3_on_demand) {
    const char *sets[] = {"nodes=1",
                          "parallel.prefetch_bucket_size=0",
                          "parallel.bucket_size=100GB",
                          "parallel.max_reuse_distance=0",
                          OFF,
                          NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_zero3.yaml", sets);
    g_autoptr(SimRun) run = run_ok(sc, -1);
    const SimSummary *s = sim_summary(run);
    g_autofree int *dp = dp_group(sc);
    double P = model_stage_params(&sc->model, sc->seq_len, sc->tp, 1, 0);
    double want = ps(s->critical.compute) +
                  2 * gathers_alone(sc, dp, sc->dp, E) + /* forward, backward */
                  ps(coll_time_alone(sc, COLL_REDUCE_SCATTER, dp, sc->dp, P * E));
    ck_assert_msg(ps(s->iteration) == want, "iteration %.0f ps, closed form %.0f ps",
                  ps(s->iteration), want);
    ck_assert_double_eq_tol(s->memory.buffers_bytes,
                            (P + biggest_gathered(sc) + persistent_params(sc)) * E, 1.0);
}
END_TEST

/* The prefetch window holds as many upcoming units as fit in stage3_max_live_parameters: the
 * gathered buffers peak just under it (within one unit), and a window of one unit gives the
 * on-demand timing's buffers. */
START_TEST(test_zero3_live_window_memory) {
    const char *sets[] = {"nodes=1", "parallel.max_reuse_distance=0", OFF, NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_zero3.yaml", sets);
    g_autoptr(SimRun) run = run_ok(sc, -1);
    /* less the 5e8 bucket and the tensors kept whole (persistent) */
    double live = sim_summary(run)->memory.buffers_bytes / E - 5e8 - persistent_params(sc);
    double layer = unit_params(sc, UNIT_LAYER), head = unit_params(sc, UNIT_HEAD);
    ck_assert_msg(live <= 1e9 && live > 1e9 - MAX(layer, head), "gathered peak %.0f parameters",
                  live);
    const char *one[] = {"nodes=1", "parallel.max_live_parameters=1",
                         "parallel.max_reuse_distance=0", OFF, NULL};
    g_autoptr(Scenario) s1 = load_ok("1.3B_zero3.yaml", one);
    g_autoptr(SimRun) r1 = run_ok(s1, -1);
    ck_assert_double_eq_tol(sim_summary(r1)->memory.buffers_bytes,
                            (5e8 + biggest_gathered(sc) + persistent_params(sc)) * E, 1.0);
}
END_TEST

/* Buckets replayed from the stage's tensors, written independently of workload.c: in reverse
 * registration order (a layer's MLP tensors, then its attention's: backward order) or in forward
 * order; a bucket closed once it reaches its cap, or (DeepSpeed's IPG bucket) before a tensor that
 * would overflow it; the first capped at `first` bytes, the others at `cap`. Returns the buckets'
 * sizes in bytes, in order. */
static GArray *replay_buckets(const Scenario *sc, double first, double cap, gboolean forward,
                              gboolean close_before, double elem) {
    g_autoptr(GArray) units = model_stage_units(&sc->model, sc->seq_len, sc->tp, 1, 0);
    GArray *out = g_array_new(FALSE, FALSE, sizeof(double));
    double open = 0, limit = first;
    int nu = (int)units->len;
    for (int ui = 0; ui < nu; ui++) {
        int i = forward ? ui : nu - 1 - ui;
        double sizes[32];
        Segment segs[32];
        int n = model_unit_tensor_segments(&sc->model, &g_array_index(units, ParamUnit, i),
                                           sc->seq_len, sc->tp, sizes, segs, 32);
        static const Segment order[] = {SEG_HEAD, SEG_MLP, SEG_ATTN, SEG_EMBED};
        for (int o = 0; o < (forward ? 1 : 4); o++)
            for (int kk = 0; kk < n; kk++) {
                int k = forward ? kk : n - 1 - kk;
                if (!forward && segs[k] != order[o])
                    continue;
                double t = sizes[k] * elem;
                if (close_before && open > 0 && open + t > limit) {
                    g_array_append_val(out, open);
                    open = 0, limit = cap;
                }
                open += t;
                if (!close_before && open >= limit) {
                    g_array_append_val(out, open);
                    open = 0, limit = cap;
                }
            }
    }
    if (open > 0)
        g_array_append_val(out, open);
    return out;
}

/* The run's calls of op on DP, as a size -> calls histogram, equal to the replayed buckets. */
static void check_buckets(const SimRun *run, CollOp op, const GArray *want) {
    GArray *rows = stats_comm_rows(sim_stats(run), sim_critical_index(run));
    double calls = 0;
    for (guint i = 0; i < rows->len; i++) {
        const CommRow *r = &g_array_index(rows, CommRow, i);
        if (r->op != op || r->dim != DIM_DP)
            continue;
        for (guint k = 0; k < r->sizes->len; k++) {
            const SizeCount *c = &g_array_index(r->sizes, SizeCount, k);
            double n = 0;
            for (guint w = 0; w < want->len; w++)
                n += fabs(g_array_index(want, double, w) - c->bytes) < 0.5;
            ck_assert_msg(n == c->calls, "%.0f calls of %.0f bytes, the replay has %.0f", c->calls,
                          c->bytes, n);
            calls += c->calls;
        }
    }
    stats_rows_free(rows);
    ck_assert_double_eq(calls, want->len);
}

/* DeepSpeed ZeRO-1/2's reduction of buckets (sizes in bytes, in backward order): the stage's
 * parameters flattened in forward order, split in dp partitions of ceil(P / dp) each; each
 * bucket, from the top of that order down, one reduce per partition it overlaps, of the overlap.
 * Returns the reduces' sizes in bytes, in issue order (g_array_unref). */
static GArray *owner_slices(const Scenario *sc, const GArray *buckets) {
    double P = model_stage_params(&sc->model, sc->seq_len, sc->tp, 1, 0);
    double part = ceil(P / sc->dp), hi = P;
    GArray *out = g_array_new(FALSE, FALSE, sizeof(double));
    for (guint k = 0; k < buckets->len; k++) {
        double lo = hi - g_array_index(buckets, double, k) / E;
        for (int p = sc->dp - 1; p >= 0; p--) {
            double s = MIN(hi, (p + 1) * part) - MAX(lo, p * part);
            if (s > 0) {
                s *= E;
                g_array_append_val(out, s);
            }
        }
        hi = lo;
    }
    return out;
}

/* DeepSpeed ZeRO-1/2 never reduce-scatters a bucket: average_tensor() issues one rooted reduce
 * per partition owner the bucket spans, one after another on one communicator. With one bucket
 * of every gradient (reduce_bucket_size above the model) it is reduced once backward ends: dp
 * reduces of ceil(P / dp) parameters, highest partition first, back to back, then the optimizer
 * and one allgather of every parameter. Nothing overlaps, so the iteration is the compute plus
 * each reduce and the allgather alone, to the picosecond. The default buckets (5e8 elements)
 * give the calls the replay gives, in its order. */
static void note_reduce(void *ctx, int rank, const Task *t, SimTime now) {
    (void)now;
    if (rank == 0 && t->kind == TASK_COLL && t->op == COLL_REDUCE)
        g_array_append_val((GArray *)ctx, t->bytes);
}

static void ignore_end(void *ctx, int rank, const Task *t, SimTime now) {
    (void)ctx, (void)rank, (void)t, (void)now;
}

START_TEST(test_deepspeed_reduce_per_owner) {
    const char *one[] = {"parallel.bucket_size=100GB", OFF, NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_zero1.yaml", one);
    g_autoptr(SimRun) run = run_ok(sc, -1);
    const SimSummary *s = sim_summary(run);
    g_autofree int *dp = dp_group(sc);
    double P = model_stage_params(&sc->model, sc->seq_len, sc->tp, 1, 0);
    double part = ceil(P / sc->dp), last = P - (sc->dp - 1) * part;
    ck_assert_double_eq(stats_rank_calls(sim_stats(run), 0, COLL_REDUCE, DIM_DP), sc->dp);
    ck_assert_double_eq(stats_rank_calls(sim_stats(run), 0, COLL_REDUCE_SCATTER, DIM_DP), 0);
    double want = ps(s->critical.compute) +
                  (sc->dp - 1) * ps(coll_time_alone(sc, COLL_REDUCE, dp, sc->dp, part * E)) +
                  ps(coll_time_alone(sc, COLL_REDUCE, dp, sc->dp, last * E)) +
                  ps(coll_time_alone(sc, COLL_ALLGATHER, dp, sc->dp, P * E));
    ck_assert_msg(fabs(ps(s->iteration) - want) < 1.0, "iteration %.0f ps, closed form %.0f ps",
                  ps(s->iteration), want);

    /* the default buckets: the calls in the replay's order (the first is the top partition's) */
    const char *def[] = {OFF, NULL};
    g_autoptr(Scenario) sd = load_ok("1.3B_zero1.yaml", def);
    g_autoptr(GArray) seen = g_array_new(FALSE, FALSE, sizeof(double));
    ExecObserver obs = {.ctx = seen, .begin = note_reduce, .end = ignore_end};
    g_autoptr(GError) err = NULL;
    g_autoptr(SimRun) rd = sim_run_observed(sd, -1, &obs, &err);
    ck_assert_msg(rd, "%s", err ? err->message : "");
    g_autoptr(GArray) buckets = replay_buckets(sd, 5e8 * E, 5e8 * E, FALSE, TRUE, E);
    g_autoptr(GArray) want_calls = owner_slices(sd, buckets);
    ck_assert_uint_eq(seen->len, want_calls->len);
    ck_assert_uint_gt(want_calls->len, buckets->len); /* buckets cross partitions */
    for (guint k = 0; k < seen->len; k++)
        ck_assert_double_eq_tol(g_array_index(seen, double, k),
                                g_array_index(want_calls, double, k), 0.5);
}
END_TEST

/* DeepSpeed's pipeline engine turns the backward's reductions off (enable_backward_allreduce
 * False) and reduces in its last step, after every backward: ZeRO-1's per-owner reduces of one
 * bucket of the stage's gradients walk its parameters in their own (forward) order, so the lowest
 * partition comes first, and none starts before the stage's last backward ends. Without a
 * pipeline the same bucket is reduced during the last backward, the highest partition first. */
typedef struct {
    GArray *reduces;  /* rank 0's reduce sizes, in issue order */
    SimTime first;    /* its first reduce's start */
    SimTime last_bwd; /* its last backward compute's end */
} PipeReduces;

static void pipe_begin(void *ctx, int rank, const Task *t, SimTime now) {
    PipeReduces *p = ctx;
    if (rank != 0 || t->kind != TASK_COLL || t->op != COLL_REDUCE)
        return;
    if (p->reduces->len == 0)
        p->first = now;
    g_array_append_val(p->reduces, t->bytes);
}

static void pipe_end(void *ctx, int rank, const Task *t, SimTime now) {
    PipeReduces *p = ctx;
    if (rank == 0 && t->kind == TASK_COMPUTE && t->phase == PHASE_BWD)
        p->last_bwd = MAX(p->last_bwd, now);
}

static PipeReduces pipe_reduces(const char *const *sets) {
    g_autoptr(Scenario) sc = load_ok("1.3B_zero1.yaml", sets);
    PipeReduces p = {g_array_new(FALSE, FALSE, sizeof(double)), -1, 0};
    ExecObserver obs = {.ctx = &p, .begin = pipe_begin, .end = pipe_end};
    g_autoptr(GError) err = NULL;
    g_autoptr(SimRun) run = sim_run_observed(sc, -1, &obs, &err);
    ck_assert_msg(run, "%s", err ? err->message : "");
    return p;
}

START_TEST(test_deepspeed_pipeline_reduces_after) {
    const char *pipe[] = {"parallel.bucket_size=100GB",
                          "parallel.pp=2",
                          "nodes=3",
                          "model.layers=8",
                          "model.vocab=50001",
                          "model.vocab_pad_multiple=1",
                          OFF,
                          NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_zero1.yaml", pipe);
    double P = model_stage_params(&sc->model, sc->seq_len, sc->tp, 2, 0);
    double part = ceil(P / sc->dp), last = P - (sc->dp - 1) * part;
    ck_assert(last < part); /* the order shows */
    PipeReduces p = pipe_reduces(pipe);
    ck_assert_uint_eq(p.reduces->len, (guint)sc->dp);
    for (int k = 0; k < sc->dp; k++) /* partition 0 first */
        ck_assert_double_eq_tol(g_array_index(p.reduces, double, k),
                                (k < sc->dp - 1 ? part : last) * E, 0.5);
    ck_assert_msg(p.first >= p.last_bwd,
                  "a reduce at %" G_GINT64_FORMAT " ps, the last backward ends at %" G_GINT64_FORMAT
                  " ps",
                  p.first, p.last_bwd);
    g_array_unref(p.reduces);
    /* buckets of 100 MB: the pipeline still starts none before its last backward ends; one stage
     * starts its first ones during it */
    pipe[0] = "parallel.bucket_size=100MB";
    PipeReduces q = pipe_reduces(pipe);
    ck_assert_uint_gt(q.reduces->len, (guint)sc->dp);
    ck_assert(q.first >= q.last_bwd);
    g_array_unref(q.reduces);
    const char *flat[] = {"parallel.bucket_size=100MB", "nodes=3", "model.layers=8", OFF, NULL};
    PipeReduces f = pipe_reduces(flat);
    ck_assert_msg(f.first < f.last_bwd, "no reduce in the last backward");
    g_array_unref(f.reduces);
}
END_TEST

/* DeepSpeed at ZeRO stage 0 allreduces after backward, in buckets of at most 5e8 elements in
 * forward order: nothing overlaps, so the iteration is compute plus every bucket's allreduce. */
START_TEST(test_deepspeed_ddp_after_backward) {
    const char *sets[] = {OFF, NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_ddp.yaml", sets);
    g_autoptr(SimRun) run = run_ok(sc, -1);
    const SimSummary *s = sim_summary(run);
    g_autofree int *dp = dp_group(sc);
    GArray *rows = stats_comm_rows(sim_stats(run), sim_critical_index(run));
    double want = ps(s->critical.compute), total = 0;
    for (guint i = 0; i < rows->len; i++) {
        CommRow *r = &g_array_index(rows, CommRow, i);
        ck_assert_int_eq(r->op, COLL_ALLREDUCE);
        for (guint k = 0; k < r->sizes->len; k++) {
            SizeCount *c = &g_array_index(r->sizes, SizeCount, k);
            ck_assert(c->bytes <= 5e8 * E);
            want += c->calls * ps(coll_time_alone(sc, COLL_ALLREDUCE, dp, sc->dp, c->bytes));
            total += c->calls * c->bytes;
        }
    }
    stats_rows_free(rows);
    double P = model_stage_params(&sc->model, sc->seq_len, sc->tp, 1, 0);
    ck_assert_double_eq_tol(total, P * E, 1.0);
    ck_assert_double_eq(s->overlap, 0.0);
    /* the buckets themselves: forward order, closed before a tensor would overflow 5e8 elements */
    g_autoptr(GArray) buckets = replay_buckets(sc, 5e8 * E, 5e8 * E, TRUE, TRUE, E);
    check_buckets(run, COLL_ALLREDUCE, buckets);
    /* ZeRO-1's reductions: the same IPG rule in backward order, during the last backward, each
     * bucket one reduce per partition owner (test_deepspeed_reduce_per_owner) */
    const char *z1[] = {OFF, NULL};
    g_autoptr(Scenario) sz = load_ok("1.3B_zero1.yaml", z1);
    g_autoptr(SimRun) rz = run_ok(sz, -1);
    g_autoptr(GArray) rs = replay_buckets(sz, 5e8 * E, 5e8 * E, FALSE, TRUE, E);
    g_autoptr(GArray) owners = owner_slices(sz, rs);
    check_buckets(rz, COLL_REDUCE, owners);
    ck_assert_msg(fabs(ps(s->iteration) - want) < 1.0, "iteration %.0f ps, closed form %.0f ps",
                  ps(s->iteration), want);
}
END_TEST

/* PyTorch DDP: buckets filled tensor by tensor in reverse order, the first capped at 1 MiB, the
 * rest at 25 MiB (closed once they reach the cap), overlapped with backward; its gradients are
 * fp32 under autocast (framework.c), 4 bytes each. Megatron-LM: buckets
 * of max(4e7, 1e6 x dp) parameters, no smaller first one. */
START_TEST(test_pytorch_and_megatron_buckets) {
    const char *pt[] = {"training.framework=pytorch", NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_ddp.yaml", pt);
    g_autoptr(SimRun) run = run_ok(sc, -1); /* its overlap: test_schemes.c test_overlap */
    g_autoptr(GArray) pt_buckets =
        replay_buckets(sc, 1024.0 * 1024.0, 25.0 * 1024 * 1024, FALSE, FALSE, 4.0);
    check_buckets(run, COLL_ALLREDUCE, pt_buckets);
    ck_assert_int_gt(pt_buckets->len, 2 * sc->model.layers); /* several per layer */

    /* Megatron-LM has no synchronize_each_layer (GPT-NeoX's, set in the scenario) */
    const char *mg[] = {"training.framework=megatron", "training.synchronize_each_layer=false",
                        NULL};
    g_autoptr(Scenario) sm = load_ok("1.3B_ddp.yaml", mg);
    g_autoptr(SimRun) rm = run_ok(sm, -1);
    double cap = MAX(4e7, 1e6 * sm->dp) * E;
    ck_assert_double_eq(sm->bucket_bytes, cap);
    g_autoptr(GArray) mg_buckets = replay_buckets(sm, cap, cap, FALSE, FALSE, E);
    check_buckets(rm, COLL_ALLREDUCE, mg_buckets);
    ck_assert_msg(sim_summary(rm)->overlap > 0.5, "Megatron's buckets hide %.3f",
                  sim_summary(rm)->overlap);
}
END_TEST

/* What each framework keeps per parameter (framework.c), on closed forms of the stage's P:
 * Megatron-LM with bf16 keeps and reduces fp32 gradients (4 P held, the reduce-scatter moves
 * 4 P (d - 1) / d) and its buckets are views of them (no buffer); PyTorch DDP under autocast
 * keeps fp32 weights plus autocast's half copy (6 P), fp32 gradients (4 P), a second copy of them
 * in its buckets (4 P) and AdamW's 8 P; DeepSpeed ZeRO-1 with overlap_comm two IPG buffers of
 * reduce_bucket_size. */
START_TEST(test_framework_bytes_per_param) {
    const char *mg[] = {"training.framework=megatron", "training.precision=bf16",
                        "training.synchronize_each_layer=false", NULL};
    g_autoptr(Scenario) sm = load_ok("1.3B_zero1.yaml", mg);
    g_autoptr(SimRun) rm = run_ok(sm, -1);
    double P = model_stage_params(&sm->model, sm->seq_len, sm->tp, 1, 0), d = sm->dp;
    const ModelMemory *mm = &sim_summary(rm)->memory;
    ck_assert_double_eq_tol(mm->params_bytes, 2 * P, 1.0);
    ck_assert_double_eq_tol(mm->grads_bytes, 4 * P, 1.0);
    ck_assert_double_eq_tol(mm->optimizer_bytes, 12 * P / d, 1.0);
    ck_assert_double_eq(mm->buffers_bytes, 0);
    ck_assert_double_eq_tol(stats_rank_volume(sim_stats(rm), 0, COLL_REDUCE_SCATTER, DIM_DP),
                            4 * P * (d - 1) / d, 1.0);
    ck_assert_double_eq_tol(stats_rank_volume(sim_stats(rm), 0, COLL_ALLGATHER, DIM_DP),
                            2 * P * (d - 1) / d, 1.0);

    const char *pt[] = {"training.framework=pytorch", NULL};
    g_autoptr(Scenario) sp = load_ok("1.3B_ddp.yaml", pt);
    g_autoptr(SimRun) rp = run_ok(sp, -1);
    const ModelMemory *mp = &sim_summary(rp)->memory;
    ck_assert_double_eq_tol(mp->params_bytes, 6 * P, 1.0);
    ck_assert_double_eq_tol(mp->grads_bytes, 4 * P, 1.0);
    ck_assert_double_eq_tol(mp->buffers_bytes, 4 * P, 1.0);
    ck_assert_double_eq_tol(mp->optimizer_bytes, 8 * P, 1.0);
    ck_assert_double_eq_tol(stats_rank_volume(sim_stats(rp), 0, COLL_ALLREDUCE, DIM_DP),
                            2 * 4 * P * (d - 1) / d, 1.0);

    g_autoptr(Scenario) sd = load_ok("1.3B_zero1.yaml", NULL);
    g_autoptr(SimRun) rd = run_ok(sd, -1);
    ModelMemory md = sim_summary(rd)->memory;
    ck_assert_double_eq_tol(md.buffers_bytes, 2 * 5e8 * E, 1.0);
    ck_assert_double_eq_tol(md.grads_bytes, 2 * P, 1.0);
}
END_TEST

/* GPT-NeoX's parallel residual: one forward allreduce per layer (and one in recomputation)
 * instead of two, and the attention's backward does not wait for the MLP's input-gradient
 * allreduce, which then hides under it. TP alone in one node, every allreduce alone: the
 * iteration is shorter by exactly 3 L allreduces of b s h. */
START_TEST(test_parallel_residual) {
    const char *seq[] = {"model.parallel_residual=false", OFF, NULL};
    const char *par[] = {"model.parallel_residual=true", OFF, NULL};
    g_autoptr(Scenario) a = load_ok("1.3B_tp.yaml", seq);
    g_autoptr(Scenario) b = load_ok("1.3B_tp.yaml", par);
    g_autoptr(SimRun) ra = run_ok(a, -1);
    g_autoptr(SimRun) rb = run_ok(b, -1);
    double L = a->model.layers;
    g_autofree int *tp = tp_group(a);
    double bsh = (double)a->micro_batch * a->seq_len * a->model.hidden * E;
    double ar = ps(coll_time_alone(a, COLL_ALLREDUCE, tp, a->tp, bsh));
    ck_assert_double_eq(ps(sim_summary(rb)->iteration),
                        ps(sim_summary(ra)->iteration) - 3 * L * ar);
    ck_assert_double_eq(stats_rank_calls(sim_stats(ra), 0, COLL_ALLREDUCE, DIM_TP), 6 * L + 5);
    ck_assert_double_eq(stats_rank_calls(sim_stats(rb), 0, COLL_ALLREDUCE, DIM_TP), 4 * L + 5);
}
END_TEST

/* The vocabulary-parallel head allreduces its input gradient (b s h) and the cross entropy three
 * b s fp32 values; TP allreduces block compute, so the iteration is compute plus all of them. */
START_TEST(test_tp_head_and_cross_entropy) {
    const char *sets[] = {OFF, NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_tp.yaml", sets);
    g_autoptr(SimRun) run = run_ok(sc, -1);
    const SimSummary *s = sim_summary(run);
    double L = sc->model.layers, b = sc->micro_batch, sl = sc->seq_len;
    g_autofree int *tp = tp_group(sc);
    double bsh = b * sl * sc->model.hidden * E, ce = b * sl * 4;
    double want = ps(s->critical.compute) +
                  (6 * L + 2) * ps(coll_time_alone(sc, COLL_ALLREDUCE, tp, sc->tp, bsh)) +
                  3 * ps(coll_time_alone(sc, COLL_ALLREDUCE, tp, sc->tp, ce));
    ck_assert_msg(ps(s->iteration) == want, "iteration %.0f ps, closed form %.0f ps",
                  ps(s->iteration), want);
}
END_TEST

/* Sequence parallelism (par_tp.c, par_sp): per layer an allgather before and a reduce-scatter
 * after each block, forward, in recomputation and (as conjugates) in backward, each blocking the
 * compute; the embedding reduce-scatters its output and gathers its gradient, the head gathers
 * its input and reduce-scatters its input gradient, the cross entropy keeps three allreduces. The
 * weight-gradient re-gathers run under the block's backward and hide. TP alone, every collective
 * alone: the iteration is compute plus (6 L + 2) (allgather + reduce-scatter) of b s h plus the
 * three b s fp32 allreduces, to the picosecond. */
START_TEST(test_sequence_parallel_timing) {
    const char *sets[] = {"parallel.sequence_parallel=true", OFF, NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_tp.yaml", sets);
    g_autoptr(SimRun) run = run_ok(sc, -1);
    const SimSummary *s = sim_summary(run);
    double L = sc->model.layers, b = sc->micro_batch, sl = sc->seq_len;
    g_autofree int *tp = tp_group(sc);
    double bsh = b * sl * sc->model.hidden * E, ce = b * sl * 4;
    double ag = ps(coll_time_alone(sc, COLL_ALLGATHER, tp, sc->tp, bsh));
    double rs = ps(coll_time_alone(sc, COLL_REDUCE_SCATTER, tp, sc->tp, bsh));
    double want = ps(s->critical.compute) + (6 * L + 2) * (ag + rs) +
                  3 * ps(coll_time_alone(sc, COLL_ALLREDUCE, tp, sc->tp, ce));
    ck_assert_msg(ps(s->iteration) == want,
                  "iteration %.0f ps, closed form %.0f ps (ag %.0f, rs %.0f)", ps(s->iteration),
                  want, ag, rs);
    /* and the re-gathers were issued: 2 L + 1 more allgathers than the blocking ones */
    ck_assert_double_eq(stats_rank_calls(sim_stats(run), 0, COLL_ALLGATHER, DIM_TP),
                        (6 * L + 2) + (2 * L + 1));
}
END_TEST

int main(void) {
    Suite *s = suite_create("mechanisms");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_zero3_prefetch_hides_gathers);
    tcase_add_test(tc, test_zero3_on_demand);
    tcase_add_test(tc, test_zero3_live_window_memory);
    tcase_add_test(tc, test_deepspeed_ddp_after_backward);
    tcase_add_test(tc, test_deepspeed_reduce_per_owner);
    tcase_add_test(tc, test_deepspeed_pipeline_reduces_after);
    tcase_add_test(tc, test_framework_bytes_per_param);
    tcase_add_test(tc, test_pytorch_and_megatron_buckets);
    tcase_add_test(tc, test_parallel_residual);
    tcase_add_test(tc, test_tp_head_and_cross_entropy);
    tcase_add_test(tc, test_sequence_parallel_timing);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
