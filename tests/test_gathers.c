/* How the frameworks' calls block and gather, pinned on closed forms: the Python hooks
 * DeepSpeed's ZeRO-3 and FSDP run per module (per unit) and what they cost the host; DeepSpeed's
 * communication logger, which synchronises around every call; pipeline sends the compute stream
 * waits for; ZeRO-3's reuse distance and prefetch budget. FSDP's gathers and reduce-scatters are
 * test_fsdp.c's. */
#include <math.h>
#include <string.h>

#include "watch.h"

#define E 2.0 /* fp16 bytes */
#define OFF "sim.host=false", "sim.interference=false"
#define FSDP "training.framework=pytorch", "nodes=1"

/* The hooks each use runs: DeepSpeed's ZeRO-3 a fetch and a release around every module of the
 * unit in every pass (12 modules per GPT-NeoX layer, 3 in the embedding and in the head), FSDP a
 * pre- and post- hook per wrapped layer and pass, and one pair per pass for the root (the
 * embedding and the head together); with full recomputation a layer has three passes
 * (forward, recomputation, backward), the embedding and head two. The host pays host.hook for
 * each (exec_host_cost), and where the host is the bottleneck (GPT-NeoX 19M, 128 tokens on one
 * node) every hook lengthens the iteration by that, but for the first unit's, which may run while
 * the GPU waits for the embedding's gather anyway. */
START_TEST(test_gather_hooks) {
    const char *fws[] = {"deepspeed", "pytorch"};
    for (int f = 0; f < 2; f++) {
        g_autofree char *fw = g_strdup_printf("training.framework=%s", fws[f]);
        /* the last entry (free hooks) is left out of the first run by its NULL */
        const char *sets[] = {fw,
                              "training.comms_logger=false",
                              "model=gpt-neox-19m",
                              "nodes=1",
                              "training.seq_len=128",
                              "training.micro_batch=1",
                              "training.synchronize_each_layer=false",
                              "sim.interference=false",
                              NULL,
                              NULL};
        g_autoptr(Scenario) sc = load_ok("1.3B_zero3.yaml", sets);
        g_autoptr(SimRun) run = run_ok(sc, -1);
        const Program *pg = workload_program(sim_workload(run), 0);
        int hooks = 0, first = -1;
        for (guint k = 0; k < pg->ntasks; k++) {
            hooks += pg->tasks[k].hooks;
            if (first < 0 && pg->tasks[k].kind == TASK_COMPUTE)
                first = pg->tasks[k].hooks;
        }
        /* per pass, a layer's; the embedding's and head's over their forward and backward
         * (FSDP: the root's pair in each pass) */
        int L = sc->model.layers, per = f == 0 ? 2 * 12 : 2, ends = f == 0 ? 2 * 2 * 2 * 3 : 2 * 2;
        ck_assert_int_eq(hooks, (3 * L * per + ends) * sc->grad_accum);
        HostWork hw = exec_host_work(&sc->topo, pg);
        ck_assert_double_eq_tol(hw.hooks_s, (double)hooks * sc->topo.host_hook / SIM_PS_PER_S,
                                1e-12);
        /* the same run with free hooks */
        sets[G_N_ELEMENTS(sets) - 2] = "topology.node.host.hook=0us";
        g_autoptr(Scenario) s0 = load_ok("1.3B_zero3.yaml", sets);
        g_autoptr(SimRun) r0 = run_ok(s0, -1);
        SimTime dt = sim_summary(run)->iteration - sim_summary(r0)->iteration;
        SimTime all = (SimTime)hooks * sc->topo.host_hook, hidden = first * sc->topo.host_hook;
        ck_assert_msg(dt <= all && dt >= all - hidden, "hooks add %lld ps, %d x hook = %lld",
                      (long long)dt, hooks, (long long)all);
    }
}
END_TEST

/* DeepSpeed's comms logger synchronises the device after every deepspeed.comm call, which each
 * follows the compute it waits for, so nothing it logs overlaps anything: ZeRO-3 on one node with
 * DeepSpeed's prefetch, one gradient bucket and a host that costs nothing but still synchronises,
 * the iteration is the compute plus every call alone (and, at most, the host's 1 ps per operator
 * and call): each unit's coalesced gather (one call per unit and use: its tensors over the
 * persistence threshold, fewer than the 5e7-element prefetch bucket but for the last one) before
 * forward and again before backward, and the reduce-scatter of all P. Without the logger most of
 * the gathers hide under compute. */
#define FREE_HOST                                                                                  \
    "topology.node.host.op_dispatch=1ps", "topology.node.host.bwd_op_dispatch=1ps",                \
        "topology.node.host.hook=0us", "topology.node.host.comm_dispatch=1ps",                     \
        "topology.node.host.step=0us"
START_TEST(test_comms_logger) {
    const char *sets[] = {"training.comms_logger=true",
                          "parallel.bucket_size=100GB",
                          "parallel.max_reuse_distance=0",
                          "nodes=1",
                          "sim.interference=false",
                          FREE_HOST,
                          NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_zero3.yaml", sets);
    g_autoptr(SimRun) run = run_ok(sc, -1);
    const Program *pg = workload_program(sim_workload(run), 0);
    double host = 0; /* all the host's work, picoseconds: the slack of the closed form */
    for (guint k = 0; k < pg->ntasks; k++) {
        const Task *t = &pg->tasks[k];
        host += (double)exec_host_cost(&sc->topo, t);
        if (t->kind == TASK_COLL)
            ck_assert(k + 1 == pg->ntasks || pg->tasks[k + 1].host_sync);
    }
    int *dp = g_new(int, sc->dp);
    for (int i = 0; i < sc->dp; i++)
        dp[i] = i;
    g_autoptr(GArray) units = model_stage_units(&sc->model, sc->seq_len, sc->tp, 1, 0);
    double P = 0, gathers = 0;
    for (guint i = 0; i < units->len; i++) {
        const ParamUnit *u = &g_array_index(units, ParamUnit, i);
        double sizes[32], gathered = 0, last = 0;
        int n = model_unit_tensors(&sc->model, u, sc->seq_len, sc->tp, sizes, 32);
        for (int k = 0; k < n; k++)
            if (sizes[k] >= sc->persist_elems)
                gathered += last = sizes[k];
        ck_assert(gathered - last < sc->prefetch_elems); /* one call */
        gathers += 2 * (double)coll_time_alone(sc, COLL_ALLGATHER, dp, sc->dp, gathered * E);
        P += u->params;
    }
    double comm = gathers + (double)coll_time_alone(sc, COLL_REDUCE_SCATTER, dp, sc->dp, P * E);
    const SimSummary *s = sim_summary(run);
    ck_assert_msg(fabs((double)s->iteration - ((double)s->critical.compute + comm)) <= host,
                  "iteration %lld ps, compute + calls %.0f", (long long)s->iteration,
                  (double)s->critical.compute + comm);
    const char *off[] = {"training.comms_logger=false",
                         "parallel.max_reuse_distance=0",
                         "parallel.bucket_size=100GB",
                         "nodes=1",
                         "sim.interference=false",
                         FREE_HOST,
                         NULL};
    g_autoptr(Scenario) soff = load_ok("1.3B_zero3.yaml", off);
    g_autoptr(SimRun) roff = run_ok(soff, -1);
    ck_assert_double_lt((double)sim_summary(roff)->iteration, (double)s->iteration - gathers / 2);
    g_free(dp);
}
END_TEST

/* A pipeline send blocks the compute stream (DeepSpeed's synchronous dist.send, Megatron-LM's
 * wait on batch_isend_irecv): on stage 0 of an 8-stage 1F1B pipeline the 7 warmup forwards each
 * start exactly when the previous forward's send ends (it starts as that forward ends: the
 * receiver's stream is idle), and no compute task ever starts before the send issued before it
 * ends. Under Megatron-LM the host also synchronises after every send and receive, before the
 * next compute task. */
START_TEST(test_pipeline_send_blocks) {
    const char *sets[] = {OFF, NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_pp.yaml", sets);
    Watch w;
    g_autoptr(SimRun) run = watched(sc, &w);
    int sends = 0, checked = 0;
    SimTime send_end = -1;
    gboolean after_send = FALSE;
    for (guint i = 0; i < w.ran->len; i++) {
        const Ran *r = &g_array_index(w.ran, Ran, i);
        if (r->t.kind == TASK_SEND) {
            send_end = r->end;
            after_send = TRUE;
            sends++;
        } else if (r->t.kind == TASK_COMPUTE && after_send) {
            ck_assert_msg(r->begin >= send_end, "compute began %lld ps before its send ended",
                          (long long)(send_end - r->begin));
            if (r->t.phase == PHASE_FWD && sends < sc->pp) { /* warmup: nothing else to wait for */
                ck_assert_int_eq(r->begin, send_end);
                checked++;
            }
            after_send = FALSE;
        }
    }
    ck_assert_int_eq(checked, sc->pp - 1);
    ck_assert_int_eq(sends, 2 * sc->grad_accum - sc->grad_accum); /* stage 0 sends forward only */
    g_array_unref(w.ran);

    const char *mg[] = {"training.framework=megatron", "training.synchronize_each_layer=false",
                        NULL};
    g_autoptr(Scenario) sm = load_ok("1.3B_pp.yaml", mg);
    g_autoptr(SimRun) rm = run_ok(sm, -1);
    for (int st = 0; st < sm->pp; st++) {
        const Program *pg = workload_program(sim_workload(rm), st);
        for (guint k = 0; k < pg->ntasks; k++) {
            if (pg->tasks[k].kind != TASK_SEND && pg->tasks[k].kind != TASK_RECV)
                continue;
            guint c = k + 1;
            while (c < pg->ntasks && pg->tasks[c].kind != TASK_COMPUTE)
                c++;
            ck_assert(c == pg->ntasks || pg->tasks[c].host_sync);
        }
    }
}
END_TEST

/* DeepSpeed's stage3_max_reuse_distance, replayed here from its rule: a unit used again before
 * the parameters of the uses in between (its previous use included) reach the distance keeps its
 * parameters whole and gathers nothing. 1.3B, one micro-batch: the head (used back to back) and
 * the last layers of the forward are not gathered again for their backward. Without prefetch
 * every gather is exposed, so the iteration is the compute, every gathering use's per-tensor
 * gathers alone and the one reduce-scatter; with a window of one use the buffers hold the bucket,
 * the use's own parameters and everything kept whole at that point. */
static int reuse_replay(const Scenario *sc, gboolean *gathers, double *kept_peak, double *kept_at) {
    int layer[64];
    double params[64];
    int U = units_of(sc, layer, params), n = 2 * U, last[64];
    double cum = 0, at[129], keep[130] = {0};
    for (int u = 0; u < U; u++)
        last[u] = -1;
    for (int j = 0; j < n; j++) {
        int u = j < U ? j : 2 * U - 1 - j;
        at[j] = cum;
        gathers[j] = !(last[u] >= 0 && cum - at[last[u]] < sc->max_reuse_elems);
        if (!gathers[j]) {
            keep[last[u] + 1] += params[u];
            keep[j + 1] -= params[u];
        }
        cum += params[u];
        last[u] = j;
    }
    double live = 0;
    *kept_peak = 0;
    for (int j = 0; j < n; j++) {
        live += keep[j];
        int u = j < U ? j : 2 * U - 1 - j;
        *kept_peak = MAX(*kept_peak, live + (gathers[j] ? params[u] : 0));
        if (kept_at)
            kept_at[j] = live;
    }
    return n;
}

START_TEST(test_zero3_reuse_distance) {
    const char *sets[] = {"nodes=1",
                          "parallel.prefetch_bucket_size=0",
                          "parallel.max_live_parameters=1",
                          "parallel.persistence_threshold=0",
                          "parallel.bucket_size=100GB",
                          OFF,
                          NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_zero3.yaml", sets);
    ck_assert_double_eq(sc->max_reuse_elems, 1e9);
    g_autoptr(SimRun) run = run_ok(sc, -1);
    gboolean gathers[128];
    double kept_peak;
    int n = reuse_replay(sc, gathers, &kept_peak, NULL), U = n / 2, skipped = 0;
    int *dp = g_new(int, sc->dp);
    for (int i = 0; i < sc->dp; i++)
        dp[i] = i;
    g_autoptr(GArray) units = model_stage_units(&sc->model, sc->seq_len, sc->tp, 1, 0);
    double exposed = 0, P = 0, calls = 0;
    for (int j = 0; j < n; j++) {
        int u = j < U ? j : 2 * U - 1 - j;
        const ParamUnit *pu = &g_array_index(units, ParamUnit, u);
        if (j < U)
            P += pu->params;
        if (!gathers[j]) {
            skipped++;
            continue;
        }
        double sizes[32];
        int k = model_unit_tensors(&sc->model, pu, sc->seq_len, sc->tp, sizes, 32);
        for (int t = 0; t < k; t++)
            exposed += (double)coll_time_alone(sc, COLL_ALLGATHER, dp, sc->dp, sizes[t] * E);
        calls += k;
    }
    ck_assert_int_eq(skipped, 9); /* the head and layers 16-23 */
    const SimSummary *s = sim_summary(run);
    ck_assert_double_eq(stats_rank_calls(sim_stats(run), 0, COLL_ALLGATHER, DIM_DP), calls);
    double want = (double)s->critical.compute + exposed +
                  (double)coll_time_alone(sc, COLL_REDUCE_SCATTER, dp, sc->dp, P * E);
    ck_assert_msg(fabs((double)s->iteration - want) <= 1.0, "iteration %lld ps, closed form %.0f",
                  (long long)s->iteration, want);
    ck_assert_double_eq_tol(s->memory.buffers_bytes, (P + kept_peak) * E, 1.0);
    g_free(dp);
}
END_TEST

/* DeepSpeed's prefetch budget counts what the reuse distance keeps whole: fetch_sub_module
 * prefetches at most stage3_max_live_parameters less __n_available_params, every fetched
 * parameter not yet released. Replayed here: use j's window front..j holds the oldest uses whose
 * gathered parameters, with those kept whole at j, fit in the limit M; the buffers peak at the
 * largest window plus what is kept. Two limits on 1.3B (persistence 0, every unit gathered): the
 * buffers differ by the difference of the replayed peaks, and neither exceeds M. */
static double window_peak(const Scenario *sc, double M) {
    int layer[64];
    double params[64], kept_at[129], wp[129];
    gboolean gathers[128];
    double kept_peak;
    int U = units_of(sc, layer, params), n = reuse_replay(sc, gathers, &kept_peak, kept_at);
    double live = 0, peak = 0;
    int first = 0;
    for (int j = 0; j < n; j++) {
        int u = j < U ? j : 2 * U - 1 - j;
        wp[j] = gathers[j] ? params[u] : 0;
        live += wp[j];
        while (first < j && live + kept_at[j] > M)
            live -= wp[first++];
        peak = MAX(peak, live + kept_at[j]);
    }
    return peak;
}

START_TEST(test_zero3_window_counts_kept) {
    const char *lo[] = {"nodes=1", "parallel.persistence_threshold=0",
                        "parallel.max_live_parameters=6e8", OFF, NULL};
    const char *hi[] = {"nodes=1", "parallel.persistence_threshold=0",
                        "parallel.max_live_parameters=1e9", OFF, NULL};
    g_autoptr(Scenario) a = load_ok("1.3B_zero3.yaml", lo);
    g_autoptr(Scenario) b = load_ok("1.3B_zero3.yaml", hi);
    g_autoptr(SimRun) ra = run_ok(a, -1);
    g_autoptr(SimRun) rb = run_ok(b, -1);
    double pa = window_peak(a, 6e8), pb = window_peak(b, 1e9);
    ck_assert_msg(pa <= 6e8 && pb <= 1e9, "peaks %g %g", pa, pb);
    ck_assert_msg(pb - pa > 1e8, "the limits should bind: peaks %g and %g", pa, pb);
    double d = sim_summary(rb)->memory.buffers_bytes - sim_summary(ra)->memory.buffers_bytes;
    ck_assert_msg(fabs(d - (pb - pa) * E) <= 1.0, "buffers differ by %.0f B, replay %.0f B", d,
                  (pb - pa) * E);
}
END_TEST

int main(void) {
    Suite *s = suite_create("gathers");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_gather_hooks);
    tcase_add_test(tc, test_comms_logger);
    tcase_add_test(tc, test_pipeline_send_blocks);
    tcase_add_test(tc, test_zero3_reuse_distance);
    tcase_add_test(tc, test_zero3_window_counts_kept);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
