/* Whole simulations of every scheme: the study's volume equations from the executed inventory, the
 * breakdown adding up, overlap, determinism, and one replica standing for all. */
#include <math.h>
#include <string.h>

#include "util.h"

#define E 2.0 /* fp16 bytes */

static double row_volume(const SimRun *run, int rank, CollOp op, Dim dim) {
    int i = sim_index_of(run, rank);
    ck_assert_int_ge(i, 0);
    return stats_rank_volume(sim_stats(run), i, op, dim);
}

static double P(const Scenario *sc) {
    return model_params(&sc->model, sc->seq_len, sc->tp);
}

static double bsh(const Scenario *sc) {
    return (double)sc->micro_batch * sc->seq_len * sc->model.hidden;
}

/* Eq. 3: DDP, ZeRO-1 and ZeRO-2 move 2P(d-1)/d per rank per iteration. */
START_TEST(test_eq3_dp_zero12) {
    static const char *files[] = {"1.3B_ddp.yaml", "1.3B_zero1.yaml", "1.3B_zero2.yaml"};
    for (int f = 0; f < 3; f++) {
        g_autoptr(Scenario) sc = load_ok(files[f], NULL);
        g_autoptr(SimRun) run = run_ok(sc, -1);
        double d = sc->dp, want = 2 * P(sc) * E * (d - 1) / d;
        double got = row_volume(run, 0, COLL_ALLREDUCE, DIM_DP) +
                     row_volume(run, 0, COLL_REDUCE_SCATTER, DIM_DP) +
                     row_volume(run, 0, COLL_REDUCE, DIM_DP) +
                     row_volume(run, 0, COLL_ALLGATHER, DIM_DP);
        ck_assert_msg(fabs(got - want) < 1.0, "%s: DP volume %.3f bytes, Eq. 3 gives %.3f",
                      files[f], got, want);
        if (sc->zero > 0) /* half reduced (DeepSpeed: rooted reduces per owner), half gathered */
            ck_assert_double_eq_tol(row_volume(run, 0, COLL_REDUCE, DIM_DP), want / 2, 1.0);
    }
}
END_TEST

/* Eq. 4: ZeRO-3 moves 3P(d-1)/d when every tensor is gathered at every use
 * (stage3_param_persistence_threshold and stage3_max_reuse_distance 0); one allgather per parameter
 * tensor before forward and before backward without prefetch: per layer 4 weights and 6 vectors of
 * the study's 8h (two norms' weights and biases, QKV and output biases), the embedding, and the
 * head's norm weight, bias and output projection: 2 x (10 L + 1 + 3), most of them kilobyte-sized
 * (h = 2048 fp16 elements: 4 KiB), as the study saw. */
START_TEST(test_eq4_zero3) {
    const char *sets[] = {"parallel.persistence_threshold=0", "parallel.prefetch_bucket_size=0",
                          "parallel.max_reuse_distance=0", NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_zero3.yaml", sets);
    g_autoptr(SimRun) run = run_ok(sc, -1);
    double d = sc->dp, want = 3 * P(sc) * E * (d - 1) / d;
    double ag = row_volume(run, 0, COLL_ALLGATHER, DIM_DP);
    double rs = row_volume(run, 0, COLL_REDUCE_SCATTER, DIM_DP);
    ck_assert_msg(fabs(ag + rs - want) < 1.0, "ZeRO-3 volume %.3f, Eq. 4 gives %.3f", ag + rs,
                  want);
    ck_assert_double_eq_tol(ag, 2 * rs, 1.0); /* allgather dominates: forward and backward */
    ck_assert_double_eq(stats_rank_calls(sim_stats(run), 0, COLL_ALLGATHER, DIM_DP),
                        2 * (10 * sc->model.layers + 4));
    GArray *rows = stats_comm_rows(sim_stats(run), 0);
    for (guint i = 0; i < rows->len; i++) {
        CommRow *r = &g_array_index(rows, CommRow, i);
        if (r->op != COLL_ALLGATHER)
            continue;
        double small = 0;
        for (guint k = 0; k < r->sizes->len; k++)
            if (g_array_index(r->sizes, SizeCount, k).bytes < 65536)
                small += g_array_index(r->sizes, SizeCount, k).calls;
        ck_assert_msg(small > r->calls / 2, "%.0f of %.0f allgathers under 64 KiB", small,
                      r->calls);
    }
    stats_rows_free(rows);
}
END_TEST

/* DeepSpeed's defaults: tensors under stage3_param_persistence_threshold (1e5 elements: every
 * vector of 1.3B) stay whole on every rank and are never gathered, so the allgathers move
 * 2 (P - Pp)(d-1)/d while the reduce-scatters still move all P; each use's tensors go in one
 * coalesced call per stage3_prefetch_bucket_size (5e7 elements, more than a 1.3B layer's 50.3 M
 * but for the tensor that reaches it): one call per unit and use, 2 (L + 2), none of them
 * kilobyte-sized. */
START_TEST(test_zero3_persistent_coalesced) {
    const char *sets[] = {"parallel.max_reuse_distance=0", NULL}; /* reuse: test_gathers.c */
    g_autoptr(Scenario) sc = load_ok("1.3B_zero3.yaml", sets);
    g_autoptr(SimRun) run = run_ok(sc, -1);
    double d = sc->dp, Pp = persistent_params(sc);
    ck_assert(Pp > 0 && Pp < 1e-2 * P(sc));
    double ag = row_volume(run, 0, COLL_ALLGATHER, DIM_DP);
    double rs = row_volume(run, 0, COLL_REDUCE_SCATTER, DIM_DP);
    ck_assert_double_eq_tol(ag, 2 * (P(sc) - Pp) * E * (d - 1) / d, 1.0);
    ck_assert_double_eq_tol(rs, P(sc) * E * (d - 1) / d, 1.0);
    ck_assert_double_eq(stats_rank_calls(sim_stats(run), 0, COLL_ALLGATHER, DIM_DP),
                        2 * (sc->model.layers + 2));
    GArray *rows = stats_comm_rows(sim_stats(run), 0);
    for (guint i = 0; i < rows->len; i++) {
        CommRow *r = &g_array_index(rows, CommRow, i);
        for (guint k = 0; r->op == COLL_ALLGATHER && k < r->sizes->len; k++)
            ck_assert(g_array_index(r->sizes, SizeCount, k).bytes > 1e6);
    }
    stats_rows_free(rows);
}
END_TEST

/* TP bytes of one micro-batch beyond the study's Eq. 6 on the stage with the head: the head's
 * input-gradient allreduce (b s h) and the vocabulary-parallel cross entropy's three allreduces
 * of b s fp32 values. Eq. 6 leaves both out. */
static double head_tp_volume(const Scenario *sc) {
    double t = sc->tp;
    return (2 * bsh(sc) * E + 3 * 2 * (double)sc->micro_batch * sc->seq_len * 4) * (t - 1) / t;
}

/* Eq. 6: TP moves (12L + 2) bsh (t-1)/t per rank per micro-batch with full recompute, plus the
 * head's share. */
START_TEST(test_eq6_tp) {
    g_autoptr(Scenario) sc = load_ok("1.3B_tp.yaml", NULL);
    g_autoptr(SimRun) run = run_ok(sc, -1);
    double t = sc->tp, L = sc->model.layers;
    double want = ((12 * L + 2) * bsh(sc) * E * (t - 1) / t + head_tp_volume(sc)) * sc->grad_accum;
    for (int r = 0; r < sc->tp; r++)
        ck_assert_double_eq_tol(row_volume(run, r, COLL_ALLREDUCE, DIM_TP), want, 1.0);
    ck_assert_double_eq(stats_rank_calls(sim_stats(run), 0, COLL_ALLREDUCE, DIM_TP), 6 * L + 5);
    /* without recomputation the 2 per layer of recompute go: (8L + 2) bsh (t-1)/t */
    const char *sets[] = {"training.recompute=none", NULL};
    g_autoptr(Scenario) s2 = load_ok("1.3B_tp.yaml", sets);
    g_autoptr(SimRun) r2 = run_ok(s2, -1);
    ck_assert_double_eq_tol(row_volume(r2, 0, COLL_ALLREDUCE, DIM_TP),
                            (8 * L + 2) * bsh(s2) * E * (t - 1) / t + head_tp_volume(s2), 1.0);
}
END_TEST

/* Eq. 5: PP moves 2bsh(p-1) per micro-batch, summed over stages. */
START_TEST(test_eq5_pp) {
    g_autoptr(Scenario) sc = load_ok("1.3B_pp.yaml", NULL);
    g_autoptr(SimRun) run = run_ok(sc, -1);
    double p = sc->pp, m = sc->grad_accum;
    double sent = 0;
    for (int r = 0; r < sc->gpus; r++)
        sent += row_volume(run, r, COLL_SEND, DIM_PP);
    ck_assert_double_eq_tol(sent, 2 * bsh(sc) * E * (p - 1) * m, 1.0);
    /* the first stage receives no activations and the last sends none */
    ck_assert_double_eq(row_volume(run, 0, COLL_SEND, DIM_PP), bsh(sc) * E * m); /* grads: none */
    ck_assert_double_eq(row_volume(run, sc->gpus - 1, COLL_SEND, DIM_PP), bsh(sc) * E * m);
    ck_assert_double_eq(row_volume(run, 3, COLL_SEND, DIM_PP), 2 * bsh(sc) * E * m);
}
END_TEST

/* 3D: TP per first-stage rank (12L/p + 2) bsh (t-1)/t; PP per lane 2bsh(p-1). The paper counts
 * every TP rank's send whole, as DeepSpeed's pipeline engine does with its partitioning off
 * (framework.c); with it on (the default), each lane sends its 1/t: 2bsh(p-1) in all. */
START_TEST(test_eq5_eq6_tp_pp) {
    g_autoptr(Scenario) part = load_ok("1.3B_tp_pp.yaml", NULL);
    g_autoptr(SimRun) prun = run_ok(part, -1);
    double psent = 0;
    for (int r = 0; r < part->gpus; r++)
        psent += row_volume(prun, r, COLL_SEND, DIM_PP);
    ck_assert_double_eq_tol(psent, 2 * bsh(part) * E * (part->pp - 1) * part->grad_accum, 1.0);
    const char *whole[] = {"parallel.pipeline_scatter_gather=false", NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_tp_pp.yaml", whole);
    g_autoptr(SimRun) run = run_ok(sc, -1);
    double t = sc->tp, p = sc->pp, L = sc->model.layers, m = sc->grad_accum;
    ck_assert_double_eq_tol(row_volume(run, 0, COLL_ALLREDUCE, DIM_TP),
                            (12 * L / p + 2) * bsh(sc) * E * (t - 1) / t * m, 1.0);
    ck_assert_double_eq_tol(row_volume(run, sc->gpus - 1, COLL_ALLREDUCE, DIM_TP),
                            ((12 * L / p) * bsh(sc) * E * (t - 1) / t + head_tp_volume(sc)) * m,
                            1.0);
    double sent = 0;
    for (int r = 0; r < sc->gpus; r++)
        sent += row_volume(run, r, COLL_SEND, DIM_PP);
    ck_assert_double_eq_tol(sent, t * 2 * bsh(sc) * E * (p - 1) * m, 1.0); /* t lanes */
}
END_TEST

/* Doubling the sequence doubles TP and PP volume and leaves DP volume as it is. */
START_TEST(test_seq_doubling) {
    const char *a_sets[] = {"nodes=2", "parallel.zero=1", NULL};
    const char *b_sets[] = {"nodes=2", "parallel.zero=1", "training.seq_len=4096", NULL};
    g_autoptr(Scenario) a = load_ok("1.3B_tp_pp.yaml", a_sets);
    g_autoptr(Scenario) b = load_ok("1.3B_tp_pp.yaml", b_sets);
    g_autoptr(SimRun) ra = run_ok(a, -1);
    g_autoptr(SimRun) rb = run_ok(b, -1);
    ck_assert_int_eq(a->dp, 2);
    double tpa = row_volume(ra, 0, COLL_ALLREDUCE, DIM_TP),
           tpb = row_volume(rb, 0, COLL_ALLREDUCE, DIM_TP);
    double ppa = row_volume(ra, 0, COLL_SEND, DIM_PP), ppb = row_volume(rb, 0, COLL_SEND, DIM_PP);
    double dpa =
        row_volume(ra, 0, COLL_REDUCE_SCATTER, DIM_DP) + row_volume(ra, 0, COLL_ALLGATHER, DIM_DP);
    double dpb =
        row_volume(rb, 0, COLL_REDUCE_SCATTER, DIM_DP) + row_volume(rb, 0, COLL_ALLGATHER, DIM_DP);
    ck_assert(tpa > 0 && ppa > 0 && dpa > 0);
    ck_assert_double_eq_tol(tpb, 2 * tpa, 1.0);
    ck_assert_double_eq_tol(ppb, 2 * ppa, 1.0);
    ck_assert_double_eq_tol(dpb, dpa, 1.0);
}
END_TEST

static void check_breakdown(const char *file, const char *const *sets) {
    g_autoptr(Scenario) sc = load_ok(file, sets);
    g_autoptr(SimRun) run = run_ok(sc, -1);
    const SimSummary *s = sim_summary(run);
    const RankTimes *c = &s->critical;
    ck_assert_msg(c->compute + c->exposed + c->bubble == s->iteration,
                  "%s: compute %ld + exposed %ld + bubble %ld != iteration %ld ps", file,
                  (long)c->compute, (long)c->exposed, (long)c->bubble, (long)s->iteration);
    ck_assert(s->overlap >= 0.0 && s->overlap <= 1.0);
    ck_assert(c->exposed <= c->comm);
    /* (was: iteration and compute > 0) compute is no faster than the GPU's share of the model
     * FLOPs at peak, 3 x forward (+1 recomputed) per micro-batch: with one stage every rank
     * holds 1 / tp of them; stages differ, so with PP the iteration, which holds the busiest
     * stage's compute, is bounded by the mean share instead */
    double passes = sc->recompute == RECOMPUTE_FULL ? 4 : 3;
    double floor_s = passes * sc->grad_accum *
                     model_forward_flops(&sc->model, sc->micro_batch, sc->seq_len, sc->tp) /
                     (sc->tp * sc->pp) / sc->topo.device.peak_flops[sc->precision];
    if (sc->pp == 1)
        ck_assert_msg((double)c->compute / 1e12 >= floor_s,
                      "%s: compute %.6f s below the peak-FLOP floor %.6f s", file,
                      (double)c->compute / 1e12, floor_s);
    else
        ck_assert_msg((double)s->iteration / 1e12 >= floor_s, "%s: iteration %.6f s below %.6f s",
                      file, (double)s->iteration / 1e12, floor_s);
    /* per-row exposed shares add up to the exposed total */
    GArray *rows = stats_comm_rows(sim_stats(run), sim_critical_index(run));
    double exposed = 0;
    for (guint i = 0; i < rows->len; i++)
        exposed += g_array_index(rows, CommRow, i).exposed;
    stats_rows_free(rows);
    ck_assert_double_eq_tol(exposed, (double)c->exposed, 1e-3 * (double)c->exposed + 1);
}

START_TEST(test_breakdown_adds_up) {
    static const char *files[] = {"1.3B_ddp.yaml",   "1.3B_zero1.yaml", "1.3B_zero2.yaml",
                                  "1.3B_zero3.yaml", "1.3B_tp.yaml",    "1.3B_pp.yaml",
                                  "1.3B_tp_pp.yaml", "13B_tp8.yaml",    "20B_tp8.yaml"};
    for (size_t i = 0; i < G_N_ELEMENTS(files); i++)
        check_breakdown(files[i], NULL);
    const char *gpipe[] = {"parallel.schedule=gpipe", NULL};
    check_breakdown("1.3B_pp.yaml", gpipe);
}
END_TEST

START_TEST(test_overlap) {
    const char *pt[] = {"training.framework=pytorch", NULL};
    g_autoptr(Scenario) ddp = load_ok("1.3B_ddp.yaml", pt);
    g_autoptr(SimRun) rd = run_ok(ddp, -1);
    ck_assert_msg(sim_summary(rd)->overlap > 0.5, "DDP buckets hide %.3f of communication",
                  sim_summary(rd)->overlap);
    g_autoptr(Scenario) tp = load_ok("1.3B_tp.yaml", NULL);
    g_autoptr(SimRun) rt = run_ok(tp, -1);
    ck_assert_double_eq(sim_summary(rt)->overlap, 0.0); /* TP allreduces block compute */
    ck_assert_int_eq(sim_summary(rt)->critical.exposed, sim_summary(rt)->critical.comm);
}
END_TEST

/* PP: 1F1B bubble fraction close to (p-1)/(m+p-1) of an ideal pipeline when comm is small. */
START_TEST(test_pipeline_bubble) {
    g_autoptr(Scenario) sc = load_ok("1.3B_pp.yaml", NULL);
    g_autoptr(SimRun) run = run_ok(sc, -1);
    const SimSummary *s = sim_summary(run);
    /* every stage has a bubble; the first and last both wait (p-1) stage-steps */
    ck_assert(s->critical.bubble > 0);
    double p = sc->pp, m = sc->grad_accum;
    double ideal = (p - 1) / (m + p - 1);
    double got = (double)(s->critical.bubble + s->critical.exposed) / (double)s->iteration;
    ck_assert_msg(got > 0.5 * ideal && got < 1.5 * ideal + 0.05, "idle share %.3f, ideal %.3f", got,
                  ideal);
}
END_TEST

START_TEST(test_determinism) {
    g_autoptr(Scenario) sc = load_ok("1.3B_zero3.yaml", NULL);
    g_autoptr(SimRun) a = run_ok(sc, -1);
    g_autoptr(SimRun) b = run_ok(sc, -1);
    g_autofree char *ja = json_of(a);
    g_autofree char *jb = json_of(b);
    ck_assert_str_eq(ja, jb);
}
END_TEST

/* Simulating one data-parallel replica and counting it dp times gives what simulating all gives. */
START_TEST(test_dedup_matches_all_ranks) {
    static const char *files[] = {"1.3B_zero1.yaml", "1.3B_zero3.yaml", "13B_tp8.yaml"};
    const char *sets[] = {"nodes=4", NULL};
    for (size_t f = 0; f < G_N_ELEMENTS(files); f++) {
        g_autoptr(Scenario) sc = load_ok(files[f], sets);
        g_autoptr(SimRun) one = run_ok(sc, 1);
        g_autoptr(SimRun) all = run_ok(sc, 0);
        ck_assert_int_lt(sim_summary(one)->ranks_simulated, sim_summary(all)->ranks_simulated);
        ck_assert_int_eq(sim_summary(one)->iteration, sim_summary(all)->iteration);
        ck_assert_int_eq(sim_summary(one)->critical.exposed, sim_summary(all)->critical.exposed);
        assert_same_inventory(one, all);
    }
}
END_TEST

/* One tensor-parallel rank per group (with one DP replica, or TP filling the node: its peers'
 * DP collectives and sends as copies, TP_PEERS in executor.c) where the node's GPUs are
 * interchangeable gives the report of simulating all, byte for byte but the sim block; not on
 * Frontier (a GCD reaches its NIC through another) nor with data parallelism over part of a
 * node. */
START_TEST(test_tp_dedup_matches_all_ranks) {
    const char *megatron[] = {"training.grad_accum=8", NULL};
    const char *megatron_dp[] = {"training.grad_accum=8", "nodes=128", "topology.fabric.taper=4",
                                 NULL};
    const char *tp_pp[] = {"topology=dgx-a100", "nodes=2", "parallel.pp=4", NULL};
    const char *tp[] = {"topology=dgx-a100", NULL};
    const char *zero1[] = {"topology=dgx-a100", "nodes=4", NULL};
    const char *zero3[] = {"topology=dgx-a100", "nodes=4", "parallel.zero=3", NULL};
    const char *ddp_h100[] = {"topology=dgx-h100", "nodes=4", "parallel.zero=0",
                              "training.micro_batch=1", NULL};
    const char *llama[] = {"training.global_batch=64", NULL};
    struct {
        const char *file;
        const char *const *sets;
    } cases[] = {{"1T_megatron_dgx.yaml", megatron},
                 {"530B_megatron_dgx.yaml", megatron},
                 {"1.3B_tp_pp.yaml", tp_pp},
                 {"1.3B_tp.yaml", tp},
                 {"1T_megatron_dgx.yaml", megatron_dp}, /* DP 2, a tapered fat tree */
                 {"13B_tp8.yaml", zero1},
                 {"13B_tp8.yaml", zero3},
                 {"13B_tp8.yaml", ddp_h100},
                 {"llama3_70b_dgx_h100.yaml", llama}}; /* ZeRO-1, PP 8, DP 8 */
    for (size_t c = 0; c < G_N_ELEMENTS(cases); c++) {
        g_autoptr(Scenario) sc = load_ok(cases[c].file, cases[c].sets);
        g_autoptr(Layout) lay = layout_new(workload_layout_shape(sc));
        ck_assert_msg(exec_tp_interchangeable(sc, lay), "%s", cases[c].file);
        g_autoptr(SimRun) one = run_ok(sc, 1);
        g_autoptr(SimRun) all = run_ok(sc, 0);
        ck_assert_int_eq(sim_summary(one)->ranks_simulated, sc->pp);
        ck_assert_int_eq(sim_summary(all)->ranks_simulated, sc->gpus);
        g_autofree char *ja = json_of(one);
        g_autofree char *jb = json_of(all);
        /* everything before the "sim" block (events and ranks simulated differ) */
        char *sa = strstr(ja, "\"sim\""), *sb = strstr(jb, "\"sim\"");
        ck_assert_ptr_nonnull(sa);
        ck_assert_ptr_nonnull(sb);
        *sa = *sb = 0;
        ck_assert_msg(strcmp(ja, jb) == 0, "%s: deduplicated and all-ranks reports differ",
                      cases[c].file);
    }
    const char *frontier[] = {"nodes=4", NULL};
    g_autoptr(Scenario) fr = load_ok("13B_tp8.yaml", frontier);
    g_autoptr(Layout) lay_fr = layout_new(workload_layout_shape(fr));
    ck_assert(!exec_tp_interchangeable(fr, lay_fr)); /* Frontier */
    const char *dgx_dp[] = {"topology=dgx-a100", "nodes=4", "parallel.tp=4", NULL};
    g_autoptr(Scenario) dp = load_ok("13B_tp8.yaml", dgx_dp);
    g_autoptr(Layout) lay_dp = layout_new(workload_layout_shape(dp));
    ck_assert(!exec_tp_interchangeable(dp, lay_dp)); /* DP 8 over TP 4: two replicas a node */
}
END_TEST

/* Weak scaling: more nodes, same per-GPU compute, more exposed DP communication (Figures 1-2). */
START_TEST(test_weak_scaling_trend) {
    double prev_share = -1;
    int nodes[] = {1, 8, 64};
    for (int i = 0; i < 3; i++) {
        g_autofree char *set = g_strdup_printf("nodes=%d", nodes[i]);
        const char *sets[] = {set, NULL};
        g_autoptr(Scenario) sc = load_ok("20B_tp8.yaml", sets);
        g_autoptr(SimRun) run = run_ok(sc, -1);
        const SimSummary *s = sim_summary(run);
        double share = (double)s->critical.comm / (double)s->iteration;
        ck_assert_msg(share >= prev_share, "%d nodes: comm share %.4f < %.4f", nodes[i], share,
                      prev_share);
        prev_share = share;
    }
}
END_TEST

/* With pipeline parallelism, DP replicas that share a node share its links and NICs for their
 * activations: one node's worth of replicas is simulated (8 of the 16 here, PP 4 on 8 nodes), and
 * the report equals simulating all, where one replica alone was 0.19% fast on one node. */
START_TEST(test_dedup_pipeline_node_mates) {
    const char *sets[] = {"nodes=8", NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_interleaved.yaml", sets);
    g_autoptr(SimRun) one = run_ok(sc, 1);
    g_autoptr(SimRun) all = run_ok(sc, 0);
    ck_assert_int_eq(sim_summary(one)->ranks_simulated, 32);
    ck_assert_int_eq(sim_summary(all)->ranks_simulated, 64);
    ck_assert_int_eq(sim_summary(one)->critical.exposed, sim_summary(all)->critical.exposed);
    assert_same_inventory(one, all);
}
END_TEST

int main(void) {
    Suite *s = suite_create("schemes");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_eq3_dp_zero12);
    tcase_add_test(tc, test_eq4_zero3);
    tcase_add_test(tc, test_zero3_persistent_coalesced);
    tcase_add_test(tc, test_eq6_tp);
    tcase_add_test(tc, test_eq5_pp);
    tcase_add_test(tc, test_eq5_eq6_tp_pp);
    tcase_add_test(tc, test_seq_doubling);
    tcase_add_test(tc, test_breakdown_adds_up);
    tcase_add_test(tc, test_overlap);
    tcase_add_test(tc, test_pipeline_bubble);
    tcase_add_test(tc, test_determinism);
    tcase_add_test(tc, test_dedup_matches_all_ranks);
    tcase_add_test(tc, test_dedup_pipeline_node_mates);
    tcase_add_test(tc, test_tp_dedup_matches_all_ranks);
    tcase_add_test(tc, test_weak_scaling_trend);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
