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
 * - Recomputation: none, selective, full. The pipeline schedule is the scenario's. */
#include "search.h"

const char *const search_keys[] = {"tp",        "pp", "dp", "zero", "micro_batch", "micro_batches",
                                   "recompute", NULL};

void search_add_layouts(Sweep *sw, const Scenario *sc, const SearchSpace *space,
                        SearchCounts *counts) {
    static const char *const recompute[] = {"none", "selective", "full"};
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
                        char *l[7] = {
                            g_strdup_printf("%d", tp), g_strdup_printf("%d", pp),
                            g_strdup_printf("%d", dp), g_strdup_printf("%d", zero),
                            g_strdup_printf("%d", b),  g_strdup_printf("%" G_GINT64_FORMAT, accum),
                            g_strdup(recompute[rc])};
                        const char *labels[8] = {l[0], l[1], l[2], l[3], l[4], l[5], l[6], NULL};
                        g_autofree char *s0 = g_strdup_printf("nodes=%d", space->nodes);
                        g_autofree char *s1 = g_strdup_printf("parallel.tp=%d", tp);
                        g_autofree char *s2 = g_strdup_printf("parallel.pp=%d", pp);
                        g_autofree char *s3 = g_strdup_printf("parallel.zero=%d", zero);
                        g_autofree char *s4 = g_strdup_printf("training.micro_batch=%d", b);
                        g_autofree char *s5 =
                            g_strdup_printf("training.grad_accum=%" G_GINT64_FORMAT, accum);
                        g_autofree char *s6 =
                            g_strdup_printf("training.global_batch=%" G_GINT64_FORMAT, B);
                        g_autofree char *s7 =
                            g_strdup_printf("training.recompute=%s", recompute[rc]);
                        char *sets[] = {s0, s1, s2, "parallel.dp=auto", s3, s4, s5, s6, s7, NULL};
                        sweep_add_point(sw, search_keys, labels, sets);
                        for (int i = 0; i < 7; i++)
                            g_free(l[i]);
                        counts->enumerated++;
                    }
                }
            }
        }
    }
}
