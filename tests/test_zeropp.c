/* ZeRO++ (Wang et al. 2023, arXiv 2306.10209; sim/training/zeropp.c): the executed inventory
 * against the paper's volumes to the byte, per dimension and link class (dp: across nodes,
 * dp_intra: within a node, dp_inter: across nodes), each switch alone and all three; hpZ's memory;
 * an iteration on a closed form; bad input.
 *
 * Derivation (per rank per iteration, one micro-batch, d DP ranks, q per node, N = d/q nodes,
 * P parameters of the rank's stage, M = 2P bytes; a collective over g ranks of message m moves
 * m(g-1)/g, the study's Sec. III; B(x) DeepSpeed's block count for a shard of x elements):
 *   ZeRO-3       allgather dp 2M(d-1)/d, reduce_scatter dp M(d-1)/d: 3M(d-1)/d.
 *   qwZ          per tensor of n elements and per use, int8 values n(g-1)/g plus fp32 scales
 *                4 B(ceil(n/g)) g (g-1)/g: forward 0.5M(d-1)/d + 4(d-1) sum B(ceil(n/d)).
 *   hpZ          the backward use over the node: allgather dp_intra M(q-1)/q (fp16), or with qwZ
 *                0.5M(q-1)/q + 4(q-1) sum B(ceil(n/q)); nothing of it across nodes.
 *   qgZ          tensor by tensor (all_to_all_quant_reduce): a weight of n elements whose larger
 *                dimension is w gets all_to_all dp_intra (n/2 + 4 max(w, W))(q-1)/q, then
 *                all_to_all dp_inter (n/(2q) + 4 max(w, W)/q)(N-1)/N per GPU (W: the world); the
 *                q GPUs of a node send about 0.25 n e (N-1)/N across nodes: the paper's 0.25M,
 *                against ZeRO-3's M. A vector (1-D) is reduce-scattered alone over dp:
 *                n e (d-1)/d. */
#include <math.h>
#include <string.h>

#include <glib/gstdio.h>

#include "util.h"
#include "workload.h"
#include "zeropp.h"

#define E 2.0 /* fp16 bytes */
#define OFF "sim.host=false", "sim.interference=false"
/* One gather per tensor, every tensor gathered at every use: the derivation above is per tensor
 * (DeepSpeed coalesces a fetch's tensors into one call, keeps tensors under
 * stage3_param_persistence_threshold whole and units reused within stage3_max_reuse_distance;
 * test_schemes.c and test_gathers.c pin those) */
#define PER_TENSOR                                                                                 \
    "parallel.prefetch_bucket_size=0", "parallel.persistence_threshold=0",                         \
        "parallel.max_reuse_distance=0"

static double row_volume(const SimRun *run, CollOp op, Dim dim) {
    return stats_rank_volume(sim_stats(run), sim_index_of(run, 0), op, dim);
}

static double stage_params(const Scenario *sc) {
    return model_stage_params(&sc->model, sc->seq_len, sc->tp, sc->pp, 0);
}

/* Sum over every tensor of the stage of f(n) (one use of each unit). */
static double over_tensors(const Scenario *sc, double (*f)(double n, int g), int g) {
    g_autoptr(GArray) units = model_stage_units(&sc->model, sc->seq_len, sc->tp, sc->pp, 0);
    double total = 0;
    for (guint i = 0; i < units->len; i++) {
        double sizes[32];
        int n = model_unit_tensors(&sc->model, &g_array_index(units, ParamUnit, i), sc->seq_len,
                                   sc->tp, sizes, 32);
        for (int k = 0; k < n; k++)
            total += f(sizes[k], g);
    }
    return total;
}

/* qgZ's volumes, summed over the stage's tensors (the derivation above): the weights' intra- and
 * inter-node all-to-alls per GPU, and the vectors' reduce-scatters; the count of each. */
typedef struct {
    double intra, inter, rs;
    int weights, vectors;
} QgzVolume;

static QgzVolume qgz_volume(const Scenario *sc) {
    g_autoptr(GArray) units = model_stage_units(&sc->model, sc->seq_len, sc->tp, sc->pp, 0);
    double q = sc->zpp.local, N = sc->dp / q, d = sc->dp, W = sc->gpus;
    QgzVolume v = {0};
    for (guint i = 0; i < units->len; i++) {
        double sizes[32], widths[32];
        int n = model_unit_tensor_widths(&sc->model, &g_array_index(units, ParamUnit, i),
                                         sc->seq_len, sc->tp, sizes, widths, 32);
        for (int k = 0; k < n; k++) {
            if (widths[k] > 0 && fmod(sizes[k], 2 * W) == 0) {
                double g = MAX(widths[k], W);
                v.intra += (sizes[k] / 2 + 4 * g) * (q - 1) / q;
                v.inter += (sizes[k] / (2 * q) + 4 * g / q) * (N - 1) / N;
                v.weights++;
            } else {
                v.rs += sizes[k] * E * (d - 1) / d;
                v.vectors++;
            }
        }
    }
    return v;
}

static double scale_bytes(double n, int g) { /* the scales of one quantized gather over g */
    return 4 * zeropp_weight_blocks(ceil(n / g)) * g;
}

static double qwz_volume(const Scenario *sc, int g) { /* int8 values + scales, one use */
    return stage_params(sc) * (g - 1) / g + over_tensors(sc, scale_bytes, g) * (g - 1) / g;
}

static void check(const char *what, double got, double want) {
    ck_assert_msg(fabs(got - want) < 1.0, "%s: %.3f bytes, closed form %.3f", what, got, want);
}

/* All three switches on 2 Frontier nodes: d = 16, q = 8, N = 2. */
START_TEST(test_volumes_all_on) {
    const char *sets[] = {PER_TENSOR, NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_zeropp.yaml", sets);
    g_autoptr(SimRun) run = run_ok(sc, -1);
    int d = sc->dp, q = sc->zpp.local, N = d / q;
    ck_assert_int_eq(d, 16);
    ck_assert_int_eq(q, 8);
    double P = stage_params(sc), M = P * E;
    /* forward (first use): across nodes, quantized: 0.5M(d-1)/d plus the scales */
    double fwd = row_volume(run, COLL_ALLGATHER, DIM_DP);
    check("allgather dp (qwZ forward)", fwd, qwz_volume(sc, d));
    double scales = over_tensors(sc, scale_bytes, d) * (d - 1) / d;
    check("forward values", fwd - scales, 0.5 * M * (d - 1) / d);
    ck_assert_msg(scales < 1e-3 * fwd, "scales %.0f of %.0f bytes", scales, fwd);
    /* backward (hpZ, quantized): only within the node */
    check("allgather dp_intra (hpZ backward)", row_volume(run, COLL_ALLGATHER, DIM_DP_INTRA),
          qwz_volume(sc, q));
    /* gradients: qgZ's two all-to-alls per weight, a reduce-scatter per vector: 4 x 24 + 2 weights
     * and 6 x 24 + 2 vectors (the study's 8h of vectors per layer stop before the MLP biases) */
    QgzVolume qv = qgz_volume(sc);
    ck_assert_int_eq(qv.weights, 4 * sc->model.layers + 2);
    ck_assert_int_eq(qv.vectors, 6 * sc->model.layers + 2);
    check("all_to_all dp_intra", row_volume(run, COLL_ALL_TO_ALL, DIM_DP_INTRA), qv.intra);
    double inter = row_volume(run, COLL_ALL_TO_ALL, DIM_DP_INTER);
    check("all_to_all dp_inter", inter, qv.inter);
    ck_assert_msg(fabs(q * inter / (0.25 * M * (N - 1) / N) - 1) < 0.01,
                  "a node's gradients across nodes %.0f bytes, 0.25M %.0f", q * inter,
                  0.25 * M * (N - 1) / N);
    check("the vectors' reduce-scatters", row_volume(run, COLL_REDUCE_SCATTER, DIM_DP), qv.rs);
    ck_assert_double_eq(
        stats_rank_calls(sim_stats(run), sim_index_of(run, 0), COLL_ALL_TO_ALL, DIM_DP_INTER),
        2 * qv.weights);
    ck_assert_double_eq(
        stats_rank_calls(sim_stats(run), sim_index_of(run, 0), COLL_REDUCE_SCATTER, DIM_DP),
        qv.vectors);
    ck_assert(row_volume(run, COLL_ALLGATHER, DIM_DP_INTER) == 0);
    /* against ZeRO-3's 3M(d-1)/d: across nodes 0.5M + 0.25M (N-1)/N per GCD's share */
    const char *z3[] = {PER_TENSOR, "parallel.zeropp.qwz=false", "parallel.zeropp.hpz=false",
                        "parallel.zeropp.qgz=false", NULL};
    g_autoptr(Scenario) s3 = load_ok("1.3B_zeropp.yaml", z3);
    g_autoptr(SimRun) r3 = run_ok(s3, -1);
    check("ZeRO-3",
          row_volume(r3, COLL_ALLGATHER, DIM_DP) + row_volume(r3, COLL_REDUCE_SCATTER, DIM_DP),
          3 * M * (d - 1) / d);
}
END_TEST

/* The dp_intra groups lie within one node, the dp_inter groups take one GCD per node (layout.c's
 * strides for LayoutShape.dp_local), with TP 1 and TP 2. */
START_TEST(test_groups_by_link_class) {
    for (int tp = 1; tp <= 2; tp++) {
        g_autofree char *ts = g_strdup_printf("parallel.tp=%d", tp);
        const char *sets[] = {"nodes=4", ts, NULL};
        g_autoptr(Scenario) sc = load_ok("1.3B_zeropp.yaml", sets);
        g_autoptr(Layout) lay = layout_new(workload_layout_shape(sc));
        int g = sc->topo.gpus_per_node, members[64];
        ck_assert_int_eq(layout_group_size(lay, DIM_DP_INTRA), g / tp);
        ck_assert_int_eq(layout_group_size(lay, DIM_DP_INTER), 4);
        for (int r = 0; r < sc->gpus; r++) {
            int n = layout_group_size(lay, DIM_DP_INTRA);
            layout_group(lay, DIM_DP_INTRA, r, members);
            for (int k = 0; k < n; k++) {
                ck_assert_int_eq(members[k] / g, r / g);
                ck_assert_int_eq(members[k] % tp, r % tp);
            }
            n = layout_group_size(lay, DIM_DP_INTER);
            layout_group(lay, DIM_DP_INTER, r, members);
            for (int k = 0; k < n; k++)
                ck_assert_int_eq(members[k], k * g + r % g);
        }
    }
}
END_TEST

/* Each switch on its own changes only its own collectives. */
START_TEST(test_each_switch_alone) {
    const char *qwz[] = {PER_TENSOR, "parallel.zeropp.hpz=false", "parallel.zeropp.qgz=false",
                         NULL};
    g_autoptr(Scenario) sw = load_ok("1.3B_zeropp.yaml", qwz);
    g_autoptr(SimRun) rw = run_ok(sw, -1);
    int d = sw->dp, q = 8;
    double P = stage_params(sw), M = P * E;
    check("qwZ: both allgathers quantized", row_volume(rw, COLL_ALLGATHER, DIM_DP),
          2 * qwz_volume(sw, d));
    check("qwZ: reduce-scatter as ZeRO-3", row_volume(rw, COLL_REDUCE_SCATTER, DIM_DP),
          M * (d - 1) / d);

    const char *hpz[] = {PER_TENSOR, "parallel.zeropp.qwz=false", "parallel.zeropp.qgz=false",
                         NULL};
    g_autoptr(Scenario) sh = load_ok("1.3B_zeropp.yaml", hpz);
    g_autoptr(SimRun) rh = run_ok(sh, -1);
    check("hpZ: forward fp16 across nodes", row_volume(rh, COLL_ALLGATHER, DIM_DP),
          M * (d - 1) / d);
    check("hpZ: backward fp16 in the node", row_volume(rh, COLL_ALLGATHER, DIM_DP_INTRA),
          M * (q - 1) / q);

    const char *qgz[] = {PER_TENSOR, "parallel.zeropp.qwz=false", "parallel.zeropp.hpz=false",
                         NULL};
    g_autoptr(Scenario) sg = load_ok("1.3B_zeropp.yaml", qgz);
    g_autoptr(SimRun) rg = run_ok(sg, -1);
    check("qgZ: allgathers as ZeRO-3", row_volume(rg, COLL_ALLGATHER, DIM_DP), 2 * M * (d - 1) / d);
    check("qgZ: the vectors reduce-scattered", row_volume(rg, COLL_REDUCE_SCATTER, DIM_DP),
          qgz_volume(sg).rs);
    ck_assert(row_volume(rg, COLL_ALL_TO_ALL, DIM_DP_INTER) > 0);

    /* one node: DeepSpeed's qgZ falls back to the reduce-scatter */
    const char *one[] = {PER_TENSOR, "nodes=1", "parallel.zeropp.qwz=false",
                         "parallel.zeropp.hpz=false", NULL};
    g_autoptr(Scenario) s1 = load_ok("1.3B_zeropp.yaml", one);
    g_autoptr(SimRun) r1 = run_ok(s1, -1);
    check("qgZ on one node", row_volume(r1, COLL_REDUCE_SCATTER, DIM_DP), M * 7 / 8);
}
END_TEST

/* hpZ keeps a secondary partition of P/q fp16 parameters beside ZeRO-3's P/d. */
START_TEST(test_hpz_memory) {
    const char *z3[] = {PER_TENSOR, "parallel.zeropp.qwz=false", "parallel.zeropp.hpz=false",
                        "parallel.zeropp.qgz=false", NULL};
    g_autoptr(Scenario) s3 = load_ok("1.3B_zeropp.yaml", z3);
    g_autoptr(SimRun) r3 = run_ok(s3, -1);
    double P = stage_params(s3);
    for (int q = 2; q <= 8; q *= 2) {
        g_autofree char *hs = g_strdup_printf("parallel.zeropp.hpz=%d", q);
        const char *sets[] = {PER_TENSOR, "parallel.zeropp.qgz=false", hs, NULL};
        g_autoptr(Scenario) sc = load_ok("1.3B_zeropp.yaml", sets);
        g_autoptr(SimRun) run = run_ok(sc, -1);
        const ModelMemory *m = &sim_summary(run)->memory, *m3 = &sim_summary(r3)->memory;
        ck_assert_double_eq_tol(m->hpz_bytes, P / q * E, 1e-3);
        ck_assert_double_eq_tol(m->total_bytes - m3->total_bytes, P / q * E, 1e-3);
        g_autofree char *json = json_of(run);
        ck_assert(strstr(json, "\"hpz_params_bytes\""));
    }
    g_autofree char *j3 = json_of(r3);
    ck_assert(!strstr(j3, "hpz_params_bytes")); /* other reports keep their keys */
}
END_TEST

/* One DP replica per node simulated (dedup) gives the report every rank gives. The last case
 * has an hpZ partition (2) smaller than the 4 replicas whose pipeline stages share a node: a
 * block of 2 would leave the node's links half loaded by the sends (3.748424 s deduplicated
 * against 3.752981 s with every rank), so every rank is simulated (workload_replicas_exact). */
START_TEST(test_dedup_matches_all_ranks) {
    const char *cases[][7] = {{"nodes=2", NULL},
                              {"nodes=4", "parallel.zeropp.hpz=false", NULL},
                              {"nodes=4", "parallel.tp=2", NULL},
                              {"nodes=4", "parallel.pp=8", "training.grad_accum=8",
                               "parallel.zeropp.hpz=2", "parallel.zeropp.qwz=false",
                               "parallel.zeropp.qgz=false", NULL}};
    for (size_t c = 0; c < G_N_ELEMENTS(cases); c++) {
        g_autoptr(Scenario) sc = load_ok("1.3B_zeropp.yaml", cases[c]);
        ck_assert_int_eq(workload_replicas_exact(sc), c + 1 < G_N_ELEMENTS(cases));
        g_autoptr(SimRun) a = run_ok(sc, -1), b = run_ok(sc, 0);
        ck_assert_int_eq(sim_summary(a)->iteration, sim_summary(b)->iteration);
        for (Dim dim = DIM_DP; dim < DIM_COUNT; dim++)
            for (CollOp op = 0; op < COLL_OP_COUNT; op++)
                ck_assert_double_eq_tol(
                    stats_rank_volume(sim_stats(a), sim_index_of(a, 0), op, dim),
                    stats_rank_volume(sim_stats(b), sim_index_of(b, 0), op, dim), 1e-6);
    }
}
END_TEST

/* A kernel of the chain, by the GPU model: a streaming memory-bound op. */
static double kernel_ps(const Scenario *sc, double bytes) {
    const DeviceSpec *dev = &sc->topo.device;
    ModelOp op = {.name = "zeropp_quantize", .kind = OP_ELEMENTWISE, .bytes = bytes};
    double t = (double)device_op_time(dev, &op, PREC_FP16);
    double closed = bytes / (dev->hbm_bandwidth * dev->mem_efficiency[MEM_STREAMING]) * 1e12 +
                    (double)dev->launch_overhead;
    ck_assert_msg(fabs(t - closed) <= 1.0, "kernel %.0f ps, bytes / bandwidth %.0f ps", t, closed);
    return t;
}

/* Alone time of one use's qwZ gathers over members (g ranks): per tensor quantize the shard,
 * allgather the int8 values and the scales, dequantize. */
static double qwz_gathers_alone(const Scenario *sc, const int *members, int g) {
    g_autoptr(GArray) units = model_stage_units(&sc->model, sc->seq_len, sc->tp, 1, 0);
    double total = 0;
    for (guint i = 0; i < units->len; i++) {
        double sizes[32];
        int n = model_unit_tensors(&sc->model, &g_array_index(units, ParamUnit, i), sc->seq_len,
                                   sc->tp, sizes, 32);
        for (int k = 0; k < n; k++) {
            double x = sizes[k], shard = ceil(x / g), blocks = zeropp_weight_blocks(shard);
            total += kernel_ps(sc, shard * E + shard + 4 * blocks);
            total += (double)coll_time_alone(sc, COLL_ALLGATHER, members, g, x);
            total += (double)coll_time_alone(sc, COLL_ALLGATHER, members, g, 4 * blocks * g);
            total += kernel_ps(sc, x + 4 * blocks * g + x * E);
        }
    }
    return total;
}

/* Without prefetch every unit's gathers are exposed, one after another: the iteration is
 * compute + the forward gathers across the 16 GCDs + the backward gathers within the node + the
 * one reduce-scatter after backward, each alone on the network. */
START_TEST(test_on_demand_closed_form) {
    const char *sets[] = {PER_TENSOR, "parallel.bucket_size=100GB", "parallel.zeropp.qgz=false",
                          OFF, NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_zeropp.yaml", sets);
    g_autoptr(SimRun) run = run_ok(sc, -1);
    const SimSummary *s = sim_summary(run);
    int dp[16], node[8];
    for (int i = 0; i < 16; i++)
        dp[i] = i;
    for (int i = 0; i < 8; i++)
        node[i] = i;
    double P = stage_params(sc);
    double want = (double)s->critical.compute + qwz_gathers_alone(sc, dp, 16) +
                  qwz_gathers_alone(sc, node, 8) +
                  (double)coll_time_alone(sc, COLL_REDUCE_SCATTER, dp, 16, P * E);
    ck_assert_msg(fabs((double)s->iteration - want) <= 1.0, "iteration %.0f ps, closed form %.0f",
                  (double)s->iteration, want);
}
END_TEST

/* qgZ with prefetch off and one bucket: the iteration is compute + ZeRO-3's fp16 gathers (forward
 * and backward across the 16 GCDs) + what replaces the reduce-scatter, tensor by tensor in the
 * bucket's order (reverse registration): for a weight of n elements and larger dimension w,
 * swizzled quantization, the int4 values' and the max(w, 16) scales' all-to-alls in the node, the
 * quantized reduction, both all-to-alls across the nodes, the dequantize-and-average; for a
 * vector, a reduce-scatter over the 16 GCDs. The eight dp_inter all-to-alls of a node run at once
 * and share its NICs; with contention off (each flow alone at its bottleneck) each takes its alone
 * time, which makes the closed form exact. */
START_TEST(test_qgz_closed_form) {
    const char *sets[] = {PER_TENSOR,
                          "parallel.bucket_size=100GB",
                          "parallel.zeropp.qwz=false",
                          "parallel.zeropp.hpz=false",
                          "sim.contention=false",
                          OFF,
                          NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_zeropp.yaml", sets);
    g_autoptr(SimRun) run = run_ok(sc, -1);
    const SimSummary *s = sim_summary(run);
    int dp[16], node[8], across[2] = {0, 8};
    for (int i = 0; i < 16; i++)
        dp[i] = i;
    for (int i = 0; i < 8; i++)
        node[i] = i;
    double gathers = gathers_alone(sc, dp, 16, E), q = 8, chain = 0;
    g_autoptr(GArray) units = model_stage_units(&sc->model, sc->seq_len, sc->tp, 1, 0);
    for (guint i = 0; i < units->len; i++) {
        double sizes[32], widths[32];
        int nt = model_unit_tensor_widths(&sc->model, &g_array_index(units, ParamUnit, i),
                                          sc->seq_len, sc->tp, sizes, widths, 32);
        for (int k = 0; k < nt; k++) {
            double n = sizes[k];
            if (widths[k] == 0) {
                chain += (double)coll_time_alone(sc, COLL_REDUCE_SCATTER, dp, 16, n * E);
                continue;
            }
            double v1 = n / 2, s1 = 4 * MAX(widths[k], 16), v2 = v1 / q, s2 = s1 / q;
            chain += kernel_ps(sc, n * E + v1 + s1) +
                     (double)coll_time_alone(sc, COLL_ALL_TO_ALL, node, 8, v1) +
                     (double)coll_time_alone(sc, COLL_ALL_TO_ALL, node, 8, s1) +
                     kernel_ps(sc, v1 + s1 + v2 + s2) +
                     (double)coll_time_alone(sc, COLL_ALL_TO_ALL, across, 2, v2) +
                     (double)coll_time_alone(sc, COLL_ALL_TO_ALL, across, 2, s2) +
                     kernel_ps(sc, v2 + s2 + 2 * n / q * E + n / 16 * E);
        }
    }
    double want = (double)s->critical.compute + 2 * gathers + chain;
    ck_assert_msg(fabs((double)s->iteration - want) <= 1.0, "iteration %.0f ps, closed form %.0f",
                  (double)s->iteration, want);
}
END_TEST

#define BASE                                                                                       \
    "model: gpt-neox-1.3b\n"                                                                       \
    "topology: frontier\n"                                                                         \
    "nodes: 2\n"                                                                                   \
    "training: {}\n"

static void expect_error(const char *text, const char *const *needles) {
    g_autofree char *path = write_temp_yaml(text);
    g_autoptr(GError) err = NULL;
    g_autoptr(Scenario) sc = scenario_load(path, NULL, &err);
    ck_assert_msg(sc == NULL, "expected an error for:\n%s", text);
    for (const char *const *n = needles; *n; n++) {
        g_autofree char *want = g_strdup_printf(*n, path);
        ck_assert_msg(strstr(err->message, want), "message '%s' lacks '%s'", err->message, want);
    }
    g_unlink(path);
}

START_TEST(test_bad_input) {
    const char *z[] = {"%s:6:11:", "set parallel.zero: 3", NULL};
    expect_error(BASE "parallel:\n  zeropp: {qwz: true}\n  zero: 2\n", z);
    const char *h[] = {"%s:7:28:", "must divide DP 16", NULL};
    expect_error(BASE "parallel:\n  zero: 3\n  zeropp: {qwz: true, hpz: 3}\n", h);
    const char *t[] = {"%s:8:17:", "at least 2 data-parallel ranks in a node", NULL};
    expect_error(BASE "parallel:\n  zero: 3\n  tp: 8\n  zeropp: {hpz: true}\n", t);
    const char *k[] = {"%s:7:", "unknown key 'qwx'", "did you mean 'qwz'", NULL};
    expect_error(BASE "parallel:\n  zero: 3\n  zeropp: {qwx: true}\n", k);
    const char *v[] = {"%s:7:", "'hpz' must be a whole number", NULL};
    expect_error(BASE "parallel:\n  zero: 3\n  zeropp: {hpz: node}\n", v);
}
END_TEST

/* DeepSpeed's block count (CUDAQuantizer.quantize): about 8,000 elements, n a multiple of 8
 * blocks. */
START_TEST(test_weight_blocks) {
    ck_assert_double_eq(zeropp_weight_blocks(8000), 1);
    ck_assert_double_eq(zeropp_weight_blocks(16000), 2);
    ck_assert_double_eq(zeropp_weight_blocks(262144), 64); /* 33 .. 64 divides, 4096 each */
    ck_assert_double_eq(zeropp_weight_blocks(96), 1);
    ck_assert_double_eq(zeropp_weight_blocks(8 * 10007), 10007); /* a prime: one per 8 */
}
END_TEST

int main(void) {
    Suite *s = suite_create("zeropp");
    TCase *tc = tcase_create("zeropp");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_volumes_all_on);
    tcase_add_test(tc, test_groups_by_link_class);
    tcase_add_test(tc, test_each_switch_alone);
    tcase_add_test(tc, test_hpz_memory);
    tcase_add_test(tc, test_dedup_matches_all_ranks);
    tcase_add_test(tc, test_on_demand_closed_form);
    tcase_add_test(tc, test_qgz_closed_form);
    tcase_add_test(tc, test_bad_input);
    tcase_add_test(tc, test_weight_blocks);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
