/* cmd_compare: `sim compare A.json B.json [--format text|json] [-o FILE]`: two JSON reports (as
 * `sim SCENARIO --format json` writes them) side by side: the scenario keys that differ (from
 * each report's resolved_scenario), then the iteration, its breakdown, overlap, throughput, time
 * to train, memory, the collectives inventory and the busiest links, each with B - A and
 * (B - A) / A.
 *
 * For: reading two reports and printing their differences. Not for: running anything; every
 * figure is read from the reports as they are.
 *
 * Exit status: 0; 2 a file that cannot be read, is not JSON (its line and column named), or is
 * not a sim report; 1 the output cannot be written. */
#include <json-glib/json-glib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "json_scan.h"
#include "outfile.h"

#define COMPARE_MAX_DEPTH 64 /* a report nests 4 deep; json-glib's parser recurses per level */

/* One figure of both reports (has_a / has_b FALSE: that report lacks it). */
typedef struct {
    char *name; /* dotted: iteration_time_s, memory.total_bytes, comm.allreduce.tp.time_s */
    gboolean has_a, has_b;
    double a, b;
} Figure;

/* One resolved scenario key whose values differ (NULL: absent from that report). */
typedef struct {
    char *key;
    char *a, *b;
} KeyDiff;

static void figure_clear(gpointer p) {
    g_free(((Figure *)p)->name);
}

static void keydiff_clear(gpointer p) {
    KeyDiff *d = p;
    g_free(d->key);
    g_free(d->a);
    g_free(d->b);
}

/* The report in path, parsed; NULL and err naming the file (and the place json-glib gives). */
static JsonParser *load_report(const char *path, GError **err) {
    g_autofree char *text = NULL;
    gsize len = 0;
    g_autoptr(GError) e = NULL;
    if (!g_file_get_contents(path, &text, &len, &e)) {
        g_set_error(err, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s", e->message);
        return NULL;
    }
    if (!json_prescan(path, text, len, COMPARE_MAX_DEPTH, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                      "a report holds none", err))
        return NULL;
    g_autoptr(JsonParser) parser = json_parser_new_immutable();
    if (!json_parser_load_from_data(parser, text, (gssize)len, &e)) {
        /* json-glib names the text "<data>": put the file's name there */
        const char *msg = g_str_has_prefix(e->message, "<data>") ? e->message + 6 : e->message;
        g_set_error(err, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s%s%s (not JSON)", path,
                    *msg == ':' ? "" : ": ", msg);
        return NULL;
    }
    JsonNode *root = json_parser_get_root(parser);
    JsonObject *o = root && JSON_NODE_HOLDS_OBJECT(root) ? json_node_get_object(root) : NULL;
    if (!o || !json_object_has_member(o, "schema_version") ||
        !json_object_has_member(o, "iteration_time_s")) {
        g_set_error(err, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                    "%s: not a sim report (no schema_version and iteration_time_s; write one with "
                    "sim SCENARIO --format json -o FILE)",
                    path);
        return NULL;
    }
    JsonNode *v = json_object_get_member(o, "schema_version");
    if (!JSON_NODE_HOLDS_VALUE(v) || json_node_get_value_type(v) != G_TYPE_INT64 ||
        json_node_get_int(v) != 1) {
        g_set_error(err, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                    "%s: schema_version must be 1, the version this sim reads", path);
        return NULL;
    }
    return g_steal_pointer(&parser);
}

static JsonObject *root_of(JsonParser *p) {
    return json_node_get_object(json_parser_get_root(p));
}

/* The number at member `key` of o (a bool counts 0 or 1); FALSE when absent, null or not one. */
static gboolean number_at(JsonObject *o, const char *key, double *out) {
    JsonNode *n = o ? json_object_get_member(o, key) : NULL;
    if (!n || !JSON_NODE_HOLDS_VALUE(n))
        return FALSE;
    GType t = json_node_get_value_type(n);
    if (t == G_TYPE_INT64 || t == G_TYPE_DOUBLE)
        *out = json_node_get_double(n);
    else if (t == G_TYPE_BOOLEAN)
        *out = json_node_get_boolean(n);
    else
        return FALSE;
    return TRUE;
}

static JsonObject *object_at(JsonObject *o, const char *key) {
    JsonNode *n = o ? json_object_get_member(o, key) : NULL;
    return n && JSON_NODE_HOLDS_OBJECT(n) ? json_node_get_object(n) : NULL;
}

static JsonArray *array_at(JsonObject *o, const char *key) {
    JsonNode *n = o ? json_object_get_member(o, key) : NULL;
    return n && JSON_NODE_HOLDS_ARRAY(n) ? json_node_get_array(n) : NULL;
}

static const char *string_at(JsonObject *o, const char *key) {
    JsonNode *n = o ? json_object_get_member(o, key) : NULL;
    return n && JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_STRING
               ? json_node_get_string(n)
               : NULL;
}

static void add_figure(GArray *figs, char *name, JsonObject *a, JsonObject *b, const char *key) {
    Figure f = {name, FALSE, FALSE, 0, 0};
    f.has_a = number_at(a, key, &f.a);
    f.has_b = number_at(b, key, &f.b);
    if (f.has_a || f.has_b)
        g_array_append_val(figs, f);
    else
        g_free(name);
}

/* The element of array arr whose `id` (a string built by id_of) equals id, or NULL. */
typedef char *(*IdOf)(JsonObject *row);

static JsonObject *find_row(JsonArray *arr, IdOf id_of, const char *id) {
    for (guint i = 0; arr && i < json_array_get_length(arr); i++) {
        JsonNode *n = json_array_get_element(arr, i);
        if (!JSON_NODE_HOLDS_OBJECT(n))
            continue;
        g_autofree char *x = id_of(json_node_get_object(n));
        if (x && !strcmp(x, id))
            return json_node_get_object(n);
    }
    return NULL;
}

static char *comm_id(JsonObject *row) {
    const char *op = string_at(row, "op"), *dim = string_at(row, "dim");
    return op && dim ? g_strdup_printf("%s.%s", op, dim) : NULL;
}

static char *link_id(JsonObject *row) {
    const char *name = string_at(row, "name");
    return name ? g_strdup(name) : NULL;
}

/* The rows of A's array, then B's that A lacks, each figure of `fields` under prefix.id. */
static void add_rows(GArray *figs, JsonObject *ra, JsonObject *rb, const char *array,
                     const char *prefix, IdOf id_of, const char *const *fields) {
    JsonArray *arrs[2] = {array_at(ra, array), array_at(rb, array)};
    g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func(g_free);
    for (int k = 0; k < 2; k++)
        for (guint i = 0; arrs[k] && i < json_array_get_length(arrs[k]); i++) {
            JsonNode *n = json_array_get_element(arrs[k], i);
            char *id = JSON_NODE_HOLDS_OBJECT(n) ? id_of(json_node_get_object(n)) : NULL;
            if (id && !g_ptr_array_find_with_equal_func(ids, id, g_str_equal, NULL))
                g_ptr_array_add(ids, id);
            else
                g_free(id);
        }
    for (guint i = 0; i < ids->len; i++) {
        JsonObject *a = find_row(arrs[0], id_of, ids->pdata[i]);
        JsonObject *b = find_row(arrs[1], id_of, ids->pdata[i]);
        for (const char *const *f = fields; *f; f++)
            add_figure(figs, g_strdup_printf("%s.%s.%s", prefix, (char *)ids->pdata[i], *f), a, b,
                       *f);
    }
}

/* Every figure compared, in the order printed. */
static GArray *figures(JsonObject *ra, JsonObject *rb) {
    static const char *const top[] = {
        "iteration_time_s", "compute_s",          "comm_s",     "exposed_comm_s", "bubble_s",
        "host_wait_s",      "interference_s",     "overlap",    "tflops_per_gpu", "mfu",
        "tokens_per_s",     "time_to_train_days", "node_hours", "gpu_hours",      NULL};
    static const char *const memory[] = {"params_bytes",
                                         "grads_bytes",
                                         "optimizer_bytes",
                                         "activations_bytes",
                                         "buffers_bytes",
                                         "hpz_params_bytes",
                                         "total_bytes",
                                         "capacity_bytes",
                                         "fits",
                                         NULL};
    static const char *const comm[] = {
        "calls",  "message_bytes", "volume_bytes", "total_volume_bytes",
        "time_s", "exposed_s",     "hidden_s",     NULL};
    static const char *const links[] = {"bytes", "utilization", NULL};
    GArray *figs = g_array_new(FALSE, FALSE, sizeof(Figure));
    g_array_set_clear_func(figs, figure_clear);
    for (const char *const *k = top; *k; k++)
        add_figure(figs, g_strdup(*k), ra, rb, *k);
    JsonObject *ma = object_at(ra, "memory"), *mb = object_at(rb, "memory");
    for (const char *const *k = memory; *k; k++)
        add_figure(figs, g_strdup_printf("memory.%s", *k), ma, mb, *k);
    add_rows(figs, ra, rb, "comm", "comm", comm_id, comm);
    add_rows(figs, ra, rb, "links", "links", link_id, links);
    return figs;
}

/* The scenario keys whose values differ: A's keys in order, then those only B has. */
static GArray *scenario_diffs(JsonObject *ra, JsonObject *rb, gboolean *have) {
    GArray *d = g_array_new(FALSE, FALSE, sizeof(KeyDiff));
    g_array_set_clear_func(d, keydiff_clear);
    JsonObject *sa = object_at(ra, "resolved_scenario"), *sb = object_at(rb, "resolved_scenario");
    *have = sa && sb;
    if (!*have)
        return d;
    JsonObject *objs[2] = {sa, sb};
    for (int k = 0; k < 2; k++) {
        g_autoptr(GList) keys = json_object_get_members(objs[k]);
        for (GList *l = keys; l; l = l->next) {
            const char *key = l->data;
            const char *a = string_at(sa, key), *b = string_at(sb, key);
            if ((k == 1 && a) || (a && b && !strcmp(a, b)))
                continue; /* B's pass: only the keys A lacks */
            KeyDiff x = {g_strdup(key), g_strdup(a), g_strdup(b)};
            g_array_append_val(d, x);
        }
    }
    return d;
}

/* --- writing -----------------------------------------------------------------------------------
 */

static const char *section_of(const char *name) {
    if (g_str_has_prefix(name, "memory."))
        return "memory";
    if (g_str_has_prefix(name, "comm."))
        return "communication (per rank; comm.OP.DIM)";
    if (g_str_has_prefix(name, "links."))
        return "busiest links (links.NAME)";
    return "iteration";
}

static void text_value(GString *g, gboolean has, double v) {
    if (has)
        g_string_append_printf(g, " %14.6g", v);
    else
        g_string_append_printf(g, " %14s", "-");
}

static void write_text(GString *g, const char *pa, const char *pb, JsonObject *ra, JsonObject *rb,
                       GArray *diffs, gboolean have_scenarios, GArray *figs) {
    JsonObject *r[2] = {ra, rb};
    const char *p[2] = {pa, pb};
    for (int k = 0; k < 2; k++) {
        JsonObject *model = object_at(r[k], "model"), *mach = object_at(r[k], "machine"),
                   *par = object_at(r[k], "parallel");
        double nodes = 0;
        number_at(par, "nodes", &nodes);
        const char *mn = string_at(model, "name"), *tn = string_at(mach, "topology");
        g_string_append_printf(g, "%c  %s: %s on %s, %.0f node%s\n", 'A' + k, p[k], mn ? mn : "?",
                               tn ? tn : "?", nodes, nodes == 1 ? "" : "s");
    }
    g_string_append(g, "\n");
    if (!have_scenarios)
        g_string_append(g, "scenario   not compared: a report without resolved_scenario (written "
                           "by an older sim)\n\n");
    else if (diffs->len == 0)
        g_string_append(g, "scenario   the same resolved scenario\n\n");
    else {
        g_string_append_printf(g, "scenario   %u key%s differ%s (resolved scenario)\n", diffs->len,
                               diffs->len == 1 ? "" : "s", diffs->len == 1 ? "s" : "");
        for (guint i = 0; i < diffs->len; i++) {
            const KeyDiff *d = &g_array_index(diffs, KeyDiff, i);
            g_string_append_printf(g, "  %-40s A %-16s B %s\n", d->key, d->a ? d->a : "(absent)",
                                   d->b ? d->b : "(absent)");
        }
        g_string_append(g, "\n");
    }
    const char *section = NULL;
    for (guint i = 0; i < figs->len; i++) {
        const Figure *f = &g_array_index(figs, Figure, i);
        const char *s = section_of(f->name);
        if (!section || strcmp(s, section) != 0) {
            g_string_append_printf(g, "%s%-44s %14s %14s %14s %9s\n", section ? "\n" : "", s, "A",
                                   "B", "B - A", "change");
            section = s;
        }
        g_string_append_printf(g, "  %-42s", f->name);
        text_value(g, f->has_a, f->a);
        text_value(g, f->has_b, f->b);
        text_value(g, f->has_a && f->has_b, f->b - f->a);
        if (f->has_a && f->has_b && f->a != 0)
            g_string_append_printf(g, " %+8.1f%%\n", 100.0 * (f->b - f->a) / f->a);
        else
            g_string_append_printf(g, " %9s\n", "-");
    }
}

static void json_opt_number(JsonBuilder *b, const char *key, gboolean has, double v) {
    json_builder_set_member_name(b, key);
    if (has)
        json_builder_add_double_value(b, v);
    else
        json_builder_add_null_value(b);
}

static void json_opt_string(JsonBuilder *b, const char *key, const char *v) {
    json_builder_set_member_name(b, key);
    if (v)
        json_builder_add_string_value(b, v);
    else
        json_builder_add_null_value(b);
}

static char *write_json(const char *pa, const char *pb, GArray *diffs, gboolean have_scenarios,
                        GArray *figs) {
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "schema_version");
    json_builder_add_int_value(b, 1);
    json_builder_set_member_name(b, "a");
    json_builder_add_string_value(b, pa);
    json_builder_set_member_name(b, "b");
    json_builder_add_string_value(b, pb);
    json_builder_set_member_name(b, "scenarios_compared");
    json_builder_add_boolean_value(b, have_scenarios);
    json_builder_set_member_name(b, "scenario_differences");
    json_builder_begin_array(b);
    for (guint i = 0; i < diffs->len; i++) {
        const KeyDiff *d = &g_array_index(diffs, KeyDiff, i);
        json_builder_begin_object(b);
        json_opt_string(b, "key", d->key);
        json_opt_string(b, "a", d->a);
        json_opt_string(b, "b", d->b);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_set_member_name(b, "figures");
    json_builder_begin_array(b);
    for (guint i = 0; i < figs->len; i++) {
        const Figure *f = &g_array_index(figs, Figure, i);
        gboolean both = f->has_a && f->has_b;
        json_builder_begin_object(b);
        json_opt_string(b, "name", f->name);
        json_opt_number(b, "a", f->has_a, f->a);
        json_opt_number(b, "b", f->has_b, f->b);
        json_opt_number(b, "diff", both, f->b - f->a);
        json_opt_number(b, "rel", both && f->a != 0, (f->b - f->a) / f->a);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    json_generator_set_root(gen, root);
    json_generator_set_pretty(gen, TRUE);
    json_generator_set_indent(gen, 2);
    char *text = json_generator_to_data(gen, NULL);
    char *with_nl = g_strconcat(text, "\n", NULL);
    g_free(text);
    return with_nl;
}

int cmd_compare(int argc, char **argv) {
    g_autofree char *format = NULL, *output = NULL;
    GOptionEntry entries[] = {
        {"format", 'f', 0, G_OPTION_ARG_STRING, &format, "text (default) or json", "FORMAT"},
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Write to FILE, not stdout", "FILE"},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("A.json B.json - two JSON reports side by side, with B - A");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_option_context_set_description(
        ctx, "A and B are reports written by sim SCENARIO --format json. Prints the resolved\n"
             "scenario keys that differ, then the iteration, its breakdown, throughput, time to\n"
             "train, memory, the collectives and the busiest links of both, with B - A and\n"
             "(B - A) / A. docs/compare.md.\n\n"
             "Exit status: 0 ok, 2 bad input, 1 cannot write output.");
    g_autoptr(GError) err = NULL;
    g_autofree char *help = NULL;
    if (!cmd_parse(ctx, "sim compare", &argc, &argv, &help, &err)) {
        fprintf(stderr, "sim compare: %s (try --help)\n", err->message);
        return 2;
    }
    if (help) {
        fputs(help, stdout);
        return 0;
    }
    if (argc != 3) {
        fprintf(stderr, "sim compare: give two reports, A.json B.json (try --help)\n");
        return 2;
    }
    gboolean json = FALSE;
    if (format && !(json = !strcmp(format, "json")) && strcmp(format, "text") != 0) {
        fprintf(stderr, "sim compare: --format must be text or json, not '%s'\n", format);
        return 2;
    }
    g_autoptr(JsonParser) pa = load_report(argv[1], &err);
    g_autoptr(JsonParser) pb = pa ? load_report(argv[2], &err) : NULL;
    if (!pb) {
        fprintf(stderr, "sim compare: %s\n", err->message);
        return 2;
    }
    JsonObject *ra = root_of(pa), *rb = root_of(pb);
    gboolean have = FALSE;
    g_autoptr(GArray) diffs = scenario_diffs(ra, rb, &have);
    g_autoptr(GArray) figs = figures(ra, rb);
    g_autofree char *text = NULL;
    if (json) {
        text = write_json(argv[1], argv[2], diffs, have, figs);
    } else {
        g_autoptr(GString) g = g_string_new(NULL);
        write_text(g, argv[1], argv[2], ra, rb, diffs, have, figs);
        text = g_strdup(g->str);
    }
    if (!outfile_write(output, text, strlen(text), &err)) {
        fprintf(stderr, "sim compare: %s\n", err->message);
        return 1;
    }
    return 0;
}
