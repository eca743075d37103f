/* scenario: from YAML trees to a validated Scenario.
 *
 * Order of work: load the scenario file; apply each --set in order (a whole-file swap such as
 * --set model=gpt-neox-1.3b replaces the reference; a dotted key inside model. or topology. first
 * loads the referenced file so that the override refines it); load the references left; then map
 * every section to structs with its valid keys checked; then check the layout as a whole. */
#include "scenario.h"

#include <math.h>
#include <string.h>

#include "import.h"
#include "scenario_par.h"

#ifndef SIM_SOURCE_DIR
#define SIM_SOURCE_DIR "."
#endif

static const char *const precision_names[] = {"fp16", "bf16", "fp32", "fp8", NULL};
static const char *const recompute_names[] = {"none", "selective", "full", NULL};

const char *scenario_precision_name(Precision p) {
    return precision_names[p];
}
const char *scenario_recompute_name(Recompute r) {
    return recompute_names[r];
}

void scenario_free(Scenario *s) {
    if (!s)
        return;
    g_free(s->path);
    g_free(s->description);
    g_strfreev(s->sets);
    conf_node_free(s->resolved);
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

/* Lay over's keys onto base (both mappings): mappings merge key by key, anything else (scalars,
 * lists) replaces; skip names a key of over's top level left out (NULL: none). */
static void overlay(ConfNode *base, const ConfNode *over, const char *skip) {
    for (guint i = 0; i < over->keys->len; i++) {
        const char *k = over->keys->pdata[i];
        const ConfNode *v = over->items->pdata[i];
        if (skip && strcmp(k, skip) == 0)
            continue;
        ConfNode *b = conf_get(base, k);
        if (b && b->kind == CONF_MAP && v->kind == CONF_MAP)
            overlay(b, v, NULL);
        else
            conf_put(base, k, conf_node_copy(v));
    }
}

/* key names a file under dir, or is a mapping: the model or topology inline, or, with a `base:
 * NAME` key, NAME's file with the mapping's other keys laid over it (overlay), so that a scenario
 * states only what differs from a shipped file (a what-if machine, a variant of a model). */
static gboolean resolve_ref(ConfNode *root, const char *key, const char *dir,
                            const char *scenario_path, GError **err) {
    ConfNode *ref = conf_get(root, key);
    if (!ref)
        return conf_fail(err, CONF_ERROR_KEY, root, "missing key '%s' (a file name under %s/)", key,
                         dir);
    const ConfNode *based = ref->kind == CONF_MAP ? conf_get(ref, "base") : NULL;
    if (ref->kind != CONF_SCALAR && !based)
        return TRUE;
    if (based && based->kind != CONF_SCALAR)
        return conf_fail(err, CONF_ERROR_VALUE, based, "%s.base must be a file name under %s/", key,
                         dir);
    const ConfNode *name = based ? based : ref;
    g_autofree char *path = find_ref(scenario_path, dir, name->value);
    if (!path) {
        g_autofree char *avail = list_refs(scenario_path, dir);
        return conf_fail(err, CONF_ERROR_IO, name,
                         "%s '%s' not found: no %s/%s.yaml (available: %s)", key, name->value, dir,
                         name->value, avail);
    }
    ConfNode *tree = conf_load_file(path, err);
    if (!tree)
        return FALSE;
    if (tree->kind != CONF_MAP) {
        conf_fail(err, CONF_ERROR_VALUE, tree, "a %s file must be a mapping of keys", key);
        conf_node_free(tree);
        return FALSE;
    }
    if (based)
        overlay(tree, ref, "base");
    conf_put(root, key, tree);
    return TRUE;
}

static gboolean resolve_device_ref(ConfNode *root, GError **err);

static gboolean apply_set(ConfNode *root, const char *set, const char *scenario_path,
                          GError **err) {
    const char *eq = strchr(set, '=');
    /* --set is taken as bytes (G_OPTION_ARG_FILENAME_ARRAY): GOption's conversion of a string
     * option failed with "Invalid byte sequence in conversion input", naming no option */
    if (!g_utf8_validate(set, -1, NULL)) {
        g_autofree char *shown = g_utf8_make_valid(set, -1);
        g_set_error(err, CONF_ERROR, CONF_ERROR_VALUE,
                    "--set %s: not valid UTF-8 (a byte that is no character, shown as U+FFFD)",
                    shown);
        return FALSE;
    }
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

/* sim.dedup_replicas: true, false or estimate (Dedup in scenario.h). */
static gboolean load_dedup(const ConfNode *sim, Dedup *out, GError **err) {
    static const Dedup of[] = {DEDUP_OFF, DEDUP_EXACT, DEDUP_ESTIMATE}; /* conf_bool_or's 0, 1, 2 */
    int v = -1;
    if (!conf_bool_or(sim, "dedup_replicas", FALSE, "estimate", &v, err))
        return FALSE;
    if (v >= 0)
        *out = of[v];
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
                                       "embed_norm",
                                       "tied_embeddings",
                                       "parallel_residual",
                                       "layer_vector_params_h",
                                       "attention",
                                       "causal",
                                       "attention_dropout",
                                       "hidden_dropout",
                                       "softmax_fusion",
                                       "bias_gelu_fusion",
                                       "kv_heads",
                                       "mlp",
                                       "norm",
                                       "bias",
                                       "moe",
                                       NULL};
    static const char *const pos_names[] = {"learned", "rotary", "alibi", NULL};
    static const char *const mlp_names[] = {"gelu", "swiglu", NULL};
    static const char *const norm_names[] = {"layernorm", "rmsnorm", NULL};
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
    int pos = m->pos_emb, attn = ATTN_STANDARD, mlp = MLP_GELU, norm = NORM_LAYERNORM;
    gboolean bias = TRUE; /* GPT-NeoX's linears have biases */
    m->kv_heads = 0;      /* 0: as many as heads (multi-head attention) */
    if (!conf_string(n, "name", TRUE, &m->name, err) ||
        !conf_int32(n, "layers", TRUE, 1, 1 << 20, &m->layers, err) ||
        !conf_int32(n, "hidden", TRUE, 1, 1 << 24, &m->hidden, err) ||
        !conf_int32(n, "heads", TRUE, 1, 1 << 20, &m->heads, err) ||
        !conf_int32(n, "ffn_hidden", FALSE, 1, 1 << 26, &m->ffn_hidden, err) ||
        !conf_int32(n, "vocab", TRUE, 1, 1 << 28, &m->vocab, err) ||
        !conf_int32(n, "vocab_pad_multiple", FALSE, 1, 1 << 20, &m->vocab_pad_multiple, err) ||
        !conf_enum(n, "pos_emb", FALSE, pos_names, &pos, err) ||
        !conf_bool(n, "embed_norm", FALSE, &m->embed_norm, err) ||
        !conf_bool(n, "tied_embeddings", FALSE, &m->tied_embeddings, err) ||
        !conf_bool(n, "parallel_residual", FALSE, &m->parallel_residual, err) ||
        !conf_int32(n, "layer_vector_params_h", FALSE, 0, 1000, &m->layer_vector_params_h, err) ||
        !conf_enum(n, "attention", FALSE, attn_names, &attn, err) ||
        !conf_bool(n, "causal", FALSE, &m->causal, err) ||
        !conf_double(n, "attention_dropout", FALSE, 0.0, 1.0, &m->attention_dropout, err) ||
        !conf_double(n, "hidden_dropout", FALSE, 0.0, 1.0, &m->hidden_dropout, err) ||
        !conf_bool(n, "softmax_fusion", FALSE, &m->softmax_fusion, err) ||
        !conf_bool(n, "bias_gelu_fusion", FALSE, &m->bias_gelu_fusion, err) ||
        !conf_int32(n, "kv_heads", FALSE, 1, 1 << 20, &m->kv_heads, err) ||
        !conf_enum(n, "mlp", FALSE, mlp_names, &mlp, err) ||
        !conf_enum(n, "norm", FALSE, norm_names, &norm, err) ||
        !conf_bool(n, "bias", FALSE, &bias, err))
        return FALSE;
    m->mlp = mlp;
    m->norm = norm;
    m->no_bias = !bias;
    /* Absent, the vector parameters are the study's 8h for its own layer (LayerNorm, biases,
     * GeLU, multi-head) and derived exactly from the fields for any other */
    if (!conf_get(n, "layer_vector_params_h") && (mlp != MLP_GELU || norm != NORM_LAYERNORM ||
                                                  !bias || m->kv_heads != 0 || conf_get(n, "moe")))
        m->layer_vector_params_h = -1;
    m->pos_emb = pos;
    m->attention = attn;
    if (m->ffn_hidden == 0)
        m->ffn_hidden = 4 * m->hidden;
    if (m->hidden % m->heads != 0)
        return conf_fail(err, CONF_ERROR_INVALID, conf_get(n, "heads"),
                         "%d heads do not divide hidden size %d", m->heads, m->hidden);
    if (m->kv_heads > 0 && m->heads % m->kv_heads != 0)
        return conf_fail(err, CONF_ERROR_INVALID, conf_get(n, "kv_heads"),
                         "%d key/value heads do not divide the %d query heads; grouped-query "
                         "attention needs heads to be a multiple of kv_heads",
                         m->kv_heads, m->heads);
    return scenario_load_moe(conf_get(n, "moe"), m, err);
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

/* --- the scenario as a whole --------------------------------------------------------------- */

const ConfNode *scenario_at(const ConfNode *root, const char *sect, const char *key) {
    const ConfNode *s = conf_get(root, sect);
    const ConfNode *k = s ? conf_get(s, key) : NULL;
    return k ? k : (s ? s : root);
}

/* The parallel block par: its keys are those of the parallelisms' entries (scenario_par.h), each
 * of which reads its own. */
static gboolean load_parallel(const ConfNode *par, Scenario *s, GError **err) {
    g_autoptr(GPtrArray) keys = g_ptr_array_new();
    for (const ScenarioPar *const *p = scenario_pars; *p; p++)
        for (const char *const *k = (*p)->keys; *k; k++)
            g_ptr_array_add(keys, (gpointer)*k);
    g_ptr_array_add(keys, NULL);
    if (!conf_check_keys(par, (const char *const *)keys->pdata, "parallel", err))
        return FALSE;
    for (const ScenarioPar *const *p = scenario_pars; *p; p++)
        if ((*p)->load && !(*p)->load(par, s, err))
            return FALSE;
    return TRUE;
}

/* dp: given, checked against the GPUs over the model-parallel size (the entries' sizes, each up
 * to 2^20: not in an int), or derived from them; the errors name each factor (those not always
 * labelled only where they are used) and blame the last one named before PP, or dp. */
static gboolean derive_dp(const ConfNode *root, Scenario *s, GError **err) {
    int64_t mp = 1;
    g_autoptr(GString) f = g_string_new(NULL);
    const char *blame = "tp";
    for (const ScenarioPar *const *p = scenario_pars; *p; p++) {
        if (!(*p)->size)
            continue;
        int n = (*p)->size(s);
        mp *= n;
        if (n > 1 || (*p)->label_always) {
            g_string_append_printf(f, "%s%s %d", f->len ? " x " : "", (*p)->label, n);
            if (*p != &scenario_par_pp)
                blame = (*p)->name;
        }
    }
    if (s->dp == 0) {
        if (s->gpus % mp != 0)
            return conf_fail(err, CONF_ERROR_INVALID, scenario_at(root, "parallel", blame),
                             "%s = %" G_GINT64_FORMAT
                             " does not divide the %d GPUs (%d nodes x %d)",
                             f->str, mp, s->gpus, s->nodes, s->topo.gpus_per_node);
        s->dp = (int)(s->gpus / mp);
    } else if (mp * s->dp != s->gpus) {
        return conf_fail(err, CONF_ERROR_INVALID, scenario_at(root, "parallel", "dp"),
                         "%s x DP %d = %" G_GINT64_FORMAT
                         " ranks, but the job has %d GPUs (%d nodes x %d); set dp: auto or change "
                         "nodes",
                         f->str, s->dp, mp * s->dp, s->gpus, s->nodes, s->topo.gpus_per_node);
    }
    return TRUE;
}

static gboolean load_scenario(const ConfNode *root, Scenario *s, GError **err) {
    static const char *const keys[] = {"description", "model", "topology", "nodes", "parallel",
                                       "training",    "sim",   "sweep", /* sim sweep's axes */
                                       NULL};
    static const char *const train_keys[] = {
        "micro_batch",  "grad_accum",   "global_batch",     "seq_len",
        "precision",    "recompute",    "framework",        "synchronize_each_layer",
        "comms_logger", "token_budget", SCENARIO_FSDP_KEYS, NULL};
    static const char *const sim_keys[] = {
        "dedup_replicas", "contention",    "collectives",  "host",
        "interference",   "group_in_step", "steady_state", NULL};
    static const char *const coll_modes[] = {"aggregated", "detailed", NULL};
    if (!conf_check_keys(root, keys, "the scenario", err) ||
        !conf_string(root, "description", FALSE, &s->description, err) ||
        !load_model(conf_get(root, "model"), &s->model, err) ||
        !scenario_load_topology_spec(conf_get(root, "topology"), &s->topo, err))
        return FALSE;
    s->nodes = 1;
    s->micro_batch = 1;
    s->grad_accum = 0;
    s->global_batch = 0;
    s->seq_len = 2048;
    s->precision = PREC_FP16;
    s->recompute = RECOMPUTE_NONE;
    s->dedup_replicas = DEDUP_EXACT;
    s->contention = TRUE;
    s->host = TRUE;
    s->interference = TRUE;
    s->group_in_step = TRUE;
    s->steady_state = TRUE;
    int coll_mode = 0;
    int fw = FW_DEEPSPEED;
    if (!conf_int32(root, "nodes", TRUE, 1, 1 << 20, &s->nodes, err))
        return FALSE;
    /* a job larger than the machine is the job's error: name the nodes key (topo_new checks the
     * same again, for callers that build a topology without a scenario) */
    const TopologySpec *ts = &s->topo;
    int64_t cap = ts->fabric == FABRIC_DRAGONFLY ? (int64_t)ts->groups * ts->nodes_per_group : 0;
    if (ts->machine_nodes > 0 && (cap == 0 || ts->machine_nodes < cap))
        cap = ts->machine_nodes;
    if (cap > 0 && s->nodes > cap)
        return conf_fail(err, CONF_ERROR_INVALID, conf_get(root, "nodes"),
                         "%d nodes asked for; topology %s has %" G_GINT64_FORMAT " (%s)", s->nodes,
                         ts->name, cap,
                         ts->machine_nodes > 0 && cap == ts->machine_nodes ? "fabric.nodes"
                                                                           : "fabric.groups x "
                                                                             "nodes_per_group");
    const ConfNode *par = conf_get(root, "parallel"), *tr = conf_get(root, "training"),
                   *sim = conf_get(root, "sim");
    if (!par || !tr)
        return conf_fail(err, CONF_ERROR_KEY, root, "missing key '%s'",
                         par ? "training" : "parallel");
    int prec = s->precision, rc = s->recompute;
    int64_t ga = 0;
    if (!load_parallel(par, s, err))
        return FALSE;
    if (!conf_check_keys(tr, train_keys, "training", err) ||
        !conf_int32(tr, "micro_batch", FALSE, 1, 1 << 20, &s->micro_batch, err) ||
        !conf_int(tr, "grad_accum", FALSE, 1, 1 << 20, &ga, err) ||
        !conf_int(tr, "global_batch", FALSE, 1, INT64_C(1) << 40, &s->global_batch, err) ||
        !conf_int32(tr, "seq_len", FALSE, 1, 1 << 24, &s->seq_len, err) ||
        !conf_count(tr, "token_budget", FALSE, &s->token_budget, err) ||
        !conf_enum(tr, "precision", FALSE, precision_names, &prec, err) ||
        !conf_enum(tr, "recompute", FALSE, recompute_names, &rc, err) ||
        !conf_enum(tr, "framework", FALSE, framework_names, &fw, err) ||
        !conf_bool(tr, "synchronize_each_layer", FALSE, &s->sync_each_layer, err) ||
        !conf_bool(tr, "comms_logger", FALSE, &s->comms_logger, err))
        return FALSE;
    if (sim &&
        (!conf_check_keys(sim, sim_keys, "sim", err) || !load_dedup(sim, &s->dedup_replicas, err) ||
         !conf_bool(sim, "contention", FALSE, &s->contention, err) ||
         !conf_bool(sim, "host", FALSE, &s->host, err) ||
         !conf_bool(sim, "interference", FALSE, &s->interference, err) ||
         !conf_bool(sim, "group_in_step", FALSE, &s->group_in_step, err) ||
         !conf_bool(sim, "steady_state", FALSE, &s->steady_state, err) ||
         !conf_enum(sim, "collectives", FALSE, coll_modes, &coll_mode, err)))
        return FALSE;
    s->detailed = coll_mode == 1;
    s->precision = prec;
    s->recompute = rc;
    s->framework = fw;
    if (prec == PREC_FP8 && !(s->topo.device.peak_flops[PREC_FP8] > 0))
        return conf_fail(err, CONF_ERROR_INVALID, scenario_at(root, "training", "precision"),
                         "precision fp8 needs a device with an fp8 matrix peak; %s has none "
                         "(its file's peak_flops lacks fp8): use bf16, or a device such as "
                         "h100-sxm",
                         s->topo.device.name);

    /* Layout checks: the errors the study's own runs hit first. */
    s->gpus = s->nodes * s->topo.gpus_per_node;
    for (const ScenarioPar *const *p = scenario_pars; *p; p++)
        if ((*p)->check_layout && !(*p)->check_layout(root, s, err))
            return FALSE;
    if (!derive_dp(root, s, err))
        return FALSE;
    int64_t per_step = (int64_t)s->micro_batch * s->dp;
    if (s->global_batch > 0) {
        if (s->global_batch % per_step != 0)
            return conf_fail(err, CONF_ERROR_INVALID, scenario_at(root, "training", "global_batch"),
                             "global batch %" G_GINT64_FORMAT
                             " is not a whole number of micro-batches: micro_batch %d x DP %d = "
                             "%" G_GINT64_FORMAT " sequences per step",
                             s->global_batch, s->micro_batch, s->dp, per_step);
        int64_t derived = s->global_batch / per_step;
        if (ga && ga != derived)
            return conf_fail(err, CONF_ERROR_INVALID, scenario_at(root, "training", "grad_accum"),
                             "grad_accum %" G_GINT64_FORMAT
                             " contradicts global_batch %" G_GINT64_FORMAT
                             " (which gives %" G_GINT64_FORMAT "); give one of them",
                             ga, s->global_batch, derived);
        if (derived > (1 << 20))
            return conf_fail(err, CONF_ERROR_INVALID, scenario_at(root, "training", "global_batch"),
                             "global batch gives %" G_GINT64_FORMAT " micro-batches; at most %d",
                             derived, 1 << 20);
        s->grad_accum = (int)derived;
    } else {
        s->grad_accum = ga ? (int)ga : 1;
        s->global_batch = per_step * s->grad_accum;
    }
    /* A stage's program holds a few tasks per layer pass (workload.c): past 2^24 passes it would
     * take gigabytes, and a stream's positions are counted in 28 bits (TASK_DEP_SEQ_BITS). */
    int most = 0; /* the largest stage's layers (first_stage_layers, last_stage_layers) */
    for (int st = 0, first; st < s->pp; st++)
        most = MAX(most, model_stage_layers(&s->model, s->pp, st, &first));
    int64_t passes = (int64_t)s->grad_accum * most;
    if (passes > (1 << 24))
        return conf_fail(err, CONF_ERROR_INVALID,
                         s->global_batch && !conf_get(conf_get(root, "training"), "grad_accum")
                             ? scenario_at(root, "training", "global_batch")
                             : scenario_at(root, "training", "grad_accum"),
                         "%d micro-batches x %d layers per stage = %" G_GINT64_FORMAT
                         " layer passes per iteration and stage; at most %d can be simulated",
                         s->grad_accum, most, passes, 1 << 24);
    for (const ScenarioPar *const *p = scenario_pars; *p; p++)
        if ((*p)->check && !(*p)->check(root, s, err))
            return FALSE;
    if (s->nodes > 1 && s->topo.nics < 1)
        return conf_fail(err, CONF_ERROR_INVALID, scenario_at(root, "nodes", "nodes"),
                         "%d nodes need NICs, and topology %s has none", s->nodes, s->topo.name);
    return TRUE;
}

/* `import: FILE` (a GPT-NeoX .yml, Megatron-LM arguments, a DeepSpeed JSON or a Hugging Face
 * config.json, relative to the scenario): the scenario `sim import FILE` writes, with the
 * scenario's own keys laid over it (its `model:` name, `topology:` and `nodes:` are passed to
 * the import as --model, --topology and --nodes would be). *root is replaced. */
static char *import_text(const ConfNode *root, const ConfNode *imp, const char *path,
                         char **file_out, GError **err) {
    g_autofree char *dir = g_path_get_dirname(path);
    g_autofree char *file = g_path_is_absolute(imp->value)
                                ? g_strdup(imp->value)
                                : g_build_filename(dir, imp->value, NULL);
    const ConfNode *model = conf_get(root, "model"), *topo = conf_get(root, "topology");
    ImportOptions opt = {IMPORT_AUTO, topo && topo->kind == CONF_SCALAR ? topo->value : NULL,
                         conf_get(root, "nodes") ? 1 : 0, /* the scenario's nodes win */
                         model && model->kind == CONF_SCALAR ? model->value : NULL, NULL};
    g_autoptr(GError) ierr = NULL;
    char *text = import_scenario(file, &opt, &ierr);
    if (!text) {
        conf_fail(err, ierr->code, imp, "import: %s", ierr->message);
        return NULL;
    }
    *file_out = g_steal_pointer(&file);
    return text;
}

static gboolean resolve_import(ConfNode **root, const char *path, GError **err) {
    const ConfNode *imp = conf_get(*root, "import");
    if (!imp)
        return TRUE;
    if (imp->kind != CONF_SCALAR)
        return conf_fail(err, CONF_ERROR_VALUE, imp, "import: expected a file name");
    g_autofree char *file = NULL;
    g_autofree char *text = import_text(*root, imp, path, &file, err);
    if (!text)
        return FALSE;
    g_autofree char *origin = g_strdup_printf("%s (as imported)", file);
    ConfNode *base = conf_load_string(text, origin, err);
    if (!base)
        return FALSE;
    overlay(base, *root, "import");
    conf_node_free(*root);
    *root = base;
    return TRUE;
}

char *scenario_import_notes(const char *path) {
    g_autoptr(ConfNode) root = conf_load_file(path, NULL);
    const ConfNode *imp = root && root->kind == CONF_MAP ? conf_get(root, "import") : NULL;
    if (!imp || imp->kind != CONF_SCALAR)
        return NULL;
    g_autofree char *file = NULL;
    g_autofree char *text = import_text(root, imp, path, &file, NULL);
    if (!text)
        return NULL;
    GString *notes = g_string_new(NULL);
    for (const char *p = text; *p == '#';) { /* the comment block that opens the scenario */
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) + 1 : strlen(p);
        g_string_append_len(notes, p, (gssize)n);
        p += n;
    }
    return g_string_free(notes, FALSE);
}

ConfNode *scenario_resolve(const char *path, char *const *sets, GError **err) {
    g_autoptr(ConfNode) root = conf_load_file(path, err);
    if (!root)
        return NULL;
    if (root->kind != CONF_MAP) {
        conf_fail(err, CONF_ERROR_VALUE, root, "a scenario must be a mapping of keys");
        return NULL;
    }
    if (!resolve_import(&root, path, err))
        return NULL;
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
    sc->resolved = g_steal_pointer(&root);
    return g_steal_pointer(&sc);
}

gboolean scenario_load_topology(const char *ref, char *const *sets, TopologySpec *out,
                                GError **err) {
    g_autofree char *abs = (strchr(ref, '/') || g_str_has_suffix(ref, ".yaml"))
                               ? g_canonicalize_filename(ref, NULL)
                               : g_strdup(ref);
    /* the tree built, not YAML text: a '"' in the name was pasted into the YAML and gave a parse
     * error ("--topology:1:17: did not find expected key") instead of naming the topology */
    g_autoptr(ConfNode) root = conf_load_string("{}", "--topology", err);
    g_assert(root);
    conf_put(root, "topology", conf_scalar_new(abs, "--topology"));
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
    if (!scenario_load_topology_spec(conf_get(root, "topology"), out, err)) {
        topo_spec_clear(out);
        return FALSE;
    }
    return TRUE;
}
