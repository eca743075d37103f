/* scenario_rings: the `collectives.rings` block of a topology file, the collective library's own
 * channel layout for whole nodes (RCCL's rome_models.cc ringBase strings, written as YAML), and
 * the `collectives.model` block, the library's bandwidth model that chooses the algorithm:
 *
 *   model:
 *     channels: 8
 *     bandwidth: {intra: 31.5GB/s, inter: 31.5GB/s}   # per channel
 *     bw_ratio:
 *       two_nodes: {ring: {LL: 0.08, Simple: 1.0}, tree: {LL: 0.08, Simple: 0.95}}
 *       more_nodes: {ring: {LL: 0.08, Simple: 1.0}, tree: {LL: 0.08, Simple: 0.41}}
 *
 *   rings:
 *     node:                           # channels over one whole node
 *       - [0, 1, 3, 2, 4, 5, 7, 6]
 *     nodes:                          # channels over several whole nodes
 *       - {nic_in: 0, gpus: [0, 1, 5, 4, 6, 7, 3, 2], nic_out: 1}
 *
 * For: reading and checking the lists (each ring visits every GPU of the node once; NICs exist).
 * Not for: using them (collectives.c). */
#include <string.h>

#include "scenario.h"

static gboolean small_int(const ConfNode *n, int lo, int hi, const char *what, int *out,
                          GError **err) {
    char *end = NULL;
    gint64 v = n->kind == CONF_SCALAR ? g_ascii_strtoll(n->value, &end, 10) : -1;
    if (n->kind != CONF_SCALAR || !end || *end || end == n->value || v < lo || v > hi)
        return conf_fail(err, CONF_ERROR_VALUE, n, "%s must be an integer in %d..%d", what, lo, hi);
    *out = (int)v;
    return TRUE;
}

/* A list of the node's g GPUs, each once. */
static gboolean load_gpus(const ConfNode *n, int g, int *gpus, GError **err) {
    if (n->kind != CONF_SEQ || (int)n->items->len != g)
        return conf_fail(err, CONF_ERROR_VALUE, n,
                         "a ring must list each of the node's %d GPUs once, as [a, b, ...]", g);
    guint seen = 0;
    for (int i = 0; i < g; i++) {
        const ConfNode *it = n->items->pdata[i];
        if (!small_int(it, 0, g - 1, "a ring's GPU", &gpus[i], err))
            return FALSE;
        if (seen & (1u << gpus[i]))
            return conf_fail(err, CONF_ERROR_VALUE, it, "GPU %d appears twice in this ring",
                             gpus[i]);
        seen |= 1u << gpus[i];
    }
    return TRUE;
}

static gboolean load_list(const ConfNode *n, const char *what, gboolean with_nics,
                          const TopologySpec *t, GArray **out, GError **err) {
    static const char *const keys[] = {"nic_in", "gpus", "nic_out", NULL};
    if (!n)
        return TRUE;
    if (n->kind != CONF_SEQ || n->items->len == 0)
        return conf_fail(err, CONF_ERROR_VALUE, n, "%s must be a non-empty list of rings", what);
    *out = g_array_new(FALSE, TRUE, sizeof(CollRing));
    for (guint i = 0; i < n->items->len; i++) {
        const ConfNode *it = n->items->pdata[i];
        CollRing r = {.nic_in = -1, .nic_out = -1};
        if (!with_nics) {
            if (!load_gpus(it, t->gpus_per_node, r.gpus, err))
                return FALSE;
        } else {
            if (!conf_expect_map(it, what, err) || !conf_check_keys(it, keys, what, err))
                return FALSE;
            const ConfNode *gpus = conf_get(it, "gpus"), *in = conf_get(it, "nic_in"),
                           *out_nic = conf_get(it, "nic_out");
            if (!gpus || !in || !out_nic)
                return conf_fail(err, CONF_ERROR_KEY, it,
                                 "%s: each ring needs nic_in, gpus and nic_out", what);
            if (t->nics < 1)
                return conf_fail(err, CONF_ERROR_INVALID, it, "%s: the node has no NICs", what);
            if (!load_gpus(gpus, t->gpus_per_node, r.gpus, err) ||
                !small_int(in, 0, t->nics - 1, "nic_in", &r.nic_in, err) ||
                !small_int(out_nic, 0, t->nics - 1, "nic_out", &r.nic_out, err))
                return FALSE;
        }
        g_array_append_val(*out, r);
    }
    return TRUE;
}

gboolean scenario_load_rings(const ConfNode *n, TopologySpec *t, GError **err) {
    static const char *const keys[] = {"node", "nodes", NULL};
    if (!n)
        return TRUE;
    if (!conf_expect_map(n, "collectives.rings", err) ||
        !conf_check_keys(n, keys, "collectives.rings", err))
        return FALSE;
    return load_list(conf_get(n, "node"), "collectives.rings.node", FALSE, t, &t->coll.rings_node,
                     err) &&
           load_list(conf_get(n, "nodes"), "collectives.rings.nodes", TRUE, t, &t->coll.rings_nodes,
                     err);
}

gboolean scenario_load_coll_model(const ConfNode *n, TopologySpec *t, GError **err) {
    static const char *const keys[] = {"channels", "bandwidth", "bw_ratio", NULL};
    static const char *const bw_keys[] = {"intra", "inter", NULL};
    static const char *const ratio_keys[] = {"two_nodes", "more_nodes", NULL};
    static const char *const algo_keys[] = {"ring", "tree", NULL};
    static const char *const proto_keys[] = {"LL", "Simple", NULL};
    CollSpec *c = &t->coll;
    c->model_channels = 0;
    for (int k = 0; k < 2; k++)
        for (int a = 0; a < ALGO_COUNT; a++)
            for (int p = 0; p < PROTO_COUNT; p++)
                c->model_ratio[k][a][p] = 1.0;
    if (!n)
        return TRUE;
    int64_t ch = 0;
    const ConfNode *bw = conf_get(n, "bandwidth"), *ratio = conf_get(n, "bw_ratio");
    if (!conf_check_keys(n, keys, "collectives.model", err) ||
        !conf_int(n, "channels", TRUE, 1, 256, &ch, err))
        return FALSE;
    if (!bw)
        return conf_fail(err, CONF_ERROR_KEY, n, "missing key 'bandwidth'");
    if (!conf_check_keys(bw, bw_keys, "collectives.model.bandwidth", err) ||
        !conf_rate(bw, "intra", TRUE, &c->model_bw[0], err) ||
        !conf_rate(bw, "inter", TRUE, &c->model_bw[1], err))
        return FALSE;
    c->model_channels = (int)ch;
    if (!ratio)
        return TRUE;
    if (!conf_check_keys(ratio, ratio_keys, "collectives.model.bw_ratio", err))
        return FALSE;
    for (int k = 0; k < 2; k++) {
        const ConfNode *kn = conf_get(ratio, ratio_keys[k]);
        if (!kn)
            continue;
        if (!conf_check_keys(kn, algo_keys, ratio_keys[k], err))
            return FALSE;
        for (int a = 0; a < 2; a++) { /* ring, tree; hierarchical keeps the ring's */
            const ConfNode *an = conf_get(kn, algo_keys[a]);
            if (!an)
                continue;
            if (!conf_check_keys(an, proto_keys, algo_keys[a], err))
                return FALSE;
            for (int p = 0; p < PROTO_COUNT; p++)
                if (!conf_double(an, proto_keys[p], FALSE, 1e-4, 10.0, &c->model_ratio[k][a][p],
                                 err))
                    return FALSE;
        }
        for (int p = 0; p < PROTO_COUNT; p++)
            c->model_ratio[k][ALGO_HIER][p] = c->model_ratio[k][ALGO_RING][p];
    }
    return TRUE;
}
