/* search: enumeration of layouts.
 *
 * Rules, each a choice practitioners make and the study's software imposes:
 * - TP stays inside a node (Megatron-LM places tensor-parallel ranks on one node: their
 *   allreduces are on the critical path; Narayanan et al. 2021, Sec. 3.3), so TP divides the GPUs
 *   per node; the scenario loader then checks it divides heads and MLP width.
 * - PP divides the layers (the loader checks it) and TP x PP divides the GPUs; DP is the rest.
 * - ZeRO stages 2 and 3 are not combined with PP: DeepSpeed's pipeline engine supports ZeRO
 *   stage 0 and 1 only. ZeRO with DP 1 shards nothing and is left out (it equals stage 0).
 * - The global batch is fixed, so every layout does the same work and iteration time ranks them:
 *   grad_accum = global_batch / (micro_batch x DP), which must be whole.
 * - Recomputation: none, selective, full. The pipeline schedule is the scenario's.
 * - Under the interleaved schedule, also the model chunks per stage (virtual_stages, a column of
 *   its own): every v with pp x v dividing the layers, the micro-batches a multiple of pp
 *   (Megatron-LM's rules); a layout with pp 1 runs 1F1B (nothing to interleave).
 * - When the scenario turns sequence parallelism on, every layout with TP > 1 with it and without
 *   (a sequence_parallel column of its own). */
#include "search.h"

const char *const search_keys[] = {"tp",        "pp", "dp", "zero", "micro_batch", "micro_batches",
                                   "recompute", NULL};

/* The columns after search_keys: virtual_stages under a chunked schedule, sequence_parallel when
 * the scenario turns it on; [chunked][sp]. */
static const char *const *keys_for(gboolean chunked, gboolean sp) {
    static const char *const k[2][2][10] = {
        {{"tp", "pp", "dp", "zero", "micro_batch", "micro_batches", "recompute", NULL},
         {"tp", "pp", "dp", "zero", "micro_batch", "micro_batches", "recompute",
          "sequence_parallel", NULL}},
        {{"tp", "pp", "dp", "zero", "micro_batch", "micro_batches", "recompute", "virtual_stages",
          NULL},
         {"tp", "pp", "dp", "zero", "micro_batch", "micro_batches", "recompute", "virtual_stages",
          "sequence_parallel", NULL}}};
    return k[chunked != 0][sp != 0];
}

/* One layout as a point; v 0: no virtual_stages column (a schedule without chunks); sp < 0: no
 * sequence_parallel column, else its value. */
static void add_point(Sweep *sw, const SearchSpace *space, int tp, int pp, int dp, int zero, int b,
                      int64_t accum, int rc, int v, int sp) {
    static const char *const recompute[] = {"none", "selective", "full"};
    char *l[9] = {g_strdup_printf("%d", tp),
                  g_strdup_printf("%d", pp),
                  g_strdup_printf("%d", dp),
                  g_strdup_printf("%d", zero),
                  g_strdup_printf("%d", b),
                  g_strdup_printf("%" G_GINT64_FORMAT, accum),
                  g_strdup(recompute[rc]),
                  NULL,
                  NULL};
    int n = 7;
    if (v)
        l[n++] = g_strdup_printf("%d", v);
    if (sp >= 0)
        l[n++] = g_strdup(sp ? "true" : "false");
    const char *labels[10] = {l[0], l[1], l[2], l[3], l[4], l[5], l[6], l[7], l[8], NULL};
    g_autofree char *s0 = g_strdup_printf("nodes=%d", space->nodes);
    g_autofree char *s1 = g_strdup_printf("parallel.tp=%d", tp);
    g_autofree char *s2 = g_strdup_printf("parallel.pp=%d", pp);
    g_autofree char *s3 = g_strdup_printf("parallel.zero=%d", zero);
    g_autofree char *s4 = g_strdup_printf("training.micro_batch=%d", b);
    g_autofree char *s5 = g_strdup_printf("training.grad_accum=%" G_GINT64_FORMAT, accum);
    g_autofree char *s6 =
        g_strdup_printf("training.global_batch=%" G_GINT64_FORMAT, space->global_batch);
    g_autofree char *s7 = g_strdup_printf("training.recompute=%s", recompute[rc]);
    /* pp 1 has nothing to interleave: it runs 1F1B */
    g_autofree char *s8 = g_strdup_printf("parallel.schedule=%s", pp > 1 ? "interleaved" : "1f1b");
    g_autofree char *s9 = g_strdup_printf("parallel.virtual_stages=%d", v);
    g_autofree char *s10 =
        g_strdup_printf("parallel.sequence_parallel=%s", sp > 0 ? "true" : "false");
    char *sets[13] = {s0, s1, s2, "parallel.dp=auto", s3, s4, s5, s6, s7, NULL};
    int k = 9;
    if (v) {
        sets[k++] = s8;
        sets[k++] = s9;
    }
    if (sp >= 0)
        sets[k++] = s10;
    sets[k] = NULL;
    sweep_add_point(sw, keys_for(v != 0, sp >= 0), labels, sets);
    for (int i = 0; i < 9; i++)
        g_free(l[i]);
}

/* The layout under every sequence-parallel choice the scenario opens (both at tp > 1 when it
 * turns it on; none otherwise). */
static void add_sp(Sweep *sw, const Scenario *sc, const SearchSpace *space, int tp, int pp, int dp,
                   int zero, int b, int64_t accum, int rc, int v, SearchCounts *counts) {
    if (!sc->sequence_parallel) {
        add_point(sw, space, tp, pp, dp, zero, b, accum, rc, v, -1);
        counts->enumerated++;
        return;
    }
    for (int sp = 0; sp <= (tp > 1); sp++) {
        add_point(sw, space, tp, pp, dp, zero, b, accum, rc, v, sp);
        counts->enumerated++;
    }
}

void search_add_layouts(Sweep *sw, const Scenario *sc, const SearchSpace *space,
                        SearchCounts *counts) {
    gboolean chunked = schedule_get(sc->schedule)->chunked;
    int per_node = sc->topo.gpus_per_node, gpus = space->nodes * per_node;
    int64_t B = space->global_batch;
    *counts = (SearchCounts){0};
    for (int tp = 1; tp <= per_node; tp++) {
        if (per_node % tp != 0)
            continue;
        for (int pp = 1; pp <= sc->model.layers; pp++) {
            if (sc->model.layers % pp != 0 || gpus % (tp * pp) != 0)
                continue;
            int dp = gpus / (tp * pp);
            for (int zero = 0; zero <= 3; zero++) {
                for (int m = 0; m < space->n_micro; m++) {
                    int b = space->micro_batches[m];
                    for (int rc = 0; rc < 3; rc++) {
                        if ((zero >= 2 && pp > 1) || (zero > 0 && dp == 1)) {
                            counts->unsupported++;
                            continue;
                        }
                        if (B % ((int64_t)b * dp) != 0) {
                            counts->batch++;
                            continue;
                        }
                        int64_t accum = B / ((int64_t)b * dp);
                        if (!chunked) {
                            add_sp(sw, sc, space, tp, pp, dp, zero, b, accum, rc, 0, counts);
                            continue;
                        }
                        for (int v = 1; v <= sc->model.layers / pp; v++) {
                            if (sc->model.layers % (pp * v) != 0 || (pp == 1 && v > 1))
                                continue;
                            if (pp > 1 && accum % pp != 0) {
                                counts->batch++;
                                break;
                            }
                            add_sp(sw, sc, space, tp, pp, dp, zero, b, accum, rc, v, counts);
                        }
                    }
                }
            }
        }
    }
}
