/* scenario: from YAML trees to a validated Scenario.
 *
 * Order of work: load the scenario file; apply each --set in order (a whole-file swap such as
 * --set model=gpt-neox-1.3b replaces the reference; a dotted key inside model. or topology. first
 * loads the referenced file so that the override refines it); load the references left; then map
 * every section to structs with its valid keys checked; then check the layout as a whole. */
#include "scenario.h"

#include <math.h>
#include <string.h>

#ifndef SIM_SOURCE_DIR
#define SIM_SOURCE_DIR "."
#endif

static const char *const precision_names[] = {"fp16", "bf16", "fp32", NULL};
static const char *const recompute_names[] = {"none", "selective", "full", NULL};
static const char *const schedule_names[] = {"gpipe", "1f1b", NULL};

const char *scenario_precision_name(Precision p) {
    return precision_names[p];
}
const char *scenario_recompute_name(Recompute r) {
    return recompute_names[r];
}
const char *scenario_schedule_name(PipeSchedule s) {
    return schedule_names[s];
}

void scenario_free(Scenario *s) {
    if (!s)
        return;
    g_free(s->path);
    g_free(s->description);
    g_strfreev(s->sets);
    model_config_clear(&s->model);
    topo_spec_clear(&s->topo);
    g_free(s);
}

/* --- references to model and topology files ------------------------------------------------ */

/* The first of n candidate paths (NULL entries skipped) that is a regular file, newly allocated,
 * or NULL; frees every candidate. */
static char *first_existing(char **cands, int n) {
    char *found = NULL;
    for (int i = 0; i < n; i++) {
        if (!found && cands[i] && g_file_test(cands[i], G_FILE_TEST_IS_REGULAR))
            found = g_strdup(cands[i]);
        g_free(cands[i]);
    }
    return found;
}

/* Find models/NAME.yaml (dir "models") or topologies/NAME.yaml: beside the scenario's folder,
 * then under $SIM_DATA_DIR, then in the source tree the binary was built from. */
static char *find_ref(const char *scenario_path, const char *dir, const char *name) {
    if (strchr(name, '/') || g_str_has_suffix(name, ".yaml")) {
        g_autofree char *base = g_path_get_dirname(scenario_path);
        return g_path_is_absolute(name) ? g_strdup(name) : g_build_filename(base, name, NULL);
    }
    g_autofree char *file = g_strconcat(name, ".yaml", NULL);
    g_autofree char *sdir = g_path_get_dirname(scenario_path);
    const char *env = g_getenv("SIM_DATA_DIR");
    char *cands[3] = {g_build_filename(sdir, "..", dir, file, NULL),
                      env ? g_build_filename(env, dir, file, NULL) : NULL,
                      g_build_filename(SIM_SOURCE_DIR, dir, file, NULL)};
    return first_existing(cands, 3);
}

static gint cmp_names(gconstpointer a, gconstpointer b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* List NAME for every DIR/NAME.yaml next to the scenario or in the source tree. */
static char *list_refs(const char *scenario_path, const char *dir) {
    g_autofree char *sdir = g_path_get_dirname(scenario_path);
    const char *roots[2] = {sdir, SIM_SOURCE_DIR};
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    for (int r = 0; r < 2; r++) {
        g_autofree char *path = r == 0 ? g_build_filename(roots[r], "..", dir, NULL)
                                       : g_build_filename(roots[r], dir, NULL);
        g_autoptr(GDir) d = g_dir_open(path, 0, NULL);
        const char *e;
        while (d && (e = g_dir_read_name(d))) {
            if (!g_str_has_suffix(e, ".yaml"))
                continue;
            char *n = g_strndup(e, strlen(e) - 5);
            gboolean dup = FALSE;
            for (guint i = 0; i < names->len; i++)
                dup |= strcmp(names->pdata[i], n) == 0;
            if (dup)
                g_free(n);
            else
                g_ptr_array_add(names, n);
        }
    }
    g_ptr_array_sort(names, cmp_names);
    g_ptr_array_add(names, NULL);
    return names->len > 1 ? g_strjoinv(", ", (char **)names->pdata) : g_strdup("none");
}

/* If root[key] is a scalar naming a file, replace it by that file's tree. */
static gboolean resolve_ref(ConfNode *root, const char *key, const char *dir,
                            const char *scenario_path, GError **err) {
    ConfNode *ref = conf_get(root, key);
    if (!ref)
        return conf_fail(err, CONF_ERROR_KEY, root, "missing key '%s' (a file name under %s/)", key,
                         dir);
    if (ref->kind != CONF_SCALAR)
        return TRUE;
    g_autofree char *path = find_ref(scenario_path, dir, ref->value);
    if (!path) {
        g_autofree char *avail = list_refs(scenario_path, dir);
        return conf_fail(err, CONF_ERROR_IO, ref,
                         "%s '%s' not found: no %s/%s.yaml (available: %s)", key, ref->value, dir,
                         ref->value, avail);
    }
    ConfNode *tree = conf_load_file(path, err);
    if (!tree)
        return FALSE;
    if (tree->kind != CONF_MAP) {
        conf_fail(err, CONF_ERROR_VALUE, tree, "a %s file must be a mapping of keys", key);
        conf_node_free(tree);
        return FALSE;
    }
    conf_put(root, key, tree);
    return TRUE;
}

static gboolean resolve_device_ref(ConfNode *root, GError **err);

static gboolean apply_set(ConfNode *root, const char *set, const char *scenario_path,
                          GError **err) {
    const char *eq = strchr(set, '=');
    g_autofree char *origin = g_strdup_printf("--set %s", set);
    if (!eq || eq == set) {
        g_set_error(err, CONF_ERROR, CONF_ERROR_KEY, "%s: expected KEY=VALUE, e.g. parallel.tp=4",
                    origin);
        return FALSE;
    }
    g_autofree char *key = g_strndup(set, eq - set);
    const char *value = eq + 1;
    if (strcmp(key, "model") == 0 || strcmp(key, "topology") == 0) {
        conf_put(root, key, conf_scalar_new(value, origin));
        return TRUE;
    }
    if (g_str_has_prefix(key, "model."))
        if (!resolve_ref(root, "model", "models", scenario_path, err))
            return FALSE;
    if (g_str_has_prefix(key, "topology."))
        if (!resolve_ref(root, "topology", "topologies", scenario_path, err))
            return FALSE;
    if (g_str_has_prefix(key, "topology.device."))
        if (!resolve_device_ref(root, err))
            return FALSE;
    return conf_set_path(root, key, value, origin, err);
}

/* --- sections -------------------------------------------------------------------------------- */

static gboolean int_in(const ConfNode *map, const char *key, gboolean required, int64_t min,
                       int64_t max, int *out, GError **err) {
    int64_t v = *out;
    if (!conf_int(map, key, required, min, max, &v, err))
        return FALSE;
    *out = (int)v;
    return TRUE;
}

static gboolean load_model(const ConfNode *n, ModelConfig *m, GError **err) {
    static const char *const keys[] = {"name",
                                       "layers",
                                       "hidden",
                                       "heads",
                                       "ffn_hidden",
                                       "vocab",
                                       "vocab_pad_multiple",
                                       "pos_emb",
                                       "tied_embeddings",
                                       "parallel_residual",
                                       "layer_vector_params_h",
                                       "attention",
                                       "causal",
                                       "attention_dropout",
                                       "hidden_dropout",
                                       "softmax_fusion",
                                       "bias_gelu_fusion",
                                       NULL};
    static const char *const pos_names[] = {"learned", "rotary", NULL};
    static const char *const attn_names[] = {"standard", "flash", NULL};
    if (!conf_check_keys(n, keys, "model", err))
        return FALSE;
    m->vocab_pad_multiple = 128; /* GPT-NeoX make_vocab_size_divisible_by */
    m->pos_emb = POS_ROTARY;
    m->layer_vector_params_h = 8; /* the study's Eq. 1 */
    m->ffn_hidden = 0;
    m->attention_dropout = m->hidden_dropout = 0.0;  /* GPT-NeoX configs: no dropout */
    m->softmax_fusion = m->bias_gelu_fusion = FALSE; /* GPT-NeoX's defaults */
    m->causal = TRUE;                                /* GPT models are causal */
    int pos = m->pos_emb, attn = ATTN_STANDARD;
    if (!conf_string(n, "name", TRUE, &m->name, err) ||
        !int_in(n, "layers", TRUE, 1, 1 << 20, &m->layers, err) ||
        !int_in(n, "hidden", TRUE, 1, 1 << 24, &m->hidden, err) ||
        !int_in(n, "heads", TRUE, 1, 1 << 20, &m->heads, err) ||
        !int_in(n, "ffn_hidden", FALSE, 1, 1 << 26, &m->ffn_hidden, err) ||
        !int_in(n, "vocab", TRUE, 1, 1 << 28, &m->vocab, err) ||
        !int_in(n, "vocab_pad_multiple", FALSE, 1, 1 << 20, &m->vocab_pad_multiple, err) ||
        !conf_enum(n, "pos_emb", FALSE, pos_names, &pos, err) ||
        !conf_bool(n, "tied_embeddings", FALSE, &m->tied_embeddings, err) ||
        !conf_bool(n, "parallel_residual", FALSE, &m->parallel_residual, err) ||
        !int_in(n, "layer_vector_params_h", FALSE, 0, 1000, &m->layer_vector_params_h, err) ||
        !conf_enum(n, "attention", FALSE, attn_names, &attn, err) ||
        !conf_bool(n, "causal", FALSE, &m->causal, err) ||
        !conf_double(n, "attention_dropout", FALSE, 0.0, 1.0, &m->attention_dropout, err) ||
        !conf_double(n, "hidden_dropout", FALSE, 0.0, 1.0, &m->hidden_dropout, err) ||
        !conf_bool(n, "softmax_fusion", FALSE, &m->softmax_fusion, err) ||
        !conf_bool(n, "bias_gelu_fusion", FALSE, &m->bias_gelu_fusion, err))
        return FALSE;
    m->pos_emb = pos;
    m->attention = attn;
    if (m->ffn_hidden == 0)
        m->ffn_hidden = 4 * m->hidden;
    if (m->hidden % m->heads != 0)
        return conf_fail(err, CONF_ERROR_INVALID, conf_get(n, "heads"),
                         "%d heads do not divide hidden size %d", m->heads, m->hidden);
    return TRUE;
}

/* --- the device -------------------------------------------------------------------------------
 *
 * topology.device is either a mapping (inline) or the name of a file: NAME resolves to
 * devices/NAME.yaml beside the topology file, then $SIM_DATA_DIR/topologies/devices/NAME.yaml,
 * then topologies/devices/NAME.yaml in the source tree; a value with a '/' or ending in .yaml is a
 * path (relative to the file that names it). `--set topology.device=h100-sxm` swaps the device.
 * An inline mapping with an `efficiency:` block is the slice's plain roofline (no shapes). */

#define DEVICE_DIR "topologies/devices"

static char *find_device_file(const ConfNode *ref) {
    const char *name = ref->value;
    gboolean from_file = ref->line > 0 && ref->origin;
    g_autofree char *base = from_file ? g_path_get_dirname(ref->origin) : g_strdup(".");
    if (strchr(name, '/') || g_str_has_suffix(name, ".yaml"))
        return g_path_is_absolute(name) ? g_strdup(name) : g_build_filename(base, name, NULL);
    g_autofree char *file = g_strconcat(name, ".yaml", NULL);
    const char *env = g_getenv("SIM_DATA_DIR");
    char *cands[3] = {from_file ? g_build_filename(base, "devices", file, NULL) : NULL,
                      env ? g_build_filename(env, DEVICE_DIR, file, NULL) : NULL,
                      g_build_filename(SIM_SOURCE_DIR, DEVICE_DIR, file, NULL)};
    return first_existing(cands, 3);
}

/* The tree of the device file that ref (a scalar) names; NULL and err when there is none. */
ConfNode *scenario_load_device_file(const ConfNode *ref, GError **err) {
    g_autofree char *path = find_device_file(ref);
    if (!path || !g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
        g_autofree char *avail = list_refs(SIM_SOURCE_DIR "/scenarios/-", DEVICE_DIR);
        conf_fail(err, CONF_ERROR_IO, ref, "device '%s' not found: no %s/%s.yaml (available: %s)",
                  ref->value, DEVICE_DIR, ref->value, avail);
        return NULL;
    }
    ConfNode *tree = conf_load_file(path, err);
    if (tree && tree->kind != CONF_MAP) {
        conf_fail(err, CONF_ERROR_VALUE, tree, "a device file must be a mapping of keys");
        conf_node_free(tree);
        return NULL;
    }
    return tree;
}

/* If topology.device in root names a file, replace it by the file's tree (so that a --set can
 * refine a named device). */
static gboolean resolve_device_ref(ConfNode *root, GError **err) {
    ConfNode *topo = conf_get(root, "topology");
    ConfNode *ref = topo && topo->kind == CONF_MAP ? conf_get(topo, "device") : NULL;
    if (!ref || ref->kind != CONF_SCALAR)
        return TRUE;
    ConfNode *tree = scenario_load_device_file(ref, err);
    if (!tree)
        return FALSE;
    conf_put(topo, "device", tree);
    return TRUE;
}

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

static gboolean load_node(const ConfNode *node, TopologySpec *t, GError **err) {
    static const char *const node_keys[] = {"gpus", "link", "links", "switch",
                                            "nics", "host", NULL};
    static const char *const host_keys[] = {"op_dispatch", "comm_dispatch", "step", NULL};
    static const char *const link_keys[] = {"bandwidth", "latency", NULL};
    static const char *const switch_keys[] = {"bandwidth", NULL};
    static const char *const nic_keys[] = {"count",          "attach",  "bandwidth",
                                           "pcie_bandwidth", "latency", NULL};
    if (!conf_check_keys(node, node_keys, "node", err) ||
        !int_in(node, "gpus", TRUE, 1, TOPO_MAX_GPUS, &t->gpus_per_node, err))
        return FALSE;
    const ConfNode *link = conf_get(node, "link"), *links = conf_get(node, "links"),
                   *sw = conf_get(node, "switch"), *nics = conf_get(node, "nics"),
                   *host = conf_get(node, "host");
    if (host && (!conf_check_keys(host, host_keys, "node.host", err) ||
                 !conf_time(host, "op_dispatch", TRUE, &t->host_op_dispatch, err) ||
                 !conf_time(host, "comm_dispatch", TRUE, &t->host_comm_dispatch, err) ||
                 !conf_time(host, "step", TRUE, &t->host_step, err)))
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
            TopoPair p = {v[0], v[1], v[2]};
            g_array_append_val(t->pairs, p);
        }
    }
    if (nics) {
        if (!conf_check_keys(nics, nic_keys, "node.nics", err) ||
            !int_in(nics, "count", TRUE, 0, TOPO_MAX_NICS, &t->nics, err) ||
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
        !int_in(f, "nodes", FALSE, 1, 1 << 24, &t->machine_nodes, err))
        return FALSE;
    t->fabric = kind;
    t->routing = routing;
    switch (kind) {
    case FABRIC_FLAT:
        return conf_time(f, "latency", TRUE, &t->fabric_latency, err);
    case FABRIC_DRAGONFLY: {
        if (!conf_time(f, "switch_latency", TRUE, &t->switch_latency, err) ||
            !int_in(f, "groups", TRUE, 1, 1 << 16, &t->groups, err) ||
            !int_in(f, "nodes_per_group", TRUE, 1, 1 << 16, &t->nodes_per_group, err) ||
            !int_in(f, "switches_per_group", TRUE, 1, 1 << 12, &t->switches_per_group, err) ||
            !conf_rate(f, "local_bandwidth", TRUE, &t->local_bandwidth, err) ||
            !int_in(f, "global_links", TRUE, 1, 1 << 12, &t->global_links, err) ||
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
               int_in(f, "nodes_per_leaf", TRUE, 1, 1 << 16, &t->nodes_per_leaf, err) &&
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
    if (!int_in(n, "channels", FALSE, 1, 64, &c->channels, err) ||
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

static gboolean load_topology(const ConfNode *n, TopologySpec *t, GError **err) {
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

/* --- the scenario as a whole --------------------------------------------------------------- */

static const ConfNode *at_or(const ConfNode *root, const char *sect, const char *key) {
    const ConfNode *s = conf_get(root, sect);
    const ConfNode *k = s ? conf_get(s, key) : NULL;
    return k ? k : (s ? s : root);
}

static gboolean load_scenario(const ConfNode *root, Scenario *s, GError **err) {
    static const char *const keys[] = {"description", "model", "topology", "nodes", "parallel",
                                       "training",    "sim",   "sweep", /* sim sweep's axes */
                                       NULL};
    static const char *const par_keys[] = {"tp",
                                           "pp",
                                           "dp",
                                           "zero",
                                           "schedule",
                                           "bucket_size",
                                           "prefetch_bucket_size",
                                           "max_live_parameters",
                                           NULL};
    static const char *const train_keys[] = {
        "micro_batch", "grad_accum", "global_batch",           "seq_len", "precision",
        "recompute",   "framework",  "synchronize_each_layer", NULL};
    static const char *const sim_keys[] = {"dedup_replicas", "contention",   "collectives",
                                           "host",           "interference", NULL};
    static const char *const coll_modes[] = {"aggregated", "detailed", NULL};
    if (!conf_check_keys(root, keys, "the scenario", err) ||
        !conf_string(root, "description", FALSE, &s->description, err) ||
        !load_model(conf_get(root, "model"), &s->model, err) ||
        !load_topology(conf_get(root, "topology"), &s->topo, err))
        return FALSE;
    s->nodes = 1;
    s->tp = s->pp = 1;
    s->dp = 0;
    s->zero = 0;
    s->schedule = SCHED_1F1B;
    s->micro_batch = 1;
    s->grad_accum = 0;
    s->global_batch = 0;
    s->seq_len = 2048;
    s->precision = PREC_FP16;
    s->recompute = RECOMPUTE_NONE;
    s->dedup_replicas = TRUE;
    s->contention = TRUE;
    s->host = TRUE;
    s->interference = TRUE;
    int coll_mode = 0;
    s->bucket_bytes = -1;
    s->prefetch_elems = FRAMEWORK_ZERO3_PREFETCH_ELEMS;
    s->max_live_elems = FRAMEWORK_ZERO3_MAX_LIVE_ELEMS;
    int fw = FW_DEEPSPEED;
    if (!int_in(root, "nodes", TRUE, 1, 1 << 20, &s->nodes, err))
        return FALSE;
    const ConfNode *par = conf_get(root, "parallel"), *tr = conf_get(root, "training"),
                   *sim = conf_get(root, "sim");
    if (!par || !tr)
        return conf_fail(err, CONF_ERROR_KEY, root, "missing key '%s'",
                         par ? "training" : "parallel");
    int sched = s->schedule, prec = s->precision, rc = s->recompute;
    int64_t ga = 0;
    const ConfNode *dpn = conf_get(par, "dp");
    if (!conf_check_keys(par, par_keys, "parallel", err) ||
        !int_in(par, "tp", FALSE, 1, 1 << 20, &s->tp, err) ||
        !int_in(par, "pp", FALSE, 1, 1 << 20, &s->pp, err) ||
        !int_in(par, "zero", FALSE, 0, 3, &s->zero, err) ||
        !conf_enum(par, "schedule", FALSE, schedule_names, &sched, err) ||
        !conf_bytes(par, "bucket_size", FALSE, &s->bucket_bytes, err) ||
        !conf_double(par, "prefetch_bucket_size", FALSE, 0, 1e15, &s->prefetch_elems, err) ||
        !conf_double(par, "max_live_parameters", FALSE, 1, 1e15, &s->max_live_elems, err))
        return FALSE;
    if (dpn && !(dpn->kind == CONF_SCALAR && strcmp(dpn->value, "auto") == 0))
        if (!int_in(par, "dp", FALSE, 1, 1 << 30, &s->dp, err))
            return FALSE;
    if (!conf_check_keys(tr, train_keys, "training", err) ||
        !int_in(tr, "micro_batch", FALSE, 1, 1 << 20, &s->micro_batch, err) ||
        !conf_int(tr, "grad_accum", FALSE, 1, 1 << 20, &ga, err) ||
        !conf_int(tr, "global_batch", FALSE, 1, INT64_C(1) << 40, &s->global_batch, err) ||
        !int_in(tr, "seq_len", FALSE, 1, 1 << 24, &s->seq_len, err) ||
        !conf_enum(tr, "precision", FALSE, precision_names, &prec, err) ||
        !conf_enum(tr, "recompute", FALSE, recompute_names, &rc, err) ||
        !conf_enum(tr, "framework", FALSE, framework_names, &fw, err) ||
        !conf_bool(tr, "synchronize_each_layer", FALSE, &s->sync_each_layer, err))
        return FALSE;
    if (sim && (!conf_check_keys(sim, sim_keys, "sim", err) ||
                !conf_bool(sim, "dedup_replicas", FALSE, &s->dedup_replicas, err) ||
                !conf_bool(sim, "contention", FALSE, &s->contention, err) ||
                !conf_bool(sim, "host", FALSE, &s->host, err) ||
                !conf_bool(sim, "interference", FALSE, &s->interference, err) ||
                !conf_enum(sim, "collectives", FALSE, coll_modes, &coll_mode, err)))
        return FALSE;
    s->detailed = coll_mode == 1;
    s->schedule = sched;
    s->precision = prec;
    s->recompute = rc;
    s->framework = fw;

    /* Layout checks: the errors the study's own runs hit first. */
    const ModelConfig *m = &s->model;
    s->gpus = s->nodes * s->topo.gpus_per_node;
    if (m->heads % s->tp != 0)
        return conf_fail(err, CONF_ERROR_INVALID, at_or(root, "parallel", "tp"),
                         "tensor parallelism %d does not divide the %d attention heads of %s; "
                         "use a TP size that divides %d",
                         s->tp, m->heads, m->name, m->heads);
    if (m->ffn_hidden % s->tp != 0)
        return conf_fail(err, CONF_ERROR_INVALID, at_or(root, "parallel", "tp"),
                         "tensor parallelism %d does not divide the MLP width %d of %s", s->tp,
                         m->ffn_hidden, m->name);
    if (m->layers % s->pp != 0)
        return conf_fail(err, CONF_ERROR_INVALID, at_or(root, "parallel", "pp"),
                         "pipeline parallelism %d does not divide the %d layers of %s", s->pp,
                         m->layers, m->name);
    if (s->dp == 0) {
        int64_t tp_pp = (int64_t)s->tp * s->pp; /* each up to 2^20: not in an int */
        if (s->gpus % tp_pp != 0)
            return conf_fail(err, CONF_ERROR_INVALID, at_or(root, "parallel", "tp"),
                             "TP %d x PP %d = %" G_GINT64_FORMAT
                             " does not divide the %d GPUs (%d nodes x %d)",
                             s->tp, s->pp, tp_pp, s->gpus, s->nodes, s->topo.gpus_per_node);
        s->dp = (int)(s->gpus / tp_pp);
    } else if ((int64_t)s->tp * s->pp * s->dp != s->gpus) {
        return conf_fail(err, CONF_ERROR_INVALID, at_or(root, "parallel", "dp"),
                         "TP %d x PP %d x DP %d = %" G_GINT64_FORMAT
                         " ranks, but the job has %d GPUs (%d nodes x %d); set dp: auto or change "
                         "nodes",
                         s->tp, s->pp, s->dp, (int64_t)s->tp * s->pp * s->dp, s->gpus, s->nodes,
                         s->topo.gpus_per_node);
    }
    int64_t per_step = (int64_t)s->micro_batch * s->dp;
    if (s->global_batch > 0) {
        if (s->global_batch % per_step != 0)
            return conf_fail(err, CONF_ERROR_INVALID, at_or(root, "training", "global_batch"),
                             "global batch %" G_GINT64_FORMAT
                             " is not a whole number of micro-batches: micro_batch %d x DP %d = "
                             "%" G_GINT64_FORMAT " sequences per step",
                             s->global_batch, s->micro_batch, s->dp, per_step);
        int64_t derived = s->global_batch / per_step;
        if (ga && ga != derived)
            return conf_fail(err, CONF_ERROR_INVALID, at_or(root, "training", "grad_accum"),
                             "grad_accum %" G_GINT64_FORMAT
                             " contradicts global_batch %" G_GINT64_FORMAT
                             " (which gives %" G_GINT64_FORMAT "); give one of them",
                             ga, s->global_batch, derived);
        if (derived > (1 << 20))
            return conf_fail(err, CONF_ERROR_INVALID, at_or(root, "training", "global_batch"),
                             "global batch gives %" G_GINT64_FORMAT " micro-batches; at most %d",
                             derived, 1 << 20);
        s->grad_accum = (int)derived;
    } else {
        s->grad_accum = ga ? (int)ga : 1;
        s->global_batch = per_step * s->grad_accum;
    }
    const Framework *f = framework_get(s->framework);
    if (s->zero > f->max_zero)
        return conf_fail(err, CONF_ERROR_INVALID, at_or(root, "parallel", "zero"),
                         "%s has no ZeRO stage %d (at most %d%s); use training.framework: "
                         "deepspeed for stages 2 and 3",
                         f->name, s->zero, f->max_zero,
                         s->framework == FW_MEGATRON ? ": its distributed optimizer" : "");
    if (s->bucket_bytes < 0) /* framework.c: each framework's own default */
        s->bucket_bytes =
            framework_default_bucket_bytes(s->framework, s->dp, model_elem_bytes(s->precision));
    if (s->bucket_bytes <= 0)
        return conf_fail(err, CONF_ERROR_VALUE, at_or(root, "parallel", "bucket_size"),
                         "bucket_size must be positive");
    if (s->nodes > 1 && s->topo.nics < 1)
        return conf_fail(err, CONF_ERROR_INVALID, at_or(root, "nodes", "nodes"),
                         "%d nodes need NICs, and topology %s has none", s->nodes, s->topo.name);
    return TRUE;
}

ConfNode *scenario_resolve(const char *path, char *const *sets, GError **err) {
    g_autoptr(ConfNode) root = conf_load_file(path, err);
    if (!root)
        return NULL;
    if (root->kind != CONF_MAP) {
        conf_fail(err, CONF_ERROR_VALUE, root, "a scenario must be a mapping of keys");
        return NULL;
    }
    for (char *const *s = sets; s && *s; s++)
        if (!apply_set(root, *s, path, err))
            return NULL;
    if (!resolve_ref(root, "model", "models", path, err) ||
        !resolve_ref(root, "topology", "topologies", path, err) || !resolve_device_ref(root, err))
        return NULL;
    return g_steal_pointer(&root);
}

Scenario *scenario_load(const char *path, char *const *sets, GError **err) {
    g_autoptr(ConfNode) root = scenario_resolve(path, sets, err);
    if (!root)
        return NULL;
    g_autoptr(Scenario) sc = g_new0(Scenario, 1);
    sc->path = g_strdup(path);
    sc->sets = g_strdupv((char **)sets);
    if (!load_scenario(root, sc, err))
        return NULL;
    return g_steal_pointer(&sc);
}

gboolean scenario_load_topology(const char *ref, char *const *sets, TopologySpec *out,
                                GError **err) {
    g_autofree char *abs = (strchr(ref, '/') || g_str_has_suffix(ref, ".yaml"))
                               ? g_canonicalize_filename(ref, NULL)
                               : g_strdup(ref);
    g_autofree char *text = g_strdup_printf("topology: \"%s\"\n", abs);
    g_autoptr(ConfNode) root = conf_load_string(text, "--topology", err);
    if (!root)
        return FALSE;
    /* references resolve as if from a scenario in the source tree's scenarios/ */
    g_autofree char *anchor = g_build_filename(SIM_SOURCE_DIR, "scenarios", "-", NULL);
    if (!resolve_ref(root, "topology", "topologies", anchor, err))
        return FALSE;
    for (char *const *s = sets; s && *s; s++) {
        g_autofree char *full =
            g_str_has_prefix(*s, "topology.") ? g_strdup(*s) : g_strconcat("topology.", *s, NULL);
        if (!apply_set(root, full, anchor, err))
            return FALSE;
    }
    memset(out, 0, sizeof *out);
    if (!load_topology(conf_get(root, "topology"), out, err)) {
        topo_spec_clear(out);
        return FALSE;
    }
    return TRUE;
}
