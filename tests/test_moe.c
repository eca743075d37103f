/* Mixture of experts with expert parallelism: parameter counts of the shipped MoE models to the
 * parameter, the all-to-all inventory of a MoE layer against its closed form to the byte (calls and
 * bytes, forward, backward and recomputation), expert gradients reduced over the
 * expert-data-parallel group with their volume, memory with ep, FLOPs, determinism and one replica
 * against all, and the bad input errors with their positions. */
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "util.h"

/* A small MoE GPT: 4 layers, MoE on layers 2 and 4 (every 2), 8 experts, top-2, on one Frontier
 * node (8 GCDs), DP 8 = EP 4 x EDP 2. */
#define SMALL                                                                                      \
    "model:\n"                                                                                     \
    "  name: tiny-moe\n"                                                                           \
    "  layers: 4\n"                                                                                \
    "  hidden: 1024\n"                                                                             \
    "  heads: 8\n"                                                                                 \
    "  vocab: 50257\n"                                                                             \
    "  moe: {experts: 8, top_k: 2, every: 2, capacity_factor: 1.25}\n"                             \
    "topology: frontier\n"                                                                         \
    "nodes: 1\n"                                                                                   \
    "parallel: {tp: 1, pp: 1, ep: 4}\n"                                                            \
    "training: {micro_batch: 2, grad_accum: 3, seq_len: 512, precision: bf16, recompute: "         \
    "full}\n"

static Scenario *load_text(const char *text, const char *const *sets) {
    g_autofree char *path = write_temp_yaml(text);
    g_autoptr(GError) err = NULL;
    Scenario *sc = scenario_load(path, (char *const *)sets, &err);
    ck_assert_msg(sc != NULL, "load failed: %s", err ? err->message : "?");
    g_unlink(path);
    return sc;
}

static double calls(const SimRun *run, int rank, CollOp op, Dim dim) {
    return stats_rank_calls(sim_stats(run), sim_index_of(run, rank), op, dim);
}

static double volume(const SimRun *run, int rank, CollOp op, Dim dim) {
    return stats_rank_volume(sim_stats(run), sim_index_of(run, rank), op, dim);
}

/* Mixtral 8x7B from its config.json shapes: 2Vh + L(2h^2 + 2h kv_w + E 3h f + hE + 2h) + h. */
START_TEST(test_param_counts) {
    const char *sets[] = {"model=mixtral-8x7b", "parallel.tp=1", "parallel.zero=0", NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_ddp.yaml", sets);
    int64_t V = 32000, h = 4096, L = 32, kvw = 4096 / 32 * 8, f = 14336, E = 8;
    int64_t want = 2 * V * h + L * (2 * h * h + 2 * h * kvw + E * 3 * h * f + h * E + 2 * h) + h;
    ck_assert_int_eq(want, 46702792704LL); /* the count the brief and the paper's 46.7B give */
    ck_assert_msg(model_params(&sc->model, 4096, 1) == (double)want, "Mixtral: P = %.0f, want %ld",
                  model_params(&sc->model, 4096, 1), (long)want);
    /* active per token: 2 of 8 experts */
    double fwd = model_forward_flops(&sc->model, 1, 1, 1);
    double active = (double)(2 * V * h - V * h) + /* the output projection's GEMM: V h */
                    (double)L * (2 * h * h + 2 * h * kvw + 2 * 3 * h * f + h * E);
    ck_assert_double_eq_tol(fwd, 2.0 * active + 4.0 * L * h, 1.0); /* 4 b s^2 h at s = 1 */

    /* DeepSpeed-MoE 1.3B+MoE-128: tied Vp h, learned s h, 12 dense GPT layers (12h^2 + 13h),
     * 12 MoE layers (4h^2 + 8h + hE + E(8h^2 + 5h)), final 2h; Table 1 says 52B */
    const char *sets2[] = {"model=deepspeed-moe-1.3b-128", "parallel.tp=1", "parallel.zero=0",
                           NULL};
    g_autoptr(Scenario) ds = load_ok("1.3B_ddp.yaml", sets2);
    int64_t Vp = 50304, H = 2048, S = 2048, X = 128;
    int64_t dense = 12 * H * H + 13 * H, moe = 4 * H * H + 8 * H + H * X + X * (8 * H * H + 5 * H);
    int64_t want2 = Vp * H + S * H + 12 * dense + 12 * moe + 2 * H;
    ck_assert_int_eq(want2, 52471525376LL);
    ck_assert_double_eq(model_params(&ds->model, 2048, 1), (double)want2);
    ck_assert_int_eq(llround(model_params(&ds->model, 2048, 1) / 1e9), 52);

    /* per rank with EP 8: a MoE layer holds 1 of Mixtral's 8 experts */
    g_autoptr(GArray) u8 = model_stage_units_ep(&sc->model, 4096, 1, 8, 1, 0);
    const ParamUnit *layer = &g_array_index(u8, ParamUnit, 1);
    ck_assert_int_eq(layer->kind, UNIT_LAYER);
    ck_assert_double_eq(model_unit_expert_params(&sc->model, layer, 1, 8), 3.0 * h * f);
    ck_assert_double_eq(layer->params,
                        2.0 * h * h + 2.0 * h * kvw + 3.0 * h * f + (double)h * E + 2.0 * h);
}
END_TEST

/* Per MoE layer per micro-batch: 2 all-to-alls forward, 2 backward, 2 in the full recomputation,
 * each of E C h elements per rank, C = max(4, ceil(b s / E x k c)); volume m (ep - 1) / ep. */
START_TEST(test_all_to_all_inventory) {
    const char *rc[] = {"training.recompute=full", "training.recompute=none",
                        "training.recompute=selective"};
    const int per[] = {6, 4, 4};
    for (int r = 0; r < 3; r++) {
        const char *sets[] = {rc[r], NULL};
        g_autoptr(Scenario) sc = load_text(SMALL, sets);
        g_autoptr(SimRun) run = run_ok(sc, -1);
        int64_t C = (int64_t)ceil(2.0 * 512 / 8 * (2 * 1.25)); /* 320 */
        ck_assert_int_eq(model_moe_capacity(&sc->model, 2 * 512), C);
        double m = 8.0 * C * 1024 * 2, ep = 4;
        double want_calls = 2 /* MoE layers */ * 3 /* micro-batches */ * per[r];
        for (int rank = 0; rank < 8; rank++) {
            ck_assert_double_eq(calls(run, rank, COLL_ALL_TO_ALL, DIM_EP), want_calls);
            ck_assert_msg(
                volume(run, rank, COLL_ALL_TO_ALL, DIM_EP) == want_calls * m * (ep - 1) / ep,
                "%s: all-to-all volume %.0f, want %.0f", rc[r],
                volume(run, rank, COLL_ALL_TO_ALL, DIM_EP), want_calls * m * (ep - 1) / ep);
        }
        /* the TP emitter's inventory is untouched: no TP at tp 1 */
        ck_assert_double_eq(calls(run, 0, COLL_ALLREDUCE, DIM_TP), 0);
    }
    /* imbalance scales each message to the busiest expert; min_capacity binds on short inputs */
    const char *sets[] = {"model.moe.imbalance=1.5", "training.seq_len=8",
                          "training.recompute=none", NULL};
    g_autoptr(Scenario) sc = load_text(SMALL, sets);
    ck_assert_int_eq(model_moe_capacity(&sc->model, 16), 5); /* ceil(16 / 8 x 2.5) = 5 */
    g_autoptr(Scenario) sc4 = load_text(SMALL, (const char *const[]){"training.seq_len=4", NULL});
    ck_assert_int_eq(model_moe_capacity(&sc4->model, 8), 4); /* ceil(2.5) = 3 < min 4 */
    g_autoptr(SimRun) run = run_ok(sc, -1);
    double m = 1.5 * 8 * 5 * 1024 * 2;
    ck_assert_double_eq(volume(run, 3, COLL_ALL_TO_ALL, DIM_EP), 2 * 3 * 4 * m * 3 / 4);
}
END_TEST

/* Expert gradients go over the expert-data-parallel group (dp/ep = 2 ranks), the rest over DP (8):
 * DDP allreduces 2 P (d - 1) / d of each; ZeRO-1 reduces (DeepSpeed: per partition owner) and
 * allgathers half each. */
START_TEST(test_expert_grads_over_edp) {
    for (int zero = 0; zero <= 2; zero++) {
        g_autofree char *z = g_strdup_printf("parallel.zero=%d", zero);
        const char *sets[] = {z, NULL};
        g_autoptr(Scenario) sc = load_text(SMALL, sets);
        g_autoptr(SimRun) run = run_ok(sc, -1);
        const ModelConfig *m = &sc->model;
        double px = 2 /* MoE layers */ * (8 / 4) * model_moe_expert_params(m, 1);
        double p = model_params(m, 512, 1) - 2 * 8 * model_moe_expert_params(m, 1);
        double e = 2, d = 8, x = 2;
        double want_x = 2 * px * e * (x - 1) / x, want_d = 2 * p * e * (d - 1) / d;
        /* ZeRO-2 reduces in every micro-batch (3) */
        double rs_x = (zero == 2 ? 3 : 1) * want_x / 2, rs_d = (zero == 2 ? 3 : 1) * want_d / 2;
        for (int rank = 0; rank < 8; rank++) {
            double gx = volume(run, rank, COLL_ALLREDUCE, DIM_EDP) +
                        volume(run, rank, COLL_REDUCE_SCATTER, DIM_EDP) +
                        volume(run, rank, COLL_REDUCE, DIM_EDP) +
                        volume(run, rank, COLL_ALLGATHER, DIM_EDP);
            double gd = volume(run, rank, COLL_ALLREDUCE, DIM_DP) +
                        volume(run, rank, COLL_REDUCE_SCATTER, DIM_DP) +
                        volume(run, rank, COLL_REDUCE, DIM_DP) +
                        volume(run, rank, COLL_ALLGATHER, DIM_DP);
            double wx = zero == 0 ? want_x : rs_x + want_x / 2;
            double wd = zero == 0 ? want_d : rs_d + want_d / 2;
            ck_assert_msg(fabs(gx - wx) < 1e-6 * wx, "zero %d: EDP volume %.1f, want %.1f", zero,
                          gx, wx);
            ck_assert_msg(fabs(gd - wd) < 1e-6 * wd, "zero %d: DP volume %.1f, want %.1f", zero, gd,
                          wd);
        }
    }
}
END_TEST

/* What the plug-ins declare (parallelism.h): where each class of parameters has its gradients
 * reduced (workload_grad_dim, grad_dim): expert parallelism claims the experts' for DIM_EDP (dp /
 * ep ranks) when ep > 1, else data parallelism keeps them; the dense ones stay with the
 * data-parallel group, dp x cp ranks under context parallelism. And expert parallelism's
 * symmetry claim (replicas_differ): with ep > 1 no replica stands for another. */
START_TEST(test_plugin_claims) {
    for (int ep = 1; ep <= 8; ep *= 2) {
        g_autofree char *e = g_strdup_printf("parallel.ep=%d", ep);
        const char *sets[] = {e, NULL};
        g_autoptr(Scenario) sc = load_text(SMALL, sets);
        ck_assert_int_eq(workload_grad_dim(sc, PARAMS_DENSE), DIM_DP);
        ck_assert_int_eq(workload_grad_ranks(sc, PARAMS_DENSE), 8);
        ck_assert_int_eq(workload_grad_dim(sc, PARAMS_EXPERT), ep > 1 ? DIM_EDP : DIM_DP);
        ck_assert_int_eq(workload_grad_ranks(sc, PARAMS_EXPERT), 8 / ep);
        /* its symmetry claim: EP's all-to-alls make replicas differ, so every rank runs */
        ck_assert_int_eq(workload_replicas_exact(sc), ep == 1);
        ck_assert_int_eq(sim_dedup_mode(sc, DEDUP_EXACT), ep == 1 ? DEDUP_EXACT : DEDUP_OFF);
    }
    const char *cp[] = {"parallel.cp=2", NULL};
    g_autoptr(Scenario) dense = load_ok("llama3_70b_dgx_h100.yaml", cp);
    ck_assert_int_eq(workload_grad_dim(dense, PARAMS_DENSE), DIM_DP);
    ck_assert_int_eq(workload_grad_ranks(dense, PARAMS_DENSE), dense->dp * 2);
    /* each plug-in's collectives on the stream it declares: TP, SP, CP and EP on the
     * tensor-parallel stream, data parallelism's reductions and gathers on its own */
    const char *ep[] = {"parallel.ep=4", NULL};
    g_autoptr(Scenario) moe = load_text(SMALL, ep);
    Scenario *scs[] = {dense, moe};
    for (int i = 0; i < 2; i++) {
        g_autoptr(SimRun) run = run_ok(scs[i], -1);
        const Program *pg = workload_program(sim_workload(run), 0);
        int seen[DIM_COUNT] = {0};
        for (guint32 t = 0; t < pg->ntasks; t++) {
            const Task *k = &pg->tasks[t];
            if (k->kind != TASK_COLL)
                continue;
            seen[k->dim]++;
            if (k->dim == DIM_TP || k->dim == DIM_CP || k->dim == DIM_EP)
                ck_assert_int_eq(k->stream, STREAM_TP);
            else
                ck_assert(k->stream == STREAM_DP || k->stream == STREAM_DP_GATHER);
        }
        ck_assert_int_gt(seen[i == 0 ? DIM_CP : DIM_EP], 0);
        ck_assert_int_gt(seen[i == 0 ? DIM_TP : DIM_EDP], 0);
    }
}
END_TEST
/* Memory: expert parameters, gradients and optimizer state divided by ep; ZeRO partitions the
 * experts' over dp/ep and the rest over dp. Activations of a MoE layer: model_moe.c's derivation.
 */
START_TEST(test_memory_with_ep) {
    for (int zero = 0; zero <= 2; zero++) {
        for (int ep = 1; ep <= 8; ep *= 2) {
            g_autofree char *z = g_strdup_printf("parallel.zero=%d", zero);
            g_autofree char *es = g_strdup_printf("parallel.ep=%d", ep);
            const char *sets[] = {z, es, NULL};
            g_autoptr(Scenario) sc = load_text(SMALL, sets);
            const ModelConfig *m = &sc->model;
            double ex = model_moe_expert_params(m, 1);
            double dense = model_params(m, 512, 1) - 2 * 8 * ex, px = 2.0 * 8 / ep * ex;
            MemoryCase c = {.seq_len = 512,
                            .micro_batch = 2,
                            .tp = 1,
                            .pp = 1,
                            .vpp = 1,
                            .stage = 0,
                            .dp = 8,
                            .zero = zero,
                            .prec = PREC_BF16,
                            .rc = RECOMPUTE_NONE,
                            .inflight = 1,
                            .ends_inflight = 1,
                            .ep = ep};
            ModelMemory mm = model_memory(m, &c);
            double edp = 8.0 / ep;
            ck_assert_double_eq_tol(mm.params_bytes, (dense + px) * 2, 1e-3);
            ck_assert_double_eq_tol(
                mm.grads_bytes, zero >= 2 ? dense * 2 / 8 + px * 2 / edp : (dense + px) * 2, 1e-3);
            ck_assert_double_eq_tol(mm.optimizer_bytes,
                                    zero >= 1 ? dense * 12 / 8 + px * 12 / edp : (dense + px) * 12,
                                    1e-3);
            /* the activations: a dense model's with the MoE layers' difference (2 of them) */
            ModelConfig dm = *m;
            dm.moe.experts = 0;
            ModelMemory dmm = model_memory(&dm, &c);
            double s = 512, b = 2, h = 1024, R = 8.0 * 320, f = 4096;
            double extra = 4 * s * b * 8 + 2 * R * h * 2 + R * f * 2 * 2 - s * b * f * 2 * 2;
            ck_assert_double_eq_tol(mm.activations_bytes - dmm.activations_bytes, 2 * extra, 1e-3);
        }
    }
}
END_TEST

/* Same input, same bytes; with EP every rank is simulated (one replica cannot stand for its EP
 * partners), so dedup and --all-ranks agree trivially; at ep 1 the deduplicated run (one replica
 * per DP group, expert gradients over DP) equals simulating all. */
START_TEST(test_dedup_and_determinism) {
    g_autoptr(Scenario) sc = load_text(SMALL, NULL);
    g_autoptr(SimRun) a = run_ok(sc, 1);
    g_autoptr(SimRun) b = run_ok(sc, 0);
    ck_assert_int_eq(sim_summary(a)->ranks_simulated, 8);
    g_autofree char *ja = json_of(a);
    g_autofree char *jb = json_of(b);
    ck_assert_str_eq(ja, jb);

    const char *sets[] = {"parallel.ep=1", "nodes=2", NULL};
    g_autoptr(Scenario) s1 = load_text(SMALL, sets);
    g_autoptr(SimRun) one = run_ok(s1, 1);
    g_autoptr(SimRun) all = run_ok(s1, 0);
    ck_assert_int_lt(sim_summary(one)->ranks_simulated, sim_summary(all)->ranks_simulated);
    assert_same_inventory(one, all);
}
END_TEST

/* A dense model is untouched by the MoE code: its comm table has no ep or edp row. */
START_TEST(test_dense_unchanged) {
    g_autoptr(Scenario) sc = load_ok("1.3B_zero1.yaml", NULL);
    g_autoptr(SimRun) run = run_ok(sc, -1);
    GArray *rows = stats_comm_rows(sim_stats(run), 0);
    for (guint i = 0; i < rows->len; i++) {
        CommRow *r = &g_array_index(rows, CommRow, i);
        ck_assert_int_ne(r->dim, DIM_EP);
        ck_assert_int_ne(r->dim, DIM_EDP);
    }
    stats_rows_free(rows);
}
END_TEST

static void expect_error(const char *const *sets, const char *const *needles) {
    g_autofree char *path = write_temp_yaml(SMALL);
    g_autoptr(GError) err = NULL;
    g_autoptr(Scenario) sc = scenario_load(path, (char *const *)sets, &err);
    ck_assert_msg(sc == NULL, "expected an error for %s", sets[0]);
    ck_assert(err != NULL && err->domain == CONF_ERROR);
    for (const char *const *n = needles; *n; n++) {
        g_autofree char *want = g_strdup_printf(*n, path);
        ck_assert_msg(strstr(err->message, want), "message '%s' lacks '%s'", err->message, want);
    }
    g_unlink(path);
}

/* A scenario text that fails to load, its message starting FILE:at and holding needle. */
static void expect_text_error(const char *text, const char *at, const char *needle) {
    g_autofree char *path = write_temp_yaml(text);
    g_autoptr(GError) err = NULL;
    g_autoptr(Scenario) sc = scenario_load(path, NULL, &err);
    ck_assert(sc == NULL);
    g_autofree char *want = g_strconcat(path, at, NULL);
    ck_assert_msg(strstr(err->message, want) && strstr(err->message, needle),
                  "message '%s' lacks '%s' or '%s'", err->message, want, needle);
    g_unlink(path);
}

START_TEST(test_bad_input) {
    /* the file's positions: moe is on line 7, parallel on line 10 */
    expect_error((const char *const[]){"parallel.ep=3", NULL},
                 (const char *const[]){"does not divide DP 8", NULL});
    expect_text_error("model:\n  name: x\n  layers: 4\n  hidden: 1024\n  heads: 8\n  vocab: 50257\n"
                      "  moe: {experts: 8, top_k: 9}\n"
                      "topology: frontier\nnodes: 1\nparallel: {tp: 1}\ntraining: {}\n",
                      ":7:", "top_k 9 exceeds");
    expect_text_error("model:\n  name: x\n  layers: 4\n  hidden: 1024\n  heads: 8\n  vocab: 50257\n"
                      "  moe:\n    experts: 8\n    capacity_factor: 0\n"
                      "topology: frontier\nnodes: 1\nparallel:\n  tp: 1\n  ep: 16\ntraining: {}\n",
                      ":9:22", "capacity_factor");
    expect_error((const char *const[]){"model.moe.imbalance=0.5", NULL},
                 (const char *const[]){"imbalance", "[1, 4]", NULL});
    expect_error(
        (const char *const[]){"parallel.ep=8", "model.moe.experts=4", "model.moe.top_k=1", NULL},
        (const char *const[]){"does not divide the 4 experts", NULL});
    expect_error((const char *const[]){"parallel.zero=3", NULL},
                 (const char *const[]){"ZeRO-3", NULL});
    expect_error((const char *const[]){"model=gpt-neox-125m", NULL},
                 (const char *const[]){"needs a model with moe", NULL});
    expect_error((const char *const[]){"model.moe.expert=4", NULL},
                 (const char *const[]){"expert", NULL});
    expect_text_error("model: {base: no-such-model, moe: {experts: 8}}\n"
                      "topology: frontier\nnodes: 1\nparallel: {}\n"
                      "training: {}\n",
                      ":1:15", "no-such-model");
    { /* base: with keys laid over it: the shipped model with another imbalance */
        g_autofree char *path =
            write_temp_yaml("model: {base: mixtral-8x7b, moe: {imbalance: 1.5}}\n"
                            "topology: frontier\nnodes: 1\nparallel: {ep: 8}\ntraining: {}\n");
        g_autoptr(GError) err = NULL;
        g_autoptr(Scenario) sc = scenario_load(path, NULL, &err);
        ck_assert_msg(sc != NULL, "%s", err ? err->message : "");
        ck_assert_int_eq(sc->model.moe.experts, 8);
        ck_assert_int_eq(sc->model.moe.top_k, 2);
        ck_assert_double_eq(sc->model.moe.imbalance, 1.5);
        ck_assert_int_eq(sc->model.kv_heads, 8);
        g_unlink(path);
    }
}
END_TEST

/* Sequence parallelism composes with expert parallelism (parallelism.h): the MoE layer's MLP block
 * is the expert plug-in's, and the sequence-parallel plug-in wraps it as it wraps a dense MLP. On
 * rank 0 (TP 2, EP 4) MoE layer 1's forward of micro-batch 0 runs, in order: allgather, attention,
 * reduce-scatter, allgather, route, dispatch all-to-all, experts, combine all-to-all, combine,
 * reduce-scatter; each starts exactly when the one before it ends (host and interference off, so
 * nothing else delays it). Per micro-batch: every layer's 2 + 4 allgathers and 2 + 2
 * reduce-scatters, the embedding's reduce-scatter and gathered gradient, the head's gather, its
 * second gather and reduce-scatter in backward, the cross entropy's 3 allreduces. */
typedef struct {
    GArray *ran; /* Task, begin, end of rank 0's tasks of layer 1, micro-batch 0, forward */
} SpWatch;

typedef struct {
    Task t;
    SimTime begin, end;
} SpRan;

static gboolean sp_pick(int rank, const Task *t) {
    return rank == 0 && t->layer == 1 && t->micro == 0 && t->phase == PHASE_FWD;
}

static void sp_begin(void *ctx, int rank, const Task *t, SimTime now) {
    SpWatch *w = ctx;
    if (!sp_pick(rank, t))
        return;
    SpRan r = {.t = *t, .begin = now, .end = -1};
    g_array_append_val(w->ran, r);
}

static void sp_end(void *ctx, int rank, const Task *t, SimTime now) {
    SpWatch *w = ctx;
    if (!sp_pick(rank, t))
        return;
    for (guint i = 0; i < w->ran->len; i++) {
        SpRan *r = &g_array_index(w->ran, SpRan, i);
        if (r->end < 0 && memcmp(&r->t, t, sizeof *t) == 0) {
            r->end = now;
            return;
        }
    }
}

START_TEST(test_sp_composes_with_ep) {
    const char *sets[] = {"parallel.tp=2",           "parallel.sequence_parallel=true",
                          "training.recompute=none", "sim.host=false",
                          "sim.interference=false",  NULL};
    g_autoptr(Scenario) sc = load_text(SMALL, sets);
    ck_assert_int_eq(sc->dp, 4);
    SpWatch w = {.ran = g_array_new(FALSE, FALSE, sizeof(SpRan))};
    ExecObserver obs = {.ctx = &w, .begin = sp_begin, .end = sp_end};
    g_autoptr(GError) err = NULL;
    g_autoptr(SimRun) run = sim_run_observed(sc, -1, &obs, &err);
    ck_assert_msg(run, "%s", err ? err->message : "");
    const struct {
        TaskKind kind;
        CollOp op;
        Dim dim;
    } want[] = {
        {TASK_COLL, COLL_ALLGATHER, DIM_TP},
        {TASK_COMPUTE, 0, 0},
        {TASK_COLL, COLL_REDUCE_SCATTER, DIM_TP},
        {TASK_COLL, COLL_ALLGATHER, DIM_TP},
        {TASK_COMPUTE, 0, 0},
        {TASK_COLL, COLL_ALL_TO_ALL, DIM_EP},
        {TASK_COMPUTE, 0, 0},
        {TASK_COLL, COLL_ALL_TO_ALL, DIM_EP},
        {TASK_COMPUTE, 0, 0},
        {TASK_COLL, COLL_REDUCE_SCATTER, DIM_TP},
    };
    ck_assert_int_eq(w.ran->len, G_N_ELEMENTS(want));
    for (guint i = 0; i < w.ran->len; i++) {
        const SpRan *r = &g_array_index(w.ran, SpRan, i);
        ck_assert_msg(r->t.kind == want[i].kind, "task %u: kind %d, want %d", i, r->t.kind,
                      want[i].kind);
        if (r->t.kind == TASK_COLL)
            ck_assert_msg(r->t.op == want[i].op && r->t.dim == want[i].dim,
                          "task %u: op %d on %d, want %d on %d", i, r->t.op, r->t.dim, want[i].op,
                          want[i].dim);
        if (i > 0)
            ck_assert_msg(r->begin == g_array_index(w.ran, SpRan, i - 1).end,
                          "task %u begins at %" G_GINT64_FORMAT
                          ", the one before ends at %" G_GINT64_FORMAT,
                          i, r->begin, g_array_index(w.ran, SpRan, i - 1).end);
    }
    g_array_unref(w.ran);
    double mb = 3, L = 4;
    for (int rank = 0; rank < 8; rank++) {
        ck_assert_double_eq(calls(run, rank, COLL_ALLGATHER, DIM_TP), mb * (L * 6 + 3));
        ck_assert_double_eq(calls(run, rank, COLL_REDUCE_SCATTER, DIM_TP), mb * (L * 4 + 2));
        ck_assert_double_eq(calls(run, rank, COLL_ALLREDUCE, DIM_TP), mb * 3);
        ck_assert_double_eq(calls(run, rank, COLL_ALL_TO_ALL, DIM_EP), mb * 2 * 4);
    }
}
END_TEST

/* The shipped MoE scenarios: over two dragonfly groups the all-to-all's bytes top the global
 * links; the MCR-DL what-if's backend takes the small all-to-alls and shortens the iteration. */
START_TEST(test_shipped_scenarios) {
    g_autoptr(Scenario) sc = load_ok("moe_1.3b_128_two_groups.yaml", NULL);
    g_autoptr(SimRun) run = run_ok(sc, -1);
    GArray *links = net_busiest_links(sim_network(run), 8);
    for (guint i = 0; i < links->len; i++) {
        const NetLinkStat *l = &g_array_index(links, NetLinkStat, i);
        ck_assert_int_eq(topo_link_kind(sim_topology(run), l->link), LINK_GLOBAL);
        ck_assert_msg(l->by_class[DIM_EP] > 0.8 * l->bytes, "link %u: ep %.0f of %.0f bytes", i,
                      l->by_class[DIM_EP], l->bytes);
    }
    g_array_unref(links);
    g_autoptr(Scenario) one = load_ok("moe_1.3b_128_frontier.yaml", NULL);
    g_autoptr(SimRun) r1 = run_ok(one, -1);
    ck_assert_int_lt(sim_summary(r1)->iteration, sim_summary(run)->iteration);

    g_autoptr(Scenario) mixed = load_ok("moe_mcrdl_frontier.yaml", NULL);
    const char *sets[] = {"topology=frontier", NULL};
    g_autoptr(Scenario) rccl = load_ok("moe_mcrdl_frontier.yaml", sets);
    g_autoptr(SimRun) rm = run_ok(mixed, -1);
    g_autoptr(SimRun) rr = run_ok(rccl, -1);
    ck_assert_int_lt(sim_summary(rm)->iteration, sim_summary(rr)->iteration);
    /* same inventory, to the byte */
    ck_assert_double_eq(volume(rm, 0, COLL_ALL_TO_ALL, DIM_EP),
                        volume(rr, 0, COLL_ALL_TO_ALL, DIM_EP));
}
END_TEST

/* Timing on a small case: EP 8 inside one node, nothing else on the links while an all-to-all runs
 * (DDP reduces after backward, TP 1, PP 1), so each of the critical rank's all-to-alls takes the
 * time of one all-to-all of m bytes over the node's 8 GCDs alone (the collective model's), all of
 * it exposed. */
START_TEST(test_all_to_all_time) {
    const char *sets[] = {"parallel.ep=8", "parallel.zero=0", "training.grad_accum=1", NULL};
    g_autoptr(Scenario) sc = load_text(SMALL, sets);
    g_autoptr(SimRun) run = run_ok(sc, -1);
    int members[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    double m = 8.0 * 320 * 1024 * 2;
    SimTime one = coll_time_alone(sc, COLL_ALL_TO_ALL, members, 8, m);
    ck_assert_int_gt(one, 0);
    int crit = sim_critical_index(run);
    GArray *rows = stats_comm_rows(sim_stats(run), crit);
    gboolean seen = FALSE;
    for (guint i = 0; i < rows->len; i++) {
        CommRow *r = &g_array_index(rows, CommRow, i);
        if (r->op != COLL_ALL_TO_ALL)
            continue;
        seen = TRUE;
        ck_assert_double_eq(r->calls, 12); /* 2 MoE layers x 1 micro-batch x 6 */
        ck_assert_msg(r->time == 12 * one,
                      "all-to-all time %" G_GINT64_FORMAT " ps, 12 x %" G_GINT64_FORMAT " alone",
                      (gint64)r->time, (gint64)one);
        ck_assert_double_eq_tol(r->exposed, (double)r->time, 1.0); /* nothing hides them */
    }
    ck_assert(seen);
    stats_rows_free(rows);
}
END_TEST

int main(void) {
    Suite *s = suite_create("moe");
    TCase *tc = tcase_create("moe");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_param_counts);
    tcase_add_test(tc, test_all_to_all_inventory);
    tcase_add_test(tc, test_expert_grads_over_edp);
    tcase_add_test(tc, test_plugin_claims);
    tcase_add_test(tc, test_memory_with_ep);
    tcase_add_test(tc, test_dedup_and_determinism);
    tcase_add_test(tc, test_dense_unchanged);
    tcase_add_test(tc, test_bad_input);
    tcase_add_test(tc, test_sp_composes_with_ep);
    tcase_add_test(tc, test_shipped_scenarios);
    tcase_add_test(tc, test_all_to_all_time);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
