/* import_read: the readers of `sim import`, each flattening its file into ImportItems.
 *
 * GPT-NeoX .yml, llm-foundry and accelerate YAML (conf.c's reader: every item knows its line and
 * column; llm-foundry's ${...} interpolations resolved by import_fsdp.c), DeepSpeed and
 * Hugging Face JSON (json-glib; an item's place is its key path), and Megatron-LM argument lists
 * (a launch script or a bare list of arguments, read as bash would expand it: import_shell.c;
 * an item's place is its line). Keys are normalised as GPT-NeoX's own argument parser does
 * (NeoXArgs: '-' and '_' are the same) and lower-cased; nested keys are joined by '.'. */
#include <errno.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <string.h>

#include "conf.h"
#include "import_internal.h"
#include "json_scan.h"

static void item_free(gpointer p) {
    ImportItem *it = p;
    g_free(it->key);
    g_free(it->value);
    g_free(it->where);
    g_free(it->unknown);
    g_free(it->note);
    g_slist_free(it->refs);
    g_free(it);
}

ImportItem *import_item_add(GPtrArray *items, const char *key, const char *value, char *where) {
    ImportItem *it = g_new0(ImportItem, 1);
    it->key = g_ascii_strdown(key, -1);
    g_strdelimit(it->key, "-", '_');
    it->value = g_strdup(value);
    it->where = where;
    g_ptr_array_add(items, it);
    return it;
}

/* --- YAML (GPT-NeoX) ------------------------------------------------------------------------ */

static void yaml_text(const ConfNode *n, GString *out) {
    if (n->kind == CONF_SCALAR) {
        g_string_append(out, n->value);
        return;
    }
    gboolean map = n->kind == CONF_MAP;
    g_string_append_c(out, map ? '{' : '[');
    for (guint i = 0; i < n->items->len; i++) {
        if (i)
            g_string_append(out, ", ");
        if (map)
            g_string_append_printf(out, "%s: ", (char *)n->keys->pdata[i]);
        yaml_text(n->items->pdata[i], out);
    }
    g_string_append_c(out, map ? '}' : ']');
}

static void yaml_walk(const ConfNode *map, const char *prefix, GPtrArray *items) {
    for (guint i = 0; i < map->items->len; i++) {
        const ConfNode *v = map->items->pdata[i];
        g_autofree char *key = prefix ? g_strconcat(prefix, ".", map->keys->pdata[i], NULL)
                                      : g_strdup(map->keys->pdata[i]);
        if (v->kind == CONF_MAP && v->items->len > 0) {
            yaml_walk(v, key, items);
            continue;
        }
        g_autoptr(GString) text = g_string_new(NULL);
        yaml_text(v, text);
        import_item_add(items, key, text->str, conf_where(v));
    }
}

static gboolean read_yaml(const char *path, GPtrArray *items, GError **err) {
    g_autoptr(ConfNode) root = conf_load_file(path, err);
    if (!root)
        return FALSE;
    if (root->kind != CONF_MAP)
        return conf_fail(err, CONF_ERROR_VALUE, root,
                         "a GPT-NeoX, llm-foundry or accelerate config must be a mapping");
    yaml_walk(root, NULL, items);
    return TRUE;
}

/* --- JSON (DeepSpeed, Hugging Face) -------------------------------------------------------- */

static void json_text(JsonNode *n, GString *out) {
    switch (json_node_get_node_type(n)) {
    case JSON_NODE_NULL:
        g_string_append(out, "null");
        return;
    case JSON_NODE_ARRAY: {
        JsonArray *a = json_node_get_array(n);
        g_string_append_c(out, '[');
        for (guint i = 0; i < json_array_get_length(a); i++) {
            if (i)
                g_string_append(out, ", ");
            json_text(json_array_get_element(a, i), out);
        }
        g_string_append_c(out, ']');
        return;
    }
    case JSON_NODE_OBJECT: {
        JsonObject *o = json_node_get_object(n);
        g_autoptr(GList) names = json_object_get_members(o);
        g_string_append_c(out, '{');
        for (GList *l = names; l; l = l->next) {
            if (l != names)
                g_string_append(out, ", ");
            g_string_append_printf(out, "%s: ", (char *)l->data);
            json_text(json_object_get_member(o, l->data), out);
        }
        g_string_append_c(out, '}');
        return;
    }
    case JSON_NODE_VALUE:
        break;
    }
    GType t = json_node_get_value_type(n);
    if (t == G_TYPE_BOOLEAN)
        g_string_append(out, json_node_get_boolean(n) ? "true" : "false");
    else if (t == G_TYPE_INT64)
        g_string_append_printf(out, "%" G_GINT64_FORMAT, json_node_get_int(n));
    else if (t == G_TYPE_DOUBLE)
        g_string_append_printf(out, "%.15g", json_node_get_double(n));
    else
        g_string_append(out, json_node_get_string(n) ? json_node_get_string(n) : "");
}

static void json_walk(JsonObject *o, const char *prefix, const char *path, GPtrArray *items) {
    g_autoptr(GList) names = json_object_get_members(o);
    for (GList *l = names; l; l = l->next) {
        JsonNode *v = json_object_get_member(o, l->data);
        g_autofree char *key = prefix ? g_strconcat(prefix, ".", l->data, NULL) : g_strdup(l->data);
        if (JSON_NODE_HOLDS_OBJECT(v) && json_object_get_size(json_node_get_object(v)) > 0) {
            json_walk(json_node_get_object(v), key, path, items);
            continue;
        }
        g_autoptr(GString) text = g_string_new(NULL);
        json_text(v, text);
        import_item_add(items, key, text->str, g_strdup_printf("%s: key %s", path, key));
    }
}

static gboolean read_json(const char *path, GPtrArray *items, GError **err) {
    g_autofree char *text = NULL;
    gsize len = 0;
    g_autoptr(GError) jerr = NULL;
    if (!g_file_get_contents(path, &text, &len, &jerr)) {
        g_set_error(err, CONF_ERROR, CONF_ERROR_IO, "%s", jerr->message);
        return FALSE;
    }
    if (!json_prescan(path, text, len, CONF_MAX_DEPTH, CONF_ERROR, CONF_ERROR_PARSE,
                      "a configuration holds none", err))
        return FALSE;
    g_autoptr(JsonParser) parser = json_parser_new();
    if (!json_parser_load_from_data(parser, text, (gssize)len, &jerr)) {
        g_set_error(err, CONF_ERROR, CONF_ERROR_PARSE, "%s: not valid JSON: %s", path,
                    jerr->message);
        return FALSE;
    }
    JsonNode *root = json_parser_get_root(parser);
    if (!root || !JSON_NODE_HOLDS_OBJECT(root)) {
        g_set_error(err, CONF_ERROR, CONF_ERROR_VALUE, "%s: the JSON must be an object of keys",
                    path);
        return FALSE;
    }
    json_walk(json_node_get_object(root), NULL, path, items);
    return TRUE;
}

/* --- Megatron-LM arguments ----------------------------------------------------------------- */

static gboolean read_args(const char *path, GPtrArray *items, GError **err) {
    g_autofree char *text = NULL;
    gsize len = 0;
    g_autoptr(GError) ferr = NULL;
    if (!g_file_get_contents(path, &text, &len, &ferr)) {
        g_set_error(err, CONF_ERROR, CONF_ERROR_IO, "%s", ferr->message);
        return FALSE;
    }
    /* a NUL ended the text as a C string: every flag after it was lost (--bf16 after one gave
     * fp32, exit 0) */
    const char *nul = memchr(text, '\0', len);
    if (nul) {
        int line = 1;
        const char *bol = text;
        for (const char *p = text; p < nul; p++)
            if (*p == '\n')
                line++, bol = p + 1;
        g_set_error(err, CONF_ERROR, CONF_ERROR_PARSE,
                    "%s:%d:%d: a NUL byte; an argument list or a script holds none", path, line,
                    (int)(nul - bol) + 1);
        return FALSE;
    }
    return import_read_shell(path, text, len, items, err);
}

/* --- the format ---------------------------------------------------------------------------- */

static const char *const format_names[] = {"auto", "gpt-neox",    "megatron",   "deepspeed",
                                           "hf",   "llm-foundry", "accelerate", NULL};

const char *import_format_name(ImportFormat f) {
    return format_names[f];
}

gboolean import_format_parse(const char *text, ImportFormat *out) {
    for (int i = 0; format_names[i]; i++)
        if (g_ascii_strcasecmp(text, format_names[i]) == 0) {
            *out = i;
            return TRUE;
        }
    return FALSE;
}

static gboolean has_key(GPtrArray *items, const char *key) {
    for (guint i = 0; i < items->len; i++)
        if (strcmp(((ImportItem *)items->pdata[i])->key, key) == 0)
            return TRUE;
    return FALSE;
}

/* Most bytes of a configuration file: far past any real one, short of a device's endless stream. */
#define IMPORT_MAX_BYTES (16 << 20)

GPtrArray *import_read(const char *path, ImportFormat *f, GError **err) {
    GStatBuf st;
    if (g_stat(path, &st) != 0) {
        g_set_error(err, CONF_ERROR, CONF_ERROR_IO, "%s: cannot read: %s", path, g_strerror(errno));
        return NULL;
    }
    if (!S_ISREG(st.st_mode) || st.st_size > IMPORT_MAX_BYTES) {
        g_set_error(err, CONF_ERROR, CONF_ERROR_IO,
                    "%s: not a configuration file (a regular file of at most %d MiB)", path,
                    IMPORT_MAX_BYTES >> 20);
        return NULL;
    }
    g_autoptr(GPtrArray) items = g_ptr_array_new_with_free_func(item_free);
    gboolean json = g_str_has_suffix(path, ".json"),
             yaml = g_str_has_suffix(path, ".yml") || g_str_has_suffix(path, ".yaml");
    ImportFormat fmt = *f;
    if (fmt == IMPORT_AUTO)
        fmt = json ? IMPORT_HF : yaml ? IMPORT_NEOX : IMPORT_MEGATRON;
    gboolean is_yaml = fmt == IMPORT_NEOX || fmt == IMPORT_FOUNDRY || fmt == IMPORT_ACCELERATE;
    gboolean ok = is_yaml                  ? read_yaml(path, items, err)
                  : fmt == IMPORT_MEGATRON ? read_args(path, items, err)
                                           : read_json(path, items, err);
    if (!ok)
        return NULL;
    /* a YAML file is an accelerate config when it names a distributed_type (accelerate's
     * ClusterConfig, commands/config/config_args.py), an llm-foundry one when it holds the keys
     * its TrainConfig requires (llmfoundry/utils/config_utils.py: model with a name, the batch,
     * max_seq_len) or an fsdp_config, else GPT-NeoX's */
    if (*f == IMPORT_AUTO && fmt == IMPORT_NEOX)
        fmt = has_key(items, "distributed_type") ? IMPORT_ACCELERATE
              : has_key(items, "model.name") || has_key(items, "global_train_batch_size") ||
                      has_key(items, "device_train_microbatch_size") ||
                      has_key(items, "fsdp_config.sharding_strategy")
                  ? IMPORT_FOUNDRY
                  : IMPORT_NEOX;
    if (fmt == IMPORT_FOUNDRY)
        import_foundry_resolve(items);
    /* a JSON file without a model's shape is a DeepSpeed config */
    if (*f == IMPORT_AUTO && fmt == IMPORT_HF && !has_key(items, "hidden_size") &&
        !has_key(items, "num_hidden_layers") && !has_key(items, "n_embd") &&
        !has_key(items, "model_type"))
        fmt = IMPORT_DEEPSPEED;
    *f = fmt;
    return g_steal_pointer(&items);
}
