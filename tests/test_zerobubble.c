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

/* Which virtual stage (model chunk in model order) chunk c of stage s runs: in a V (ZB-V) chunk 1
 * comes back from the last stage, else c p + s. Written out here, not read from the code. */
static int virt(gboolean vshape, int p, int s, int c) {
    return vshape && c == 1 ? 2 * p - 1 - s : c * p + s;
}

/* An idealised pipeline of p uniform stages, no communication: each stage runs its passes in
 * order, each as soon as the pass it needs is done (F: the previous virtual stage's F; B: the
 * next virtual stage's B, or its own F on the last; W: its own B, earlier in its order). A
 * schedule without a split runs B and W as one backward (cost t_b + t_w) that the previous stage
 * waits for in full. Returns the makespan; span (when not NULL) receives each stage's time from
 * its first pass's start to its last pass's end. */
static long makespan_v(PipeSchedule id, int p, int m, long tf, long tb, long tw, long *span) {
    const Schedule *sc = schedule_get(id);
    int v = sc->chunked ? 2 : 1, nv = p * v;
    GArray *ord[16];
    g_assert(p <= 16);
    g_autofree long *endf = g_new(long, nv *m), *endb = g_new(long, nv *m);
    for (int i = 0; i < nv * m; i++)
        endf[i] = endb[i] = -1;
    long t[16] = {0}, first[16];
    guint pos[16] = {0}, left = 0;
    for (int s = 0; s < p; s++) {
        ord[s] = schedule_passes(id, p, s, m, v);
        left += ord[s]->len;
        first[s] = -1;
    }
    while (left > 0) {
        guint moved = 0;
        for (int s = 0; s < p; s++)
            for (; pos[s] < ord[s]->len; pos[s]++, moved++, left--) {
                PassRef r = at(ord[s], pos[s]);
                int j = virt(sc->vshape, p, s, r.chunk);
                long need = 0, cost = r.fwd ? tf : r.wgrad ? tw : sc->split ? tb : tb + tw;
                if (r.fwd && j > 0)
                    need = endf[(j - 1) * m + r.micro];
                else if (!r.fwd && !r.wgrad)
                    need = j == nv - 1 ? endf[j * m + r.micro] : endb[(j + 1) * m + r.micro];
                if (need < 0)
                    break;
                if (first[s] < 0)
                    first[s] = MAX(t[s], need);
                t[s] = MAX(t[s], need) + cost;
                if (r.fwd)
                    endf[j * m + r.micro] = t[s];
                else if (!r.wgrad)
                    endb[j * m + r.micro] = t[s];
            }
        ck_assert_msg(moved > 0, "the pass orders deadlock");
    }
    long end = 0;
    for (int s = 0; s < p; s++) {
        end = MAX(end, t[s]);
        if (span)
            span[s] = t[s] - first[s];
        g_array_unref(ord[s]);
    }
    return end;
}

static long makespan(PipeSchedule id, int p, int m, long tf, long tb, long tw) {
    return makespan_v(id, p, m, tf, tb, tw, NULL);
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

/* Compute of the embedding's (end 0) or head's (end 1) tasks for micro-batch 0 (both on stage 0
 * in a V). */
static double end_work(const SimRun *run, int end) {
    const Scenario *sc = sim_scenario(run);
    int layer = end == 0 ? -1 : sc->model.layers;
    gboolean first = end == 0 || schedule_get(sc->schedule)->vshape;
    const Program *pg = workload_program(sim_workload(run), first ? 0 : sc->pp - 1);
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
/* Compute of a middle stage's rank (rank 2 x dp: stage 1) of run r, checked equal to that of f, a
 * run of the same scenario under 1F1B: the split moves kernels, it adds none. */
static double mid_compute(const SimRun *r, const SimRun *f) {
    int dp = sim_scenario(r)->dp;
    SimTime c = stats_rank(sim_stats(r), sim_index_of(r, 2 * dp)).compute;
    ck_assert_int_eq(c, stats_rank(sim_stats(f), sim_index_of(f, 2 * dp)).compute);
    return (double)c;
}

START_TEST(test_zb_h1_bubble_simulated) {
    const char *zs[] = {UNIFORM_SETS("zb-h1")}, *fs[] = {UNIFORM_SETS("1f1b")};
    g_autoptr(Scenario) zsc = load_ok("1.3B_pp.yaml", zs);
    g_autoptr(Scenario) fsc = load_ok("1.3B_pp.yaml", fs);
    g_autoptr(SimRun) zr = run_ok(zsc, -1);
    g_autoptr(SimRun) fr = run_ok(fsc, -1);
    double p = zsc->pp, m = zsc->grad_accum, L = zsc->model.layers, c = mid_compute(zr, fr);
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

/* --- ZB-V ------------------------------------------------------------------------------------ */

/* Every micro-batch runs F, B and W once each through each of the two chunks, F before B before
 * W. */
static void check_complete_v(const GArray *ps, int m) {
    ck_assert_uint_eq(ps->len, (guint)(6 * m));
    g_autofree int *seen = g_new0(int, 2 * m);
    for (guint k = 0; k < ps->len; k++) {
        PassRef p = at(ps, k);
        int want = p.fwd ? 0 : p.wgrad ? 2 : 1, *got = &seen[p.chunk * m + p.micro];
        ck_assert_msg(*got == want, "pass %u: %c%d of chunk %d out of order", k, kind(p), p.micro,
                      p.chunk);
        ++*got;
    }
}

/* "F0 F0' B0' ...": chunk 1's passes primed. g_free it. */
static char *order_str_v(const GArray *ps) {
    GString *s = g_string_new(NULL);
    for (guint k = 0; k < ps->len; k++)
        g_string_append_printf(s, "%s%c%d%s", k ? " " : "", kind(at(ps, k)), at(ps, k).micro,
                               at(ps, k).chunk ? "'" : "");
    return g_string_free(s, FALSE);
}

/* The handcrafted ZB-V order (sail-sg/zero-bubble-pipeline-parallelism's handcrafted_zb_v,
 * get_zb_v_schedule) for p = 2, m = 3 and p = 3, m = 5, pass by pass; every m from 1 (the pattern's
 * missing micro-batches left out) runs without deadlock; the V's placement. */
START_TEST(test_zb_v_order) {
    static const char *const want2[] = {
        "F0 F1 F2 F0' B0' W0' F1' B1' W1' B0 W0 F2' B2' W2' B1 W1 B2 W2",
        "F0 F0' F1 F1' B0' W0' F2 B0 W0 F2' B1' W1' B1 B2' B2 W1 W2' W2"};
    static const char *const want3[] = {
        "F0 F1 F2 F3 F4 F0' B0' W0' F1' B1' W1' F2' B2' W2' B0 W0 F3' B3' W3' B1 W1 F4' B4' W4' "
        "B2 W2 B3 W3 B4 W4",
        "F0 F1 F2 F0' F3 F1' B0' W0' F2' B1' W1' F4 B0 W0 F3' B2' W2' B1 W1 F4' B3' W3' B2 B4' "
        "B3 W2 B4 W3 W4' W4",
        "F0 F0' F1 F1' F2 F2' B0' W0' F3 B0 W0 F3' B1' W1' F4 B1 W1 F4' B2' W2' B2 B3' B3 B4' B4 "
        "W2 W3' W4' W3 W4"};
    const char *const *want[] = {want2, want3};
    for (int p = 2; p <= 3; p++)
        for (int s = 0; s < p; s++) {
            int m = 2 * p - 1;
            g_autoptr(GArray) ps = schedule_passes(SCHED_ZB_V, p, s, m, 2);
            check_complete_v(ps, m);
            g_autofree char *got = order_str_v(ps);
            ck_assert_msg(strcmp(got, want[p - 2][s]) == 0, "p %d stage %d:\n got  %s\n want %s", p,
                          s, got, want[p - 2][s]);
        }
    for (int p = 2; p <= 8; p *= 2)
        for (int m = 1; m <= 2 * p + 2; m++) {
            for (int s = 0; s < p; s++) {
                g_autoptr(GArray) ps = schedule_passes(SCHED_ZB_V, p, s, m, 2);
                check_complete_v(ps, m);
            }
            makespan(SCHED_ZB_V, p, m, 1, 1, 1); /* fails on a deadlock */
        }
    const Schedule *v = schedule_get(SCHED_ZB_V);
    ck_assert(v->chunked && v->split && v->vshape && !schedule_get(SCHED_INTERLEAVED)->vshape);
    for (int s = 0; s < 4; s++)
        for (int c = 0; c < 2; c++) {
            ck_assert_int_eq(schedule_virtual_stage(TRUE, 4, s, c), virt(TRUE, 4, s, c));
            ck_assert_int_eq(schedule_virtual_stage(FALSE, 4, s, c), virt(FALSE, 4, s, c));
        }
}
END_TEST

/* With T_F = T_B = T_W = T a chunk's pass times and m >= 2p - 1, every stage runs without a gap
 * from its first pass to its last, 6 m T (the sail-sg repository README's table: bubble rate 0),
 * and the iteration is 6 m T + (p - 1) T, the last stage's start; ZB-H1 and 1F1B on the same
 * stages (a stage's passes 2T each) leave (p - 1) 2T and (p - 1) 6T. With T_F, T_W <= T_B, this
 * order's iteration is 2m (T_F + T_B + T_W) + (p - 1) max(T_B, 2 (T_B - T_W)) (schedule.c). */
START_TEST(test_zb_v_bubble_closed_form) {
    static const int pm[][2] = {{2, 3}, {2, 4}, {3, 5}, {4, 7}, {4, 8}, {4, 12}, {8, 15}, {8, 16}};
    static const long fbw[][3] = {{1, 1, 1}, {3, 4, 2}, {2, 2, 1}, {1, 2, 1},
                                  {1, 3, 1}, {2, 5, 3}, {5, 6, 6}, {4, 4, 4}};
    for (size_t i = 0; i < G_N_ELEMENTS(pm); i++) {
        int p = pm[i][0], m = pm[i][1];
        for (size_t j = 0; j < G_N_ELEMENTS(fbw); j++) {
            long f = fbw[j][0], b = fbw[j][1], w = fbw[j][2], span[16];
            long zv = makespan_v(SCHED_ZB_V, p, m, f, b, w, span);
            long want = 2 * m * (f + b + w) + (p - 1) * MAX(b, 2 * (b - w));
            ck_assert_msg(zv == want, "p %d m %d F %ld B %ld W %ld: ZB-V %ld, closed form %ld", p,
                          m, f, b, w, zv, want);
            if (f != b || b != w)
                continue;
            for (int s = 0; s < p; s++)
                ck_assert_msg(span[s] == 6 * m * f, "p %d m %d: stage %d spans %ld, busy %ld", p, m,
                              s, span[s], 6 * m * f);
            ck_assert_int_eq(zv, 6 * m * f + (p - 1) * f);
            ck_assert_int_eq(makespan(SCHED_ZB_H1, p, m, 2 * f, 2 * f, 2 * f),
                             6 * m * f + (p - 1) * 2 * f);
            ck_assert_int_eq(makespan(SCHED_1F1B, p, m, 2 * f, 2 * f, 2 * f),
                             6 * m * f + (p - 1) * 6 * f);
        }
    }
}
END_TEST

/* Peak held activations, M_B a stage's layers per micro-batch (M_B / 2 a chunk's), M_W <= M_B:
 * every stage at most 2p chunk forwards without their B, p M_B, 1F1B's first stage's peak (the
 * README's "1x" activation memory), W never adding to it; stage 0's chunk 1, the logits' chunk,
 * holds one micro-batch at a time. */
START_TEST(test_zb_v_memory_closed_form) {
    static const int ms[] = {7, 8, 16};
    int p = 4;
    double mb = 10, mw = 7, f[2] = {mb / 2, mb / 2}, w[2] = {mw / 2, mw / 2};
    for (size_t i = 0; i < G_N_ELEMENTS(ms); i++)
        for (int s = 0; s < p; s++) {
            int m = ms[i];
            g_autoptr(GArray) zv = schedule_passes(SCHED_ZB_V, p, s, m, 2);
            g_autoptr(GArray) fb = schedule_passes(SCHED_1F1B, p, 0, m, 1);
            ck_assert_int_eq(schedule_peak_inflight(zv, -1), 2 * p);
            ck_assert_double_eq(schedule_peak_held_chunks(zv, f, w), p * mb);
            ck_assert_double_eq(schedule_peak_held_chunks(zv, f, w),
                                schedule_peak_inflight(fb, -1) * mb);
            if (s == 0)
                ck_assert_int_eq(schedule_peak_inflight(zv, 1), 1);
        }
}
END_TEST

/* A pipeline message as the executor starts it: rank, stream, micro-batch, time. */
typedef struct {
    int rank, stream, micro;
    SimTime at;
} P2p;

static void on_p2p_begin(void *ctx, int rank, const Task *t, SimTime now) {
    if (t->kind == TASK_SEND || t->kind == TASK_RECV)
        g_array_append_val((GArray *)ctx, ((P2p){rank, t->stream, t->micro, now}));
}

static void on_nothing(void *ctx, int rank, const Task *t, SimTime now) {
    (void)ctx, (void)rank, (void)t, (void)now;
}

/* The V's messages per stage and direction (uniform pipeline, p = 4, m = 8): chunk 0 sends its
 * activations to the next stage and its gradients to the previous, chunk 1 the other way, the
 * last stage turns chunk 0 into chunk 1 without a send and stage 0 sends nothing back. So each
 * stream carries m messages where it has a peer: 2m sends on the ends, 4m in the middle,
 * 4 m (p - 1) in all, twice 1F1B's (the README's "2x" communication). Every send starts with the
 * receive of its peer (the next or previous rank of the pipeline) on the matching stream. */
START_TEST(test_zb_v_sends) {
    static const struct {
        int send, recv, step; /* the receiver: stage + step */
    } chans[] = {{STREAM_PP_SEND_FWD, STREAM_PP_RECV_FWD, +1},
                 {STREAM_PP_SEND_BWD, STREAM_PP_RECV_BWD, -1},
                 {STREAM_PP_SEND_FWD_V, STREAM_PP_RECV_FWD_V, -1},
                 {STREAM_PP_SEND_BWD_V, STREAM_PP_RECV_BWD_V, +1}};
    const char *sets[] = {UNIFORM_SETS("zb-v")}, *fsets[] = {UNIFORM_SETS("1f1b")};
    g_autoptr(Scenario) sc = load_ok("1.3B_pp.yaml", sets);
    g_autoptr(Scenario) fsc = load_ok("1.3B_pp.yaml", fsets);
    int p = sc->pp, m = sc->grad_accum;
    g_autoptr(GArray) msgs = g_array_new(FALSE, FALSE, sizeof(P2p));
    ExecObserver obs = {on_p2p_begin, on_nothing, msgs, NULL};
    g_autoptr(GError) err = NULL;
    g_autoptr(SimRun) run = sim_run_observed(sc, 0, &obs, &err);
    ck_assert_msg(run, "%s", err ? err->message : "");
    g_autoptr(SimRun) frun = run_ok(fsc, 0);
    const Layout *lay = workload_layout(sim_workload(run));
    for (int s = 0; s < p; s++) {
        const Program *pg = workload_program(sim_workload(run), s);
        for (size_t c = 0; c < G_N_ELEMENTS(chans); c++) {
            int to = s + chans[c].step, from = s - chans[c].step;
            ck_assert_int_eq(pg->nstream[chans[c].send], to >= 0 && to < p ? m : 0);
            ck_assert_int_eq(pg->nstream[chans[c].recv], from >= 0 && from < p ? m : 0);
        }
    }
    double total = 0, ftotal = 0;
    for (int r = 0; r < sc->gpus; r++) {
        int s = layout_stage(lay, r);
        double sends = stats_rank_calls(sim_stats(run), sim_index_of(run, r), COLL_SEND, DIM_PP);
        double recvs = stats_rank_calls(sim_stats(run), sim_index_of(run, r), COLL_RECV, DIM_PP);
        ck_assert_msg(sends == (s == 0 || s == p - 1 ? 2 * m : 4 * m) && recvs == sends,
                      "rank %d (stage %d): %.0f sends, %.0f receives", r, s, sends, recvs);
        total += sends;
        ftotal += stats_rank_calls(sim_stats(frun), sim_index_of(frun, r), COLL_SEND, DIM_PP);
    }
    ck_assert_double_eq(total, 4.0 * m * (p - 1) * sc->dp);
    ck_assert_double_eq(total, 2 * ftotal);
    guint sends = 0;
    for (guint i = 0; i < msgs->len; i++) {
        const P2p *x = &g_array_index(msgs, P2p, i);
        for (size_t c = 0; c < G_N_ELEMENTS(chans); c++) {
            if (x->stream != chans[c].send)
                continue;
            int peer =
                chans[c].step > 0 ? layout_pp_next(lay, x->rank) : layout_pp_prev(lay, x->rank);
            gboolean met = FALSE;
            for (guint j = 0; j < msgs->len && !met; j++) {
                const P2p *y = &g_array_index(msgs, P2p, j);
                met = y->rank == peer && y->stream == chans[c].recv && y->micro == x->micro &&
                      y->at == x->at;
            }
            ck_assert_msg(met, "rank %d's send on stream %d (micro %d) has no receive at rank %d",
                          x->rank, x->stream, x->micro, peer);
            sends++;
        }
    }
    ck_assert_uint_eq(sends, (guint)total);
}
END_TEST

/* Compute of micro-batch 0's tasks of phase ph on a program, its transformer layers only. */
static double layers_work(const Program *pg, int layers, Phase ph) {
    double t = 0;
    for (guint k = 0; k < pg->ntasks; k++) {
        const Task *x = &pg->tasks[k];
        if (x->kind == TASK_COMPUTE && x->micro == 0 && x->phase == ph && x->layer >= 0 &&
            x->layer < layers)
            t += (double)x->duration;
    }
    return t;
}

/* On the simulator: C a middle stage's compute (2m chunk passes of each kind plus its optimizer
 * step; the same as 1F1B's: the split moves kernels, it adds none), T_F, T_B, T_W a chunk's
 * (L / 2p layers) from the kernels. ZB-V ends at C + (p - 1) max(T_B, 2 (T_B - T_W)), within
 * m (E + H) + E + H (stage 0 runs the embedding's and the head's work), against 1F1B's
 * C (1 + (p - 1) / m) and ZB-H1's 2 (p - 1) T_W earlier: the V leaves the smallest bubble. */
START_TEST(test_zb_v_bubble_simulated) {
    const char *vs[] = {UNIFORM_SETS("zb-v")}, *hs[] = {UNIFORM_SETS("zb-h1")},
               *fs[] = {UNIFORM_SETS("1f1b")};
    const char *const *sets[] = {vs, hs, fs};
    Scenario *sc[3];
    SimRun *run[3];
    for (int i = 0; i < 3; i++) {
        sc[i] = load_ok("1.3B_pp.yaml", sets[i]);
        run[i] = run_ok(sc[i], -1);
    }
    const Scenario *vsc = sc[0];
    const SimRun *vr = run[0];
    double p = vsc->pp, m = vsc->grad_accum, L = vsc->model.layers, c = mid_compute(vr, run[2]);
    const Program *pg = workload_program(sim_workload(vr), 1);
    double tw = L / (2 * p) * layer_wgrad_time(vsc);
    double tf = layers_work(pg, (int)L, PHASE_FWD) / 2;
    double tb = layers_work(pg, (int)L, PHASE_BWD) / 2 - tw;
    ck_assert_msg(tf <= tb && tw <= tb, "T_F %.0f T_B %.0f T_W %.0f ps", tf, tb, tw);
    double e = end_work(vr, 0), h = end_work(vr, 1), tol = m * (e + h) + e + h;
    ck_assert_msg(tol < 0.01 * c, "tolerance %.0f ps", tol);
    double zv = (double)sim_summary(vr)->iteration, want = c + (p - 1) * MAX(tb, 2 * (tb - tw));
    ck_assert_msg(fabs(zv - want) <= tol, "ZB-V %.0f ps, closed form %.0f, off %.0f, tol %.0f", zv,
                  want, zv - want, tol);
    double zh = (double)sim_summary(run[1])->iteration, fb = (double)sim_summary(run[2])->iteration;
    ck_assert_msg(zv < zh && zh < fb, "ZB-V %.0f, ZB-H1 %.0f, 1F1B %.0f ps", zv, zh, fb);
    for (int i = 0; i < 3; i++) {
        sim_run_free(run[i]);
        scenario_free(sc[i]);
    }
}
END_TEST

/* The report's peak activations under ZB-V: 1F1B's (p M_B on stage 0, the peak there too) and
 * the logits of one micro-batch, which the V brings to stage 0 (its chunk 1 runs B right after
 * F): 4 s b h (1 + V / h) bytes at TP 1 (model_memory), V the padded vocabulary. */
START_TEST(test_zb_v_memory_simulated) {
    const char *vs[] = {UNIFORM_SETS("zb-v")}, *fs[] = {UNIFORM_SETS("1f1b")};
    g_autoptr(Scenario) vsc = load_ok("1.3B_pp.yaml", vs);
    g_autoptr(Scenario) fsc = load_ok("1.3B_pp.yaml", fs);
    g_autoptr(SimRun) vr = run_ok(vsc, -1);
    g_autoptr(SimRun) fr = run_ok(fsc, -1);
    double s = vsc->seq_len, b = vsc->micro_batch, h = vsc->model.hidden;
    double logits = 4 * s * b * h * (1 + (double)model_padded_vocab(&vsc->model, 1) / h);
    double va = sim_summary(vr)->memory.activations_bytes;
    double fa = sim_summary(fr)->memory.activations_bytes;
    ck_assert_msg(fabs(va - (fa + logits)) < 1.0, "ZB-V activations %.0f, 1F1B %.0f + %.0f", va, fa,
                  logits);
}
END_TEST

/* Deduplication under ZB-V (TP 4 x PP 4 x DP 4 on 8 nodes, two replicas a node): the run that
 * simulates one block of replicas equals the one with every rank, iteration and inventory. */
START_TEST(test_zb_v_dedup) {
    const char *sets[] = {"nodes=8",
                          "parallel.tp=4",
                          "parallel.pp=4",
                          "parallel.schedule=zb-v",
                          "training.synchronize_each_layer=false",
                          NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_pp.yaml", sets);
    g_autoptr(SimRun) one = run_ok(sc, 1);
    g_autoptr(SimRun) all = run_ok(sc, 0);
    ck_assert_int_lt(sim_summary(one)->ranks_simulated, sim_summary(all)->ranks_simulated);
    ck_assert_int_eq(sim_summary(one)->critical.exposed, sim_summary(all)->critical.exposed);
    assert_same_inventory(one, all);
}
END_TEST

/* sim search under zb-v: every pp > 1 layout whose 2 pp chunks divide the layers with it and with
 * 1F1B, the others (pp 1, and pp 8 of 24 layers) with 1F1B alone; every point loads. */
START_TEST(test_zb_v_search) {
    const char *set[] = {"parallel.pp=4", "parallel.schedule=zb-v",
                         "training.synchronize_each_layer=false", NULL};
    char s1[] = "parallel.pp=4", s2[] = "parallel.schedule=zb-v",
         s3[] = "training.synchronize_each_layer=false", *sets[] = {s1, s2, s3, NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_pp.yaml", set);
    g_autoptr(Sweep) sw = sweep_new(scen("1.3B_pp.yaml"), sets, SWEEP_CSV, FALSE);
    static const int micro[] = {2, 4};
    SearchSpace space = {1, 64, micro, 2};
    SearchCounts c;
    search_add_layouts(sw, sc, &space, &c);
    g_autoptr(GError) err = NULL;
    ck_assert_msg(sweep_prepare(sw, 2, &err), "%s", err ? err->message : "");
    int zv = 0, fb = 0, alone = 0, L = sc->model.layers;
    for (int i = 0; i < sweep_points(sw); i++) {
        g_autofree char *name = sweep_point_name(sw, i);
        int pp = atoi(strstr(name, "pp=") + 3);
        gboolean v = strstr(name, "schedule=zb-v") != NULL, fits = pp > 1 && L % (2 * pp) == 0;
        ck_assert_msg(v || strstr(name, "schedule=1f1b"), "%s", name);
        ck_assert_msg(!v || fits, "%s", name);
        ck_assert_msg(!strstr(name, "virtual_stages"), "%s", name);
        zv += v;
        fb += !v && fits;
        alone += !fits;
    }
    ck_assert_int_gt(zv, 0);
    ck_assert_int_eq(zv, fb);
    ck_assert_int_gt(alone, 0);
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
    tcase_add_test(tc, test_zb_v_order);
    tcase_add_test(tc, test_zb_v_bubble_closed_form);
    tcase_add_test(tc, test_zb_v_memory_closed_form);
    tcase_add_test(tc, test_zb_v_sends);
    tcase_add_test(tc, test_zb_v_bubble_simulated);
    tcase_add_test(tc, test_zb_v_memory_simulated);
    tcase_add_test(tc, test_zb_v_dedup);
    tcase_add_test(tc, test_zb_v_search);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
