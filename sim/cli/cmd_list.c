/* cmd_list: `sim list [models|topologies|devices|scenarios]`: what ships with the simulator, by
 * the name a scenario or `--set` uses, with a few facts read from each file (a model's size, a
 * machine's GPUs per node and fabric, a device's name, a scenario's description).
 *
 * Files come from the source tree (and $SIM_DATA_DIR when set, as the loader looks them up). A
 * file that does not load is listed with its error, not skipped. Exit status: 0, or 2 for an
 * unknown kind. */
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "conf.h"
#include "scenario.h"

typedef void (*Describe)(const ConfNode *root, GString *out);

static const char *scalar(const ConfNode *map, const char *key) {
    const ConfNode *n = map ? conf_get(map, key) : NULL;
    return n && n->kind == CONF_SCALAR ? n->value : NULL;
}

static void describe_model(const ConfNode *root, GString *out) {
    const char *L = scalar(root, "layers"), *h = scalar(root, "hidden"), *a = scalar(root, "heads");
    g_string_append_printf(out, "%s layers, hidden %s, %s heads", L ? L : "?", h ? h : "?",
                           a ? a : "?");
    const char *kv = scalar(root, "kv_heads"), *mlp = scalar(root, "mlp"),
               *norm = scalar(root, "norm");
    if (kv && a && strcmp(kv, a) != 0)
        g_string_append_printf(out, " (%s key/value)", kv);
    if (mlp)
        g_string_append_printf(out, ", %s", mlp);
    if (norm)
        g_string_append_printf(out, ", %s", norm);
}

static void describe_topology(const ConfNode *root, GString *out) {
    const ConfNode *node = conf_get(root, "node"), *fabric = conf_get(root, "fabric");
    const char *g = scalar(node, "gpus"), *dev = scalar(root, "device"),
               *kind = scalar(fabric, "kind");
    g_string_append_printf(out, "%s GPUs per node (%s), fabric %s", g ? g : "?",
                           dev ? dev : "inline device", kind ? kind : "none");
}

static void describe_device(const ConfNode *root, GString *out) {
    const char *name = scalar(root, "name");
    g_string_append(out, name ? name : "?");
}

static void describe_scenario(const ConfNode *root, GString *out) {
    const char *d = scalar(root, "description"), *m = scalar(root, "model"),
               *t = scalar(root, "topology");
    g_string_append_printf(out, "%s (%s on %s)", d ? d : "-", m ? m : "inline model",
                           t ? t : "inline topology");
}

static const struct {
    const char *kind;
    const char *dir; /* under the data directory */
    Describe describe;
} kinds[] = {
    {"models", "models", describe_model},
    {"topologies", "topologies", describe_topology},
    {"devices", "topologies/devices", describe_device},
    {"scenarios", "scenarios", describe_scenario},
    {"scenarios", "scenarios/validation", describe_scenario},
};

static gint by_name(gconstpointer a, gconstpointer b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The NAME.yaml files of base/dir, sorted, printed as NAME (relative to the kind's first folder
 * for nested ones) and the file's facts. */
static void list_dir(const char *base, size_t k) {
    g_autofree char *path = g_build_filename(base, kinds[k].dir, NULL);
    g_autoptr(GDir) dir = g_dir_open(path, 0, NULL);
    if (!dir)
        return;
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    for (const char *f; (f = g_dir_read_name(dir));)
        if (g_str_has_suffix(f, ".yaml"))
            g_ptr_array_add(names, g_strndup(f, strlen(f) - 5));
    g_ptr_array_sort(names, by_name);
    const char *prefix = !strcmp(kinds[k].dir, "scenarios/validation") ? "validation/" : "";
    for (guint i = 0; i < names->len; i++) {
        g_autofree char *file = g_strconcat(path, "/", names->pdata[i], ".yaml", NULL);
        g_autoptr(GError) err = NULL;
        g_autoptr(ConfNode) root = conf_load_file(file, &err);
        g_autoptr(GString) facts = g_string_new(NULL);
        if (!root)
            g_string_printf(facts, "does not load: %s", err->message);
        else if (root->kind != CONF_MAP)
            g_string_assign(facts, "does not load: not a mapping");
        else
            kinds[k].describe(root, facts);
        if (root && kinds[k].describe == describe_scenario) { /* what `sim NAME` would say */
            g_autoptr(GError) lerr = NULL;
            g_autoptr(Scenario) sc = scenario_load(file, NULL, &lerr);
            const char *msg = lerr ? lerr->message : NULL;
            if (msg && g_str_has_prefix(msg, file)) /* "FILE:LINE:COL: ..." */
                msg = strstr(msg + strlen(file), ": ") ? strstr(msg + strlen(file), ": ") + 2 : msg;
            if (!sc)
                g_string_append_printf(facts, " [needs a --set to run: %s]", msg);
        }
        g_autofree char *name = g_strconcat(prefix, names->pdata[i], NULL);
        printf("  %-28s %s\n", name, facts->str);
    }
}

char *cmd_scenario_path(const char *arg) {
    if (g_file_test(arg, G_FILE_TEST_EXISTS) || !*arg)
        return g_strdup(arg);
    const char *env = g_getenv("SIM_DATA_DIR");
    const char *bases[] = {env, SIM_SOURCE_DIR};
    for (size_t b = 0; b < G_N_ELEMENTS(bases); b++) {
        if (!bases[b])
            continue;
        g_autofree char *file =
            g_str_has_suffix(arg, ".yaml") ? g_strdup(arg) : g_strconcat(arg, ".yaml", NULL);
        g_autofree char *path = g_build_filename(bases[b], "scenarios", file, NULL);
        if (g_file_test(path, G_FILE_TEST_IS_REGULAR))
            return g_steal_pointer(&path);
    }
    return g_strdup(arg);
}

int cmd_list(int argc, char **argv) {
    if (argc > 2 || (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))) {
        fprintf(argc > 2 ? stderr : stdout,
                "Usage: sim list [models|topologies|devices|scenarios]\n"
                "The shipped models, machines, GPUs and scenarios, by the name a scenario or\n"
                "--set uses (model: NAME, topology: NAME, topology.device: NAME) and, for\n"
                "scenarios, the name sim NAME (sweep, search, sensitivity) accepts.\n");
        return argc > 2 ? 2 : 0;
    }
    const char *want = argc == 2 ? argv[1] : NULL;
    gboolean known = want == NULL;
    for (size_t k = 0; k < G_N_ELEMENTS(kinds); k++)
        known |= want && !strcmp(want, kinds[k].kind);
    if (!known) {
        fprintf(stderr, "sim list: '%s' is not models, topologies, devices or scenarios\n", want);
        return 2;
    }
    const char *env = g_getenv("SIM_DATA_DIR");
    const char *last = NULL;
    for (size_t k = 0; k < G_N_ELEMENTS(kinds); k++) {
        if (want && strcmp(want, kinds[k].kind) != 0)
            continue;
        if (!last || strcmp(last, kinds[k].kind) != 0)
            printf("%s%s:\n", last ? "\n" : "", kinds[k].kind);
        last = kinds[k].kind;
        if (env)
            list_dir(env, k);
        list_dir(SIM_SOURCE_DIR, k);
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "sim list: cannot write the list\n");
        return 1;
    }
    return 0;
}
