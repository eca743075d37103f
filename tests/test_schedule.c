/* Pipeline schedules: the order each one gives (Megatron-LM's interleaved 1F1B written out by
 * hand), and whole runs of the interleaved schedule against its closed forms: the bubble
 * (p - 1) / (v m) of the ideal time (Narayanan et al. SC21, Sec. 2.2), the pipeline sends per
 * chunk boundary, and the first stage's activations p (1 + (p - 1) / (p v)) micro-batches
 * (Korthikanti et al. 2022, Sec. 4.2.3); under Megatron-LM the pipeline calls its interleaved
 * schedule makes, against its code written out below, and their wait. */
#include <math.h>
#include <string.h>

#include "util.h"
#include "watch.h"

static PassRef at(const GArray *a, guint k) {
    return g_array_index(a, PassRef, k);
}

/* Every (micro-batch, chunk) runs forward once and backward once, the backward after. */
static void check_complete(const GArray *ps, int m, int v) {
    ck_assert_uint_eq(ps->len, (guint)(2 * m * v));
    g_autofree int *seen = g_new0(int, m *v);
    for (guint k = 0; k < ps->len; k++) {
        PassRef p = at(ps, k);
        int *s = &seen[p.micro * v + p.chunk];
        ck_assert_int_eq(*s, p.fwd ? 0 : 1);
        (*s)++;
    }
}

START_TEST(test_interleaved_order) {
    int p = 4, v = 2, m = 8;
    g_autoptr(GArray) s0 = schedule_passes(SCHED_INTERLEAVED, p, 0, m, v);
    check_complete(s0, m, v);
    /* stage 0: 2 (p - 1) + (v - 1) p = 10 warm-up forwards: micro-batches 0-3 on chunk 0, 0-3 on
     * chunk 1, then 4 and 5 on chunk 0 */
    static const int wf[10][2] = {{0, 0}, {1, 0}, {2, 0}, {3, 0}, {0, 1},
                                  {1, 1}, {2, 1}, {3, 1}, {4, 0}, {5, 0}};
    for (int k = 0; k < 10; k++) {
        PassRef r = at(s0, k);
        ck_assert(r.fwd);
        ck_assert_int_eq(r.micro, wf[k][0]);
        ck_assert_int_eq(r.chunk, wf[k][1]);
    }
    /* then forward 6 on chunk 0 and the first backward: micro-batch 0 of the last chunk */
    ck_assert(at(s0, 10).fwd && at(s0, 10).micro == 6 && at(s0, 10).chunk == 0);
    ck_assert(!at(s0, 11).fwd && at(s0, 11).micro == 0 && at(s0, 11).chunk == 1);
    /* the last pass: micro-batch 7's backward through chunk 0 */
    PassRef last = at(s0, s0->len - 1);
    ck_assert(!last.fwd && last.micro == m - 1 && last.chunk == 0);
    /* the last stage warms up with (v - 1) p = 4 forwards */
    g_autoptr(GArray) s3 = schedule_passes(SCHED_INTERLEAVED, p, 3, m, v);
    check_complete(s3, m, v);
    for (int k = 0; k < 4; k++)
        ck_assert(at(s3, k).fwd);
    ck_assert(at(s3, 4).fwd && !at(s3, 5).fwd);
    /* m = p: every forward first (Megatron's all-warm-up case) */
    g_autoptr(GArray) eq = schedule_passes(SCHED_INTERLEAVED, p, 2, p, v);
    check_complete(eq, p, v);
    for (int k = 0; k < p * v; k++)
        ck_assert(at(eq, k).fwd);
    /* 1F1B and GPipe run one chunk whatever v is */
    g_autoptr(GArray) fb = schedule_passes(SCHED_1F1B, p, 1, m, v);
    check_complete(fb, m, 1);
    ck_assert(at(fb, 2).fwd && !at(fb, 3).fwd); /* p - 1 - 1 = 2 warm-up forwards, then 1F1B */
}
END_TEST

START_TEST(test_peak_inflight) {
    int p = 4, m = 8;
    for (int s = 0; s < p; s++) {
        g_autoptr(GArray) g = schedule_passes(SCHED_GPIPE, p, s, m, 1);
        g_autoptr(GArray) f = schedule_passes(SCHED_1F1B, p, s, m, 1);
        ck_assert_int_eq(schedule_peak_inflight(g, -1), m);
        ck_assert_int_eq(schedule_peak_inflight(f, -1), p - s);
        for (int v = 1; v <= 4; v++) {
            g_autoptr(GArray) i = schedule_passes(SCHED_INTERLEAVED, p, s, m, v);
            /* warm-up + 1 chunk passes: 2 (p - s - 1) + (v - 1) p + 1 */
            ck_assert_int_eq(schedule_peak_inflight(i, -1), 2 * (p - s - 1) + (v - 1) * p + 1);
            if (s == p - 1) /* the last chunk's backward follows its forward at once */
                ck_assert_int_eq(schedule_peak_inflight(i, v - 1), 1);
        }
    }
}
END_TEST

/* No host or interference model, 16 layers, a 64-word vocabulary, and communication that costs
 * nothing (links of 1 PB/s, no latency anywhere): the pipeline tests' common ground. */
#define FREE_SETS                                                                                  \
    "training.grad_accum=8", "training.recompute=none", "training.synchronize_each_layer=false",   \
        "sim.host=false", "sim.interference=false", "model.layers=16", "model.vocab=64",           \
        "topology.node.link.bandwidth=1PB/s", "topology.node.link.latency=0us",                    \
        "topology.collectives.LL.base_latency=0us",                                                \
        "topology.collectives.Simple.base_latency=0us",                                            \
        "topology.collectives.LL.ring.intra_hop=0us",                                              \
        "topology.collectives.Simple.ring.intra_hop=0us",                                          \
        "topology.collectives.LL.tree.intra_hop=0us",                                              \
        "topology.collectives.Simple.tree.intra_hop=0us"

/* A pipeline of 4 stages x 2 replicas on one node, interleaved in v chunks, on FREE_SETS. */
#define UNIFORM_SETS(v)                                                                            \
    "parallel.pp=4", "parallel.dp=2", "parallel.schedule=interleaved",                             \
        "parallel.virtual_stages=" v, FREE_SETS, NULL

/* Compute time of the embedding's (end 0) or the head's (end 1) tasks for one micro-batch: the
 * work that makes the first and last stages differ from the others. */
static double end_work(const SimRun *run, int end) {
    const Workload *wl = sim_workload(run);
    const Scenario *sc = sim_scenario(run);
    int layer = end == 0 ? -1 : sc->model.layers;
    const Program *pg = workload_program(wl, end == 0 ? 0 : sc->pp - 1);
    SimTime t = 0;
    for (guint k = 0; k < pg->ntasks; k++) {
        const Task *x = &pg->tasks[k];
        if (x->kind == TASK_COMPUTE && x->micro == 0 && x->layer == layer)
            t += x->duration;
    }
    return (double)t;
}

/* Iteration = C (1 + (p - 1) / (v m)) on uniform stages, C a stage's compute: the bubble is
 * (p - 1) / (v m) of the ideal time. Ours are uniform (a middle stage's C, rank 2 x 1 = stage 1)
 * but for the embedding (work E per micro-batch) on chunk 0 of stage 0 and the head (H) on chunk
 * v - 1 of stage p - 1: the slowest stage does at most m max(E, H) more than C, and the fill and
 * drain cross each end once more, E + H; the sends cost nothing here. So the tolerance is
 * m max(E, H) + E + H, under 1% of C, against bubbles of 4.7% (v = 4) to 37.5% (v = 1) of C.
 * v = 1 is 1F1B's (p - 1) / m. */
START_TEST(test_interleaved_bubble) {
    const char *v1[] = {UNIFORM_SETS("1")}, *v2[] = {UNIFORM_SETS("2")},
               *v4[] = {UNIFORM_SETS("4")};
    const char *const *sets[] = {v1, v2, v4};
    int vs[] = {1, 2, 4};
    for (int i = 0; i < 3; i++) {
        g_autoptr(Scenario) sc = load_ok("1.3B_pp.yaml", sets[i]);
        g_autoptr(SimRun) run = run_ok(sc, -1);
        const SimSummary *s = sim_summary(run);
        double p = sc->pp, m = sc->grad_accum, v = vs[i];
        double c = (double)stats_rank(sim_stats(run), sim_index_of(run, 2 * sc->dp)).compute;
        double e = end_work(run, 0), h = end_work(run, 1);
        double want = c * (1 + (p - 1) / (v * m)), tol = m * MAX(e, h) + e + h;
        ck_assert_msg(tol < 0.01 * c, "tolerance %.0f ps", tol);
        ck_assert_msg(fabs((double)s->iteration - want) <= tol,
                      "v %d: iteration %" G_GINT64_FORMAT
                      " ps, closed form %.0f ps (off %.0f), tolerance %.0f ps",
                      vs[i], s->iteration, want, (double)s->iteration - want, tol);
    }
}
END_TEST

/* Compute of stage `stage` in phase: micro-batch 0's (PHASE_FWD, PHASE_BWD), or the step's
 * (PHASE_OPTIMIZER), picoseconds. */
static SimTime stage_work(const SimRun *run, int stage, Phase phase) {
    const Program *pg = workload_program(sim_workload(run), stage);
    int micro = phase == PHASE_OPTIMIZER ? -1 : 0;
    SimTime t = 0;
    for (guint k = 0; k < pg->ntasks; k++) {
        const Task *x = &pg->tasks[k];
        if (x->kind == TASK_COMPUTE && x->micro == micro && x->phase == phase)
            t += x->duration;
    }
    return t;
}

/* parallel.first_stage_layers / last_stage_layers (Megatron-LM's --decoder-first- and
 * --decoder-last-pipeline-num-layers): 16 layers over 2 stages split 4 / 12, every micro-batch's
 * work as the split says, and the 1F1B iteration against its closed form. With two stages and
 * communication free, stage 1 the heavier (f0 + b0 <= f1 + b1): stage 0 runs F0, then stage 1
 * runs F_i B_i back to back (F_i's input, stage 0's F_i, is ready by then: stage 0 runs F_i
 * after B_(i-2), f0 + b0 within stage 1's f1 + b1); then stage 0's last backward and its
 * optimizer step (o0), or stage 1's step (o1), whichever ends later: iteration = f0 + m (f1 +
 * b1) + max(b0 + o0, o1). Each send still takes its bytes at 1 PB/s (a few tens of ns), 2 m + 2
 * of them on that path, and the data-parallel allreduce before the step its bytes: the
 * tolerance. */
START_TEST(test_stage_split) {
    const char *even[] = {"parallel.pp=2", "parallel.schedule=1f1b", FREE_SETS, NULL};
    const char *split[G_N_ELEMENTS(even) + 2];
    memcpy(split, even, sizeof even);
    split[G_N_ELEMENTS(even) - 1] = "parallel.first_stage_layers=4";
    split[G_N_ELEMENTS(even)] = "parallel.last_stage_layers=12";
    split[G_N_ELEMENTS(even) + 1] = NULL;
    g_autoptr(Scenario) se = load_ok("1.3B_pp.yaml", even);
    g_autoptr(Scenario) ss = load_ok("1.3B_pp.yaml", split);
    g_autoptr(SimRun) re = run_ok(se, -1);
    g_autoptr(SimRun) rs = run_ok(ss, -1);
    /* the layers: 0-3 on stage 0, 4-15 on stage 1, the embedding and head where they were */
    int first;
    ck_assert_int_eq(model_stage_layers(&ss->model, 2, 0, &first), 4);
    ck_assert_int_eq(first, 0);
    ck_assert_int_eq(model_stage_layers(&ss->model, 2, 1, &first), 12);
    ck_assert_int_eq(first, 4);
    /* every layer's work moves with it: the stages' sum is the even split's, and 4 layers went
     * from stage 0 to stage 1 (a layer's forward and backward are one and the same everywhere) */
    SimTime f[2], b[2], fe[2], be[2];
    for (int st = 0; st < 2; st++) {
        f[st] = stage_work(rs, st, PHASE_FWD);
        b[st] = stage_work(rs, st, PHASE_BWD);
        fe[st] = stage_work(re, st, PHASE_FWD);
        be[st] = stage_work(re, st, PHASE_BWD);
    }
    ck_assert_int_eq(f[0] + f[1], fe[0] + fe[1]);
    ck_assert_int_eq(b[0] + b[1], be[0] + be[1]);
    ck_assert_int_eq(fe[0] - f[0], f[1] - fe[1]);
    ck_assert_int_eq((fe[0] - f[0]) % 4, 0);
    ck_assert(f[0] + b[0] <= f[1] + b[1]);
    int m = ss->grad_accum;
    SimTime o0 = stage_work(rs, 0, PHASE_OPTIMIZER), o1 = stage_work(rs, 1, PHASE_OPTIMIZER);
    double want = (double)f[0] + m * (double)(f[1] + b[1]) + (double)MAX(b[0] + o0, o1);
    double send = 2.0 * 4 * 2048 * 2048 / 1e15 * 1e12 + 1; /* b s h fp16 at 1 PB/s, ps */
    double reduce = 2.0 * 2 * model_stage_params(&ss->model, 2048, 1, 2, 1) / 1e15 * 1e12;
    double got = (double)sim_summary(rs)->iteration;
    ck_assert_msg(fabs(got - want) <= (2 * m + 2) * send + reduce,
                  "iteration %.0f ps, closed form %.0f ps (off %.0f)", got, want, got - want);
}
END_TEST

/* The split's errors, each naming its key; and a split equal to the even one changes nothing. */
START_TEST(test_stage_split_errors) {
    const char *pp1[] = {"parallel.pp=1", "parallel.first_stage_layers=4", NULL};
    load_fails("1.3B_pp.yaml", pp1, "need pp >= 2");
    const char *uneven[] = {"parallel.first_stage_layers=5", NULL}; /* 19 over 7 stages */
    load_fails("1.3B_pp.yaml", uneven, "share them evenly");
    const char *sum[] = {"parallel.pp=2", "parallel.first_stage_layers=10",
                         "parallel.last_stage_layers=10", NULL};
    load_fails("1.3B_pp.yaml", sum, "must sum to the layers");
    const char *too_many[] = {"parallel.first_stage_layers=24", NULL};
    load_fails("1.3B_pp.yaml", too_many, "share them evenly");
    const char *over[] = {"parallel.first_stage_layers=1048576", NULL};
    load_fails("1.3B_pp.yaml", over, "add up to more than the 24 layers");
    const char *inter[] = {"parallel.schedule=interleaved", "parallel.first_stage_layers=3",
                           "parallel.last_stage_layers=3", NULL};
    load_fails("1.3B_pp.yaml", inter, "not with the interleaved schedule");
    /* 24 layers over 8 stages: 3 each, given or not */
    const char *same[] = {"parallel.first_stage_layers=3", "parallel.last_stage_layers=3", NULL};
    g_autoptr(Scenario) a = load_ok("1.3B_pp.yaml", NULL);
    g_autoptr(Scenario) c = load_ok("1.3B_pp.yaml", same);
    g_autoptr(SimRun) ra = run_ok(a, -1);
    g_autoptr(SimRun) rc = run_ok(c, -1);
    ck_assert_int_eq(sim_summary(ra)->iteration, sim_summary(rc)->iteration);
    ck_assert_int_eq(sim_summary(ra)->critical.compute, sim_summary(rc)->critical.compute);
}
END_TEST

static double send_row(const SimRun *run, double *total) {
    GArray *rows = stats_comm_rows(sim_stats(run), sim_critical_index(run));
    double calls = -1;
    for (guint k = 0; k < rows->len; k++) {
        const CommRow *c = &g_array_index(rows, CommRow, k);
        if (c->op == COLL_SEND && c->dim == DIM_PP) {
            calls = c->calls;
            *total = c->total_volume_bytes;
        }
    }
    stats_rows_free(rows);
    return calls;
}

/* Sends: every chunk boundary of the p v virtual stages carries b s h activations forward and as
 * many gradients backward per micro-batch, 2 m (p v - 1) sends in all: 1F1B's 2 m (p - 1) times
 * (p v - 1) / (p - 1), about v times. Per rank of the pp dimension the mean is 2 m (p v - 1) / p.
 */
START_TEST(test_interleaved_sends) {
    const char *v1[] = {UNIFORM_SETS("1")}, *v4[] = {UNIFORM_SETS("4")};
    const char *fb[] = {"parallel.pp=4",         "parallel.dp=2",
                        "training.grad_accum=8", "training.synchronize_each_layer=false",
                        "model.layers=16",       NULL};
    const char *const *sets[] = {fb, v1, v4};
    int vs[] = {1, 1, 4};
    for (int i = 0; i < 3; i++) {
        g_autoptr(Scenario) sc = load_ok("1.3B_pp.yaml", sets[i]);
        g_autoptr(SimRun) run = run_ok(sc, -1);
        double p = sc->pp, m = sc->grad_accum, v = vs[i], total = 0;
        double calls = send_row(run, &total);
        ck_assert_msg(fabs(calls - 2 * m * (p * v - 1) / p) < 1e-9, "v %d: %.3f sends, want %.3f",
                      vs[i], calls, 2 * m * (p * v - 1) / p);
        double bsh = (double)sc->micro_batch * sc->seq_len * sc->model.hidden * 2;
        ck_assert_double_eq_tol(total, 2 * m * (p * v - 1) * bsh * sc->dp * sc->tp, 1.0);
    }
}
END_TEST

/* Activations of the first stage: L / p layers for p (1 + (p - 1) / (p v)) micro-batches
 * (Korthikanti et al. 2022, Sec. 4.2.3), each layer sbh (8 + 24) + 2 a s^2 b bytes with 2-byte
 * activations, TP 1, no dropout and no recomputation (model_memory). */
START_TEST(test_interleaved_memory) {
    const char *v2[] = {UNIFORM_SETS("2")};
    g_autoptr(Scenario) sc = load_ok("1.3B_pp.yaml", v2);
    g_autoptr(SimRun) run = run_ok(sc, -1);
    double p = sc->pp, v = 2, L = sc->model.layers, s = sc->seq_len, b = sc->micro_batch;
    double h = sc->model.hidden, a = sc->model.heads;
    double layer = s * b * h * 32 + 2 * a * s * s * b;
    double want = L / p * layer * p * (1 + (p - 1) / (p * v));
    double got = sim_summary(run)->memory.activations_bytes;
    ck_assert_msg(fabs(got - want) < 1.0, "activations %.0f bytes, want %.0f", got, want);
}
END_TEST

/* Megatron-LM's interleaved schedule's pipeline calls on stage s, written out from its code
 * (megatron/core/pipeline_parallel/schedules.py forward_backward_pipelining_with_interleaving,
 * m > p; p2p_communication.py _communicate, _batched_p2p_ops): each call's operations in
 * _batched_p2p_ops's order, "sb" send_prev, "rf" recv_prev, "sf" send_next, "rb" recv_next, then
 * "|" for its torch.cuda.synchronize(). */
static int chunk_id(int k, gboolean fwd, int p, int v) {
    int g = ((k % (p * v)) + p * v) % (p * v), c = g / p; /* Python's modulo */
    return fwd ? c : v - 1 - c;
}

static void call(GString *o, gboolean send_next, gboolean send_prev, gboolean recv_prev,
                 gboolean recv_next) {
    g_string_append_printf(o, "%s%s%s%s| ", send_prev ? "sb " : "", recv_prev ? "rf " : "",
                           send_next ? "sf " : "", recv_next ? "rb " : "");
}

static char *megatron_calls(int p, int s, int m, int v) {
    GString *o = g_string_new(NULL);
    int total = m * v, warm = MIN(2 * (p - s - 1) + (v - 1) * p, total), rem = total - warm;
#define FIRST(c) (s == 0 && (c) == 0)
#define LAST(c) (s == p - 1 && (c) == v - 1)
    if (!FIRST(0)) /* recv_forward */
        call(o, FALSE, FALSE, TRUE, FALSE);
    for (int k = 0; k < warm; k++) {
        gboolean recv_prev = !(s == 0 && chunk_id(k + 1, TRUE, p, v) == 0) && k != total - 1;
        gboolean out = !LAST(chunk_id(k, TRUE, p, v));
        call(o, out, FALSE, recv_prev, k == warm - 1 && s != p - 1);
    }
    for (int k = 0; k < rem; k++) {
        int fk = k + warm, bk = k;
        gboolean recv_prev = s != 0 || chunk_id(fk - (p - 1), TRUE, p, v) != v - 1;
        gboolean recv_next = s != p - 1 || chunk_id(bk - (p - 1), FALSE, p, v) != 0;
        if (k == rem - 1)
            recv_prev = FALSE;
        call(o, !LAST(chunk_id(fk, TRUE, p, v)), !FIRST(chunk_id(bk, FALSE, p, v)), recv_prev,
             recv_next);
    }
    for (int k = rem; k < total; k++) {
        gboolean recv_next =
            !(s == p - 1 && chunk_id(k + 1, FALSE, p, v) == v - 1) && k != total - 1;
        call(o, FALSE, !FIRST(chunk_id(k, FALSE, p, v)), FALSE, recv_next);
    }
#undef FIRST
#undef LAST
    return g_string_free(o, FALSE);
}

/* The same read off a stage's program: its sends and receives by stream, "|" where the host
 * synchronises (the last call's is the optimizer's). */
static char *program_calls(const Program *pg) {
    GString *o = g_string_new(NULL);
    for (guint k = 0; k < pg->ntasks; k++) {
        const Task *t = &pg->tasks[k];
        if (t->host_sync && k > 0)
            g_string_append(o, "| ");
        if (t->kind == TASK_SEND || t->kind == TASK_RECV)
            g_string_append(o, t->stream == STREAM_PP_SEND_BWD   ? "sb "
                               : t->stream == STREAM_PP_RECV_FWD ? "rf "
                               : t->stream == STREAM_PP_SEND_FWD ? "sf "
                                                                 : "rb ");
    }
    return g_string_free(o, FALSE);
}

static int count(const char *s, const char *tok) {
    int n = 0;
    for (const char *q = s; (q = strstr(q, tok)); q += strlen(tok))
        n++;
    return n;
}

#define MEGATRON_SETS(v)                                                                           \
    "training.framework=megatron", "parallel.overlap_p2p_comm=false", UNIFORM_SETS(v)

/* Megatron's calls, one per step, each waited for and synchronised: on every stage of p 4,
 * m 8 and v 2 and 4 the program makes the calls written out above, in order; so stage s sends
 * m v activations (the last stage m fewer, its last chunk's) and as many gradients (the first
 * stage m fewer) and synchronises T + W_s times (W_s warm-up steps, T = m v), once more for its
 * recv_forward where s > 0. */
START_TEST(test_interleaved_megatron_calls) {
    const char *v2[] = {MEGATRON_SETS("2")}, *v4[] = {MEGATRON_SETS("4")};
    const char *const *sets[] = {v2, v4};
    for (int i = 0; i < 2; i++) {
        g_autoptr(Scenario) sc = load_ok("1.3B_pp.yaml", sets[i]);
        g_autoptr(SimRun) run = run_ok(sc, -1);
        int p = sc->pp, m = sc->grad_accum, v = sc->virtual_stages;
        for (int s = 0; s < p; s++) {
            g_autofree char *want = megatron_calls(p, s, m, v);
            g_autofree char *got = program_calls(workload_program(sim_workload(run), s));
            ck_assert_msg(strcmp(got, want) == 0, "v %d stage %d:\n got  %s\n want %s", v, s, got,
                          want);
            int warm = 2 * (p - s - 1) + (v - 1) * p;
            ck_assert_int_eq(count(got, "sf"), m * v - (s == p - 1 ? m : 0));
            ck_assert_int_eq(count(got, "sb"), m * v - (s == 0 ? m : 0));
            ck_assert_int_eq(count(got, "|"), m * v + warm + (s > 0));
        }
    }
}
END_TEST

/* The wait, on stage 0's first forwards (rank 0), pipeline links of a known cost c (one send of
 * b s h activations, no latency): Megatron posts forward k's output with the receive of nothing
 * (forward k + 1 reads the data loader) and waits for it, so forward k + 1 starts c after
 * forward k ends: forward k at k (f + c) for k < p, f a forward of chunk 0 on stage 0 (the next
 * stage, without the embedding, is faster and posts its receive in time). Without the wait
 * (before: sends that did not block) forward k started at k f. */
START_TEST(test_interleaved_megatron_wait) {
    const char *sets[] = {MEGATRON_SETS("2"), NULL};
    /* links of 100 GB/s instead of 1 PB/s */
    for (int i = 0; sets[i]; i++)
        if (strcmp(sets[i], "topology.node.link.bandwidth=1PB/s") == 0)
            sets[i] = "topology.node.link.bandwidth=100GB/s";
    g_autoptr(Scenario) sc = load_ok("1.3B_pp.yaml", sets);
    Watch w;
    g_autoptr(SimRun) run = watched(sc, &w);
    SimTime start[4] = {-1, -1, -1, -1}, end[4] = {0}, c = -1;
    int chunk_layers = sc->model.layers / (sc->pp * sc->virtual_stages);
    for (guint k = 0; k < w.ran->len; k++) {
        const Ran *r = &g_array_index(w.ran, Ran, k);
        if (r->t.kind == TASK_COMPUTE && r->t.phase == PHASE_FWD && r->t.micro < 4 &&
            r->t.layer < chunk_layers) { /* chunk 0: the embedding and its layers */
            if (start[r->t.micro] < 0)
                start[r->t.micro] = r->begin;
            end[r->t.micro] = MAX(end[r->t.micro], r->end);
        }
        if (r->t.kind == TASK_SEND && c < 0)
            c = r->end - r->begin;
    }
    g_array_unref(w.ran);
    double bsh = (double)sc->micro_batch * sc->seq_len * sc->model.hidden * 2;
    ck_assert_msg(fabs((double)c - bsh / 100e9 * 1e12) < 0.01 * (double)c,
                  "send %" G_GINT64_FORMAT " ps, b s h / 100 GB/s %.0f ps", c, bsh / 100e9 * 1e12);
    SimTime f = end[0] - start[0];
    ck_assert_int_eq(start[0], 0);
    for (int k = 1; k < 4; k++)
        ck_assert_msg(start[k] == k * (f + c),
                      "forward %d starts at %" G_GINT64_FORMAT
                      " ps, want k (f + c) = %" G_GINT64_FORMAT " ps (f %" G_GINT64_FORMAT
                      ", c %" G_GINT64_FORMAT ")",
                      k, start[k], k * (f + c), f, c);
}
END_TEST

/* DeepSpeed's pipeline engine (pp_calls.c): every send and receive is a blocking call made in the
 * TrainSchedule's step order, so on one rank they never overlap one another: each starts once the
 * one before it has ended (at that picosecond when the partner was already waiting), the step's
 * compute after both. Stage 3 of 1.3B_pp (PP 8, 8 micro-batches) sends and receives m activations
 * and m gradients. (With receives posted on their own, as before, no start is set by the call
 * before: chained is 0.) */
START_TEST(test_deepspeed_step_order) {
    const char *sets[] = {"training.framework=deepspeed", "training.comms_logger=false",
                          "sim.host=false", "sim.interference=false", NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_pp.yaml", sets);
    ck_assert_int_eq(sc->pp, 8);
    ck_assert_int_eq(sc->tp * sc->dp, 1); /* job rank 3 is stage 3 */
    Watch w;
    g_autoptr(SimRun) run = watched_rank(sc, 3, &w);
    int sends = 0, recvs = 0, chained = 0;
    const Ran *prev = NULL;
    for (guint i = 0; i < w.ran->len; i++) {
        const Ran *r = &g_array_index(w.ran, Ran, i);
        if (r->t.kind != TASK_SEND && r->t.kind != TASK_RECV)
            continue;
        sends += r->t.kind == TASK_SEND;
        recvs += r->t.kind == TASK_RECV;
        if (prev) {
            ck_assert_msg(r->begin >= prev->end, "p2p %u began at %lld before the one before ended",
                          i, (long long)r->begin);
            chained += r->begin == prev->end;
        }
        prev = r;
    }
    ck_assert_int_eq(sends, 2 * sc->grad_accum);
    ck_assert_int_eq(recvs, 2 * sc->grad_accum);
    ck_assert_int_gt(chained, 0); /* the call before, not the partner, set some starts */
    g_array_unref(w.ran);
}
END_TEST

int main(void) {
    Suite *s = suite_create("schedule");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_interleaved_order);
    tcase_add_test(tc, test_peak_inflight);
    tcase_add_test(tc, test_interleaved_bubble);
    tcase_add_test(tc, test_interleaved_sends);
    tcase_add_test(tc, test_interleaved_memory);
    tcase_add_test(tc, test_interleaved_megatron_calls);
    tcase_add_test(tc, test_interleaved_megatron_wait);
    tcase_add_test(tc, test_deepspeed_step_order);
    tcase_add_test(tc, test_stage_split);
    tcase_add_test(tc, test_stage_split_errors);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
