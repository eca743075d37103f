/* The host and interference: closed forms on one GPU (a chain of compute tasks, the host issuing
 * them in order), and compute progressing at 1 / (1 + sigma) while communication runs under it. */
#include <glib/gstdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "executor.h"
#include "util.h"

/* One GCD, no communication: the program is one chain on the compute stream, the optimizer last. */
static const char *one_gpu = "model: gpt-neox-125m\n"
                             "topology:\n"
                             "  name: one\n"
                             "  device: mi250x-gcd\n"
                             "  node: {gpus: 1, host: {op_dispatch: 10ms, comm_dispatch: 0us, "
                             "step: 0us}}\n"
                             "nodes: 1\n"
                             "parallel: {}\n"
                             "training: {micro_batch: 1, seq_len: 512}\n";

static Scenario *load_text(const char *text, const char *const *sets) {
    g_autofree char *path = write_temp_yaml(text);
    g_autoptr(GError) err = NULL;
    Scenario *sc = scenario_load(path, (char *const *)sets, &err);
    ck_assert_msg(sc != NULL, "%s", err ? err->message : "?");
    g_unlink(path);
    return sc;
}

static const Program *program(const SimRun *run) {
    return workload_program(sim_workload(run), 0);
}

static const Task *task(const Program *pg, guint k) {
    return &pg->tasks[k];
}

/* The one-GPU program: every task a compute task, the optimizer last. */
static void check_chain(const Program *pg) {
    ck_assert_uint_gt(pg->ntasks, 10);
    for (guint k = 0; k < pg->ntasks; k++) {
        ck_assert_int_eq(task(pg, k)->kind, TASK_COMPUTE);
        ck_assert_uint_ge(task(pg, k)->kernels, 1);
        ck_assert_uint_ge(task(pg, k)->host_ops, task(pg, k)->kernels);
    }
    ck_assert_int_eq(task(pg, pg->ntasks - 1)->phase, PHASE_OPTIMIZER);
}

/* Host-bound: 10 ms per dispatched operator dwarfs every kernel of a 125M model. Task k starts
 * when the host has issued it, K_k x op (K_k its operators, Task.host_ops), and the GPU is idle by
 * then; the host waits at the optimizer step until the last backward task ends, then issues the
 * optimizer (1 operator):
 *   iteration = K x op + d(last backward) + d(optimizer),  K = operators of the whole program. */
START_TEST(test_host_bound_chain) {
    g_autoptr(Scenario) sc = load_text(one_gpu, NULL);
    g_autoptr(SimRun) run = run_ok(sc, -1);
    const Program *pg = program(run);
    check_chain(pg);
    guint n = pg->ntasks;
    SimTime op = sc->topo.host_op_dispatch, busy = 0;
    int64_t kernels = 0;
    for (guint k = 0; k < n; k++) {
        kernels += task(pg, k)->host_ops;
        busy += task(pg, k)->duration;
        ck_assert_msg(task(pg, k)->duration < op, "task %u takes %ld ps, not host-bound", k,
                      (long)task(pg, k)->duration);
    }
    ck_assert_uint_eq(task(pg, n - 1)->host_ops, 1);
    SimTime want = kernels * op + task(pg, n - 2)->duration + task(pg, n - 1)->duration;
    HostWork w = exec_host_work(&sc->topo, pg); /* the report's operators: K x op, no hooks */
    ck_assert_double_eq_tol(w.dispatch_s, (double)kernels * op / SIM_PS_PER_S, 1e-9);
    ck_assert_double_eq(w.hooks_s, 0);
    ck_assert_int_eq(w.syncs, 1);
    const SimSummary *s = sim_summary(run);
    ck_assert_msg(s->iteration == want, "iteration %ld ps, closed form %ld ps", (long)s->iteration,
                  (long)want);
    /* every idle moment of the GPU is a wait for the host */
    ck_assert_int_eq(s->critical.compute, busy);
    ck_assert_int_eq(s->critical.host_wait, s->iteration - busy);
    ck_assert_int_eq(s->critical.bubble, s->critical.host_wait);
    ck_assert_int_eq(s->critical.interference, 0);
}
END_TEST

/* GPU-bound: 1 ps per operator. Only the first task waits for its launch (K_0 ps), and the
 * optimizer for the sync and its own launch (1 ps), plus the step's framework time:
 *   iteration = sum d + K_0 x op + step + op;  host off: sum d. */
START_TEST(test_gpu_bound_chain) {
    const char *sets[] = {"topology.node.host.op_dispatch=1ps", "topology.node.host.step=5ms",
                          NULL};
    g_autoptr(Scenario) sc = load_text(one_gpu, sets);
    g_autoptr(SimRun) run = run_ok(sc, -1);
    const Program *pg = program(run);
    check_chain(pg);
    SimTime busy = 0;
    for (guint k = 0; k < pg->ntasks; k++)
        busy += task(pg, k)->duration;
    SimTime step = sc->topo.host_step;
    ck_assert_int_eq(step, 5 * SIM_PS_PER_S / 1000);
    SimTime want = busy + task(pg, 0)->host_ops + step + 1;
    const SimSummary *s = sim_summary(run);
    ck_assert_msg(s->iteration == want, "iteration %ld ps, closed form %ld ps", (long)s->iteration,
                  (long)want);
    ck_assert_int_eq(s->critical.host_wait, want - busy);

    const char *off[] = {"topology.node.host.op_dispatch=1ps", "topology.node.host.step=5ms",
                         "sim.host=false", NULL};
    g_autoptr(Scenario) so = load_text(one_gpu, off);
    g_autoptr(SimRun) ro = run_ok(so, -1);
    ck_assert_int_eq(sim_summary(ro)->iteration, busy);
    ck_assert_int_eq(sim_summary(ro)->critical.host_wait, 0);
}
END_TEST

/* Mixed: a per-operator cost between the short and the long tasks' time per operator, so some
 * tasks wait for the host and others for the GPU. The chain's recurrence:
 *   start_k = max(end_{k-1}, issued_k), issued_k = op x (K_0 + ... + K_k) before the sync;
 *   the optimizer: issued at end of the last backward + step + op. */
START_TEST(test_mixed_chain) {
    g_autoptr(Scenario) probe = load_text(one_gpu, NULL);
    g_autoptr(SimRun) pr = run_ok(probe, -1);
    const Program *pg0 = program(pr);
    /* median time per kernel of the tasks */
    guint n = pg0->ntasks;
    g_autofree double *per = g_new(double, n);
    for (guint k = 0; k < n; k++)
        per[k] = (double)task(pg0, k)->duration / task(pg0, k)->host_ops;
    for (guint a = 0; a < n; a++) /* n is small: insertion sort */
        for (guint b = a; b > 0 && per[b] < per[b - 1]; b--) {
            double t = per[b];
            per[b] = per[b - 1];
            per[b - 1] = t;
        }
    SimTime op = (SimTime)per[n / 2];
    g_autofree char *set = g_strdup_printf("topology.node.host.op_dispatch=%ldps", (long)op);
    const char *sets[] = {set, "topology.node.host.step=1ms", NULL};
    g_autoptr(Scenario) sc = load_text(one_gpu, sets);
    g_autoptr(SimRun) run = run_ok(sc, -1);
    const Program *pg = program(run);
    check_chain(pg);
    SimTime end = 0, issued = 0, busy = 0;
    int host_bound = 0, gpu_bound = 0;
    for (guint k = 0; k + 1 < n; k++) {
        issued += task(pg, k)->host_ops * op;
        host_bound += issued > end;
        gpu_bound += issued < end;
        end = MAX(end, issued) + task(pg, k)->duration;
        busy += task(pg, k)->duration;
    }
    end += sc->topo.host_step + op + task(pg, n - 1)->duration;
    busy += task(pg, n - 1)->duration;
    ck_assert_msg(host_bound > 1 && gpu_bound > 1, "host-bound %d, GPU-bound %d tasks", host_bound,
                  gpu_bound);
    const SimSummary *s = sim_summary(run);
    ck_assert_msg(s->iteration == end, "iteration %ld ps, recurrence %ld ps", (long)s->iteration,
                  (long)end);
    ck_assert_int_eq(s->critical.host_wait, end - busy);
    ck_assert(s->iteration > busy && s->iteration > issued);
}
END_TEST

/* The host's operators and hooks (model_host.c, workload.c): a dense layer's compute tasks
 * dispatch the measured count of the model's style (GPT-NeoX 1.3B as the study ran it: 68
 * forward, 109 backward), and DeepSpeed ZeRO-1 runs one gradient hook per parameter tensor in
 * each backward; a task's host time is its operators at the pass's rate plus its hooks. */
START_TEST(test_host_ops_and_hooks) {
    const char *sets[] = {"training.comms_logger=false", NULL}; /* its syncs: test_gathers.c */
    g_autoptr(Scenario) sc = load_ok("1.3B_zero1.yaml", sets);
    g_autoptr(SimRun) run = run_ok(sc, -1);
    const Program *pg = program(run);
    int fwd = 0, bwd = 0, hooks = 0;
    for (guint k = 0; k < pg->ntasks; k++) {
        const Task *t = task(pg, k);
        if (t->kind == TASK_COMPUTE && t->layer == 3)
            fwd += t->phase == PHASE_FWD ? t->host_ops : 0,
                bwd += t->phase == PHASE_BWD ? t->host_ops : 0;
        hooks += t->hooks;
        if (t->kind == TASK_COMPUTE) {
            SimTime op =
                t->phase == PHASE_BWD ? sc->topo.host_bwd_op_dispatch : sc->topo.host_op_dispatch;
            ck_assert_int_eq(exec_host_cost(&sc->topo, t),
                             t->host_ops * op + t->hooks * sc->topo.host_hook);
        }
    }
    /* rounding each segment's share may move the sum by one */
    ck_assert_int_le(abs(fwd - 68), 1);
    ck_assert_int_le(abs(bwd - 109), 1);
    g_autoptr(GArray) units = model_stage_units(&sc->model, sc->seq_len, sc->tp, 1, 0);
    int tensors = 0;
    for (guint i = 0; i < units->len; i++) {
        double sizes[32];
        tensors += model_unit_tensors(&sc->model, &g_array_index(units, ParamUnit, i), sc->seq_len,
                                      sc->tp, sizes, 32);
    }
    ck_assert_int_eq(hooks, tensors * sc->grad_accum);
    ck_assert_int_gt(sc->topo.host_hook, 0);
    /* the report's host work by cause: hooks x hook, the step once, a sync at every layer's
     * entry and exit (forward, recomputation-and-backward; one where an exit meets an entry) and
     * at the optimizer */
    HostWork w = exec_host_work(&sc->topo, pg);
    ck_assert_double_eq_tol(w.hooks_s, (double)hooks * sc->topo.host_hook / SIM_PS_PER_S, 1e-12);
    ck_assert_double_eq_tol(w.step_s, (double)sc->topo.host_step / SIM_PS_PER_S, 1e-15);
    ck_assert_int_eq(w.syncs, 2 * (sc->model.layers + 1) * sc->grad_accum + 1);
    double calls = 0;
    for (guint k = 0; k < pg->ntasks; k++)
        calls += task(pg, k)->kind != TASK_COMPUTE && task(pg, k)->kind != TASK_KERNEL;
    ck_assert_double_eq_tol(w.comm_s, calls * sc->topo.host_comm_dispatch / SIM_PS_PER_S, 1e-12);
    ck_assert_double_gt(w.dispatch_s, 0);
}
END_TEST

/* --- interference ------------------------------------------------------------------------- */

#define MAX_SPANS 100000

typedef struct {
    SimTime start, end;
    SimTime duration; /* compute: alone */
} Span;

typedef struct {
    int rank;
    SimTime open[STREAM_COUNT];
    GArray *compute; /* Span */
    GArray *comm;    /* Span */
} Watch;

static void w_begin(void *ctx, int rank, const Task *t, SimTime now) {
    Watch *w = ctx;
    if (rank == w->rank)
        w->open[t->stream] = now;
}

static void w_end(void *ctx, int rank, const Task *t, SimTime now) {
    Watch *w = ctx;
    if (rank != w->rank)
        return;
    Span s = {w->open[t->stream], now, t->duration};
    g_array_append_val(t->kind == TASK_COMPUTE ? w->compute : w->comm, s);
}

/* Work done in [a, b] at 1 / (1 + sigma) while any of the comm spans is open, 1 otherwise;
 * exact to rounding. O(comm spans). */
static double work_in(const GArray *comm, SimTime a, SimTime b, double sigma) {
    /* boundaries of "some comm open" within [a, b] */
    GArray *pts = g_array_new(FALSE, FALSE, sizeof(SimTime));
    g_array_append_val(pts, a);
    g_array_append_val(pts, b);
    for (guint i = 0; i < comm->len; i++) {
        const Span *c = &g_array_index(comm, Span, i);
        if (c->start > a && c->start < b)
            g_array_append_val(pts, c->start);
        if (c->end > a && c->end < b)
            g_array_append_val(pts, c->end);
    }
    for (guint x = 0; x < pts->len; x++) /* sort: few points */
        for (guint y = x;
             y > 0 && g_array_index(pts, SimTime, y) < g_array_index(pts, SimTime, y - 1); y--) {
            SimTime t = g_array_index(pts, SimTime, y);
            g_array_index(pts, SimTime, y) = g_array_index(pts, SimTime, y - 1);
            g_array_index(pts, SimTime, y - 1) = t;
        }
    double work = 0;
    for (guint x = 1; x < pts->len; x++) {
        SimTime p = g_array_index(pts, SimTime, x - 1), q = g_array_index(pts, SimTime, x);
        if (q == p)
            continue;
        gboolean open = FALSE;
        for (guint i = 0; i < comm->len && !open; i++) {
            const Span *c = &g_array_index(comm, Span, i);
            open = c->start <= p && c->end >= q;
        }
        work += (double)(q - p) / (open ? 1.0 + sigma : 1.0);
    }
    g_array_unref(pts);
    return work;
}

/* Communication on one node (xGMI, intra-node) under the compute of rank 0. For every compute
 * task, the work done over its span at 1 / (1 + sigma) under
 * communication is its time alone; a task fully overlapped by one communication of length D
 * ends C + sigma D / (1 + sigma) after it started; interference_s is the sum of the excess.
 * framework: whose data parallelism (PyTorch DDP overlaps its allreduces with backward, DeepSpeed's
 * run after it). */
static void check_interference(const char *file, const char *framework, int *full_out,
                               int *partial_out) {
    g_autofree char *fw = g_strconcat("training.framework=", framework, NULL);
    const char *sets[] = {"nodes=1", "sim.host=false", fw, NULL};
    g_autoptr(Scenario) sc = load_ok(file, sets);
    double sigma = sc->topo.device.interference_intra;
    ck_assert(sigma > 0);
    Watch w = {.rank = 0,
               .compute = g_array_new(FALSE, FALSE, sizeof(Span)),
               .comm = g_array_new(FALSE, FALSE, sizeof(Span))};
    ExecObserver obs = {w_begin, w_end, &w, NULL};
    g_autoptr(GError) err = NULL;
    g_autoptr(SimRun) run = sim_run_observed(sc, -1, &obs, &err);
    ck_assert_msg(run != NULL, "%s", err ? err->message : "?");
    int full = 0, partial = 0, slowed = 0;
    SimTime excess = 0;
    for (guint k = 0; k < w.compute->len; k++) {
        const Span *c = &g_array_index(w.compute, Span, k);
        double work = work_in(w.comm, c->start, c->end, sigma);
        ck_assert_msg(fabs(work - (double)c->duration) <= 4.0,
                      "compute task %u: %.1f ps of work in its span, %ld alone", k, work,
                      (long)c->duration);
        excess += c->end - c->start - c->duration;
        slowed += c->end - c->start > c->duration;
        /* the communications overlapping it */
        int n = 0;
        const Span *only = NULL;
        for (guint i = 0; i < w.comm->len; i++) {
            const Span *m = &g_array_index(w.comm, Span, i);
            if (m->end > c->start && m->start < c->end) {
                n++;
                only = m;
            }
        }
        if (n != 1)
            continue;
        if (only->start >= c->start && only->end <= c->end) {
            double d = (double)(only->end - only->start);
            double want = (double)c->duration + sigma * d / (1.0 + sigma);
            ck_assert_msg(fabs((double)(c->end - c->start) - want) <= 2.0,
                          "task %u under one comm of %.0f ps: %ld ps, C + sD/(1+s) = %.1f", k, d,
                          (long)(c->end - c->start), want);
            full++;
        } else {
            partial++;
        }
    }
    ck_assert_msg(slowed > 0, "%s: no compute task slowed", file);
    *full_out += full;
    *partial_out += partial;
    int i0 = sim_index_of(run, 0);
    ck_assert_int_eq(stats_rank(sim_stats(run), i0).interference, excess);
    /* the breakdown still adds up */
    RankTimes r = stats_rank(sim_stats(run), i0);
    ck_assert_int_eq(r.compute + r.exposed + r.bubble, r.finish);
    g_array_unref(w.compute);
    g_array_unref(w.comm);
}

/* ZeRO-3's parameter allgathers and DDP's gradient buckets, on one node (xGMI: intra-node). */
/* GPT-NeoX's synchronize_each_layer: the host waits for the device at every checkpointed layer's
 * entry and exit, forward and backward (one wait where an exit meets the next entry), and at the
 * optimizer. After each wait the GPU idles while the first task is launched; elsewhere it stays
 * ahead (GPU-bound, 100 ns per kernel):
 *   iteration = sum d + sum over S of K_k x op,  S = task 0 and every task after a wait,
 * with 2 (L + 1) + 1 waits per micro-batch; without the switch only the optimizer's. */
START_TEST(test_sync_each_layer) {
    const char *sets[] = {"topology.node.host.op_dispatch=100ns", "training.recompute=full",
                          "training.synchronize_each_layer=true", NULL};
    g_autoptr(Scenario) sc = load_text(one_gpu, sets);
    g_autoptr(SimRun) run = run_ok(sc, -1);
    const Program *pg = program(run);
    check_chain(pg);
    SimTime op = sc->topo.host_op_dispatch, want = 0;
    int syncs = 0;
    for (guint k = 0; k < pg->ntasks; k++) {
        const Task *t = task(pg, k);
        want += t->duration;
        if (k == 0 || t->host_sync)
            want += t->host_ops * op;
        syncs += t->host_sync;
        if (k + 1 < pg->ntasks) /* GPU-bound: each task outlasts the next one's launch */
            ck_assert_int_ge(t->duration, task(pg, k + 1)->host_ops * op);
    }
    ck_assert_int_eq(syncs, 2 * (sc->model.layers + 1) + 1);
    const SimSummary *s = sim_summary(run);
    ck_assert_msg(s->iteration == want, "iteration %ld ps, closed form %ld ps", (long)s->iteration,
                  (long)want);
    const char *off[] = {"topology.node.host.op_dispatch=100ns", "training.recompute=full", NULL};
    g_autoptr(Scenario) s2 = load_text(one_gpu, off);
    g_autoptr(SimRun) r2 = run_ok(s2, -1);
    int syncs2 = 0;
    for (guint k = 0; k < program(r2)->ntasks; k++)
        syncs2 += task(program(r2), k)->host_sync;
    ck_assert_int_eq(syncs2, 1);
}
END_TEST

START_TEST(test_interference_closed_form) {
    int full = 0, partial = 0;
    check_interference("1.3B_zero3.yaml", "deepspeed", &full, &partial);
    check_interference("1.3B_ddp.yaml", "pytorch", &full, &partial);
    ck_assert_msg(full > 0 && partial > 0, "fully overlapped %d, partly %d", full, partial);
}
END_TEST

/* Off: every compute task takes exactly its time alone, and no interference is reported;
 * on, the iteration is longer. */
START_TEST(test_interference_off) {
    const char *off_sets[] = {"nodes=1", "sim.host=false", "sim.interference=false", NULL};
    const char *on_sets[] = {"nodes=1", "sim.host=false", NULL};
    g_autoptr(Scenario) off = load_ok("1.3B_zero3.yaml", off_sets);
    g_autoptr(Scenario) on = load_ok("1.3B_zero3.yaml", on_sets);
    Watch w = {.rank = 0,
               .compute = g_array_new(FALSE, FALSE, sizeof(Span)),
               .comm = g_array_new(FALSE, FALSE, sizeof(Span))};
    ExecObserver obs = {w_begin, w_end, &w, NULL};
    g_autoptr(GError) err = NULL;
    g_autoptr(SimRun) ro = sim_run_observed(off, -1, &obs, &err);
    ck_assert(ro != NULL);
    for (guint k = 0; k < w.compute->len; k++) {
        const Span *c = &g_array_index(w.compute, Span, k);
        ck_assert_int_eq(c->end - c->start, c->duration);
    }
    g_autoptr(SimRun) rn = run_ok(on, -1);
    ck_assert_int_eq(sim_summary(ro)->critical.interference, 0);
    ck_assert_int_gt(sim_summary(rn)->iteration, sim_summary(ro)->iteration);
    /* on: the critical rank's interference is exactly the sum over its compute tasks of the
     * time each took past its time alone (was: only > 0) */
    Watch wn = {.rank = sim_critical_index(rn),
                .compute = g_array_new(FALSE, FALSE, sizeof(Span)),
                .comm = g_array_new(FALSE, FALSE, sizeof(Span))};
    ExecObserver obs_n = {w_begin, w_end, &wn, NULL};
    g_autoptr(SimRun) rn2 = sim_run_observed(on, -1, &obs_n, &err);
    ck_assert(rn2 != NULL);
    SimTime excess = 0;
    for (guint k = 0; k < wn.compute->len; k++) {
        const Span *c = &g_array_index(wn.compute, Span, k);
        excess += c->end - c->start - c->duration;
    }
    ck_assert_msg(excess > 0 && sim_summary(rn2)->critical.interference == excess,
                  "interference %" G_GINT64_FORMAT
                  " ps, compute past its time alone %" G_GINT64_FORMAT " ps",
                  sim_summary(rn2)->critical.interference, excess);
    ck_assert_int_eq(sim_summary(rn2)->iteration, sim_summary(rn)->iteration);
    g_array_unref(wn.compute);
    g_array_unref(wn.comm);
    g_array_unref(w.compute);
    g_array_unref(w.comm);
}
END_TEST

/* With both on, the breakdown adds up exactly on the shipped scenarios, and host waits and
 * interference are parts of it: host_wait <= exposed + bubble, interference <= compute. */
START_TEST(test_breakdown_with_both) {
    static const char *files[] = {"1.3B_ddp.yaml", "1.3B_zero3.yaml", "1.3B_pp.yaml",
                                  "1.3B_tp_pp.yaml", "20B_tp8.yaml"};
    for (size_t f = 0; f < G_N_ELEMENTS(files); f++) {
        g_autoptr(Scenario) sc = load_ok(files[f], NULL);
        g_autoptr(SimRun) run = run_ok(sc, -1);
        const SimSummary *s = sim_summary(run);
        const RankTimes *c = &s->critical;
        ck_assert_msg(c->compute + c->exposed + c->bubble == s->iteration, "%s: breakdown",
                      files[f]);
        ck_assert_msg(c->host_wait > 0 && c->host_wait <= c->exposed + c->bubble,
                      "%s: host wait %ld, exposed + bubble %ld", files[f], (long)c->host_wait,
                      (long)(c->exposed + c->bubble));
        ck_assert_msg(c->interference <= c->compute, "%s", files[f]);
    }
}
END_TEST

int main(void) {
    Suite *s = suite_create("host");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_host_bound_chain);
    tcase_add_test(tc, test_gpu_bound_chain);
    tcase_add_test(tc, test_mixed_chain);
    tcase_add_test(tc, test_host_ops_and_hooks);
    tcase_add_test(tc, test_sync_each_layer);
    tcase_add_test(tc, test_interference_closed_form);
    tcase_add_test(tc, test_interference_off);
    tcase_add_test(tc, test_breakdown_with_both);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
