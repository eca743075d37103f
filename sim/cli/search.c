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
 *   (Megatron-LM's rules); a layout with pp 1 runs 1F1B (nothing to interleave). */
#include "search.h"

const char *const search_keys[] = {"tp",        "pp", "dp", "zero", "micro_batch", "micro_batches",
                                   "recompute", NULL};
const char *const search_keys_chunked[] = {
    "tp", "pp", "dp", "zero", "micro_batch", "micro_batches", "recompute", "virtual_stages", NULL};

/* One layout as a point; v 0: no virtual_stages column (a schedule without chunks). */
static void add_point(Sweep *sw, const SearchSpace *space, int tp, int pp, int dp, int zero, int b,
                      int64_t accum, int rc, int v) {
    static const char *const recompute[] = {"none", "selective", "full"};
    char *l[8] = {g_strdup_printf("%d", tp), g_strdup_printf("%d", pp),
                  g_strdup_printf("%d", dp), g_strdup_printf("%d", zero),
                  g_strdup_printf("%d", b),  g_strdup_printf("%" G_GINT64_FORMAT, accum),
                  g_strdup(recompute[rc]),   v ? g_strdup_printf("%d", v) : NULL};
    const char *labels[9] = {l[0], l[1], l[2], l[3], l[4], l[5], l[6], l[7], NULL};
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
    char *sets[] = {
        s0, s1, s2, "parallel.dp=auto", s3, s4, s5, s6, s7, v ? s8 : NULL, v ? s9 : NULL, NULL};
    sweep_add_point(sw, v ? search_keys_chunked : search_keys, labels, sets);
    for (int i = 0; i < 8; i++)
        g_free(l[i]);
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
                            add_point(sw, space, tp, pp, dp, zero, b, accum, rc, 0);
                            counts->enumerated++;
                            continue;
                        }
                        for (int v = 1; v <= sc->model.layers / pp; v++) {
                            if (sc->model.layers % (pp * v) != 0 || (pp == 1 && v > 1))
                                continue;
                            if (pp > 1 && accum % pp != 0) {
                                counts->batch++;
                                break;
                            }
                            add_point(sw, space, tp, pp, dp, zero, b, accum, rc, v);
                            counts->enumerated++;
                        }
                    }
                }
            }
        }
    }
}
