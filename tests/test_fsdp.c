/* PyTorch FSDP and Megatron-FSDP pinned on closed forms: FSDP1's one flat allgather per wrap
 * unit issued as the unit before it starts, its reduce-scatter per unit as the unit's backward
 * ends, where FSDP's backward_prefetch, forward_prefetch and limit_all_gathers move those
 * gathers, SHARD_GRAD_OP's single gather per unit, HYBRID_SHARD's groups and the all-reduce after
 * each reduce-scatter, their memory; Megatron-FSDP's gathers, its fp32 reduce-scatters and its
 * bytes per parameter. */
#include <math.h>

#include "watch.h"

#define E 2.0 /* fp16 and bf16 bytes */
#define OFF "sim.host=false", "sim.interference=false"
#define FSDP "training.framework=pytorch", "nodes=1"

/* FSDP's closed forms over rank 0's run, one micro-batch with one stage (test_fsdp_full_shard
 * says them): the uses in program order (forward: the root's, which the embedding starts, each
 * layer's, the head's; backward: the head's, each layer's, the embedding's), what each gathers
 * (nothing where the root is still whole) and at whose start, and the reduce-scatters (each
 * layer's in backward order, then the root's) met so far. */
typedef struct {
    const Watch *w;
    Dim dim; /* the group the allgathers and reduce-scatters run over */
    int U, layer[64];
    double params[64], P, root;           /* per unit, their sum, the root's (embedding and head) */
    int nuse, use_layer[132], front[132]; /* front: 0, no compute before the gather */
    gboolean use_bwd[132], wait_rs[132];  /* wait_rs: the gather follows the reduce-scatter of
                                             the use before (backward_prefetch none) */
    int dflt[132];       /* front under FSDP's defaults, to count the gathers the settings move */
    int moved;           /* gathers whose closed form differs from the defaults' */
    double gathers[132]; /* parameters use j gathers; 0: none */
    int ngather, nrs, rs_layer[64];          /* the reduce-scatters: the unit whose backward */
    double rs_params[64];                    /* ends before each, and its parameters */
    double peak;                             /* the gathered buffers' most, parameters */
    double rs_e;                             /* bytes per reduce-scattered element */
    int g, rs, next;                         /* allgathers, reduce-scatters met; next use */
    SimTime first_g, last_g, last_rs, rs_at; /* when the first allgather began, the last of each
                                                ended, the root's reduce-scatter began */
} FsdpCheck;

static void fsdp_use(FsdpCheck *c, int layer, gboolean bwd, double gathers, int front) {
    int j = c->nuse++;
    c->use_layer[j] = layer;
    c->use_bwd[j] = bwd;
    c->gathers[j] = gathers;
    c->front[j] = front;
    c->ngather += gathers > 0;
}

/* The closed forms under the scenario's FSDP settings (gathers.c fsdp_order): layer use j's
 * gather follows the end of use front(j) - 1's compute, or of nothing (front 0), or of the
 * reduce-scatter before it.
 * - defaults (BACKWARD_PRE, limit_all_gathers): front j - 1, forward and backward; two layers
 *   whole at most;
 * - forward_prefetch: in forward, front j - 2 from the third use on (the rate limiter waits for
 *   the reshard two gathers back, and the gather is issued a unit earlier), else nothing; three
 *   layers whole;
 * - limit_all_gathers off: in forward, nothing: each gather as soon as the one before ends;
 *   every layer of the forward whole at most (the plan's upper bound);
 * - BACKWARD_POST: in backward, front j: the end of the use before's backward; one layer;
 * - None: in backward, the end of the previous layer's reduce-scatter (the head's backward, which
 *   issues none, before the last layer's); one layer. */
static void fsdp_check_init(FsdpCheck *c, const Scenario *sc, const Watch *w, Dim dim) {
    *c = (FsdpCheck){.w = w, .dim = dim, .first_g = -1, .rs_at = -1, .rs_e = E};
    c->U = units_of(sc, c->layer, c->params);
    int U = c->U, L = U - 2;
    for (int u = 0; u < U; u++)
        c->P += c->params[u];
    c->root = c->params[0] + c->params[U - 1];
    fsdp_use(c, -1, FALSE, c->root, 0); /* issued as the forward starts, nothing before it */
    for (int k = 0; k < L; k++) {
        int j = c->nuse;
        c->dflt[j] = j - 1;
        fsdp_use(c, k, FALSE, c->params[1 + k],
                 !sc->fsdp_limit_gathers ? 0
                 : sc->fsdp_fwd_prefetch ? (j >= 3 ? j - 2 : 0)
                                         : j - 1);
    }
    fsdp_use(c, L, FALSE, 0, 0); /* the head: the root is whole */
    fsdp_use(c, L, TRUE, 0, 0);
    for (int k = L - 1; k >= 0; k--) {
        int j = c->nuse;
        c->dflt[j] = j - 1;
        c->wait_rs[j] = sc->fsdp_bwd_prefetch == FSDP_BWD_NONE && k < L - 1;
        fsdp_use(c, k, TRUE, c->params[1 + k], sc->fsdp_bwd_prefetch == FSDP_BWD_PRE ? j - 1 : j);
        c->rs_layer[c->nrs] = k;
        c->rs_params[c->nrs++] = c->params[1 + k];
    }
    fsdp_use(c, -1, TRUE, 0, 0);
    c->rs_layer[c->nrs] = -1; /* the root's, once the embedding's backward ends */
    c->rs_params[c->nrs++] = c->root;
    /* the root whole throughout, and each window's layers (the layers are alike) */
    for (int k = 1; k < L; k++)
        ck_assert_double_eq(c->params[1 + k], c->params[1]);
    int fwd = !sc->fsdp_limit_gathers ? L : sc->fsdp_fwd_prefetch ? 3 : 2;
    int bwd = sc->fsdp_bwd_prefetch == FSDP_BWD_PRE ? 2 : 1;
    c->peak = c->root + MAX(fwd, bwd) * c->params[1];
}

/* When use j's gather may start by front f (0: nothing before it): after the gather before. */
static SimTime fsdp_front_at(const FsdpCheck *c, int f) {
    SimTime t = c->last_g;
    if (f >= 1)
        t = MAX(t, use_end(c->w, c->use_layer[f - 1], c->use_bwd[f - 1]));
    return t;
}

/* r, an allgather or a reduce-scatter, against its closed form; FALSE for any other task. */
static gboolean fsdp_check(FsdpCheck *c, const Ran *r) {
    if (r->t.kind != TASK_COLL)
        return FALSE;
    if (r->t.op == COLL_ALLGATHER) {
        while (c->next < c->nuse && c->gathers[c->next] == 0)
            c->next++;
        ck_assert_msg(c->next < c->nuse, "allgather %d past the %d closed-form ones", c->g,
                      c->ngather);
        int j = c->next++;
        ck_assert_int_eq(r->t.dim, c->dim);
        ck_assert_int_eq(r->t.stream, STREAM_DP_GATHER);
        ck_assert_int_eq(r->t.layer, c->use_layer[j]);
        ck_assert_msg(fabs(r->t.bytes - c->gathers[j] * E) < 1e-6,
                      "allgather %d (layer %d) of %.0f bytes, closed form %.0f", c->g,
                      c->use_layer[j], r->t.bytes, c->gathers[j] * E);
        /* after the compute of the use before front(j), or the reduce-scatter before it */
        SimTime want = fsdp_front_at(c, c->front[j]);
        if (c->wait_rs[j]) {
            ck_assert_msg(c->rs > 0 && c->rs_layer[c->rs - 1] == c->use_layer[j - 1],
                          "allgather %d (layer %d) began before layer %d's reduce-scatter", c->g,
                          c->use_layer[j], c->use_layer[j - 1]);
            want = MAX(c->last_g, c->last_rs);
        }
        if (c->use_layer[j] >= 0 && c->use_layer[j] < c->U - 2) /* a layer's */
            c->moved += want != fsdp_front_at(c, c->dflt[j]);
        ck_assert_msg(r->begin == want,
                      "allgather %d (layer %d) began at %lld ps, closed form %lld", c->g,
                      c->use_layer[j], (long long)r->begin, (long long)want);
        if (c->g == 0)
            c->first_g = r->begin;
        c->last_g = r->end;
        c->g++;
        return TRUE;
    }
    if (r->t.op == COLL_REDUCE_SCATTER) {
        ck_assert_int_lt(c->rs, c->nrs);
        int k = c->rs;
        ck_assert_int_eq(r->t.dim, c->dim);
        ck_assert_int_eq(r->t.stream, STREAM_DP);
        ck_assert_int_eq(r->t.layer, -2);
        ck_assert_msg(fabs(r->t.bytes - c->rs_params[k] * c->rs_e) < 1e-6,
                      "reduce-scatter %d of %.0f bytes, closed form %.0f", k, r->t.bytes,
                      c->rs_params[k] * c->rs_e);
        SimTime want = MAX(c->last_rs, use_end(c->w, c->rs_layer[k], TRUE));
        ck_assert_msg(r->begin == want, "reduce-scatter %d began at %lld ps, closed form %lld", k,
                      (long long)r->begin, (long long)want);
        if (k == c->nrs - 1)
            c->rs_at = r->begin;
        c->last_rs = r->end;
        c->rs++;
        return TRUE;
    }
    return FALSE;
}

/* FSDP FULL_SHARD, one micro-batch, as FSDP1 runs a model whose layers are wrapped
 * (transformer_auto_wrap_policy): the embedding, final norm and head are the root's one flat
 * parameter, allgathered (fp16, param_dtype) once as the forward starts, first thing, at 0 ps;
 * the root does not reshard after forward (_post_forward_reshard), so the head's forward and
 * backward and the embedding's backward gather nothing; each layer's flat parameter is
 * allgathered before its forward and again before its recomputation and backward. The allgather
 * of a layer's use starts once the compute of the use two before it ends (the one before is the
 * use at whose start it is issued), or the gather before it on the stream ends, whichever is
 * later: for 24 layers 1 + 24 + 24 = 49 allgathers. One reduce-scatter of each layer's gradients
 * in backward order, starting once the layer's backward ends or the one before it does; then
 * the root's, of the embedding's and head's gradients together, once the embedding's backward
 * (its last use) ends or layer 0's reduce-scatter does: 25. Memory: fp32 parameters, gradients
 * and AdamW's 8 bytes, all sharded over the 8 GCDs; the gathered buffers hold the root
 * throughout and two layers at most. */
START_TEST(test_fsdp_full_shard) {
    const char *sets[] = {FSDP, OFF, NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_zero3.yaml", sets);
    ck_assert_int_eq(sc->grad_accum, 1);
    Watch w;
    g_autoptr(SimRun) run = watched(sc, &w);
    FsdpCheck c;
    fsdp_check_init(&c, sc, &w, DIM_DP);
    for (guint i = 0; i < w.ran->len; i++) {
        const Ran *r = &g_array_index(w.ran, Ran, i);
        if (r->t.kind == TASK_COLL && !fsdp_check(&c, r))
            ck_abort_msg("FSDP issued a %s", coll_op_name(r->t.op));
    }
    int L = sc->model.layers;
    ck_assert_int_eq(L, 24);
    ck_assert_int_eq(c.ngather, 2 * L + 1);
    ck_assert_int_eq(c.g, 2 * L + 1);
    ck_assert_int_eq(c.rs, L + 1);
    ck_assert_msg(c.first_g == 0, "the root's allgather began at %lld ps", (long long)c.first_g);
    SimTime emb = use_end(&w, -1, TRUE);
    ck_assert_msg(c.rs_at >= emb,
                  "the root's reduce-scatter began at %lld ps, before the "
                  "embedding's backward ended at %lld",
                  (long long)c.rs_at, (long long)emb);
    double P = c.P, d = sc->dp;
    const ModelMemory *m = &sim_summary(run)->memory;
    ck_assert_double_eq_tol(m->params_bytes, 4 * P / d, 1.0);
    ck_assert_double_eq_tol(m->grads_bytes, 4 * P / d, 1.0);
    ck_assert_double_eq_tol(m->optimizer_bytes, 8 * P / d, 1.0);
    ck_assert_double_eq_tol(c.peak, c.root + 2 * c.params[1], 1e-6); /* equal layers */
    ck_assert_msg(fabs(m->buffers_bytes - c.peak * E) <= 1.0,
                  "gathered buffers %.0f bytes, closed form (root + 2 layers) %.0f",
                  m->buffers_bytes, c.peak * E);
    g_array_unref(w.ran);
}
END_TEST

/* FULL_SHARD as test_fsdp_full_shard, under one of FSDP1's prefetch settings (set): every
 * allgather and reduce-scatter at fsdp_check_init's closed form; `moved` of the layers' gathers
 * start elsewhere than under the defaults (so the defaults' timing fails this test); the
 * gathered buffers' peak, root + `layers` layers. */
static void fsdp_setting(const char *set, int moved, int layers) {
    const char *sets[] = {FSDP, OFF, set, NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_zero3.yaml", sets);
    Watch w;
    g_autoptr(SimRun) run = watched(sc, &w);
    FsdpCheck c;
    fsdp_check_init(&c, sc, &w, DIM_DP);
    for (guint i = 0; i < w.ran->len; i++) {
        const Ran *r = &g_array_index(w.ran, Ran, i);
        if (r->t.kind == TASK_COLL && !fsdp_check(&c, r))
            ck_abort_msg("FSDP issued a %s", coll_op_name(r->t.op));
    }
    int L = sc->model.layers;
    ck_assert_int_eq(c.g, 2 * L + 1);
    ck_assert_int_eq(c.rs, L + 1);
    ck_assert_msg(c.moved == moved, "%s: %d gathers moved from the defaults' closed form, not %d",
                  set, c.moved, moved);
    double buf = sim_summary(run)->memory.buffers_bytes;
    ck_assert_double_eq_tol(c.peak, c.root + layers * c.params[1], 1e-6);
    ck_assert_msg(fabs(buf - c.peak * E) <= 1.0,
                  "%s: gathered buffers %.0f bytes, closed form (root + %d layers) %.0f", set, buf,
                  layers, c.peak * E);
    g_array_unref(w.ran);
}

/* BACKWARD_POST (_post_backward_hook's _prefetch_handle, after the unit's gradient, before its
 * reduce-scatter): layer i - 1's gather starts once layer i's backward ends (or the gather before
 * it does), not as it starts (the last layer's once the head's backward ends): all 24
 * backward ones move; the forward's are the defaults'. Its buffers hold one layer in backward, but
 * the forward's two stay the peak. */
START_TEST(test_fsdp_backward_post) {
    fsdp_setting("training.fsdp_backward_prefetch=post", 24, 2);
}
END_TEST

/* backward_prefetch None: each layer gathered in its own _pre_backward_hook, which NCCL runs
 * after the reduce-scatter of the layer before (issued first, in that one's
 * _post_backward_hook): layer i - 1's gather starts once layer i's reduce-scatter ends, never
 * during layer i's backward; the last layer's (no layer before it in backward) once the head's
 * backward ends. */
START_TEST(test_fsdp_backward_none) {
    fsdp_setting("training.fsdp_backward_prefetch=none", 24, 2);
}
END_TEST

/* forward_prefetch: _pre_forward_unshard's _prefetch_handle issues the next layer's gather before
 * the current layer's forward; the rate limiter then waits for the reshard two gathers back,
 * one use earlier than without: layer k's forward gather (use k + 1) starts once use k - 2's
 * compute ends, from layer 2 on (layers 0 and 1: once the gather before ends); 22 move. Three
 * layers whole in the buffers. Backward is the defaults'. */
START_TEST(test_fsdp_forward_prefetch) {
    fsdp_setting("training.fsdp_forward_prefetch=true", 22, 3);
}
END_TEST

/* limit_all_gathers false: nothing holds the forward's gathers back (the unshard stream waits
 * for no compute): each starts the moment the one before ends, 22 forward ones ahead of the
 * defaults' (layers 0 and 1 follow the gather before them either way); the plan counts every layer
 * of the forward whole. Backward, where NCCL's order behind the reduce-scatters holds them, is the
 * defaults'. */
START_TEST(test_fsdp_no_gather_limit) {
    fsdp_setting("training.fsdp_limit_all_gathers=false", 22, 24);
}
END_TEST

/* FSDP SHARD_GRAD_OP (zero 2), two micro-batches: each flat parameter (each layer's, and the
 * root's: the embedding and head together) gathered once per micro-batch, for its forward, and
 * kept whole through its recomputation and backward; a reduce-scatter of each every micro-batch
 * (the root's after the embedding's backward); no allgather after the optimizer; every unit
 * whole in the buffers. */
START_TEST(test_fsdp_shard_grad_op) {
    const char *sets[] = {FSDP, OFF, "parallel.zero=2", "training.grad_accum=2", NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_zero3.yaml", sets);
    g_autoptr(SimRun) run = run_ok(sc, -1);
    int layer[64];
    double params[64], P = 0;
    int U = units_of(sc, layer, params);
    for (int u = 0; u < U; u++)
        P += params[u];
    const Stats *st = sim_stats(run);
    ck_assert_double_eq(stats_rank_calls(st, 0, COLL_ALLGATHER, DIM_DP), 2 * (U - 1));
    ck_assert_double_eq(stats_rank_calls(st, 0, COLL_REDUCE_SCATTER, DIM_DP), 2 * (U - 1));
    double d = sc->dp;
    ck_assert_double_eq_tol(stats_rank_volume(st, 0, COLL_ALLGATHER, DIM_DP),
                            2 * P * E * (d - 1) / d, 1.0);
    ck_assert_double_eq_tol(sim_summary(run)->memory.buffers_bytes, P * E, 1.0);
    ck_assert_double_eq_tol(sim_summary(run)->memory.params_bytes, 4 * P / d, 1.0);
}
END_TEST

/* FSDP HYBRID_SHARD (parallel.hybrid_shard: true) on 2 Frontier nodes, one micro-batch: the shard
 * group is rank 0's node (ranks 0..7, dim dp_intra), the replicate group the same GCD of each node
 * ({0, 8}, dp_inter). Every allgather runs over the shard group, at FULL_SHARD's closed form
 * of test_fsdp_full_shard (the root gathered once and kept, as HYBRID_SHARD is in
 * RESHARD_AFTER_FORWARD_HANDLE_STRATEGIES like FULL_SHARD and _post_forward_reshard spares the
 * root under either), and in forward (nothing else on the node's links) takes exactly the
 * time of an allgather over ranks 0..7 alone on the machine. Each layer's gradient, then the
 * root's, is reduce-scattered over the shard group as its backward ends (or the reduce-scatter
 * before it does), and the shard of it, a 1/8, is all-reduced over the replicate group on its own
 * stream (torch's _all_reduce_stream): starting the picosecond its reduce-scatter ends, or the
 * allreduce before it does, whichever is later (here the first for every one). The optimizer
 * starts once the last allreduce ends. Memory: FULL_SHARD's 16 bytes per parameter over the 8 of
 * the shard group, not the 16 of dp; the buffers FULL_SHARD's. Volumes: (3P - root)e(q-1)/q in
 * the group, 2(Pe/q)(N-1)/N across. Deduplicated and every rank agree. */
START_TEST(test_fsdp_hybrid_shard) {
    const char *sets[] = {"training.framework=pytorch", "parallel.hybrid_shard=true", OFF, NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_zero3.yaml", sets);
    int gpn = sc->topo.gpus_per_node, q = gpn, N = sc->nodes;
    ck_assert_int_eq(sc->nodes, 2);
    ck_assert_int_eq(sc->dp, 16);
    ck_assert_int_eq(sc->fsdp_shard, q);
    ck_assert_int_eq(sc->grad_accum, 1);
    Watch w;
    g_autoptr(SimRun) run = watched(sc, &w);
    /* the groups: rank 0's node, and GCD 0 of every node */
    const Layout *lay = workload_layout(sim_workload(run));
    int intra[16], inter[16];
    ck_assert_int_eq(layout_group_size(lay, DIM_DP_INTRA), q);
    ck_assert_int_eq(layout_group_size(lay, DIM_DP_INTER), N);
    layout_group(lay, DIM_DP_INTRA, 0, intra);
    layout_group(lay, DIM_DP_INTER, 0, inter);
    for (int k = 0; k < q; k++)
        ck_assert_msg(intra[k] == k && intra[k] / gpn == 0, "shard group member %d is rank %d", k,
                      intra[k]);
    for (int k = 0; k < N; k++)
        ck_assert_msg(inter[k] == k * gpn, "replicate group member %d is rank %d", k, inter[k]);
    FsdpCheck c;
    fsdp_check_init(&c, sc, &w, DIM_DP_INTRA);
    int ar = 0, at_once = 0;
    SimTime last_ar = 0, opt_begin = -1;
    SimTime late_rs_end = -1, last_ar_begin = -1; /* the last allreduce's */
    for (guint i = 0; i < w.ran->len; i++) {
        const Ran *r = &g_array_index(w.ran, Ran, i);
        if (r->t.kind == TASK_COMPUTE && r->t.phase == PHASE_OPTIMIZER)
            opt_begin = r->begin;
        if (r->t.kind != TASK_COLL)
            continue;
        int g = c.g, rs = c.rs;
        if (fsdp_check(&c, r)) {
            if (r->t.op == COLL_ALLGATHER && g < c.U - 1) { /* forward: alone on the links */
                SimTime alone = coll_time_alone(sc, COLL_ALLGATHER, intra, q, r->t.bytes);
                ck_assert_msg(r->end - r->begin == alone,
                              "forward allgather %d took %lld ps, alone over ranks 0..7 %lld", g,
                              (long long)(r->end - r->begin), (long long)alone);
            }
            if (r->t.op == COLL_REDUCE_SCATTER)
                ck_assert_msg(ar == rs, "reduce-scatter %d before allreduce %d", rs, ar);
        } else if (r->t.op == COLL_ALLREDUCE) {
            ck_assert_int_lt(ar, c.nrs);
            ck_assert_int_eq(r->t.dim, DIM_DP_INTER);
            ck_assert_int_eq(r->t.stream, STREAM_DP_ALLREDUCE);
            ck_assert_double_eq_tol(r->t.bytes, c.rs_params[ar] * E / q, 1e-6);
            ck_assert_msg(ar + 1 == rs, "allreduce %d follows reduce-scatter %d", ar, rs - 1);
            SimTime rs_end = c.last_rs, want = MAX(rs_end, last_ar);
            ck_assert_msg(r->begin == want,
                          "allreduce %d began at %lld ps; its reduce-scatter ended at %lld, the "
                          "allreduce before at %lld",
                          ar, (long long)r->begin, (long long)rs_end, (long long)last_ar);
            at_once += r->begin == rs_end;
            late_rs_end = rs_end;
            last_ar_begin = r->begin;
            last_ar = r->end;
            ar++;
        } else {
            ck_abort_msg("FSDP HYBRID_SHARD issued a %s", coll_op_name(r->t.op));
        }
    }
    ck_assert_int_eq(c.g, c.ngather);
    ck_assert_int_eq(c.rs, c.nrs);
    ck_assert_int_eq(ar, c.nrs);
    /* which of the two: the shard of a layer (2 x 1/8 of 50 M parameters over the NICs) is
     * all-reduced before the next unit's backward and reduce-scatter end, so every allreduce
     * starts the picosecond its reduce-scatter ends; the root's too: its reduce-scatter (the
     * embedding's and head's gradients, four layers' worth) outlasts layer 0's allreduce */
    ck_assert_int_eq(at_once, c.nrs);
    ck_assert_msg(late_rs_end == last_ar_begin,
                  "the root's allreduce began at %lld ps, its reduce-scatter ended at %lld",
                  (long long)last_ar_begin, (long long)late_rs_end);
    ck_assert_msg(opt_begin >= last_ar && opt_begin >= c.last_rs,
                  "the optimizer began at %lld ps, the last allreduce ended at %lld",
                  (long long)opt_begin, (long long)last_ar);
    double P = c.P;
    const ModelMemory *m = &sim_summary(run)->memory;
    ck_assert_double_eq_tol(m->params_bytes, 4 * P / q, 1.0);
    ck_assert_double_eq_tol(m->grads_bytes, 4 * P / q, 1.0);
    ck_assert_double_eq_tol(m->optimizer_bytes, 8 * P / q, 1.0);
    ck_assert_double_eq_tol(m->buffers_bytes, c.peak * E, 1.0);
    const Stats *st = sim_stats(run);
    ck_assert_double_eq_tol(stats_rank_volume(st, 0, COLL_ALLGATHER, DIM_DP_INTRA),
                            (2 * P - c.root) * E * (q - 1) / q, 1.0);
    ck_assert_double_eq_tol(stats_rank_volume(st, 0, COLL_REDUCE_SCATTER, DIM_DP_INTRA),
                            P * E * (q - 1) / q, 1.0);
    ck_assert_double_eq_tol(stats_rank_volume(st, 0, COLL_ALLREDUCE, DIM_DP_INTER),
                            2 * (P * E / q) * (N - 1) / N, 1.0);
    ck_assert(stats_rank_calls(st, 0, COLL_ALLGATHER, DIM_DP) == 0);
    g_autoptr(SimRun) all = run_ok(sc, DEDUP_OFF);
    assert_same_inventory(run, all);
    g_array_unref(w.ran);
}
END_TEST

/* hybrid_shard: false, and a shard group of every data-parallel rank, are FULL_SHARD and
 * SHARD_GRAD_OP exactly: the same iteration, communication rows and memory as without the key
 * (test_fsdp_full_shard pins those on their closed forms). */
START_TEST(test_fsdp_hybrid_shard_off) {
    const char *values[] = {"parallel.hybrid_shard=false", "parallel.hybrid_shard=16"};
    for (int zero = 2; zero <= 3; zero++) {
        g_autofree char *z = g_strdup_printf("parallel.zero=%d", zero);
        const char *plain[] = {"training.framework=pytorch", z, NULL};
        g_autoptr(Scenario) s0 = load_ok("1.3B_zero3.yaml", plain);
        g_autoptr(SimRun) r0 = run_ok(s0, -1);
        for (size_t v = 0; v < G_N_ELEMENTS(values); v++) {
            const char *sets[] = {"training.framework=pytorch", z, values[v], NULL};
            g_autoptr(Scenario) sc = load_ok("1.3B_zero3.yaml", sets);
            ck_assert_int_eq(sc->fsdp_shard, 0);
            g_autoptr(SimRun) run = run_ok(sc, -1);
            assert_same_inventory(run, r0);
            ck_assert(memcmp(&sim_summary(run)->memory, &sim_summary(r0)->memory,
                             sizeof(ModelMemory)) == 0);
            ck_assert(stats_rank_calls(sim_stats(run), 0, COLL_ALLREDUCE, DIM_DP_INTER) == 0);
        }
    }
}
END_TEST

/* Megatron-FSDP (framework megatron, zero 3; framework.c cites its code): each layer's bucket
 * allgathered in bf16 before its forward, the next one prefetched in the layer's _pre_forward
 * with no rate limit, so in forward each gather starts the moment the one before ends (the 22
 * layers from layer 2 on ahead of FSDP1's defaults, as test_fsdp_no_gather_limit), and in
 * backward as BACKWARD_PRE (issued as the layer after it in backward order starts); the
 * embedding, final norm and head gathered once as the forward starts and kept; every layer's
 * gradients reduce-scattered as its backward ends, in fp32 (grad_reduce_in_fp32: 4 bytes an
 * element, twice FSDP1's bf16), then the embedding's and head's. Memory: Megatron's 6 + 12
 * bytes per parameter (bf16 weights, fp32 gradients, fp32 main weights and moments), all of it
 * sharded over the 8 GCDs; the buffers hold every layer of the forward at most (the plan's
 * bound without a limit). Its FSDP1 knobs are refused: Megatron-FSDP has none. */
START_TEST(test_megatron_fsdp) {
    const char *sets[] = {"training.framework=megatron", "training.precision=bf16", "nodes=1", OFF,
                          NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_zero3.yaml", sets);
    ck_assert(sc->fsdp_fwd_prefetch && !sc->fsdp_limit_gathers);
    ck_assert_int_eq(sc->fsdp_bwd_prefetch, FSDP_BWD_PRE);
    Watch w;
    g_autoptr(SimRun) run = watched(sc, &w);
    FsdpCheck c;
    fsdp_check_init(&c, sc, &w, DIM_DP);
    c.rs_e = 4.0;
    for (guint i = 0; i < w.ran->len; i++) {
        const Ran *r = &g_array_index(w.ran, Ran, i);
        if (r->t.kind == TASK_COLL && !fsdp_check(&c, r))
            ck_abort_msg("Megatron-FSDP issued a %s", coll_op_name(r->t.op));
    }
    int L = sc->model.layers;
    ck_assert_int_eq(c.g, 2 * L + 1);
    ck_assert_int_eq(c.rs, L + 1);
    ck_assert_int_eq(c.moved, L - 2);
    ck_assert_msg(c.first_g == 0, "the first allgather began at %lld ps", (long long)c.first_g);
    double P = c.P, d = sc->dp;
    const ModelMemory *m = &sim_summary(run)->memory;
    ck_assert_double_eq_tol(m->params_bytes, 2 * P / d, 1.0);
    ck_assert_double_eq_tol(m->grads_bytes, 4 * P / d, 1.0);
    ck_assert_double_eq_tol(m->optimizer_bytes, 12 * P / d, 1.0);
    ck_assert_double_eq_tol(c.peak, c.root + L * c.params[1], 1e-6);
    ck_assert_msg(fabs(m->buffers_bytes - c.peak * E) <= 1.0,
                  "gathered buffers %.0f bytes, closed form (root + %d layers) %.0f",
                  m->buffers_bytes, L, c.peak * E);
    g_array_unref(w.ran);
    const char *knob[] = {"training.framework=megatron", "training.fsdp_forward_prefetch=true",
                          NULL};
    load_fails("1.3B_zero3.yaml", knob, "PyTorch FSDP's setting");
    const char *two[] = {"training.framework=megatron", "parallel.zero=2", NULL};
    load_fails("1.3B_zero3.yaml", two, "optim_grads is not modelled");
}
END_TEST

int main(void) {
    Suite *s = suite_create("fsdp");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_fsdp_full_shard);
    tcase_add_test(tc, test_fsdp_backward_post);
    tcase_add_test(tc, test_fsdp_backward_none);
    tcase_add_test(tc, test_fsdp_forward_prefetch);
    tcase_add_test(tc, test_fsdp_no_gather_limit);
    tcase_add_test(tc, test_fsdp_shard_grad_op);
    tcase_add_test(tc, test_fsdp_hybrid_shard);
    tcase_add_test(tc, test_fsdp_hybrid_shard_off);
    tcase_add_test(tc, test_megatron_fsdp);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
