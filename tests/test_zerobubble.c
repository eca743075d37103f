/* Zero-bubble pipeline schedules (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024,
 * arXiv 2401.10241): the order ZB-H1 gives, its bubble (p - 1)(T_F + T_B - T_W) against 1F1B's
 * (p - 1)(T_F + T_B + T_W) pinned exactly on an idealised pipeline (uniform stages, no
 * communication: a list scheduler over the pass orders below) and on the simulator within the
 * embedding's and head's work, its peak activations (p - s) M_B + s M_W on stage s, 1F1B's p M_B
 * on the first (Sec. 3.1 and Table 1), and the split of the backward from the kernels: M_W of a
 * GPT layer 32 s b h bytes at 2-byte activations (Table 1), T_W the weight GEMMs' time. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"
#include "util.h"

static PassRef at(const GArray *a, guint k) {
    return g_array_index(a, PassRef, k);
}

/* 'F', 'B' or 'W' */
static char kind(PassRef r) {
    return r.fwd ? 'F' : r.wgrad ? 'W' : 'B';
}

/* Every micro-batch runs F, B and W once each, in that order. */
static void check_complete(const GArray *ps, int m) {
    ck_assert_uint_eq(ps->len, (guint)(3 * m));
    g_autofree int *seen = g_new0(int, m);
    for (guint k = 0; k < ps->len; k++) {
        PassRef p = at(ps, k);
        int want = p.fwd ? 0 : p.wgrad ? 2 : 1;
        ck_assert_msg(seen[p.micro] == want, "pass %u: %c%d out of order", k, kind(p), p.micro);
        seen[p.micro]++;
    }
}

/* The passes as a string "F0 F1 B0 W0 ..." (g_free it). */
static char *order_str(const GArray *ps) {
    GString *s = g_string_new(NULL);
    for (guint k = 0; k < ps->len; k++)
        g_string_append_printf(s, "%s%c%d", k ? " " : "", kind(at(ps, k)), at(ps, k).micro);
    return g_string_free(s, FALSE);
}

/* Fig. 3 of the paper for p = 4, m = 8 (0-based): 1F1B's F and B, stage s putting off W by s
 * micro-batches. */
START_TEST(test_zb_h1_order) {
    static const char *const want[] = {
        "F0 F1 F2 F3 B0 W0 F4 B1 W1 F5 B2 W2 F6 B3 W3 F7 B4 W4 B5 W5 B6 W6 B7 W7",
        "F0 F1 F2 B0 F3 B1 W0 F4 B2 W1 F5 B3 W2 F6 B4 W3 F7 B5 W4 B6 W5 B7 W6 W7",
        "F0 F1 B0 F2 B1 F3 B2 W0 F4 B3 W1 F5 B4 W2 F6 B5 W3 F7 B6 W4 B7 W5 W6 W7",
        "F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 F5 B5 W2 F6 B6 W3 F7 B7 W4 W5 W6 W7"};
    for (int s = 0; s < 4; s++) {
        g_autoptr(GArray) ps = schedule_passes(SCHED_ZB_H1, 4, s, 8, 1);
        check_complete(ps, 8);
        g_autofree char *got = order_str(ps);
        ck_assert_msg(strcmp(got, want[s]) == 0, "stage %d:\n got  %s\n want %s", s, got, want[s]);
    }
    /* 1F1B's order has no W passes and is as before */
    g_autoptr(GArray) fb = schedule_passes(SCHED_1F1B, 4, 1, 8, 1);
    g_autofree char *got = order_str(fb);
    ck_assert_str_eq(got, "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7");
    ck_assert(!schedule_get(SCHED_1F1B)->split && schedule_get(SCHED_ZB_H1)->split);
}
END_TEST

/* An idealised pipeline of p uniform stages, no communication: each stage runs its passes in
 * order, each as soon as the pass it needs is done (F: the previous stage's F; B: the next
 * stage's B, or its own F on the last stage; W: its own B, earlier in its order). A schedule
 * without a split runs B and W as one backward (cost t_b + t_w) that the previous stage waits
 * for in full. Returns the makespan. */
static long makespan(PipeSchedule id, int p, int m, long tf, long tb, long tw) {
    gboolean split = schedule_get(id)->split;
    GArray *ord[16];
    g_assert(p <= 16);
    g_autofree long *endf = g_new(long, p *m), *endb = g_new(long, p *m);
    for (int i = 0; i < p * m; i++)
        endf[i] = endb[i] = -1;
    long t[16] = {0};
    guint pos[16] = {0}, left = 0;
    for (int s = 0; s < p; s++) {
        ord[s] = schedule_passes(id, p, s, m, 1);
        left += ord[s]->len;
    }
    while (left > 0) {
        guint moved = 0;
        for (int s = 0; s < p; s++)
            for (; pos[s] < ord[s]->len; pos[s]++, moved++, left--) {
                PassRef r = at(ord[s], pos[s]);
                long need = 0, cost = r.fwd ? tf : r.wgrad ? tw : split ? tb : tb + tw;
                if (r.fwd && s > 0)
                    need = endf[(s - 1) * m + r.micro];
                else if (!r.fwd && !r.wgrad)
                    need = s == p - 1 ? endf[s * m + r.micro] : endb[(s + 1) * m + r.micro];
                if (need < 0)
                    break;
                t[s] = MAX(t[s], need) + cost;
                if (r.fwd)
                    endf[s * m + r.micro] = t[s];
                else if (!r.wgrad)
                    endb[s * m + r.micro] = t[s];
            }
        ck_assert_msg(moved > 0, "the pass orders deadlock");
    }
    long end = 0;
    for (int s = 0; s < p; s++) {
        end = MAX(end, t[s]);
        g_array_unref(ord[s]);
    }
    return end;
}

/* ZB-H1: m (T_F + T_B + T_W) + (p - 1)(T_F + T_B - T_W) exactly for m >= p (Sec. 3.1); 1F1B
 * the same with + T_W (its bubble (p - 1)(T_F + T_B + T_W)). */
START_TEST(test_zb_h1_bubble_closed_form) {
    static const int pm[][2] = {{2, 4}, {4, 4}, {4, 8}, {4, 12}, {8, 8}, {8, 16}};
    static const long fbw[][3] = {{1, 1, 1}, {3, 4, 2}, {2, 2, 1}, {5, 6, 4}};
    for (size_t i = 0; i < G_N_ELEMENTS(pm); i++)
        for (size_t j = 0; j < G_N_ELEMENTS(fbw); j++) {
            int p = pm[i][0], m = pm[i][1];
            long f = fbw[j][0], b = fbw[j][1], w = fbw[j][2];
            long zb = makespan(SCHED_ZB_H1, p, m, f, b, w);
            long fb = makespan(SCHED_1F1B, p, m, f, b, w);
            long ideal = m * (f + b + w);
            ck_assert_msg(zb == ideal + (p - 1) * (f + b - w),
                          "p %d m %d F %ld B %ld W %ld: ZB-H1 %ld, closed form %ld", p, m, f, b, w,
                          zb, ideal + (p - 1) * (f + b - w));
            ck_assert_msg(fb == ideal + (p - 1) * (f + b + w), "p %d m %d: 1F1B %ld, want %ld", p,
                          m, fb, ideal + (p - 1) * (f + b + w));
        }
}
END_TEST

/* Peak held activations (M_B per micro-batch from F to B, M_W from B to W): ZB-H1's stage s
 * (p - s) M_B + s M_W, at most the first stage's p M_B, which is 1F1B's peak (Sec. 3.1). */
START_TEST(test_zb_h1_memory_closed_form) {
    int p = 4, m = 8;
    double mb = 10, mw = 7;
    for (int s = 0; s < p; s++) {
        g_autoptr(GArray) zb = schedule_passes(SCHED_ZB_H1, p, s, m, 1);
        g_autoptr(GArray) fb = schedule_passes(SCHED_1F1B, p, s, m, 1);
        ck_assert_double_eq(schedule_peak_held(zb, mb, mw), (p - s) * mb + s * mw);
        ck_assert_int_eq(schedule_peak_inflight(zb, -1), p - s);
        ck_assert_int_eq(schedule_peak_inflight(fb, -1), p - s);
    }
}
END_TEST

/* A pipeline of 4 stages x 2 replicas on one node whose communication costs nothing, no host or
 * interference model, 16 layers, a 64-word vocabulary (test_schedule.c's). */
#define UNIFORM_SETS(sched)                                                                        \
    "parallel.pp=4", "parallel.dp=2", "parallel.schedule=" sched, "training.grad_accum=8",         \
        "training.recompute=none", "training.synchronize_each_layer=false", "sim.host=false",      \
        "sim.interference=false", "model.layers=16", "model.vocab=64",                             \
        "topology.node.link.bandwidth=1PB/s", "topology.node.link.latency=0us",                    \
        "topology.collectives.LL.base_latency=0us",                                                \
        "topology.collectives.Simple.base_latency=0us",                                            \
        "topology.collectives.LL.ring.intra_hop=0us",                                              \
        "topology.collectives.Simple.ring.intra_hop=0us",                                          \
        "topology.collectives.LL.tree.intra_hop=0us",                                              \
        "topology.collectives.Simple.tree.intra_hop=0us", NULL

/* Time of one layer's weight-gradient kernels for one micro-batch, picoseconds (the model's
 * *_wgrad GEMMs on the scenario's device). */
static double layer_wgrad_time(const Scenario *sc) {
    g_autoptr(GArray) ops = g_array_new(FALSE, FALSE, sizeof(ModelOp));
    double t = 0;
    for (int seg = SEG_ATTN; seg <= SEG_MLP; seg++) {
        g_array_set_size(ops, 0);
        model_segment_ops(&sc->model, seg, PASS_BWD, sc->micro_batch, sc->seq_len, sc->tp,
                          sc->precision, ops);
        for (guint i = 0; i < ops->len; i++) {
            const ModelOp *op = &g_array_index(ops, ModelOp, i);
            if (model_op_weight_grad(op))
                t += (double)device_op_time(&sc->topo.device, op, sc->precision);
        }
    }
    return t;
}

/* Compute of the embedding's (end 0) or head's (end 1) tasks for micro-batch 0. */
static double end_work(const SimRun *run, int end) {
    const Scenario *sc = sim_scenario(run);
    int layer = end == 0 ? -1 : sc->model.layers;
    const Program *pg = workload_program(sim_workload(run), end == 0 ? 0 : sc->pp - 1);
    SimTime t = 0;
    for (guint k = 0; k < pg->ntasks; k++)
        if (pg->tasks[k].kind == TASK_COMPUTE && pg->tasks[k].micro == 0 &&
            pg->tasks[k].layer == layer)
            t += pg->tasks[k].duration;
    return (double)t;
}

/* On the simulator: C a middle stage's compute, m (T_F + T_B + T_W) plus its optimizer step,
 * T_W its L/p layers' weight GEMMs. 1F1B ends at C (1 + (p - 1)/m), ZB-H1 2 (p - 1) T_W earlier:
 * both within test_schedule.c's tolerance m max(E, H) + E + H (the embedding's and head's work,
 * under 1% of C), the split itself (B + W = the backward) exact: the same compute in both. */
START_TEST(test_zb_h1_bubble_simulated) {
    const char *zs[] = {UNIFORM_SETS("zb-h1")}, *fs[] = {UNIFORM_SETS("1f1b")};
    g_autoptr(Scenario) zsc = load_ok("1.3B_pp.yaml", zs);
    g_autoptr(Scenario) fsc = load_ok("1.3B_pp.yaml", fs);
    g_autoptr(SimRun) zr = run_ok(zsc, -1);
    g_autoptr(SimRun) fr = run_ok(fsc, -1);
    double p = zsc->pp, m = zsc->grad_accum, L = zsc->model.layers;
    int mid = sim_index_of(zr, 2 * zsc->dp); /* rank 2 x 1: stage 1 */
    double c = (double)stats_rank(sim_stats(zr), mid).compute;
    ck_assert_int_eq(stats_rank(sim_stats(zr), mid).compute,
                     stats_rank(sim_stats(fr), sim_index_of(fr, 2 * fsc->dp)).compute);
    double tw = L / p * layer_wgrad_time(zsc);
    double e = end_work(zr, 0), h = end_work(zr, 1), tol = m * MAX(e, h) + e + h;
    ck_assert_msg(tol < 0.01 * c, "tolerance %.0f ps", tol);
    double zb = (double)sim_summary(zr)->iteration, fb = (double)sim_summary(fr)->iteration;
    double want_fb = c * (1 + (p - 1) / m), want_zb = want_fb - 2 * (p - 1) * tw;
    ck_assert_msg(fabs(fb - want_fb) <= tol, "1F1B %.0f ps, closed form %.0f", fb, want_fb);
    ck_assert_msg(fabs(zb - want_zb) <= tol,
                  "ZB-H1 %.0f ps, closed form %.0f (T_W %.0f ps a stage), off %.0f, tol %.0f", zb,
                  want_zb, tw, zb - want_zb, tol);
    ck_assert_msg(tw > 0.2 * c / m, "T_W %.0f of a stage's %.0f per micro-batch", tw, c / m);
}
END_TEST

/* M_W from the kernels: each weight GEMM's input and output gradient, (h + 3h) + (h + h) +
 * (h + 4h) + (4h + h) = 16 h elements per token of a GPT layer at TP 1, 32 s b h bytes at fp16
 * (Table 1); and the report's peak activations under ZB-H1 equal 1F1B's (the first stage's
 * p M_B, M_W < M_B). */
START_TEST(test_zb_h1_memory_simulated) {
    const char *zs[] = {UNIFORM_SETS("zb-h1")}, *fs[] = {UNIFORM_SETS("1f1b")};
    g_autoptr(Scenario) zsc = load_ok("1.3B_pp.yaml", zs);
    g_autoptr(Scenario) fsc = load_ok("1.3B_pp.yaml", fs);
    double s = zsc->seq_len, b = zsc->micro_batch, h = zsc->model.hidden;
    double want = zsc->model.layers / zsc->pp * 32 * s * b * h;
    ck_assert_double_eq_tol(workload_wgrad_held_bytes(zsc, 1), want, 1.0);
    g_autoptr(SimRun) zr = run_ok(zsc, -1);
    g_autoptr(SimRun) fr = run_ok(fsc, -1);
    double za = sim_summary(zr)->memory.activations_bytes;
    double fa = sim_summary(fr)->memory.activations_bytes;
    ck_assert_msg(fabs(za - fa) < 1.0, "ZB-H1 activations %.0f, 1F1B %.0f", za, fa);
}
END_TEST

/* sim search under zb-h1: every pp > 1 layout both with it and with 1F1B (a schedule column),
 * pp 1 with 1F1B only, and every point loads (sweep_prepare validates each). */
START_TEST(test_zb_search) {
    const char *set[] = {"parallel.schedule=zb-h1", NULL};
    char zset[] = "parallel.schedule=zb-h1", *sets[] = {zset, NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_pp.yaml", set);
    g_autoptr(Sweep) sw = sweep_new(scen("1.3B_pp.yaml"), sets, SWEEP_CSV, FALSE);
    static const int micro[] = {1, 2, 4};
    SearchSpace space = {1, 64, micro, 3};
    SearchCounts c;
    search_add_layouts(sw, sc, &space, &c);
    g_autoptr(GError) err = NULL;
    ck_assert_msg(sweep_prepare(sw, 2, &err), "%s", err ? err->message : "");
    int zb = 0, fb = 0, pp1 = 0;
    for (int i = 0; i < sweep_points(sw); i++) {
        g_autofree char *name = sweep_point_name(sw, i);
        int pp = atoi(strstr(name, "pp=") + 3);
        gboolean z = strstr(name, "schedule=zb-h1") != NULL;
        ck_assert_msg(z || strstr(name, "schedule=1f1b"), "%s", name);
        ck_assert_msg(!(z && pp == 1), "%s", name);
        zb += z;
        fb += !z && pp > 1;
        pp1 += pp == 1;
    }
    ck_assert_int_gt(zb, 0);
    ck_assert_int_eq(zb, fb);
    ck_assert_int_gt(pp1, 0);
}
END_TEST

int main(void) {
    Suite *s = suite_create("zerobubble");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_zb_h1_order);
    tcase_add_test(tc, test_zb_h1_bubble_closed_form);
    tcase_add_test(tc, test_zb_h1_memory_closed_form);
    tcase_add_test(tc, test_zb_h1_bubble_simulated);
    tcase_add_test(tc, test_zb_h1_memory_simulated);
    tcase_add_test(tc, test_zb_search);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
