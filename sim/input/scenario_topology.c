/* scenario_topology: a topology file's `node:`, `fabric:` and `collectives:` blocks into a
 * TopologySpec (the `device:` block is scenario_device.c's, the RCCL rings scenario_rings.c's).
 * Every check names the offending key's file:line:column. */
#include "scenario.h"

#include <math.h>
#include <string.h>

static gboolean load_int_seq(const ConfNode *n, const char *what, int *out, int max, int *count,
                             GError **err) {
    if (n->kind != CONF_SEQ)
        return conf_fail(err, CONF_ERROR_VALUE, n, "%s must be a list of whole numbers", what);
    if ((int)n->items->len > max)
        return conf_fail(err, CONF_ERROR_VALUE, n, "%s has %u entries; at most %d", what,
                         n->items->len, max);
    for (guint i = 0; i < n->items->len; i++) {
        const ConfNode *it = n->items->pdata[i];
        char *end = NULL;
        gint64 v = it->kind == CONF_SCALAR ? g_ascii_strtoll(it->value, &end, 10) : 0;
        if (it->kind != CONF_SCALAR || end == it->value || *end || v < 0 || v > G_MAXINT)
            return conf_fail(err, CONF_ERROR_VALUE, it, "%s entries must be whole numbers >= 0",
                             what);
        out[i] = (int)v;
    }
    *count = (int)n->items->len;
    return TRUE;
}

/* Record where key k of the topology file is (the first of the nodes given that exists), for the
 * messages of topo_new's checks. */
static void set_at(TopologySpec *t, TopoAt k, const ConfNode *a, const ConfNode *b) {
    const ConfNode *n = a ? a : b;
    g_free(t->at[k]);
    t->at[k] = n ? conf_where(n) : NULL;
}

static gboolean load_node(const ConfNode *node, TopologySpec *t, GError **err) {
    static const char *const node_keys[] = {"gpus", "link", "links", "switch",
                                            "nics", "host", NULL};
    static const char *const host_keys[] = {
        "op_dispatch", "bwd_op_dispatch", "comm_dispatch", "hook", "step", NULL};
    static const char *const link_keys[] = {"bandwidth", "latency", NULL};
    static const char *const switch_keys[] = {"bandwidth", NULL};
    static const char *const nic_keys[] = {"count",          "attach",  "bandwidth",
                                           "pcie_bandwidth", "latency", NULL};
    if (!conf_check_keys(node, node_keys, "node", err) ||
        !conf_int32(node, "gpus", TRUE, 1, TOPO_MAX_GPUS, &t->gpus_per_node, err))
        return FALSE;
    const ConfNode *link = conf_get(node, "link"), *links = conf_get(node, "links"),
                   *sw = conf_get(node, "switch"), *nics = conf_get(node, "nics"),
                   *host = conf_get(node, "host");
    set_at(t, TOPO_AT_GPUS, conf_get(node, "gpus"), node);
    set_at(t, TOPO_AT_LINKS, links ? links : sw, node);
    set_at(t, TOPO_AT_NICS, nics ? conf_get(nics, "count") : NULL, nics ? nics : node);
    if (host && (!conf_check_keys(host, host_keys, "node.host", err) ||
                 !conf_time(host, "op_dispatch", TRUE, &t->host_op_dispatch, err) ||
                 !conf_time(host, "comm_dispatch", TRUE, &t->host_comm_dispatch, err) ||
                 !conf_time(host, "step", TRUE, &t->host_step, err)))
        return FALSE;
    t->host_bwd_op_dispatch = t->host_op_dispatch; /* unless the machine says otherwise */
    if (host && (!conf_time(host, "bwd_op_dispatch", FALSE, &t->host_bwd_op_dispatch, err) ||
                 !conf_time(host, "hook", FALSE, &t->host_hook, err)))
        return FALSE;
    t->pairs = g_array_new(FALSE, FALSE, sizeof(TopoPair));
    if (link && (!conf_check_keys(link, link_keys, "node.link", err) ||
                 !conf_rate(link, "bandwidth", !sw, &t->link_bandwidth, err) ||
                 !conf_time(link, "latency", TRUE, &t->link_latency, err)))
        return FALSE;
    if (sw) {
        if (links)
            return conf_fail(err, CONF_ERROR_INVALID, links,
                             "give either node.links (direct GPU links) or node.switch, not both");
        if (!conf_check_keys(sw, switch_keys, "node.switch", err) ||
            !conf_rate(sw, "bandwidth", TRUE, &t->switch_bandwidth, err))
            return FALSE;
    } else if (t->gpus_per_node > 1) {
        if (!link || !links)
            return conf_fail(err, CONF_ERROR_KEY, node, "missing key '%s' (or node.switch)",
                             link ? "links" : "link");
        if (links->kind != CONF_SEQ)
            return conf_fail(err, CONF_ERROR_VALUE, links,
                             "node.links must be a list of [gpu, gpu, number of links]");
        for (guint i = 0; i < links->items->len; i++) {
            int v[3], cnt;
            if (!load_int_seq(links->items->pdata[i], "a link", v, 3, &cnt, err))
                return FALSE;
            if (cnt != 3)
                return conf_fail(err, CONF_ERROR_VALUE, links->items->pdata[i],
                                 "a link is [gpu, gpu, number of links]");
            if (v[0] >= t->gpus_per_node || v[1] >= t->gpus_per_node || v[0] == v[1] || v[2] < 1)
                return conf_fail(
                    err, CONF_ERROR_VALUE, links->items->pdata[i],
                    "link [%d, %d, %d] must join two different GPUs in 0..%d (node.gpus "
                    "is %d) with at least one link",
                    v[0], v[1], v[2], t->gpus_per_node - 1, t->gpus_per_node);
            TopoPair p = {v[0], v[1], v[2]};
            g_array_append_val(t->pairs, p);
        }
    }
    if (nics) {
        if (!conf_check_keys(nics, nic_keys, "node.nics", err) ||
            !conf_int32(nics, "count", TRUE, 0, TOPO_MAX_NICS, &t->nics, err) ||
            !conf_rate(nics, "bandwidth", TRUE, &t->nic_bandwidth, err) ||
            !conf_rate(nics, "pcie_bandwidth", TRUE, &t->pcie_bandwidth, err) ||
            !conf_time(nics, "latency", TRUE, &t->nic_latency, err))
            return FALSE;
        const ConfNode *attach = conf_get(nics, "attach");
        int cnt = 0;
        if (!attach)
            return conf_fail(err, CONF_ERROR_KEY, nics, "missing key 'attach'");
        if (!load_int_seq(attach, "node.nics.attach", t->nic_gpu, TOPO_MAX_NICS, &cnt, err))
            return FALSE;
        if (cnt != t->nics)
            return conf_fail(err, CONF_ERROR_VALUE, attach,
                             "node.nics.attach lists %d GPUs for %d NICs", cnt, t->nics);
        for (int i = 0; i < cnt; i++)
            if (t->nic_gpu[i] >= t->gpus_per_node)
                return conf_fail(err, CONF_ERROR_VALUE, attach->items->pdata[i],
                                 "NIC %d hangs off GPU %d, which a %d-GPU node lacks (GPUs are "
                                 "0..%d)",
                                 i, t->nic_gpu[i], t->gpus_per_node, t->gpus_per_node - 1);
        set_at(t, TOPO_AT_ATTACH, attach, NULL);
    }
    return TRUE;
}

static gboolean load_fabric(const ConfNode *f, TopologySpec *t, GError **err) {
    static const char *const keys[] = {"kind",
                                       "latency",
                                       "routing",
                                       "switch_latency",
                                       "groups",
                                       "nodes_per_group",
                                       "switches_per_group",
                                       "local_bandwidth",
                                       "global_links",
                                       "global_bandwidth",
                                       "nodes_per_leaf",
                                       "taper",
                                       "nodes",
                                       NULL};
    static const char *const kinds[] = {"flat", "dragonfly", "fat_tree", NULL};
    static const char *const routings[] = {"minimal", "valiant", "adaptive", NULL};
    int kind = FABRIC_FLAT, routing = ROUTING_MINIMAL;
    t->taper = 1.0;
    if (!conf_check_keys(f, keys, "fabric", err) ||
        !conf_enum(f, "kind", FALSE, kinds, &kind, err) ||
        !conf_enum(f, "routing", FALSE, routings, &routing, err) ||
        !conf_int32(f, "nodes", FALSE, 1, 1 << 24, &t->machine_nodes, err))
        return FALSE;
    t->fabric = kind;
    t->routing = routing;
    set_at(t, TOPO_AT_FABRIC, conf_get(f, "kind"), f);
    set_at(t, TOPO_AT_GROUPS, conf_get(f, "groups"), f);
    set_at(t, TOPO_AT_SWITCHES, conf_get(f, "switches_per_group"), f);
    set_at(t, TOPO_AT_MACHINE_NODES, conf_get(f, "nodes"), f);
    switch (kind) {
    case FABRIC_FLAT:
        return conf_time(f, "latency", TRUE, &t->fabric_latency, err);
    case FABRIC_DRAGONFLY: {
        if (!conf_time(f, "switch_latency", TRUE, &t->switch_latency, err) ||
            !conf_int32(f, "groups", TRUE, 1, 1 << 16, &t->groups, err) ||
            !conf_int32(f, "nodes_per_group", TRUE, 1, 1 << 16, &t->nodes_per_group, err) ||
            !conf_int32(f, "switches_per_group", TRUE, 1, 1 << 12, &t->switches_per_group, err) ||
            !conf_rate(f, "local_bandwidth", TRUE, &t->local_bandwidth, err) ||
            !conf_int32(f, "global_links", TRUE, 1, 1 << 12, &t->global_links, err) ||
            !conf_rate(f, "global_bandwidth", TRUE, &t->global_bandwidth, err))
            return FALSE;
        int64_t G = t->groups, S = t->switches_per_group; /* links, as topo_new counts them */
        int64_t links = G * S * S + G * G * t->global_links + 2 * G * S;
        if (links > TOPO_MAX_LINKS)
            return conf_fail(err, CONF_ERROR_VALUE, conf_get(f, "groups"),
                             "%d groups of %d switches, %d global links between every pair: "
                             "%" G_GINT64_FORMAT " links; at most %d are supported",
                             t->groups, t->switches_per_group, t->global_links, links,
                             TOPO_MAX_LINKS);
        return TRUE;
    }
    default:
        return conf_time(f, "switch_latency", TRUE, &t->switch_latency, err) &&
               conf_int32(f, "nodes_per_leaf", TRUE, 1, 1 << 16, &t->nodes_per_leaf, err) &&
               conf_double(f, "taper", FALSE, 1e-3, 1e3, &t->taper, err);
    }
}

/* Names of CollAlgo / CollProto / CollOp, for the collectives block. */
static const char *const algo_names[] = {"ring", "tree", "hierarchical", NULL};
static const char *const proto_names[] = {"LL", "Simple", NULL};
static const char *const op_names[] = {"allreduce", "allgather", "reduce_scatter",
                                       "reduce",    "broadcast", "all_to_all",
                                       "send",      "recv",      NULL};

/* A list of names from choices, as a bit mask. */
static gboolean load_name_list(const ConfNode *n, const char *what, const char *const *choices,
                               guint32 *mask, GError **err) {
    *mask = 0;
    if (n->kind == CONF_SCALAR) { /* "a,b,c", as --set gives */
        g_auto(GStrv) parts = g_strsplit(n->value, ",", -1);
        for (char **p = parts; *p; p++) {
            int found = -1;
            for (int c = 0; choices[c]; c++)
                if (strcmp(choices[c], g_strstrip(*p)) == 0)
                    found = c;
            if (found < 0) {
                g_autofree char *list = g_strjoinv(", ", (char **)choices);
                return conf_fail(err, CONF_ERROR_VALUE, n, "%s: '%s' is not one of %s", what, *p,
                                 list);
            }
            *mask |= 1u << found;
        }
        return TRUE;
    }
    if (n->kind != CONF_SEQ)
        return conf_fail(err, CONF_ERROR_VALUE, n, "%s must be a list", what);
    for (guint i = 0; i < n->items->len; i++) {
        const ConfNode *it = n->items->pdata[i];
        int found = -1;
        for (int c = 0; it->kind == CONF_SCALAR && choices[c]; c++)
            if (strcmp(choices[c], it->value) == 0)
                found = c;
        if (found < 0) {
            g_autofree char *list = g_strjoinv(", ", (char **)choices);
            return conf_fail(err, CONF_ERROR_VALUE, it, "%s: expected one of %s", what, list);
        }
        *mask |= 1u << found;
    }
    return TRUE;
}

static gboolean load_collectives(const ConfNode *n, TopologySpec *t, GError **err) {
    static const char *const keys[] = {"algorithms", "protocols", "LL",    "Simple", "backends",
                                       "channels",   "rings",     "model", NULL};
    static const char *const proto_keys[] = {"base_latency", "bandwidth_factor", "ring", "tree",
                                             NULL};
    static const char *const hop_keys[] = {"intra_hop", "inter_hop", NULL};
    static const char *const backend_keys[] = {"name",    "ops",          "min_bytes", "max_bytes",
                                               "latency", "step_latency", "bandwidth", NULL};
    CollSpec *c = &t->coll;
    topo_spec_default_collectives(t);
    if (!n)
        return TRUE;
    if (!conf_check_keys(n, keys, "collectives", err))
        return FALSE;
    const ConfNode *algos = conf_get(n, "algorithms"), *protos = conf_get(n, "protocols");
    guint32 mask;
    if (!conf_int32(n, "channels", FALSE, 1, 64, &c->channels, err) ||
        !scenario_load_rings(conf_get(n, "rings"), t, err) ||
        !scenario_load_coll_model(conf_get(n, "model"), t, err))
        return FALSE;
    if (algos) {
        if (!load_name_list(algos, "collectives.algorithms", algo_names, &mask, err))
            return FALSE;
        for (int a = 0; a < ALGO_COUNT; a++)
            c->algo_allowed[a] = (mask >> a) & 1;
    }
    if (protos) {
        if (!load_name_list(protos, "collectives.protocols", proto_names, &mask, err))
            return FALSE;
        for (int p = 0; p < PROTO_COUNT; p++)
            c->proto_allowed[p] = (mask >> p) & 1;
    }
    for (int p = 0; p < PROTO_COUNT; p++) {
        const ConfNode *pn = conf_get(n, proto_names[p]);
        if (!pn)
            continue;
        g_autofree char *sect = g_strdup_printf("collectives.%s", proto_names[p]);
        if (!conf_check_keys(pn, proto_keys, sect, err) ||
            !conf_time(pn, "base_latency", FALSE, &c->base[p], err) ||
            !conf_double(pn, "bandwidth_factor", FALSE, 1e-3, 1.0, &c->bw_factor[p], err))
            return FALSE;
        for (int a = 0; a < 2; a++) { /* ring, tree; hierarchical uses ring's */
            const ConfNode *hn = conf_get(pn, algo_names[a]);
            if (!hn)
                continue;
            g_autofree char *hs = g_strdup_printf("%s.%s", sect, algo_names[a]);
            if (!conf_check_keys(hn, hop_keys, hs, err) ||
                !conf_time(hn, "intra_hop", FALSE, &c->intra_hop[a][p], err) ||
                !conf_time(hn, "inter_hop", FALSE, &c->inter_hop[a][p], err))
                return FALSE;
        }
    }
    const ConfNode *bs = conf_get(n, "backends");
    if (bs) {
        if (bs->kind != CONF_SEQ)
            return conf_fail(err, CONF_ERROR_VALUE, bs, "collectives.backends must be a list");
        c->backends = g_array_new(FALSE, TRUE, sizeof(CollBackend));
        for (guint i = 0; i < bs->items->len; i++) {
            const ConfNode *bn = bs->items->pdata[i];
            CollBackend b = {0};
            b.max_bytes = G_MAXDOUBLE;
            g_array_append_val(c->backends, b);
            CollBackend *bp = &g_array_index(c->backends, CollBackend, i);
            const ConfNode *ops = conf_get(bn, "ops");
            if (!conf_check_keys(bn, backend_keys, "a collectives backend", err) ||
                !conf_string(bn, "name", TRUE, &bp->name, err) ||
                !conf_bytes(bn, "min_bytes", FALSE, &bp->min_bytes, err) ||
                !conf_bytes(bn, "max_bytes", FALSE, &bp->max_bytes, err) ||
                !conf_time(bn, "latency", TRUE, &bp->latency, err) ||
                !conf_time(bn, "step_latency", FALSE, &bp->step_latency, err) ||
                !conf_rate(bn, "bandwidth", TRUE, &bp->bandwidth, err))
                return FALSE;
            if (!ops)
                return conf_fail(err, CONF_ERROR_KEY, bn, "missing key 'ops'");
            if (!load_name_list(ops, "ops", op_names, &bp->ops, err))
                return FALSE;
        }
    }
    return TRUE;
}

gboolean scenario_load_topology_spec(const ConfNode *n, TopologySpec *t, GError **err) {
    static const char *const keys[] = {"name", "device", "node", "fabric", "collectives", NULL};
    if (!conf_check_keys(n, keys, "topology", err) || !conf_string(n, "name", TRUE, &t->name, err))
        return FALSE;
    const ConfNode *dev = conf_get(n, "device"), *node = conf_get(n, "node"),
                   *fabric = conf_get(n, "fabric");
    if (!dev || !node)
        return conf_fail(err, CONF_ERROR_KEY, n, "missing key '%s'", dev ? "node" : "device");
    if (!scenario_load_device(dev, &t->device, err) || !load_node(node, t, err))
        return FALSE;
    if (fabric && !load_fabric(fabric, t, err))
        return FALSE;
    return load_collectives(conf_get(n, "collectives"), t, err);
}
