/* report: text, JSON and CSV writers. JSON is written by hand: the output is small, the key order
 * is part of the contract, and numbers are printed with a fixed format so that identical runs give
 * identical bytes. */
#include "report.h"

#include "accuracy.h"
#include "executor.h"
#include "layout.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

const char *report_format_number(double v, char *buf) {
    if (v == floor(v) && fabs(v) < 9007199254740992.0)
        g_snprintf(buf, 32, "%.0f", v);
    else
        g_snprintf(buf, 32, "%.12g", v);
    return buf;
}

static void num(FILE *out, double v) {
    char buf[32];
    fputs(report_format_number(v, buf), out);
}

void report_csv_quote(GString *g, const char *s) {
    if (!strpbrk(s, ",\"\r\n")) {
        g_string_append(g, s);
        return;
    }
    g_string_append_c(g, '"');
    for (const char *p = s; *p; p++) {
        if (*p == '"')
            g_string_append_c(g, '"');
        g_string_append_c(g, *p);
    }
    g_string_append_c(g, '"');
}

void report_json_quote(GString *g, const char *s) {
    /* JSON text is UTF-8 (RFC 8259 section 8.1): a scenario path with other bytes made the
     * report invalid; such bytes are written as U+FFFD. The quoting itself is json-glib's
     * generator's, the one `sim compare` and `sim import` read back with. */
    g_autofree char *valid = g_utf8_make_valid(s ? s : "", -1);
    g_autoptr(JsonNode) node = json_node_new(JSON_NODE_VALUE);
    json_node_set_string(node, valid);
    g_autofree char *text = json_to_string(node, FALSE);
    g_string_append(g, text);
}

static void json_str(FILE *out, const char *s) {
    g_autoptr(GString) g = g_string_new(NULL);
    report_json_quote(g, s);
    fputs(g->str, out);
}

/* key: number, with a comma before it unless first */
void report_kv_num(FILE *out, const char *indent, const char *key, double v, gboolean last) {
    fprintf(out, "%s\"%s\": ", indent, key);
    num(out, v);
    fputs(last ? "\n" : ",\n", out);
}

/* key: number, or null where has is FALSE */
static void kv_opt(FILE *out, const char *indent, const char *key, gboolean has, double v,
                   gboolean last) {
    if (has)
        report_kv_num(out, indent, key, v, last);
    else
        fprintf(out, "%s\"%s\": null%s\n", indent, key, last ? "" : ",");
}

void report_kv_str(FILE *out, const char *indent, const char *key, const char *v, gboolean last) {
    fprintf(out, "%s\"%s\": ", indent, key);
    json_str(out, v);
    fputs(last ? "\n" : ",\n", out);
}

TrainTime report_train_time(const SimRun *run) {
    const Scenario *sc = sim_scenario(run);
    double it = sim_time_s(sim_summary(run)->iteration);
    TrainTime t = {0};
    t.tokens_per_s = it > 0 ? (double)sc->global_batch * sc->seq_len / it : 0;
    if (sc->token_budget > 0 && t.tokens_per_s > 0) {
        t.budget = sc->token_budget;
        t.seconds = t.budget / t.tokens_per_s;
        t.days = t.seconds / 86400;
        t.node_hours = sc->nodes * t.seconds / 3600;
        t.gpu_hours = sc->gpus * t.seconds / 3600;
    }
    return t;
}

/* The resolved scenario's scalars as "dotted.path": "value" lines (a sequence's items by index),
 * in the order the tree holds them. */
static void write_json_resolved(FILE *out, const ConfNode *n, GString *path, gboolean *first) {
    if (n->kind == CONF_SCALAR) {
        fputs(*first ? "\n    " : ",\n    ", out);
        *first = FALSE;
        json_str(out, path->str);
        fputs(": ", out);
        json_str(out, n->value);
        return;
    }
    gsize len = path->len;
    for (guint i = 0; i < n->items->len; i++) {
        if (len)
            g_string_append_c(path, '.');
        if (n->kind == CONF_MAP)
            g_string_append(path, n->keys->pdata[i]);
        else
            g_string_append_printf(path, "%u", i);
        write_json_resolved(out, n->items->pdata[i], path, first);
        g_string_truncate(path, len);
    }
}

#define REPORT_LINKS 8 /* busiest links listed */

/* Busy fraction of a link over the iteration: bytes / (capacity x iteration time). */
static double utilization(const SimRun *run, const NetLinkStat *l) {
    double secs = sim_time_s(sim_summary(run)->iteration);
    double cap = topo_link_capacity(sim_topology(run), l->link);
    return secs > 0 ? l->bytes / (cap * secs) : 0.0;
}

static void write_json_links(FILE *out, const SimRun *run) {
    const Topology *topo = sim_topology(run);
    const Scenario *sc = sim_scenario(run);
    GArray *links = sim_busiest_links(run, REPORT_LINKS);
    fputs("  \"links\": [", out);
    for (guint i = 0; i < links->len; i++) {
        const NetLinkStat *l = &g_array_index(links, NetLinkStat, i);
        char name[96];
        topo_link_describe(topo, l->link, name, sizeof name);
        const char *i3 = "      ";
        fprintf(out, "%s\n    {\n", i ? "," : "");
        report_kv_num(out, i3, "id", l->link, FALSE);
        report_kv_str(out, i3, "name", name, FALSE);
        report_kv_str(out, i3, "kind", topo_link_kind_name(topo_link_kind(topo, l->link)), FALSE);
        report_kv_num(out, i3, "capacity_bytes_per_s", topo_link_capacity(topo, l->link), FALSE);
        report_kv_num(out, i3, "bytes", l->bytes, FALSE);
        report_kv_num(out, i3, "utilization", utilization(run, l), FALSE);
        /* a class a parallelism owns only where it is on (edp with MoE, cp with context
         * parallelism: workload_class_reported) */
        int last = DIM_LINK_CLASSES - 1;
        while (!workload_class_reported(sc, last))
            last--;
        for (int d = 0; d <= last; d++) {
            char key[32];
            if (!workload_class_reported(sc, d))
                continue;
            g_snprintf(key, sizeof key, "%s_bytes", layout_dim_name(d));
            report_kv_num(out, i3, key, l->by_class[d], d == last);
        }
        fputs("    }", out);
    }
    fprintf(out, "%s],\n", links->len ? "\n  " : "");
    g_array_unref(links);
}

/* --- what-if: does a --set that changes links touch the busiest one? ------------------------- */

/* Topology keys that set a link's capacity (or how many there are), and the kinds of link each
 * changes (topology.c topo_link_capacity: fat-tree leaf links carry nodes_per_leaf NICs' worth). */
static const struct {
    const char *key;
    guint32 kinds; /* LinkKind bits */
} link_knobs[] = {
    {"topology.node.link.bandwidth", 1u << LINK_GPU},
    {"topology.node.links", 1u << LINK_GPU},
    {"topology.node.switch.bandwidth", 1u << LINK_SWITCH_UP | 1u << LINK_SWITCH_DOWN},
    {"topology.node.nics.pcie_bandwidth", 1u << LINK_PCIE_UP | 1u << LINK_PCIE_DOWN},
    {"topology.node.nics.bandwidth",
     1u << LINK_NIC_OUT | 1u << LINK_NIC_IN | 1u << LINK_LEAF_UP | 1u << LINK_LEAF_DOWN},
    {"topology.fabric.local_bandwidth",
     1u << LINK_LOCAL | 1u << LINK_PORT_OUT | 1u << LINK_PORT_IN},
    {"topology.fabric.global_bandwidth", 1u << LINK_GLOBAL},
    {"topology.fabric.global_links", 1u << LINK_GLOBAL},
    {"topology.fabric.taper", 1u << LINK_LEAF_UP | 1u << LINK_LEAF_DOWN},
};

/* Whether the machine has links of kind k at all. */
static gboolean kind_exists(const TopologySpec *s, LinkKind k) {
    switch (k) {
    case LINK_GPU:
        return s->switch_bandwidth <= 0 && s->gpus_per_node > 1;
    case LINK_SWITCH_UP:
    case LINK_SWITCH_DOWN:
        return s->switch_bandwidth > 0;
    case LINK_LOCAL:
    case LINK_GLOBAL:
        return s->nics > 0 && s->fabric == FABRIC_DRAGONFLY;
    case LINK_PORT_OUT:
    case LINK_PORT_IN:
        return s->nics > 0 && s->fabric == FABRIC_DRAGONFLY && s->routing == ROUTING_ADAPTIVE;
    case LINK_LEAF_UP:
    case LINK_LEAF_DOWN:
        return s->nics > 0 && s->fabric == FABRIC_FAT_TREE;
    default: /* PCIe and NIC links */
        return s->nics > 0;
    }
}

typedef struct {
    GPtrArray *knobs;  /* the --set keys that change links (char *, owned), in order */
    GArray *kinds;     /* guint32 per knob: the LinkKind bits it changes on this machine */
    NetLinkStat limit; /* the busiest link of the run (limit.bytes 0: none carried bytes) */
} WhatIf;

static void what_if_init(WhatIf *w, const SimRun *run) {
    const Scenario *sc = sim_scenario(run);
    w->knobs = g_ptr_array_new_with_free_func(g_free);
    w->kinds = g_array_new(FALSE, FALSE, sizeof(guint32));
    for (char **o = sc->sets; o && *o; o++) {
        size_t len = strcspn(*o, "=");
        for (size_t i = 0; i < G_N_ELEMENTS(link_knobs); i++)
            if (strlen(link_knobs[i].key) == len && !strncmp(*o, link_knobs[i].key, len)) {
                guint32 kinds = 0;
                for (int k = 0; k < LINK_KIND_COUNT; k++)
                    if ((link_knobs[i].kinds >> k & 1) && kind_exists(&sc->topo, k))
                        kinds |= 1u << k;
                g_ptr_array_add(w->knobs, g_strndup(*o, len));
                g_array_append_val(w->kinds, kinds);
            }
    }
    GArray *links = sim_busiest_links(run, 1);
    w->limit = links->len ? g_array_index(links, NetLinkStat, 0) : (NetLinkStat){0};
    g_array_unref(links);
}

static void what_if_clear(WhatIf *w) {
    g_ptr_array_unref(w->knobs);
    g_array_unref(w->kinds);
}

/* Knob i's link kinds, ", "-separated. */
static void kinds_list(GString *g, guint32 kinds) {
    for (int k = 0; k < LINK_KIND_COUNT; k++)
        if (kinds >> k & 1)
            g_string_append_printf(g, "%s%s", g->len ? ", " : "", topo_link_kind_name(k));
}

static void write_json_what_if(FILE *out, const SimRun *run) {
    WhatIf w;
    what_if_init(&w, run);
    const Topology *topo = sim_topology(run);
    gboolean any = w.limit.bytes > 0;
    char name[96] = "";
    if (any)
        topo_link_describe(topo, w.limit.link, name, sizeof name);
    fputs("  \"what_if\": {\n", out);
    report_kv_str(out, "    ", "limiting_link", name, FALSE);
    report_kv_str(out, "    ", "limiting_link_kind",
                  any ? topo_link_kind_name(topo_link_kind(topo, w.limit.link)) : "", FALSE);
    fputs("    \"knobs\": [", out);
    for (guint i = 0; i < w.knobs->len; i++) {
        guint32 kinds = g_array_index(w.kinds, guint32, i);
        fprintf(out, "%s\n      {\"key\": ", i ? "," : "");
        json_str(out, w.knobs->pdata[i]);
        fputs(", \"link_kinds\": [", out);
        for (int k = 0, n = 0; k < LINK_KIND_COUNT; k++)
            if (kinds >> k & 1) {
                fputs(n++ ? ", " : "", out);
                json_str(out, topo_link_kind_name(k));
            }
        fprintf(out, "], \"touches_limiting_link\": %s}",
                !any                                              ? "null"
                : kinds >> topo_link_kind(topo, w.limit.link) & 1 ? "true"
                                                                  : "false");
    }
    fprintf(out, "%s]\n  },\n", w.knobs->len ? "\n    " : "");
    what_if_clear(&w);
}

/* The what-if lines of the text report, one per --set that changes links: whether it changes
 * the kind of the busiest link. */
static void write_text_what_if(FILE *out, const SimRun *run) {
    WhatIf w;
    what_if_init(&w, run);
    const Topology *topo = sim_topology(run);
    if (w.knobs->len && w.limit.bytes > 0) {
        char name[96];
        topo_link_describe(topo, w.limit.link, name, sizeof name);
        LinkKind lk = topo_link_kind(topo, w.limit.link);
        fprintf(out, "what-if    the busiest link is %s (%s, %.1f%% busy)\n", name,
                topo_link_kind_name(lk), 100.0 * utilization(run, &w.limit));
        for (guint i = 0; i < w.knobs->len; i++) {
            guint32 kinds = g_array_index(w.kinds, guint32, i);
            g_autoptr(GString) list = g_string_new(NULL);
            kinds_list(list, kinds);
            if (kinds >> lk & 1)
                fprintf(out, "           --set %s changes %s links, the busiest link's kind\n",
                        (char *)w.knobs->pdata[i], list->str);
            else
                fprintf(out,
                        "           --set %s changes %s links only, not %s: it does not touch "
                        "the bottleneck\n",
                        (char *)w.knobs->pdata[i], list->len ? list->str : "no",
                        topo_link_kind_name(lk));
        }
        fputc('\n', out);
    }
    what_if_clear(&w);
}

static void write_json(FILE *out, const SimRun *run, gboolean timing) {
    const SimSummary *s = sim_summary(run);
    const Scenario *sc = sim_scenario(run);
    const ModelConfig *m = &sc->model;
    const char *i1 = "  ", *i2 = "    ";
    fputs("{\n", out);
    report_kv_num(out, i1, "schema_version", REPORT_SCHEMA_VERSION, FALSE);
    report_kv_str(out, i1, "scenario", sc->path, FALSE);
    /* provenance: what produced these numbers */
    report_kv_str(out, i1, "sim_version", SIM_VERSION, FALSE);
    fprintf(out, "%s\"machine\": {\n", i1);
    report_kv_str(out, i2, "topology", sc->topo.name, FALSE);
    report_kv_str(out, i2, "device", sc->topo.device.name, TRUE);
    fprintf(out, "%s},\n%s\"overrides\": [", i1, i1);
    for (char **o = sc->sets; o && *o; o++) {
        if (o != sc->sets)
            fputs(", ", out);
        json_str(out, *o);
    }
    fputs("],\n", out);
    fprintf(out, "%s\"model\": {\n", i1);
    report_kv_str(out, i2, "name", m->name, FALSE);
    report_kv_num(out, i2, "layers", m->layers, FALSE);
    report_kv_num(out, i2, "hidden", m->hidden, FALSE);
    report_kv_num(out, i2, "heads", m->heads, FALSE);
    report_kv_num(out, i2, "ffn_hidden", m->ffn_hidden, FALSE);
    report_kv_num(out, i2, "kv_heads", model_kv_heads(m), FALSE);
    report_kv_str(out, i2, "mlp", m->mlp == MLP_SWIGLU ? "swiglu" : "gelu", FALSE);
    report_kv_str(out, i2, "norm", m->norm == NORM_RMSNORM ? "rmsnorm" : "layernorm", FALSE);
    if (m->moe.experts > 0) { /* only there: dense models' reports unchanged */
        const char *i3 = "      ";
        int64_t tokens = (int64_t)sc->micro_batch * sc->seq_len;
        fprintf(out, "%s\"moe\": {\n", i2);
        report_kv_num(out, i3, "experts", m->moe.experts, FALSE);
        report_kv_num(out, i3, "top_k", m->moe.top_k, FALSE);
        report_kv_num(out, i3, "every", m->moe.every, FALSE);
        report_kv_num(out, i3, "moe_layers", model_moe_layers(m, 0, m->layers), FALSE);
        report_kv_num(out, i3, "ffn_hidden", model_moe_ffn(m), FALSE);
        report_kv_num(out, i3, "capacity_factor", m->moe.capacity_factor, FALSE);
        report_kv_num(out, i3, "min_capacity", m->moe.min_capacity, FALSE);
        report_kv_num(out, i3, "imbalance", m->moe.imbalance, FALSE);
        report_kv_num(out, i3, "capacity_tokens", (double)model_moe_capacity(m, tokens), FALSE);
        report_kv_num(out, i3, "all_to_all_bytes",
                      model_moe_rows(m, tokens) * m->hidden * model_elem_bytes(sc->precision),
                      TRUE);
        fprintf(out, "%s},\n", i2);
    }
    report_kv_num(out, i2, "seq_len", sc->seq_len, FALSE);
    report_kv_num(out, i2, "vocab", (double)model_padded_vocab(m, sc->tp), FALSE);
    report_kv_num(out, i2, "params", s->params, FALSE);
    static const char *const pos_names[] = {
        [POS_LEARNED] = "learned", [POS_ROTARY] = "rotary", [POS_ALIBI] = "alibi"};
    report_kv_str(out, i2, "pos_emb", pos_names[m->pos_emb], TRUE);
    fprintf(out, "%s},\n%s\"parallel\": {\n", i1, i1);
    report_kv_num(out, i2, "gpus", sc->gpus, FALSE);
    report_kv_num(out, i2, "nodes", sc->nodes, FALSE);
    report_kv_num(out, i2, "dp", sc->dp, FALSE);
    report_kv_num(out, i2, "tp", sc->tp, FALSE);
    report_kv_num(out, i2, "pp", sc->pp, FALSE);
    report_kv_num(out, i2, "zero", sc->zero, FALSE);
    if (sc->fsdp_shard > 0) /* only with HYBRID_SHARD: other reports unchanged */
        report_kv_num(out, i2, "hybrid_shard_group", sc->fsdp_shard, FALSE);
    ScenarioParKey keys[SCENARIO_PAR_KEYS]; /* the other parallelisms' (ep, cp, cp_comm) */
    for (int k = 0, nk = scenario_par_report(sc, keys); k < nk; k++) {
        if (keys[k].str)
            report_kv_str(out, i2, keys[k].key, keys[k].str, FALSE);
        else
            report_kv_num(out, i2, keys[k].key, keys[k].num, FALSE);
    }
    report_kv_num(out, i2, "micro_batch", sc->micro_batch, FALSE);
    report_kv_num(out, i2, "micro_batches", sc->grad_accum, FALSE);
    report_kv_num(out, i2, "global_batch", (double)sc->global_batch, FALSE);
    report_kv_str(out, i2, "schedule", schedule_name(sc->schedule), FALSE);
    if (schedule_get(sc->schedule)->chunked) /* only there: other schedules' reports unchanged */
        report_kv_num(out, i2, "virtual_stages", sc->virtual_stages, FALSE);
    if (sc->schedule == SCHED_INTERLEAVED && sc->framework == FW_MEGATRON) /* only there */
        fprintf(out, "%s\"overlap_p2p_comm\": %s,\n", i2, sc->overlap_p2p_comm ? "true" : "false");
    /* only where it splits something: pipeline sends over TP ranks without sequence parallelism
     * (on by default for DeepSpeed, whose other reports stay as they were) */
    if (sc->pp_scatter_gather && sc->pp > 1 && sc->tp > 1 && !sc->sequence_parallel)
        fprintf(out, "%s\"pipeline_scatter_gather\": true,\n", i2);
    if (sc->tp_overlap_chunks > 0) /* only when on */
        report_kv_num(out, i2, "tp_comm_overlap_chunks", sc->tp_overlap_chunks, FALSE);
    if (sc->sequence_parallel) /* only when on: other reports unchanged */
        fprintf(out, "%s\"sequence_parallel\": true,\n", i2);
    report_kv_str(out, i2, "precision", scenario_precision_name(sc->precision), FALSE);
    report_kv_str(out, i2, "recompute", scenario_recompute_name(sc->recompute), FALSE);
    report_kv_num(out, i2, "bucket_bytes", sc->bucket_bytes, TRUE);
    fprintf(out, "%s},\n", i1);
    report_kv_num(out, i1, "iteration_time_s", sim_time_s(s->iteration), FALSE);
    report_kv_num(out, i1, "critical_rank", s->critical_rank, FALSE);
    report_kv_num(out, i1, "compute_s", sim_time_s(s->critical.compute), FALSE);
    report_kv_num(out, i1, "comm_s", sim_time_s(s->critical.comm), FALSE);
    report_kv_num(out, i1, "exposed_comm_s", sim_time_s(s->critical.exposed), FALSE);
    report_kv_num(out, i1, "bubble_s", sim_time_s(s->critical.bubble), FALSE);
    report_kv_num(out, i1, "host_wait_s", sim_time_s(s->critical.host_wait), FALSE);
    HostWork hw = sim_host_work(run);
    fprintf(out, "%s\"host\": {\n", i1);
    report_kv_num(out, i2, "dispatch_s", hw.dispatch_s, FALSE);
    report_kv_num(out, i2, "hooks_s", hw.hooks_s, FALSE);
    report_kv_num(out, i2, "comm_calls_s", hw.comm_s, FALSE);
    report_kv_num(out, i2, "step_s", hw.step_s, FALSE);
    report_kv_num(out, i2, "syncs", hw.syncs, TRUE);
    fprintf(out, "%s},\n", i1);
    report_kv_num(out, i1, "interference_s", sim_time_s(s->critical.interference), FALSE);
    report_kv_num(out, i1, "overlap", s->overlap, FALSE);
    report_kv_num(out, i1, "model_flops", s->model_flops, FALSE);
    report_kv_num(out, i1, "tflops_per_gpu", s->tflops_per_gpu, FALSE);
    report_kv_num(out, i1, "mfu", s->mfu, FALSE);
    report_kv_num(out, i1, "neox_flops", s->neox_flops, FALSE);
    report_kv_num(out, i1, "neox_tflops_per_gpu", s->neox_tflops_per_gpu, FALSE);
    TrainTime tt = report_train_time(run); /* null without training.token_budget */
    report_kv_num(out, i1, "tokens_per_s", tt.tokens_per_s, FALSE);
    kv_opt(out, i1, "token_budget", tt.budget > 0, tt.budget, FALSE);
    kv_opt(out, i1, "time_to_train_s", tt.budget > 0, tt.seconds, FALSE);
    kv_opt(out, i1, "time_to_train_days", tt.budget > 0, tt.days, FALSE);
    kv_opt(out, i1, "node_hours", tt.budget > 0, tt.node_hours, FALSE);
    kv_opt(out, i1, "gpu_hours", tt.budget > 0, tt.gpu_hours, FALSE);
    /* the error bar: the check rows of validation/ that match this device and framework */
    const char *fw = framework_names[sc->framework];
    Accuracy acc = accuracy_lookup(sc->topo.device.name, fw);
    fprintf(out, "%s\"accuracy\": {\n", i1);
    report_kv_str(out, i2, "device", sc->topo.device.name, FALSE);
    report_kv_str(out, i2, "framework", fw, FALSE);
    report_kv_str(out, i2, "groups", acc.groups, FALSE);
    report_kv_num(out, i2, "check_rows", acc.rows, FALSE);
    if (acc.rows > 0) {
        report_kv_num(out, i2, "mean_abs_error_pct", acc.mean_abs_error_pct, FALSE);
        report_kv_num(out, i2, "max_abs_error_pct", acc.max_abs_error_pct, TRUE);
    } else
        fprintf(out, "%s\"mean_abs_error_pct\": null,\n%s\"max_abs_error_pct\": null\n", i2, i2);
    fprintf(out, "%s},\n", i1);
    fprintf(out, "%s\"memory\": {\n", i1);
    report_kv_num(out, i2, "params_bytes", s->memory.params_bytes, FALSE);
    report_kv_num(out, i2, "grads_bytes", s->memory.grads_bytes, FALSE);
    report_kv_num(out, i2, "optimizer_bytes", s->memory.optimizer_bytes, FALSE);
    report_kv_num(out, i2, "activations_bytes", s->memory.activations_bytes, FALSE);
    report_kv_num(out, i2, "buffers_bytes", s->memory.buffers_bytes, FALSE);
    if (sc->zpp.hpz > 0) /* ZeRO++ hpZ only, so that other reports keep their keys */
        report_kv_num(out, i2, "hpz_params_bytes", s->memory.hpz_bytes, FALSE);
    report_kv_num(out, i2, "total_bytes", s->memory.total_bytes, FALSE);
    report_kv_num(out, i2, "capacity_bytes", sc->topo.device.hbm_capacity, FALSE);
    fprintf(out, "%s\"fits\": %s\n%s},\n", i2,
            s->memory.total_bytes <= sc->topo.device.hbm_capacity ? "true" : "false", i1);
    fprintf(out, "%s\"comm\": [", i1);
    GArray *rows = stats_comm_rows(sim_stats(run), sim_critical_index(run));
    for (guint i = 0; i < rows->len; i++) {
        const CommRow *r = &g_array_index(rows, CommRow, i);
        const char *i3 = "      ";
        fprintf(out, "%s\n%s{\n", i ? "," : "", i2);
        report_kv_str(out, i3, "op", coll_op_name(r->op), FALSE);
        report_kv_str(out, i3, "dim", layout_dim_name(r->dim), FALSE);
        report_kv_num(out, i3, "calls", r->calls, FALSE);
        report_kv_num(out, i3, "message_bytes", r->message_bytes, FALSE);
        report_kv_num(out, i3, "volume_bytes", r->volume_bytes, FALSE);
        report_kv_num(out, i3, "total_volume_bytes", r->total_volume_bytes, FALSE);
        report_kv_num(out, i3, "time_s", sim_time_s(r->time), FALSE);
        report_kv_num(out, i3, "exposed_s", sim_time_s(r->exposed), FALSE);
        report_kv_num(out, i3, "hidden_s", sim_time_s(r->hidden), FALSE);
        fprintf(out, "%s\"sizes\": [", i3);
        for (guint k = 0; k < r->sizes->len; k++) {
            const SizeCount *c = &g_array_index(r->sizes, SizeCount, k);
            fprintf(out, "%s{\"bytes\": ", k ? ", " : "");
            num(out, c->bytes);
            fputs(", \"calls\": ", out);
            num(out, c->calls);
            fputc('}', out);
        }
        fprintf(out, "]\n%s}", i2);
    }
    gboolean any = rows->len > 0;
    stats_rows_free(rows);
    fprintf(out, "%s],\n", any ? "\n  " : "");
    write_json_links(out, run);
    write_json_what_if(out, run);
    fprintf(out, "%s\"resolved_scenario\": {", i1);
    gboolean first = TRUE;
    if (sc->resolved) {
        g_autoptr(GString) path = g_string_new(NULL);
        write_json_resolved(out, sc->resolved, path, &first);
    }
    fprintf(out, "%s},\n", first ? "" : "\n  ");
    fprintf(out, "%s\"sim\": {\n", i1);
    report_kv_num(out, i2, "events", (double)s->events, FALSE);
    report_kv_num(out, i2, "solves", (double)s->solves, FALSE);
    report_kv_num(out, i2, "solved_links", (double)s->solved_links, FALSE);
    report_kv_num(out, i2, "lane_events", (double)s->lane_events, FALSE);
    report_kv_num(out, i2, "early_activations", (double)s->early_activations, FALSE);
    report_kv_num(out, i2, "rank_events", (double)s->rank_events, FALSE);
    fprintf(out, "%s\"read_ahead\": %s,\n", i2, s->read_ahead ? "true" : "false");
    report_kv_num(out, i2, "ranks_simulated", s->ranks_simulated, FALSE);
    report_kv_num(out, i2, "copy_sends", s->copy_sends, FALSE);
    report_kv_num(out, i2, "uneven_copy_sends", s->uneven_sends, FALSE);
    report_kv_num(out, i2, "copy_pace_ratio", s->copy_pace_ratio, FALSE);
    fprintf(out, "%s\"dedup_rerun\": %s,\n", i2, s->dedup_rerun ? "true" : "false");
    report_kv_num(out, i2, "trial_events", (double)s->trial_events, FALSE);
    report_kv_num(out, i2, "trial_copy_sends", s->trial_copy_sends, FALSE);
    report_kv_num(out, i2, "trial_uneven_copy_sends", s->trial_uneven_sends, FALSE);
    report_kv_num(out, i2, "trial_copy_pace_ratio", s->trial_pace_ratio, FALSE);
    report_kv_str(out, i2, "steady_state", sim_steady_name(s->steady), FALSE);
    report_kv_num(out, i2, "micro_batches_simulated", s->micro_batches_simulated, FALSE);
    report_kv_num(out, i2, "wall_s", timing ? s->wall_s : 0, FALSE);
    report_kv_num(out, i2, "events_per_s", timing && s->wall_s > 0 ? s->events / s->wall_s : 0,
                  FALSE);
    report_kv_num(out, i2, "peak_rss_bytes", timing ? s->peak_rss_bytes : 0, FALSE);
    report_kv_num(out, i2, "page_faults", timing ? s->page_faults : 0, TRUE);
    fprintf(out, "%s}\n}\n", i1);
}

void report_human_bytes(char *buf, size_t n, double b) {
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int i = 0;
    while (fabs(b) >= 1024 && i < 5) {
        b /= 1024;
        i++;
    }
    g_snprintf(buf, n, i ? "%.2f %s" : "%.0f %s", b, u[i]);
}

static void write_text(FILE *out, const SimRun *run, gboolean timing) {
    const SimSummary *s = sim_summary(run);
    const Scenario *sc = sim_scenario(run);
    const ModelConfig *m = &sc->model;
    double it = sim_time_s(s->iteration);
    char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32], b7[32], chunks[48];
    g_snprintf(chunks, sizeof chunks, " (%d chunks per stage)", sc->virtual_stages);
    fprintf(out, "scenario   %s\n", sc->path);
    if (sc->description)
        fprintf(out, "           %s\n", sc->description);
    int64_t vocab = model_padded_vocab(m, sc->tp);
    char padded[48] = ""; /* only when padding changed it */
    if (vocab != m->vocab)
        g_snprintf(padded, sizeof padded, " (padded from %" G_GINT64_FORMAT ")", (int64_t)m->vocab);
    fprintf(out,
            "model      %s: %d layers, hidden %d, %d heads, vocab %" G_GINT64_FORMAT
            "%s, %.3f B parameters\n",
            m->name, m->layers, m->hidden, m->heads, vocab, padded, s->params / 1e9);
    char ep_text[96]; /* the other parallelisms' words (EP, CP), else FSDP's hybrid shard */
    scenario_par_describe(sc, ep_text, sizeof ep_text);
    if (!ep_text[0] && sc->fsdp_shard > 0) /* FSDP HYBRID_SHARD: shard groups x replicas of them */
        g_snprintf(ep_text, sizeof ep_text, " (FSDP hybrid shard %d x replicate %d)",
                   sc->fsdp_shard, sc->dp / sc->fsdp_shard);
    fprintf(out, "machine    %s, %d node%s x %d %s = %d GPU%s\n", sc->topo.name, sc->nodes,
            sc->nodes == 1 ? "" : "s", sc->topo.gpus_per_node, sc->topo.device.name, sc->gpus,
            sc->gpus == 1 ? "" : "s");
    fprintf(out,
            "layout     TP %d x PP %d x DP %d%s%s, ZeRO %d, %s%s schedule, micro-batch %d x %d "
            "= global batch %" G_GINT64_FORMAT ", seq %d, %s, recompute %s\n\n",
            sc->tp, sc->pp, sc->dp, ep_text, sc->sequence_parallel ? " (sequence-parallel)" : "",
            sc->zero, schedule_name(sc->schedule),
            schedule_get(sc->schedule)->chunked ? chunks : "", sc->micro_batch, sc->grad_accum,
            sc->global_batch, sc->seq_len, scenario_precision_name(sc->precision),
            scenario_recompute_name(sc->recompute));
    Accuracy acc = accuracy_lookup(sc->topo.device.name, framework_names[sc->framework]);
    char acc_text[160];
    if (acc.rows > 0)
        g_snprintf(acc_text, sizeof acc_text, "+-%.1f%% on %d validated runs (max %.1f%%)",
                   acc.mean_abs_error_pct, acc.rows, acc.max_abs_error_pct);
    else
        g_snprintf(acc_text, sizeof acc_text, "no validated run covers %s with %s",
                   sc->topo.device.name, framework_names[sc->framework]);
    fprintf(out, "iteration  %.6f s   (critical rank %d)   %s\n", it, s->critical_rank, acc_text);
    double pct = it > 0 ? 100.0 / it : 0;
    fprintf(out, "  compute          %10.6f s  %5.1f%%\n", sim_time_s(s->critical.compute),
            sim_time_s(s->critical.compute) * pct);
    fprintf(out, "  exposed comm     %10.6f s  %5.1f%%\n", sim_time_s(s->critical.exposed),
            sim_time_s(s->critical.exposed) * pct);
    fprintf(out, "  bubble / wait    %10.6f s  %5.1f%%\n", sim_time_s(s->critical.bubble),
            sim_time_s(s->critical.bubble) * pct);
    fprintf(out, "  comm in flight   %10.6f s, %.1f%% of it hidden under compute\n",
            sim_time_s(s->critical.comm), 100.0 * s->overlap);
    fprintf(out, "  host wait        %10.6f s  of exposed + bubble: kernel ready, not launched\n",
            sim_time_s(s->critical.host_wait));
    fprintf(out, "  interference     %10.6f s  of compute: slowed by communication under it\n",
            sim_time_s(s->critical.interference));
    HostWork hw = sim_host_work(run);
    if (sc->host)
        fprintf(out,
                "  host work        %10.6f s  issuing: operators %.6f, hooks %.6f, calls %.6f, "
                "step %.6f; %d syncs\n",
                hw.dispatch_s + hw.hooks_s + hw.comm_s + hw.step_s, hw.dispatch_s, hw.hooks_s,
                hw.comm_s, hw.step_s, hw.syncs);
    TrainTime tt = report_train_time(run);
    fprintf(out, "throughput %.2f TFLOP/s per GPU, MFU %.1f%%, %.0f tokens/s\n", s->tflops_per_gpu,
            100.0 * s->mfu, tt.tokens_per_s);
    /* get_flops' dense formula describes only the models GPT-NeoX trains: not mixtures of
     * experts, grouped KV heads, SwiGLU or RMSNorm (the JSON keeps the figure, documented so) */
    /* and only GPT-NeoX logs it: a DeepSpeed run (GPT-NeoX is built on DeepSpeed), not a
     * Megatron-LM or PyTorch one */
    if (sc->framework == FW_DEEPSPEED && m->moe.experts == 0 && model_kv_heads(m) == m->heads &&
        m->mlp == MLP_GELU && m->norm == NORM_LAYERNORM)
        fprintf(out, "           GPT-NeoX logs %.2f TFLOP/s per GPU (get_flops: %s)\n",
                s->neox_tflops_per_gpu,
                sc->recompute == RECOMPUTE_FULL ? "4x forward, recomputation counted"
                                                : "3x forward");
    if (tt.budget > 0) { /* the budget as it is usually written: 300B, 1.5T */
        static const struct {
            double v;
            const char *suffix;
        } scale[] = {{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1, ""}};
        size_t k = 0;
        while (k + 1 < G_N_ELEMENTS(scale) && tt.budget < scale[k].v)
            k++;
        fprintf(out,
                "to train   %.4g%s tokens: %.2f days, %.0f node-hours, %.0f GPU-hours (%d node%s, "
                "%d GPUs)\n",
                tt.budget / scale[k].v, scale[k].suffix, tt.days, tt.node_hours, tt.gpu_hours,
                sc->nodes, sc->nodes == 1 ? "" : "s", sc->gpus);
    }
    fputc('\n', out);
    report_human_bytes(b1, sizeof b1, s->memory.params_bytes);
    report_human_bytes(b2, sizeof b2, s->memory.grads_bytes);
    report_human_bytes(b3, sizeof b3, s->memory.optimizer_bytes);
    report_human_bytes(b4, sizeof b4, s->memory.activations_bytes);
    report_human_bytes(b5, sizeof b5, s->memory.total_bytes);
    report_human_bytes(b6, sizeof b6, sc->topo.device.hbm_capacity);
    report_human_bytes(b7, sizeof b7, s->memory.buffers_bytes);
    gboolean fits = s->memory.total_bytes <= sc->topo.device.hbm_capacity;
    char hpz[48] = "";
    if (s->memory.hpz_bytes > 0) { /* ZeRO++ hpZ's secondary partition */
        char b8[32];
        report_human_bytes(b8, sizeof b8, s->memory.hpz_bytes);
        g_snprintf(hpz, sizeof hpz, " + hpZ %s", b8);
    }
    fprintf(out,
            "memory     params %s + grads %s + optimizer %s + activations %s + buffers %s%s = %s "
            "of %s: %s\n\n",
            b1, b2, b3, b4, b7, hpz, b5, b6, fits ? "fits" : "DOES NOT FIT");
    GArray *rows = stats_comm_rows(sim_stats(run), sim_critical_index(run));
    if (rows->len) {
        int dw = 3; /* the dim column: 3 wide, wider for ZeRO++'s dp_intra and dp_inter */
        for (guint i = 0; i < rows->len; i++)
            dw = MAX(dw, (int)strlen(layout_dim_name(g_array_index(rows, CommRow, i).dim)));
        fprintf(out, "%-15s %-*s %10s %12s %12s %12s %10s %10s\n", "communication", dw, "dim",
                "calls", "msg total", "volume", "all ranks", "time s", "exposed s");
        for (guint i = 0; i < rows->len; i++) {
            const CommRow *r = &g_array_index(rows, CommRow, i);
            report_human_bytes(b1, sizeof b1, r->message_bytes);
            report_human_bytes(b2, sizeof b2, r->volume_bytes);
            report_human_bytes(b3, sizeof b3, r->total_volume_bytes);
            fprintf(out, "%-15s %-*s %10.1f %12s %12s %12s %10.6f %10.6f\n", coll_op_name(r->op),
                    dw, layout_dim_name(r->dim), r->calls, b1, b2, b3, sim_time_s(r->time),
                    sim_time_s(r->exposed));
        }
        fputc('\n', out);
    }
    stats_rows_free(rows);
    GArray *links = sim_busiest_links(run, 5);
    if (links->len) {
        fprintf(out, "%-28s %-9s %12s %6s  %s\n", "busiest links", "kind", "carried", "busy",
                "by dimension");
        for (guint i = 0; i < links->len; i++) {
            const NetLinkStat *l = &g_array_index(links, NetLinkStat, i);
            char name[96];
            topo_link_describe(sim_topology(run), l->link, name, sizeof name);
            report_human_bytes(b1, sizeof b1, l->bytes);
            fprintf(out, "%-28s %-9s %12s %5.1f%% ", name,
                    topo_link_kind_name(topo_link_kind(sim_topology(run), l->link)), b1,
                    100.0 * utilization(run, l));
            for (int d = 0; d < DIM_LINK_CLASSES; d++)
                if (l->by_class[d] > 0)
                    fprintf(out, " %s %.0f%%", layout_dim_name(d),
                            100.0 * l->by_class[d] / l->bytes);
            fputc('\n', out);
        }
        fputc('\n', out);
    }
    g_array_unref(links);
    write_text_what_if(out, run);
    fprintf(out, "simulated  %" G_GUINT64_FORMAT " events", s->events);
    if (s->rank_events != s->events) /* tensor-parallel groups in step (docs/speed.md) */
        fprintf(out, " (%" G_GUINT64_FORMAT " rank-events)", s->rank_events);
    fprintf(out, ", %d of %d ranks", s->ranks_simulated, sc->gpus);
    if (s->steady == STEADY_EXTRAPOLATED) /* STEADY STATE in steady.c */
        fprintf(out, ", the steady state of a run of %d of %d micro-batches extrapolated",
                s->micro_batches_simulated, sc->grad_accum);
    else if (s->steady == STEADY_DIVERGED)
        fprintf(out, ", every micro-batch (the short run's steps differed)");
    if (timing)
        fprintf(out, ", %.3f s wall, %.0f events/s, peak RSS %.1f MiB", s->wall_s,
                s->wall_s > 0 ? s->events / s->wall_s : 0, s->peak_rss_bytes / 1048576.0);
    fputc('\n', out);
    if (s->dedup_rerun) /* EXACT REPRESENTATIVES in sim.c */
        fprintf(out,
                "rerun      %d of %d pipeline sends of a deduplicated trial (%" G_GUINT64_FORMAT
                " events) carried\n"
                "           other replicas' sends whose paths are loaded unevenly (a copy up to\n"
                "           %.2fx as fast as its send's slowest), so the replicas would not keep\n"
                "           one pace and every rank was simulated (sim.dedup_replicas: estimate\n"
                "           keeps the faster, overstated deduplicated figures)\n",
                s->trial_uneven_sends, s->trial_copy_sends, s->trial_events, s->trial_pace_ratio);
    if (s->uneven_sends > 0) /* UNEVEN COPIES in coll_streams.c */
        fprintf(out,
                "caution    %d of %d pipeline sends carry other replicas' sends whose paths are\n"
                "           loaded unevenly (a copy up to %.2fx as fast as its send's slowest on\n"
                "           the fabric): one flow holds them in step at the slowest's pace, so\n"
                "           the iteration may be overstated (sim.dedup_replicas: estimate);\n"
                "           --all-ranks or the default, true, simulates every replica\n"
                "           (docs/speed.md, \"Representatives\")\n",
                s->uneven_sends, s->copy_sends, s->copy_pace_ratio);
}

static void write_csv(FILE *out, const SimRun *run) {
    const SimSummary *s = sim_summary(run);
    const Scenario *sc = sim_scenario(run);
    fputs("scenario,model,nodes,gpus,tp,pp,dp,zero,micro_batch,micro_batches,seq_len,"
          "iteration_time_s,compute_s,comm_s,exposed_comm_s,bubble_s,overlap,tflops_per_gpu,mfu,"
          "memory_total_bytes,fits,neox_tflops_per_gpu,host_wait_s,interference_s,sim_version,"
          "topology,device,overrides,uneven_copy_sends,dedup_rerun,tokens_per_s,token_budget,"
          "time_to_train_days,node_hours,gpu_hours\n",
          out);
    g_autoptr(GString) g = g_string_new(NULL);
    report_csv_quote(g, sc->path);
    g_string_append_c(g, ',');
    report_csv_quote(g, sc->model.name);
    fprintf(out, "%s,%d,%d,%d,%d,%d,%d,%d,%d,%d,", g->str, sc->nodes, sc->gpus, sc->tp, sc->pp,
            sc->dp, sc->zero, sc->micro_batch, sc->grad_accum, sc->seq_len);
    double v[] = {sim_time_s(s->iteration),
                  sim_time_s(s->critical.compute),
                  sim_time_s(s->critical.comm),
                  sim_time_s(s->critical.exposed),
                  sim_time_s(s->critical.bubble),
                  s->overlap,
                  s->tflops_per_gpu,
                  s->mfu,
                  s->memory.total_bytes};
    for (size_t i = 0; i < G_N_ELEMENTS(v); i++) {
        num(out, v[i]);
        fputc(',', out);
    }
    fprintf(out, "%s,", s->memory.total_bytes <= sc->topo.device.hbm_capacity ? "true" : "false");
    num(out, s->neox_tflops_per_gpu);
    fputc(',', out);
    num(out, sim_time_s(s->critical.host_wait));
    fputc(',', out);
    num(out, sim_time_s(s->critical.interference));
    /* provenance: version, machine, the overrides (space-separated) */
    g_string_assign(g, "," SIM_VERSION ",");
    report_csv_quote(g, sc->topo.name);
    g_string_append_c(g, ',');
    report_csv_quote(g, sc->topo.device.name);
    g_string_append_c(g, ',');
    g_autofree char *sets = sc->sets ? g_strjoinv(" ", sc->sets) : g_strdup("");
    report_csv_quote(g, sets);
    fprintf(out, "%s,%d,%s,", g->str, s->uneven_sends, /* UNEVEN COPIES in coll_streams.c */
            s->dedup_rerun ? "true" : "false");        /* EXACT REPRESENTATIVES in sim.c */
    TrainTime tt = report_train_time(run); /* empty cells without training.token_budget */
    num(out, tt.tokens_per_s);
    double tv[] = {tt.budget, tt.days, tt.node_hours, tt.gpu_hours};
    for (size_t i = 0; i < G_N_ELEMENTS(tv); i++) {
        fputc(',', out);
        if (tt.budget > 0)
            num(out, tv[i]);
    }
    fputc('\n', out);
}

void report_write(FILE *out, const SimRun *run, ReportFormat fmt, gboolean timing) {
    switch (fmt) {
    case REPORT_JSON:
        write_json(out, run, timing);
        break;
    case REPORT_CSV:
        write_csv(out, run);
        break;
    default:
        write_text(out, run, timing);
    }
}
