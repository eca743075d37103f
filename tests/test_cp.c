/* Context parallelism (parallel.cp, par_cp.c): the KV exchanges of TransformerEngine's ring
 * against their closed forms to the byte, the ring's dependencies to the picosecond, the
 * gradients over dp x cp, the memory divided by cp, cp 1 unchanged, the errors, and the
 * deduplicated run equal to --all-ranks. */
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "util.h"
#include "watch.h"

/* GPT-NeoX 1.3B on one DGX H100 node as Megatron-LM runs it with fused attention. */
#define CP_BASE                                                                                    \
    "topology=dgx-h100", "training.framework=megatron", "model.attention=flash",                   \
        "training.synchronize_each_layer=false", "training.comms_logger=false"

static double row(const SimRun *run, CollOp op, Dim dim, gboolean calls) {
    int i = sim_index_of(run, 0);
    return calls ? stats_rank_calls(sim_stats(run), i, op, dim)
                 : stats_rank_volume(sim_stats(run), i, op, dim);
}

/* K and V of a rank's s / cp tokens: b (s / cp) 2 kv_width / tp elements. */
static double kv_bytes(const Scenario *sc) {
    return (double)sc->micro_batch * (sc->seq_len / sc->cp) * 2.0 *
           (double)model_kv_width(&sc->model) / sc->tp * model_elem_bytes(sc->precision);
}

/* p2p, per layer per micro-batch: forward cp - 1 sendrecvs of KV (TE's forward loop posts one
 * for i < cp - 1), as many again in full recomputation, backward cp (KV, then KV + dKV, then
 * dKV): 2 (cp - 1) KV. all_gather: forward 2 allgathers (K, V) of cp K bytes, again in
 * recomputation, backward 2 more and 2 reduce-scatters (dK, dV). */
START_TEST(test_cp_inventory) {
    static const char *cps[] = {"parallel.cp=2", "parallel.cp=4"};
    for (int k = 0; k < 2; k++) {
        const char *sets[] = {CP_BASE, "parallel.tp=2", cps[k], "training.grad_accum=2", NULL};
        g_autoptr(Scenario) sc = load_ok("1.3B_tp.yaml", sets);
        g_autoptr(SimRun) run = run_ok(sc, -1);
        double L = sc->model.layers, m = sc->grad_accum, cp = sc->cp, kv = kv_bytes(sc);
        double calls = L * m * (2 * (cp - 1) + cp),
               vol = L * m * (2 * (cp - 1) + 2 * (cp - 1)) * kv;
        ck_assert_msg(row(run, COLL_SENDRECV, DIM_CP, TRUE) == calls,
                      "cp %d: %.0f calls, want %.0f", sc->cp, row(run, COLL_SENDRECV, DIM_CP, TRUE),
                      calls);
        ck_assert_msg(fabs(row(run, COLL_SENDRECV, DIM_CP, FALSE) - vol) < 1.0,
                      "cp %d: %.0f bytes, want %.0f", sc->cp,
                      row(run, COLL_SENDRECV, DIM_CP, FALSE), vol);
    }
    const char *sets[] = {CP_BASE, "parallel.tp=2", "parallel.cp=4", "parallel.cp_comm=all_gather",
                          NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_tp.yaml", sets);
    g_autoptr(SimRun) run = run_ok(sc, -1);
    double L = sc->model.layers, cp = sc->cp, msg = cp * kv_bytes(sc) / 2;
    ck_assert_double_eq(row(run, COLL_ALLGATHER, DIM_CP, TRUE), L * 6);
    ck_assert_double_eq(row(run, COLL_REDUCE_SCATTER, DIM_CP, TRUE), L * 2);
    ck_assert_double_eq_tol(row(run, COLL_ALLGATHER, DIM_CP, FALSE), L * 6 * msg * (cp - 1) / cp,
                            1.0);
    ck_assert_double_eq_tol(row(run, COLL_REDUCE_SCATTER, DIM_CP, FALSE),
                            L * 2 * msg * (cp - 1) / cp, 1.0);
    ck_assert_double_eq(row(run, COLL_SENDRECV, DIM_CP, TRUE), 0);
}
END_TEST

/* Layer 3's attention block of micro-batch 0 in phase ph: its compute tasks (before the core,
 * the cp steps, after it) and its sendrecvs, in begin order. */
static int block_tasks(const GArray *ran, Phase ph, const Ran **comp, int maxc, const Ran **x,
                       int *nx) {
    int nc = 0;
    *nx = 0;
    for (guint i = 0; i < ran->len; i++) {
        const Ran *r = &g_array_index(ran, Ran, i);
        if (r->t.layer != 3 || r->t.micro != 0 || r->t.phase != ph)
            continue;
        if (r->t.kind == TASK_COLL && r->t.op == COLL_SENDRECV)
            x[(*nx)++] = r;
        else if (r->t.kind == TASK_COMPUTE && nc < maxc)
            comp[nc++] = r;
    }
    return nc;
}

/* Host and interference off: step k + 1 of the core starts exactly when both step k's kernels
 * and exchange k have ended, forward and backward; the rest of the block's backward when the
 * last step and the last dKV exchange have. */
START_TEST(test_cp_ring_timing) {
    const char *sets[] = {CP_BASE,          "parallel.tp=2",          "parallel.cp=4",
                          "sim.host=false", "sim.interference=false", NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_tp.yaml", sets);
    Watch w;
    g_autoptr(SimRun) run = watched(sc, &w);
    g_autoptr(GArray) ran = w.ran;
    int cp = sc->cp;
    for (int b = 0; b < 2; b++) {
        Phase ph = b ? PHASE_BWD : PHASE_FWD;
        const Ran *comp[16], *x[16];
        int nx, nc = block_tasks(ran, ph, comp, 16, x, &nx);
        /* forward: before, cp steps, after (the MLP's come later); backward: the same */
        ck_assert_int_ge(nc, cp + 3);
        ck_assert_int_eq(nx, b ? cp : cp - 1);
        /* backward: the MLP's (same layer: three tasks where Megatron's dgrad reduction runs
         * beside the weight-gradient GEMM, blocks.c) and the block's first */
        int mlp = framework_get(sc->framework)->dgrad_overlap && sc->tp > 1 ? 3 : 1;
        int first = b ? mlp + 1 : 1;
        for (int k = 0; k + 1 < cp; k++) {
            const Ran *step = comp[first + k], *next = comp[first + 1 + k];
            SimTime want = MAX(step->end, x[k]->end);
            ck_assert_msg(next->begin == want,
                          "%s step %d starts at %" G_GINT64_FORMAT " ps, want max(%" G_GINT64_FORMAT
                          ", %" G_GINT64_FORMAT ")",
                          b ? "backward" : "forward", k + 1, next->begin, step->end, x[k]->end);
        }
        if (b) {
            const Ran *last = comp[first + cp - 1], *after = comp[first + cp];
            ck_assert(after->begin == MAX(last->end, x[cp - 1]->end));
        }
    }
}
END_TEST

/* Megatron-LM reduces gradients over the data-parallel group with context parallelism and
 * shards its distributed optimizer over it: with tp 2, cp 2, dp 2 the reduce-scatter of the
 * stage's P gradients moves P ge (n - 1) / n per rank with n = dp cp = 4, and the optimizer keeps
 * what it keeps at cp 1 with dp 4. */
START_TEST(test_cp_gradients) {
    const char *sets[] = {CP_BASE, "parallel.tp=2", "parallel.cp=2", "parallel.zero=1", NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_tp.yaml", sets);
    ck_assert_int_eq(sc->dp, 2);
    g_autoptr(SimRun) run = run_ok(sc, -1);
    double P = model_stage_params(&sc->model, sc->seq_len, sc->tp, 1, 0), n = sc->dp * sc->cp;
    double ge = framework_bytes(sc->framework, sc->zero, sc->precision).reduce;
    double want = P * ge * (n - 1) / n;
    ck_assert_msg(fabs(row(run, COLL_REDUCE_SCATTER, DIM_DP, FALSE) - want) < 1e-6 * want,
                  "reduce-scatter %.0f, want %.0f", row(run, COLL_REDUCE_SCATTER, DIM_DP, FALSE),
                  want);
    const char *sets1[] = {CP_BASE, "parallel.tp=2", "parallel.zero=1", NULL};
    g_autoptr(Scenario) s1 = load_ok("1.3B_tp.yaml", sets1);
    ck_assert_int_eq(s1->dp, 4);
    g_autoptr(SimRun) r1 = run_ok(s1, -1);
    const ModelMemory *a = &sim_summary(run)->memory, *c = &sim_summary(r1)->memory;
    ck_assert_double_eq(a->optimizer_bytes, c->optimizer_bytes);
    /* each rank keeps the activations of s / cp tokens */
    ck_assert_double_eq_tol(a->activations_bytes, c->activations_bytes / 2,
                            1e-9 * c->activations_bytes);
}
END_TEST

/* A report without its resolved scenario (which lists every key given, cp 1 included). */
static char *without_resolved(char *json) {
    char *from = strstr(json, "\"resolved_scenario\""), *to = strstr(json, "\"sim\": {");
    ck_assert(from && to && to > from);
    memmove(from, to, strlen(to) + 1);
    return json;
}

/* cp 1 given is the scenario as before, byte for byte but the list of overrides and the resolved
 * scenario, which name what was given. */
START_TEST(test_cp_one_unchanged) {
    const char *sets[] = {"parallel.cp=1", "parallel.cp_comm=all_gather", NULL};
    g_autoptr(Scenario) a = load_ok("1.3B_tp_pp.yaml", NULL);
    g_autoptr(Scenario) b = load_ok("1.3B_tp_pp.yaml", sets);
    g_autoptr(SimRun) ra = run_ok(a, -1);
    g_autoptr(SimRun) rb = run_ok(b, -1);
    g_autofree char *ja = without_resolved(json_of(ra));
    g_autofree char *jb = without_resolved(json_of(rb));
    /* all but the overrides line, which lists the sets */
    const char *ea = strstr(ja, "\"overrides\""), *eb = strstr(jb, "\"overrides\"");
    ck_assert(ea && eb && ea - ja == eb - jb && strncmp(ja, jb, (size_t)(ea - ja)) == 0);
    ck_assert_msg(strcmp(strchr(ea, '\n'), strchr(eb, '\n')) == 0, "cp 1 changed the report");
}
END_TEST

static void expect_error(const char *const *sets, const char *want) {
    load_fails("1.3B_tp.yaml", sets, want);
}

START_TEST(test_cp_errors) {
    const char *a[] = {CP_BASE, "parallel.tp=2", "parallel.cp=2", "training.seq_len=2050", NULL};
    expect_error(a, "do not divide seq_len 2050");
    const char *b[] = {CP_BASE, "parallel.cp=3", NULL};
    expect_error(b, "x CP 3");
    const char *c[] = {"topology=dgx-h100", "model.attention=flash", "parallel.tp=2",
                       "parallel.cp=2", NULL};
    expect_error(c, "training.framework: megatron");
    const char *d[] = {CP_BASE, "parallel.tp=2", "parallel.cp=2", "model.attention=standard", NULL};
    expect_error(d, "fused attention");
    const char *e[] = {CP_BASE, "parallel.cp=2", "parallel.cp_comm=a2a", NULL};
    expect_error(e, "cp_comm");
}
END_TEST

/* Across nodes (tp 8, cp 2: each CP pair on two nodes) with 2 replicas: the deduplicated run,
 * whose CP exchanges carry the other replica's as images, is the all-ranks run. */
START_TEST(test_cp_dedup) {
    const char *sets[] = {
        CP_BASE, "nodes=8", "parallel.cp=2", "parallel.pp=2", "training.grad_accum=4", NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_tp.yaml", sets);
    ck_assert_int_eq(sc->dp, 2);
    g_autoptr(SimRun) one = run_ok(sc, DEDUP_EXACT);
    g_autoptr(SimRun) all = run_ok(sc, DEDUP_OFF);
    ck_assert_int_lt(sim_summary(one)->ranks_simulated, sim_summary(all)->ranks_simulated);
    assert_same_inventory(one, all);
    /* the whole report but the simulator's own counters (the "sim" block, last) and the links
     * (the deduplicated run's are its simulated ranks'), the critical rank's breakdown included:
     * the DP x CP group's reductions of the cp simulated nodes in the full form */
    g_autofree char *j1 = json_of(one);
    g_autofree char *j2 = json_of(all);
    const char *e1 = strstr(j1, "\n  \"links\""), *e2 = strstr(j2, "\n  \"links\"");
    ck_assert(e1 && e2 && e1 - j1 == e2 - j2);
    ck_assert_msg(strncmp(j1, j2, (size_t)(e1 - j1)) == 0, "deduplicated report differs");
}
END_TEST

/* ZeRO-3 (Megatron-FSDP) with CP across two nodes (tp 2, cp 2, dp 4): the layers' parameter
 * allgathers over dp x cp cross the nodes while the CP pairs stay within one. Their flows were
 * activated early, then put back to wait when another set's flow shared a NIC link, and a solve
 * that gave one its rate alone again never scheduled its end: the run stopped in a "schedule
 * deadlock" (network.c unearly; test_network's test_unearly_flow_still_ends is the closed form).
 * It completes, deduplicated as with every rank. */
START_TEST(test_cp_zero3_two_nodes) {
    const char *sets[] = {CP_BASE,
                          "nodes=2",
                          "parallel.tp=2",
                          "parallel.cp=2",
                          "parallel.zero=3",
                          "training.global_batch=16",
                          "training.grad_accum=1",
                          NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_tp.yaml", sets);
    ck_assert_int_eq(sc->dp, 4);
    g_autoptr(SimRun) one = run_ok(sc, DEDUP_EXACT);
    g_autoptr(SimRun) all = run_ok(sc, DEDUP_OFF);
    ck_assert_int_eq(sim_summary(one)->iteration, sim_summary(all)->iteration);
    ck_assert_int_gt(row(all, COLL_ALLGATHER, DIM_DP, TRUE), 0);
}
END_TEST

int main(void) {
    Suite *s = suite_create("cp");
    TCase *tc = tcase_create("cp");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_cp_inventory);
    tcase_add_test(tc, test_cp_ring_timing);
    tcase_add_test(tc, test_cp_gradients);
    tcase_add_test(tc, test_cp_one_unchanged);
    tcase_add_test(tc, test_cp_errors);
    tcase_add_test(tc, test_cp_dedup);
    tcase_add_test(tc, test_cp_zero3_two_nodes);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
