/* import_interp: llm-foundry's ${...} interpolations (OmegaConf's) resolved in the settings `sim
 * import` read from an llm-foundry YAML, as llm-foundry resolves them before it reads the config
 * (llmfoundry/utils/config_utils.py make_dataclass_and_log_config: om.to_container(cfg,
 * resolve=True)): ${a.b} names the setting a.b from the root, ${.b} a sibling, ${..b} one level
 * up, and \${ is the text itself.
 *
 * Not for: what only the running job knows (a resolver such as ${oc.env:NAME}, a nested
 * interpolation, a reference to a mapping or to nothing, a cycle): such a setting keeps its text,
 * with the reason in ImportItem.unknown, and the mapper refuses it by name if it needs it. */
#include <string.h>

#include "import_internal.h"

/* Bounds on what hostile text can make the resolver do: a value built from references doubles a
 * level (a: ${b}${b}), and a chain of references recurses once a link. */
#define INTERP_MAX_BYTES (1 << 16)
#define INTERP_MAX_DEPTH 64

typedef struct {
    GHashTable *by_key; /* normalised key -> ImportItem */
    GHashTable *maps;   /* every key's enclosing mappings, "a" and "a.b" of "a.b.c" (a set) */
    GHashTable *state;  /* ImportItem -> 1 resolving, 2 done */
} Interp;

static void set_unknown(ImportItem *it, const char *why) {
    if (!it->unknown)
        it->unknown = g_strdup(why);
}

/* The key a reference names: OmegaConf's absolute a.b, or relative .b (a sibling), ..b (one
 * level up) from the item's own mapping; normalised as keys are. NULL: above the root. */
static char *ref_key(const ImportItem *it, const char *ref) {
    int up = 0;
    while (ref[up] == '.')
        up++;
    g_autofree char *rest = g_ascii_strdown(ref + up, -1);
    g_strdelimit(rest, "-", '_');
    if (!up)
        return g_steal_pointer(&rest);
    g_autofree char *parent = g_strdup(it->key);
    for (int i = 0; i < up; i++) {
        char *dot = strrchr(parent, '.');
        if (!dot && i < up - 1)
            return NULL;
        if (dot)
            *dot = '\0';
        else
            *parent = '\0';
    }
    return *parent ? g_strconcat(parent, ".", rest, NULL) : g_steal_pointer(&rest);
}

static void resolve(Interp *in, ImportItem *it, int depth) {
    int st = GPOINTER_TO_INT(g_hash_table_lookup(in->state, it));
    if (st == 2)
        return;
    if (st == 1 || depth > INTERP_MAX_DEPTH) {
        set_unknown(it, st == 1 ? "an interpolation that refers back to itself"
                                : "interpolations nested more than 64 deep");
        return;
    }
    g_hash_table_insert(in->state, it, GINT_TO_POINTER(1));
    g_autoptr(GString) out = g_string_new(NULL);
    for (const char *p = it->value; *p;) {
        const char *q = strstr(p, "${");
        if (!q) {
            g_string_append(out, p);
            break;
        }
        g_string_append_len(out, p, q - p);
        const char *end = strchr(q + 2, '}');
        if (q > it->value && q[-1] == '\\') { /* OmegaConf's escape \${: the text itself */
            g_string_truncate(out, out->len - 1);
            g_string_append(out, "${");
            p = q + 2;
            continue;
        }
        if (!end) {
            set_unknown(it, "an interpolation ${ never closed");
            break;
        }
        g_autofree char *body = g_strndup(q + 2, (gsize)(end - q - 2));
        p = end + 1;
        if (strpbrk(body, ":${")) { /* a resolver (oc.env:NAME) or nested: only at run time */
            g_autofree char *why = g_strdup_printf(
                "${%s}, an OmegaConf resolver or nested interpolation evaluated when the job runs",
                body);
            set_unknown(it, why);
            continue;
        }
        g_autofree char *key = ref_key(it, body);
        ImportItem *src = key ? g_hash_table_lookup(in->by_key, key) : NULL;
        if (!src) {
            g_autofree char *why = g_strdup_printf("${%s}, which names %s", body,
                                                   key && g_hash_table_contains(in->maps, key)
                                                       ? "a mapping, not a value"
                                                       : "no setting of the file");
            set_unknown(it, why);
            continue;
        }
        resolve(in, src, depth + 1);
        if (src->unknown)
            set_unknown(it, src->unknown);
        if (!g_slist_find(it->refs, src))
            it->refs = g_slist_prepend(it->refs, src);
        g_string_append(out, src->value);
        if (out->len > INTERP_MAX_BYTES) {
            set_unknown(it, "interpolations that make a value longer than 64 KiB");
            break;
        }
    }
    if (!it->unknown) {
        g_free(it->value);
        it->value = g_strdup(out->str);
    }
    g_hash_table_insert(in->state, it, GINT_TO_POINTER(2));
}

/* OmegaConf resolves ${key} from the config's root (omegaconf's interpolation grammar; llm-foundry
 * resolves the whole config in make_dataclass_and_log_config, om.to_container(resolve=True)).
 * O(items + bytes): each item resolved once. */
void import_foundry_resolve(GPtrArray *items) {
    Interp in = {g_hash_table_new(g_str_hash, g_str_equal),
                 g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL),
                 g_hash_table_new(g_direct_hash, g_direct_equal)};
    for (guint i = 0; i < items->len; i++) {
        ImportItem *it = items->pdata[i];
        g_hash_table_insert(in.by_key, it->key, it);
        for (const char *d = strchr(it->key, '.'); d; d = strchr(d + 1, '.'))
            g_hash_table_add(in.maps, g_strndup(it->key, (gsize)(d - it->key)));
    }
    for (guint i = 0; i < items->len; i++)
        resolve(&in, items->pdata[i], 0);
    g_hash_table_destroy(in.by_key);
    g_hash_table_destroy(in.maps);
    g_hash_table_destroy(in.state);
}
