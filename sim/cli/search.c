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
 * - When the scenario turns sequence parallelism or the TP communication overlap on, every layout
 *   with TP > 1 with it and without (a sequence_parallel / tp_comm_overlap column of its own).
 * - Under a zero-bubble schedule (zb-h1, zb-v), every layout with pp > 1 runs it and 1F1B (a
 *   schedule column); pp 1 runs 1F1B (no bubble to fill: the scenario refuses both there). ZB-V
 *   also needs its 2 pp chunks to divide the layers and no GPT-NeoX per-layer synchronisation
 *   with full recomputation (the scenario's rules): a layout without runs 1F1B alone. Its two
 *   chunks are the schedule's, not a virtual_stages column.

 * - A parallelism the scenario opens to the search by setting its size above 1
 *   (scenario_search_dims: context parallelism's parallel.cp), every size 1, 2, 4, ... that its
 *   entry says fits (CP: 2 cp chunks divide the sequence) with TP x PP x its size the GPUs, a
 *   column of its own; DP is then the GPUs over all of them and the global batch micro_batch x DP
 *   x micro-batches, as Megatron-LM counts it (the CP ranks of a replica share its sequences). */
#include "search.h"

#include <string.h>

const char *const search_keys[] = {"tp",        "pp", "dp", "zero", "micro_batch", "micro_batches",
                                   "recompute", NULL};

/* The choices a search adds to a layout beyond search_keys, each its own column when the
 * scenario opens it: virtual_stages (v > 0) under a chunked schedule; sequence_parallel (sp >= 0)
 * when the scenario turns it on; tp_comm_overlap (ov >= 0: its chunks, 0 off) when the scenario
 * asks for the overlap; schedule (non-NULL) under a zero-bubble schedule. */
/* The dimensions the scenario opens (scenario_search_dims) and one choice of their sizes */
typedef struct {
    int n;
    const char *name[SCENARIO_SEARCH_DIMS];
    int size[SCENARIO_SEARCH_DIMS];
} Dims;

typedef struct {
    int v, sp, ov;
    const Dims *dims; /* each a column of its own, after sequence_parallel */
    const char *sched;
    gboolean vshape; /* the scenario's schedule is ZB-V: its points set virtual_stages 2, the
                        1F1B ones 1 (not a column: the schedule implies it) */
} Extra;

/* One layout as a point. */
static void add_point(Sweep *sw, const SearchSpace *space, int tp, int pp, int dp, int zero, int b,
                      int64_t accum, int rc, Extra x) {
    static const char *const recompute[] = {"none", "selective", "full"};
    const char *keys[12 + SCENARIO_SEARCH_DIMS];
    char *l[12 + SCENARIO_SEARCH_DIMS] = {
        g_strdup_printf("%d", tp), g_strdup_printf("%d", pp),
        g_strdup_printf("%d", dp), g_strdup_printf("%d", zero),
        g_strdup_printf("%d", b),  g_strdup_printf("%" G_GINT64_FORMAT, accum),
        g_strdup(recompute[rc])};
    char *sets[16 + SCENARIO_SEARCH_DIMS] = {
        g_strdup_printf("nodes=%d", space->nodes),
        g_strdup_printf("parallel.tp=%d", tp),
        g_strdup_printf("parallel.pp=%d", pp),
        g_strdup("parallel.dp=auto"),
        g_strdup_printf("parallel.zero=%d", zero),
        g_strdup_printf("training.micro_batch=%d", b),
        g_strdup_printf("training.grad_accum=%" G_GINT64_FORMAT, accum),
        g_strdup_printf("training.global_batch=%" G_GINT64_FORMAT, space->global_batch),
        g_strdup_printf("training.recompute=%s", recompute[rc])};
    int n = 7, k = 9;
    for (int i = 0; i < n; i++)
        keys[i] = search_keys[i];
    if (x.v) { /* pp 1 has nothing to interleave: it runs 1F1B */
        keys[n] = "virtual_stages";
        l[n++] = g_strdup_printf("%d", x.v);
        sets[k++] = g_strdup_printf("parallel.schedule=%s", pp > 1 ? "interleaved" : "1f1b");
        sets[k++] = g_strdup_printf("parallel.virtual_stages=%d", x.v);
    }
    if (x.sched) {
        keys[n] = "schedule";
        l[n++] = g_strdup(x.sched);
        sets[k++] = g_strdup_printf("parallel.schedule=%s", x.sched);
        if (x.vshape)
            sets[k++] =
                g_strdup_printf("parallel.virtual_stages=%d", strcmp(x.sched, "1f1b") ? 2 : 1);
    }
    if (x.sp >= 0) {
        keys[n] = "sequence_parallel";
        l[n++] = g_strdup(x.sp ? "true" : "false");
        sets[k++] = g_strdup_printf("parallel.sequence_parallel=%s", x.sp ? "true" : "false");
    }
    for (int i = 0; i < x.dims->n; i++) {
        keys[n] = x.dims->name[i];
        l[n++] = g_strdup_printf("%d", x.dims->size[i]);
        sets[k++] = g_strdup_printf("parallel.%s=%d", x.dims->name[i], x.dims->size[i]);
    }
    if (x.ov >= 0) {
        keys[n] = "tp_comm_overlap";
        l[n++] = g_strdup_printf("%d", x.ov);
        sets[k++] = g_strdup_printf("parallel.tp_comm_overlap=%d", x.ov);
    }
    keys[n] = NULL;
    l[n] = NULL;
    sets[k] = NULL;
    sweep_add_point(sw, keys, (const char *const *)l, sets);
    for (int i = 0; i < n; i++)
        g_free(l[i]);
    for (int i = 0; i < k; i++)
        g_free(sets[i]);
}

/* The layout under every sequence-parallel and overlap choice the scenario opens: both ways at
 * tp > 1 when it turns one on (nothing to split or overlap at tp 1), no column otherwise. */
static void add_choices(Sweep *sw, const Scenario *sc, const SearchSpace *space, int tp, int pp,
                        int dp, const Dims *dims, int zero, int b, int64_t accum, int rc, int v,
                        SearchCounts *counts) {
    int sp_n = sc->sequence_parallel ? 1 + (tp > 1) : 1;
    int ov_n = sc->tp_overlap_chunks > 0 ? 1 + (tp > 1) : 1;
    const Schedule *sched = schedule_get(sc->schedule);
    gboolean zb = sched->split;
    gboolean fits = !sched->vshape || (sc->model.layers % (2 * pp) == 0 &&
                                       !(sc->sync_each_layer && rc == RECOMPUTE_FULL));
    int zb_n = zb ? 1 + (pp > 1 && fits) : 1;
    for (int z = 0; z < zb_n; z++)
        for (int sp = 0; sp < sp_n; sp++)
            for (int ov = 0; ov < ov_n; ov++) {
                Extra x = {.v = v,
                           .sp = sc->sequence_parallel ? sp : -1,
                           .ov = sc->tp_overlap_chunks > 0 ? (ov ? sc->tp_overlap_chunks : 0) : -1,
                           .dims = dims,
                           .sched = !zb ? NULL
                                    : z ? schedule_name(sc->schedule)
                                        : "1f1b",
                           .vshape = sched->vshape};
                add_point(sw, space, tp, pp, dp, zero, b, accum, rc, x);
                counts->enumerated++;
            }
}

/* The next choice of the dimensions' sizes, each 1, 2, 4, ... up to max, the last fastest;
 * FALSE past the last */
static gboolean dims_next(Dims *d, int max) {
    for (int i = d->n - 1; i >= 0; i--) {
        if (d->size[i] * 2 <= max) {
            d->size[i] *= 2;
            return TRUE;
        }
        d->size[i] = 1;
    }
    return FALSE;
}

/* The model-parallel factor of the choice (1: none opened), 0 where a size does not fit */
static int dims_factor(const Dims *d, const Scenario *sc) {
    int f = 1;
    for (int i = 0; i < d->n; i++) {
        if (d->size[i] > 1 && !scenario_search_fits(sc, d->name[i], d->size[i]))
            return 0;
        f *= d->size[i];
    }
    return f;
}

/* Every layout of tp x pp x the dimensions' sizes (one choice of them) */
static void add_layouts(Sweep *sw, const Scenario *sc, const SearchSpace *space, int tp, int pp,
                        const Dims *dims, SearchCounts *counts) {
    /* interleaved's v; ZB-V's two chunks are its own (add_choices) */
    gboolean chunked = schedule_get(sc->schedule)->chunked && !schedule_get(sc->schedule)->vshape;
    int gpus = space->nodes * sc->topo.gpus_per_node, f = dims_factor(dims, sc);
    int64_t B = space->global_batch;
    if (f == 0 || gpus % (tp * f * pp) != 0)
        return;
    int dp = gpus / (tp * f * pp);
    for (int zero = 0; zero <= 3; zero++)
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
                    add_choices(sw, sc, space, tp, pp, dp, dims, zero, b, accum, rc, 0, counts);
                    continue;
                }
                for (int v = 1; v <= sc->model.layers / pp; v++) {
                    if (sc->model.layers % (pp * v) != 0 || (pp == 1 && v > 1))
                        continue;
                    if (pp > 1 && accum % pp != 0) {
                        counts->batch++;
                        break;
                    }
                    add_choices(sw, sc, space, tp, pp, dp, dims, zero, b, accum, rc, v, counts);
                }
            }
        }
}

void search_add_layouts(Sweep *sw, const Scenario *sc, const SearchSpace *space,
                        SearchCounts *counts) {
    int per_node = sc->topo.gpus_per_node, gpus = space->nodes * per_node;
    *counts = (SearchCounts){0};
    Dims dims = {0};
    dims.n = scenario_search_dims(sc, dims.name);
    for (int tp = 1; tp <= per_node; tp++) {
        if (per_node % tp != 0)
            continue;
        for (int pp = 1; pp <= sc->model.layers; pp++) {
            if (sc->model.layers % pp != 0)
                continue;
            for (int i = 0; i < dims.n; i++)
                dims.size[i] = 1;
            do
                add_layouts(sw, sc, space, tp, pp, &dims, counts);
            while (dims_next(&dims, gpus));
        }
    }
}
