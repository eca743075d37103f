/* Layout search: the enumeration follows its rules, and the ranking is by simulated iteration
 * time, with the scenario's own layout among the candidates giving the figures of a plain run. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"
#include "util.h"

static const int micro[] = {1, 2, 4};

/* The layouts sim search enumerates for scenario file (with sets) on nodes nodes at a global
 * batch, prepared (every point loaded) */
static Sweep *layouts(const char *file, const char **sets, int nodes, int64_t batch) {
    g_autoptr(Scenario) sc = load_ok(file, sets);
    Sweep *sw = sweep_new(scen(file), NULL, SWEEP_CSV, FALSE);
    SearchSpace space = {nodes, batch, micro, 3};
    SearchCounts c;
    search_add_layouts(sw, sc, &space, &c);
    g_autoptr(GError) err = NULL;
    ck_assert_msg(sweep_prepare(sw, 2, &err), "%s", err ? err->message : "");
    return sw;
}

START_TEST(test_enumeration) {
    const char *sets[] = {"nodes=2", NULL};
    g_autoptr(Scenario) sc = load_ok("20B_tp8.yaml", sets);
    g_autoptr(Sweep) sw = sweep_new(scen("20B_tp8.yaml"), NULL, SWEEP_CSV, FALSE);
    SearchSpace space = {2, 16, micro, 3};
    SearchCounts c;
    search_add_layouts(sw, sc, &space, &c);
    g_autoptr(GError) err = NULL;
    ck_assert(sweep_prepare(sw, 2, &err));
    int n = sweep_points(sw), fits = 0;
    ck_assert_int_eq(n, c.enumerated);
    ck_assert_int_gt(c.unsupported, 0);
    ck_assert_int_gt(c.batch, 0);
    for (int i = 0; i < n; i++) {
        g_autofree char *name = sweep_point_name(sw, i);
        int tp, pp, dp, zero, mb, accum;
        char rc[16];
        ck_assert_int_eq(sscanf(name,
                                "tp=%d, pp=%d, dp=%d, zero=%d, micro_batch=%d, micro_batches=%d, "
                                "recompute=%15s",
                                &tp, &pp, &dp, &zero, &mb, &accum, rc),
                         7);
        ck_assert_msg(8 % tp == 0 && 44 % pp == 0 && tp * pp * dp == 16, "%s", name);
        ck_assert_msg(!(zero >= 2 && pp > 1) && !(zero > 0 && dp == 1), "%s", name);
        ck_assert_int_eq(mb * accum * dp, 16);
        /* 20B: 64 heads, 44 layers: every TP of a node and every PP that divides 44 loads */
        ck_assert_int_eq(sweep_point_status(sw, i), SWEEP_POINT_OK);
        fits += sweep_point_inspect(sw, i)->fits;
    }
    /* 20B on 16 GCDs: some layouts fit in 64 GB; plain DDP (TP 1, PP 1, 16 bytes a parameter
     * on every GPU) does not */
    ck_assert_int_gt(fits, 0);
    ck_assert_int_lt(fits, n);
    for (int i = 0; i < n; i++) {
        g_autofree char *name = sweep_point_name(sw, i);
        if (g_str_has_prefix(name, "tp=1, pp=1, dp=16, zero=0,"))
            ck_assert_msg(!sweep_point_inspect(sw, i)->fits, "%s fits", name);
    }
}
END_TEST

static void keep(void *ctx, SweepResult *r) {
    g_ptr_array_add(ctx, r);
}

/* 13B on 2 nodes at the scenario's batch: the scenario's layout is a candidate with the same
 * iteration time as a plain run, and the search finds a clearly faster one (ZeRO-3 without
 * recomputation fits in 39 GiB and runs about 1.06 s against the scenario's 1.65 s; the margin
 * asserted is 10%). */
START_TEST(test_ranking) {
    const char *sets[] = {"nodes=2", NULL};
    g_autoptr(Scenario) sc = load_ok("13B_tp8.yaml", sets);
    g_autoptr(SimRun) plain = run_ok(sc, -1);
    g_autoptr(Sweep) sw = sweep_new(scen("13B_tp8.yaml"), NULL, SWEEP_CSV, FALSE);
    static const int mb4[] = {2, 4};
    SearchSpace space = {2, sc->global_batch, mb4, 2};
    SearchCounts c;
    search_add_layouts(sw, sc, &space, &c);
    g_autoptr(GError) err = NULL;
    ck_assert(sweep_prepare(sw, 2, &err));
    g_autofree guint8 *todo = g_new0(guint8, sweep_points(sw));
    for (int i = 0; i < sweep_points(sw); i++)
        todo[i] = sweep_point_status(sw, i) == SWEEP_POINT_OK && sweep_point_inspect(sw, i)->fits;
    g_autoptr(GPtrArray) res = g_ptr_array_new_with_free_func((GDestroyNotify)sweep_result_free);
    sweep_run(sw, 2, -1, todo, keep, NULL, res);
    ck_assert_int_gt(res->len, 4);
    SimTime best = SIM_TIME_MAX;
    gboolean own = FALSE;
    for (guint k = 0; k < res->len; k++) {
        const SweepResult *r = res->pdata[k];
        best = MIN(best, r->sum.iteration);
        g_autofree char *name = sweep_point_name(sw, r->point);
        if (!strcmp(name, "tp=8, pp=1, dp=2, zero=1, micro_batch=4, micro_batches=1, "
                          "recompute=full")) {
            own = TRUE;
            ck_assert_int_eq(r->sum.iteration, sim_summary(plain)->iteration);
        }
    }
    ck_assert(own);
    ck_assert_msg((double)best < 0.9 * (double)sim_summary(plain)->iteration,
                  "best %.6f s, the scenario's own layout %.6f s", best / 1e12,
                  sim_summary(plain)->iteration / 1e12);
}
END_TEST

/* Under the interleaved schedule the search also tries the model chunks per stage: every v with
 * pp x v dividing the 24 layers, micro-batches a multiple of pp; pp 1 runs 1F1B with v 1. */
START_TEST(test_virtual_stages) {
    g_autoptr(Sweep) sw = layouts("1.3B_interleaved.yaml", NULL, 1, 64);
    int seen_v[25] = {0};
    for (int i = 0; i < sweep_points(sw); i++) {
        g_autofree char *name = sweep_point_name(sw, i);
        int tp, pp, dp, zero, mb, accum, v;
        char rc[16];
        ck_assert_int_eq(sscanf(name,
                                "tp=%d, pp=%d, dp=%d, zero=%d, micro_batch=%d, micro_batches=%d, "
                                "recompute=%15[a-z], virtual_stages=%d",
                                &tp, &pp, &dp, &zero, &mb, &accum, rc, &v),
                         8);
        ck_assert_msg(24 % (pp * v) == 0 && (pp == 1 ? v == 1 : accum % pp == 0), "%s", name);
        seen_v[v]++;
    }
    for (int v = 1; v <= 6; v++) /* pp 2 reaches v 1, 2, 3, 4, 6, 12; pp 4 v 1, 2, 3, 6 */
        ck_assert_msg(v == 5 ? seen_v[v] == 0 : seen_v[v] > 0, "v %d: %d layouts", v, seen_v[v]);
}
END_TEST

/* With sequence parallelism on in the scenario, every layout with TP > 1 is tried with and
 * without it, and TP 1 once (nothing to split). */
START_TEST(test_sequence_parallel_column) {
    g_autoptr(Sweep) sw = layouts("13B_tp8_sp.yaml", NULL, 1, 8);
    int on = 0, off = 0, off_tp1 = 0;
    for (int i = 0; i < sweep_points(sw); i++) {
        g_autofree char *name = sweep_point_name(sw, i);
        int tp = atoi(strstr(name, "tp=") + 3);
        gboolean yes = strstr(name, "sequence_parallel=true") != NULL;
        ck_assert_msg(yes || strstr(name, "sequence_parallel=false"), "%s", name);
        ck_assert_msg(!(yes && tp == 1), "%s", name);
        on += yes;
        off += !yes && tp > 1;
        off_tp1 += tp == 1;
    }
    ck_assert_int_gt(on, 0);
    ck_assert_int_eq(on, off); /* each TP > 1 layout both ways */
    ck_assert_int_gt(off_tp1, 0);
}
END_TEST

/* With the TP communication overlap in the scenario, every TP > 1 layout runs with its chunks
 * and without (0); TP 1 only without. */
START_TEST(test_tp_overlap_column) {
    g_autoptr(Sweep) sw = layouts("1.3B_tp_overlap.yaml", NULL, 1, 8);
    int on = 0, off = 0;
    for (int i = 0; i < sweep_points(sw); i++) {
        g_autofree char *name = sweep_point_name(sw, i);
        int tp = atoi(strstr(name, "tp=") + 3);
        const char *ov = strstr(name, "tp_comm_overlap=");
        ck_assert_msg(ov != NULL, "%s", name);
        int k = atoi(ov + strlen("tp_comm_overlap="));
        ck_assert_msg(k == 0 || (k == 2 && tp > 1), "%s", name);
        on += k == 2;
        off += k == 0 && tp > 1;
    }
    ck_assert_int_gt(on, 0);
    ck_assert_int_eq(on, off);
}
END_TEST

/* With context parallelism on in the scenario (parallel.cp > 1: scenario_search_dims), every
 * layout is tried at each CP size 1, 2, 4, ... whose 2 cp chunks divide the sequence, with TP x
 * CP x PP dividing the GPUs and DP the rest, in a cp column. Closed form on 1.3B (24 layers) on 2
 * DGX H100 nodes (16 GPUs) at seq 40: the (tp, pp, cp) triples are tp | 8, pp | 24, cp in
 * {1, 2, 4} (cp 8's 16 chunks do not divide 40) with tp pp cp | 16; at a global batch of 16 every
 * triple has a point (DP is a power of 2 and micro-batch 1 divides). */
START_TEST(test_context_parallel_column) {
    const char *sets[] = {"nodes=2",
                          "topology=dgx-h100",
                          "training.framework=megatron",
                          "model.attention=flash",
                          "parallel.tp=1",
                          "parallel.cp=2",
                          "training.seq_len=40",
                          NULL};
    g_autoptr(Sweep) sw = layouts("1.3B_tp.yaml", sets, 2, 16);
    gboolean seen[9][25][5] = {{{FALSE}}}; /* by tp, pp, log2 cp */
    for (int i = 0; i < sweep_points(sw); i++) {
        g_autofree char *name = sweep_point_name(sw, i);
        int tp, pp, dp, cp;
        ck_assert_int_eq(sscanf(name, "tp=%d, pp=%d, dp=%d", &tp, &pp, &dp), 3);
        const char *at = strstr(name, ", cp=");
        ck_assert_msg(at != NULL, "%s", name);
        cp = atoi(at + 5);
        ck_assert_msg(cp == 1 || cp == 2 || cp == 4, "%s", name);
        ck_assert_msg(tp * pp * cp * dp == 16, "%s", name);
        seen[tp][pp][cp == 1 ? 0 : cp == 2 ? 1 : 2] = TRUE;
    }
    for (int tp = 1; tp <= 8; tp++)
        for (int pp = 1; pp <= 24; pp++)
            for (int l = 0; l < 5; l++) {
                int cp = 1 << l;
                gboolean want =
                    8 % tp == 0 && 24 % pp == 0 && 40 % (2 * cp) == 0 && 16 % (tp * pp * cp) == 0;
                ck_assert_msg(seen[tp][pp][l] == want, "tp %d pp %d cp %d: %s", tp, pp, cp,
                              want ? "missing" : "unexpected");
            }
}
END_TEST

/* sim_bound less its rounding margin (LOWER BOUND in sim.c): 2 ps a task instance, 1e-9. */
static SimTime bound_of_exact(const SimRun *run, SimTime it) {
    const Scenario *sc = sim_scenario(run);
    double instances = 0;
    for (int s = 0; s < sc->pp; s++)
        instances += (double)workload_program(sim_workload(run), s)->ntasks * (sc->gpus / sc->pp);
    return (SimTime)floor((double)it * (1 - 1e-9) - 2.0 * instances);
}

/* Closed form: with contention and interference off, every flow of the run with every rank
 * moves at its bottleneck's rate alone and compute at full speed, which is the bound's run; where
 * the replicas are images of each other (one node; a fat tree's rails) the bound is the exact
 * iteration less its margin, to the picosecond. */
START_TEST(test_bound_closed_form) {
    static const char *const files[] = {"1.3B_pp.yaml", "1.3B_zero1.yaml", "1.3B_tp_pp.yaml",
                                        "13B_tp8.yaml"};
    for (guint k = 0; k < G_N_ELEMENTS(files); k++) {
        const char *sets[] = {"sim.contention=false", "sim.interference=false", NULL};
        g_autoptr(Scenario) sc = load_ok(files[k], sets);
        g_autoptr(SimRun) all = run_ok(sc, DEDUP_OFF);
        g_autoptr(GError) err = NULL;
        SimTime b = sim_bound(sc, &err);
        ck_assert_msg(b >= 0, "%s: %s", files[k], err ? err->message : "");
        SimTime want = bound_of_exact(all, sim_summary(all)->iteration);
        ck_assert_msg(b == want,
                      "%s: bound %" G_GINT64_FORMAT " ps, exact less margin %" G_GINT64_FORMAT,
                      files[k], b, want);
    }
}
END_TEST

/* The bound is below the run with every rank where contention, interference and uneven replicas
 * (a dragonfly's global links picked per GPU pair: 4-node groups, PP across them) make the
 * deduplicated estimate differ from it, and not far below where the machine is quiet. The last
 * layout's data-parallel allreduce is NCCL's tree, not alike on every node: the bound's
 * symmetric form leaves the other nodes' links out instead of folding the busiest onto the
 * simulated node (coll_set_bound). */
START_TEST(test_bound_below_exact) {
    static const char *const layouts[][3] = {
        {"parallel.pp=2", "training.grad_accum=8", "parallel.zero=1"},
        {"parallel.pp=4", "training.grad_accum=16", "parallel.zero=1"},
        {"parallel.pp=2", "training.grad_accum=4", "training.recompute=none"},
        {"parallel.pp=2", "training.grad_accum=8", "topology.collectives.algorithms=tree"},
    };
    int uneven = 0;
    for (guint k = 0; k < G_N_ELEMENTS(layouts); k++) {
        const char *sets[] = {"nodes=8",
                              "topology.fabric.nodes_per_group=4",
                              "topology.fabric.switches_per_group=4",
                              "model=gpt-neox-1.3b",
                              "parallel.tp=1",
                              "training.seq_len=512",
                              "training.micro_batch=1",
                              layouts[k][0],
                              layouts[k][1],
                              layouts[k][2],
                              NULL};
        g_autoptr(Scenario) sc = load_ok("13B_tp8.yaml", sets);
        g_autoptr(SimRun) est = run_ok(sc, DEDUP_ESTIMATE);
        g_autoptr(SimRun) all = run_ok(sc, DEDUP_OFF);
        uneven += sim_summary(est)->uneven_sends > 0;
        g_autoptr(GError) err = NULL;
        SimTime b = sim_bound(sc, &err), it = sim_summary(all)->iteration;
        ck_assert_msg(b > 0 && b <= it && b > it / 2,
                      "layout %u: bound %" G_GINT64_FORMAT " ps against %" G_GINT64_FORMAT, k, b,
                      it);
    }
    ck_assert_int_gt(uneven, 0);
}
END_TEST

/* sim_bound_within: with contention and interference off the bound is the exact iteration less
 * its margin (test_bound_closed_form), so a horizon one picosecond below that stops the bound's
 * run with EXEC_ERROR_HORIZON, and a horizon at it gives sim_bound's figure. Also with NCCL's
 * tree allreduce over DP 4 across 2 nodes (coll_set_bound: chosen on every node's loads, nothing
 * folded; at 2 nodes both trees move alike on every node, so the drop-only form keeps the full
 * form's pace and the closed form holds). */
START_TEST(test_bound_within) {
    static const char *const algos[] = {"topology.collectives.algorithms=ring",
                                        "topology.collectives.algorithms=tree"};
    SimTime exact[2];
    for (guint k = 0; k < G_N_ELEMENTS(algos); k++) {
        const char *sets[] = {"sim.contention=false", "sim.interference=false", "parallel.tp=4",
                              algos[k], NULL};
        g_autoptr(Scenario) sc = load_ok("13B_tp8.yaml", sets);
        g_autoptr(SimRun) all = run_ok(sc, DEDUP_OFF);
        exact[k] = sim_summary(all)->iteration;
        SimTime want = bound_of_exact(all, exact[k]);
        g_autoptr(GError) err = NULL;
        ck_assert_int_eq(sim_bound(sc, &err), want);
        ck_assert_int_eq(sim_bound_within(sc, want, &err), want);
        ck_assert_int_eq(sim_bound_within(sc, want - 1, &err), -1);
        ck_assert_msg(g_error_matches(err, EXEC_ERROR, EXEC_ERROR_HORIZON), "%s: %s", algos[k],
                      err ? err->message : "no error");
    }
    ck_assert_int_ne(exact[0], exact[1]); /* the tree did run: DP 4 over 2 nodes */
}
END_TEST

/* sim_run_within: a horizon one picosecond short of the iteration stops the run with
 * EXEC_ERROR_HORIZON; a horizon at the iteration gives sim_run's report, byte for byte (the
 * deduplicated default, a rerun with every rank, and --all-ranks). */
START_TEST(test_horizon) {
    const char *plain[] = {NULL};
    const char *uneven[] = {"nodes=8",
                            "topology.fabric.nodes_per_group=4",
                            "topology.fabric.switches_per_group=4",
                            "model=gpt-neox-1.3b",
                            "parallel.tp=1",
                            "parallel.pp=2",
                            "training.seq_len=512",
                            "training.micro_batch=1",
                            "training.grad_accum=8",
                            NULL};
    const struct {
        const char *file;
        const char *const *sets;
        int dedup;
    } cases[] = {{"1.3B_tp_pp.yaml", plain, -1},
                 {"13B_tp8.yaml", uneven, -1},
                 {"1.3B_tp_pp.yaml", plain, DEDUP_OFF}};
    for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
        g_autoptr(Scenario) sc = load_ok(cases[k].file, cases[k].sets);
        g_autoptr(SimRun) run = run_ok(sc, cases[k].dedup);
        SimTime it = sim_summary(run)->iteration;
        g_autoptr(GError) err = NULL;
        g_autoptr(SimRun) short_run = sim_run_within(sc, cases[k].dedup, it - 1, &err);
        ck_assert_msg(!short_run && g_error_matches(err, EXEC_ERROR, EXEC_ERROR_HORIZON),
                      "case %u: not stopped at the horizon", k);
        g_autoptr(SimRun) at = sim_run_within(sc, cases[k].dedup, it, NULL);
        ck_assert_msg(at != NULL, "case %u: stopped at its own iteration", k);
        g_autofree char *a = json_of(run), *b = json_of(at);
        ck_assert_str_eq(a, b);
    }
}
END_TEST

int main(void) {
    Suite *s = suite_create("search");
    TCase *tc = tcase_create("search");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_enumeration);
    tcase_add_test(tc, test_ranking);
    tcase_add_test(tc, test_virtual_stages);
    tcase_add_test(tc, test_sequence_parallel_column);
    tcase_add_test(tc, test_tp_overlap_column);
    tcase_add_test(tc, test_context_parallel_column);
    tcase_add_test(tc, test_bound_closed_form);
    tcase_add_test(tc, test_bound_below_exact);
    tcase_add_test(tc, test_horizon);
    tcase_add_test(tc, test_bound_within);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
