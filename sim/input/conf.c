/* conf: libyaml events folded into a small tree; typed, unit-aware getters over it.
 *
 * The tree keeps each node's file, line and column so that every error can point at the text a
 * user wrote. Aliases and anchors are not supported (a scenario has no need for them) and are
 * reported as errors rather than silently expanded. */
#include "conf.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

G_DEFINE_QUARK(sim - conf - error - quark, conf_error)

static ConfNode *node_new(ConfKind kind, const char *origin, int line, int col) {
    ConfNode *n = g_new0(ConfNode, 1);
    n->kind = kind;
    n->origin = g_strdup(origin);
    n->line = line;
    n->col = col;
    if (kind != CONF_SCALAR)
        n->items = g_ptr_array_new_with_free_func((GDestroyNotify)conf_node_free);
    if (kind == CONF_MAP) {
        n->keys = g_ptr_array_new_with_free_func(g_free);
        n->key_marks = g_array_new(FALSE, TRUE, sizeof(int[2]));
    }
    return n;
}

void conf_node_free(ConfNode *n) {
    if (!n)
        return;
    g_free(n->origin);
    g_free(n->value);
    if (n->keys)
        g_ptr_array_unref(n->keys);
    if (n->key_marks)
        g_array_unref(n->key_marks);
    if (n->items)
        g_ptr_array_unref(n->items);
    g_free(n);
}

ConfNode *conf_scalar_new(const char *value, const char *origin) {
    ConfNode *n = node_new(CONF_SCALAR, origin, 0, 0);
    n->value = g_strdup(value);
    return n;
}

ConfNode *conf_node_copy(const ConfNode *n) {
    ConfNode *c = node_new(n->kind, n->origin, n->line, n->col);
    c->value = g_strdup(n->value);
    if (n->items)
        for (guint i = 0; i < n->items->len; i++)
            g_ptr_array_add(c->items, conf_node_copy(n->items->pdata[i]));
    if (n->keys) {
        for (guint i = 0; i < n->keys->len; i++)
            g_ptr_array_add(c->keys, g_strdup(n->keys->pdata[i]));
        g_array_append_vals(c->key_marks, n->key_marks->data, n->key_marks->len);
    }
    return c;
}

char *conf_where(const ConfNode *n) {
    if (n->line > 0)
        return g_strdup_printf("%s:%d:%d", n->origin, n->line, n->col);
    return g_strdup(n->origin);
}

gboolean conf_fail(GError **err, int code, const ConfNode *at, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_autofree char *where = conf_where(at);
    g_set_error(err, CONF_ERROR, code, "%s: %s", where, msg);
    return FALSE;
}

/* --- parsing ------------------------------------------------------------------------------- */

typedef struct {
    yaml_parser_t parser;
    const char *origin;
    int depth; /* mappings and sequences open around the node being parsed */
} Reader;

static gboolean parse_fail(Reader *r, GError **err) {
    yaml_parser_t *p = &r->parser;
    const char *problem = p->problem ? p->problem : "malformed YAML";
    g_set_error(err, CONF_ERROR, CONF_ERROR_PARSE, "%s:%zu:%zu: %s%s%s", r->origin,
                p->problem_mark.line + 1, p->problem_mark.column + 1, problem,
                p->context ? " " : "", p->context ? p->context : "");
    return FALSE;
}

static ConfNode *parse_node(Reader *r, yaml_event_t *ev, GError **err);

/* A scalar holding a NUL (a "\0" escape) would be cut short as a C string: refuse it. */
static gboolean scalar_has_no_nul(Reader *r, const yaml_event_t *ev, GError **err) {
    if (memchr(ev->data.scalar.value, '\0', ev->data.scalar.length) == NULL)
        return TRUE;
    g_set_error(err, CONF_ERROR, CONF_ERROR_PARSE, "%s:%zu:%zu: a NUL character in a value",
                r->origin, ev->start_mark.line + 1, ev->start_mark.column + 1);
    return FALSE;
}

/* Keys a mapping holds before its duplicate check moves from a scan of the keys to a hash set:
 * the scan is quadratic (200,000 keys of a hostile GPT-NeoX .yml took minutes in strcmp), the
 * set costs an allocation that most mappings, a dozen keys, do not need. */
#define CONF_KEY_SCAN_MAX 16

/* Parse the children of a mapping or sequence whose start event has been consumed. */
static gboolean parse_children(Reader *r, ConfNode *n, GError **err) {
    /* the keys of n, borrowed from n->keys, once there are more than CONF_KEY_SCAN_MAX */
    g_autoptr(GHashTable) seen = NULL;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&r->parser, &ev))
            return parse_fail(r, err);
        if (ev.type == YAML_MAPPING_END_EVENT || ev.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&ev);
            return TRUE;
        }
        if (n->kind == CONF_MAP) {
            if (ev.type != YAML_SCALAR_EVENT) {
                if (ev.type == YAML_ALIAS_EVENT) /* `*a: 1` or `? *a` */
                    g_set_error(err, CONF_ERROR, CONF_ERROR_PARSE,
                                "%s:%zu:%zu: the alias *%s is used as a key; a key must be plain "
                                "text (YAML aliases are not supported): write the key out",
                                r->origin, ev.start_mark.line + 1, ev.start_mark.column + 1,
                                (const char *)ev.data.alias.anchor);
                else
                    g_set_error(err, CONF_ERROR, CONF_ERROR_PARSE,
                                "%s:%zu:%zu: expected a plain key, found a %s", r->origin,
                                ev.start_mark.line + 1, ev.start_mark.column + 1,
                                ev.type == YAML_MAPPING_START_EVENT ? "mapping" : "sequence");
                yaml_event_delete(&ev);
                return FALSE;
            }
            const char *key = (const char *)ev.data.scalar.value;
            if (!scalar_has_no_nul(r, &ev, err)) {
                yaml_event_delete(&ev);
                return FALSE;
            }
            gboolean twice = FALSE;
            if (seen) {
                twice = g_hash_table_contains(seen, key);
            } else {
                for (guint i = 0; !twice && i < n->keys->len; i++)
                    twice = strcmp(n->keys->pdata[i], key) == 0;
            }
            if (twice) {
                g_set_error(err, CONF_ERROR, CONF_ERROR_KEY,
                            "%s:%zu:%zu: key '%s' appears twice in one mapping", r->origin,
                            ev.start_mark.line + 1, ev.start_mark.column + 1, key);
                yaml_event_delete(&ev);
                return FALSE;
            }
            g_ptr_array_add(n->keys, g_strdup(key));
            if (!seen && n->keys->len > CONF_KEY_SCAN_MAX) {
                seen = g_hash_table_new(g_str_hash, g_str_equal);
                for (guint i = 0; i < n->keys->len; i++)
                    g_hash_table_add(seen, n->keys->pdata[i]);
            } else if (seen) {
                g_hash_table_add(seen, n->keys->pdata[n->keys->len - 1]);
            }
            int mark[2] = {(int)ev.start_mark.line + 1, (int)ev.start_mark.column + 1};
            g_array_append_val(n->key_marks, mark);
            yaml_event_delete(&ev);
            if (!yaml_parser_parse(&r->parser, &ev))
                return parse_fail(r, err);
        }
        ConfNode *child = parse_node(r, &ev, err);
        yaml_event_delete(&ev);
        if (!child)
            return FALSE;
        g_ptr_array_add(n->items, child);
    }
}

/* Build the node that starts with ev (not consumed by this function's caller's delete). */
static ConfNode *parse_node(Reader *r, yaml_event_t *ev, GError **err) {
    int line = (int)ev->start_mark.line + 1, col = (int)ev->start_mark.column + 1;
    switch (ev->type) {
    case YAML_SCALAR_EVENT: {
        if (!scalar_has_no_nul(r, ev, err))
            return NULL;
        ConfNode *n = node_new(CONF_SCALAR, r->origin, line, col);
        n->value = g_strdup((const char *)ev->data.scalar.value);
        return n;
    }
    case YAML_MAPPING_START_EVENT:
    case YAML_SEQUENCE_START_EVENT: {
        /* parse_node and parse_children recurse once a level: a bound keeps hostile input
         * ('[' x 50000) from overflowing the stack */
        if (r->depth >= CONF_MAX_DEPTH) {
            g_set_error(err, CONF_ERROR, CONF_ERROR_PARSE,
                        "%s:%d:%d: mappings and sequences nested more than %d deep", r->origin,
                        line, col, CONF_MAX_DEPTH);
            return NULL;
        }
        ConfNode *n = node_new(ev->type == YAML_MAPPING_START_EVENT ? CONF_MAP : CONF_SEQ,
                               r->origin, line, col);
        r->depth++;
        gboolean ok = parse_children(r, n, err);
        r->depth--;
        if (!ok) {
            conf_node_free(n);
            return NULL;
        }
        return n;
    }
    case YAML_ALIAS_EVENT:
        g_set_error(err, CONF_ERROR, CONF_ERROR_PARSE,
                    "%s:%d:%d: YAML aliases are not supported here; write the value out", r->origin,
                    line, col);
        return NULL;
    default:
        g_set_error(err, CONF_ERROR, CONF_ERROR_PARSE, "%s:%d:%d: unexpected YAML event", r->origin,
                    line, col);
        return NULL;
    }
}

static ConfNode *parse_document(Reader *r, GError **err) {
    ConfNode *root = NULL;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&r->parser, &ev)) {
            parse_fail(r, err);
            conf_node_free(root);
            return NULL;
        }
        yaml_event_type_t t = ev.type;
        if (t == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        if (t == YAML_STREAM_START_EVENT || t == YAML_DOCUMENT_END_EVENT) {
            yaml_event_delete(&ev);
            continue;
        }
        if (t == YAML_DOCUMENT_START_EVENT) {
            if (root) {
                g_set_error(err, CONF_ERROR, CONF_ERROR_PARSE,
                            "%s:%zu:%zu: only one YAML document is expected", r->origin,
                            ev.start_mark.line + 1, ev.start_mark.column + 1);
                yaml_event_delete(&ev);
                conf_node_free(root);
                return NULL;
            }
            yaml_event_delete(&ev);
            continue;
        }
        root = parse_node(r, &ev, err);
        yaml_event_delete(&ev);
        if (!root)
            return NULL;
    }
    if (!root) {
        g_set_error(err, CONF_ERROR, CONF_ERROR_PARSE, "%s:1:1: the file is empty", r->origin);
        return NULL;
    }
    return root;
}

ConfNode *conf_load_string(const char *text, const char *origin, GError **err) {
    Reader r = {.origin = origin};
    yaml_parser_initialize(&r.parser);
    yaml_parser_set_input_string(&r.parser, (const unsigned char *)text, strlen(text));
    ConfNode *root = parse_document(&r, err);
    yaml_parser_delete(&r.parser);
    return root;
}

/* Read what is not a regular file (a pipe, /dev/stdin, a device) up to CONF_MAX_STREAM_BYTES:
 * /dev/zero, named as a model or topology, would otherwise be read until memory runs out. */
static gboolean read_stream(const char *path, char **text, gsize *len, GError **err) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        g_set_error(err, CONF_ERROR, CONF_ERROR_IO, "%s: cannot read: %s", path, g_strerror(errno));
        return FALSE;
    }
    GString *s = g_string_new(NULL);
    char buf[65536];
    size_t n;
    gboolean too_long = FALSE;
    while (!too_long && (n = fread(buf, 1, sizeof buf, f)) > 0) {
        too_long = s->len + n > CONF_MAX_STREAM_BYTES;
        g_string_append_len(s, buf, (gssize)n);
    }
    int read_errno = ferror(f) ? errno : 0;
    fclose(f);
    if (too_long || read_errno) {
        if (too_long)
            g_set_error(err, CONF_ERROR, CONF_ERROR_IO,
                        "%s: cannot read: not a regular file, and longer than %d MiB (a device "
                        "such as /dev/zero?); name a YAML file",
                        path, CONF_MAX_STREAM_BYTES >> 20);
        else
            g_set_error(err, CONF_ERROR, CONF_ERROR_IO, "%s: cannot read: %s", path,
                        g_strerror(read_errno));
        g_string_free(s, TRUE);
        return FALSE;
    }
    *len = s->len;
    *text = g_string_free(s, FALSE);
    return TRUE;
}

ConfNode *conf_load_file(const char *path, GError **err) {
    g_autofree char *text = NULL;
    gsize len = 0;
    g_autoptr(GError) ioerr = NULL;
    GStatBuf st;
    if (g_stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        if (!read_stream(path, &text, &len, err))
            return NULL;
    } else if (!g_file_get_contents(path, &text, &len, &ioerr)) {
        g_set_error(err, CONF_ERROR, CONF_ERROR_IO, "%s: cannot read: %s", path, ioerr->message);
        return NULL;
    }
    const char *nul = memchr(text, '\0', len);
    if (nul) { /* the text would end there unseen */
        int line = 1, col = 1;
        for (const char *p = text; p < nul; p++, col++)
            if (*p == '\n') {
                line++;
                col = 0;
            }
        g_set_error(err, CONF_ERROR, CONF_ERROR_PARSE,
                    "%s:%d:%d: a NUL byte; a YAML file is text (is this a binary file?)", path,
                    line, col);
        return NULL;
    }
    return conf_load_string(text, path, err);
}

/* --- lookup -------------------------------------------------------------------------------- */

ConfNode *conf_get(const ConfNode *map, const char *key) {
    if (!map || map->kind != CONF_MAP)
        return NULL;
    for (guint i = 0; i < map->keys->len; i++)
        if (strcmp(map->keys->pdata[i], key) == 0)
            return map->items->pdata[i];
    return NULL;
}

void conf_put(ConfNode *map, const char *key, ConfNode *value) {
    g_assert(map->kind == CONF_MAP);
    for (guint i = 0; i < map->keys->len; i++) {
        if (strcmp(map->keys->pdata[i], key) == 0) {
            conf_node_free(map->items->pdata[i]);
            map->items->pdata[i] = value;
            return;
        }
    }
    g_ptr_array_add(map->keys, g_strdup(key));
    int mark[2] = {0, 0};
    g_array_append_val(map->key_marks, mark);
    g_ptr_array_add(map->items, value);
}

int conf_edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    g_autofree int *row = g_new(int, lb + 1);
    for (size_t j = 0; j <= lb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j];
            int cost = a[i - 1] == b[j - 1] ? 0 : 1;
            int best = MIN(row[j] + 1, row[j - 1] + 1);
            row[j] = MIN(best, diag + cost);
            diag = up;
        }
    }
    return row[lb];
}

gboolean conf_expect_map(const ConfNode *n, const char *what, GError **err) {
    if (n->kind != CONF_MAP)
        return conf_fail(err, CONF_ERROR_VALUE, n, "%s must be a mapping of keys to values", what);
    return TRUE;
}

gboolean conf_check_keys(const ConfNode *map, const char *const *valid, const char *section,
                         GError **err) {
    if (!conf_expect_map(map, section, err))
        return FALSE;
    for (guint i = 0; i < map->keys->len; i++) {
        const char *key = map->keys->pdata[i];
        const char *best = NULL;
        int best_d = G_MAXINT;
        gboolean ok = FALSE;
        for (const char *const *v = valid; *v; v++) {
            if (strcmp(*v, key) == 0) {
                ok = TRUE;
                break;
            }
            int d = conf_edit_distance(key, *v);
            if (d < best_d) {
                best_d = d;
                best = *v;
            }
        }
        if (ok)
            continue;
        g_autoptr(GString) list = g_string_new(NULL);
        for (const char *const *v = valid; *v; v++)
            g_string_append_printf(list, "%s%s", v == valid ? "" : ", ", *v);
        /* point at the key itself when it came from a file */
        ConfNode at_key = *(const ConfNode *)map->items->pdata[i];
        const int *mark = &g_array_index(map->key_marks, int, 2 * i);
        if (mark[0] > 0) {
            at_key.line = mark[0];
            at_key.col = mark[1];
        }
        const ConfNode *at = &at_key;
        if (best && best_d <= MAX(2, (int)strlen(key) / 3))
            return conf_fail(err, CONF_ERROR_KEY, at,
                             "unknown key '%s' in %s; did you mean '%s'? (valid: %s)", key, section,
                             best, list->str);
        return conf_fail(err, CONF_ERROR_KEY, at, "unknown key '%s' in %s (valid: %s)", key,
                         section, list->str);
    }
    return TRUE;
}

/* Fetch key as a scalar. *node is NULL when absent and not required. */
static gboolean get_scalar(const ConfNode *map, const char *key, gboolean required,
                           const ConfNode **node, GError **err) {
    *node = conf_get(map, key);
    if (!*node) {
        if (required)
            return conf_fail(err, CONF_ERROR_KEY, map, "missing key '%s'", key);
        return TRUE;
    }
    if ((*node)->kind != CONF_SCALAR)
        return conf_fail(err, CONF_ERROR_VALUE, *node, "'%s' must be a single value", key);
    return TRUE;
}

static gboolean parse_number(const char *s, double *out, const char **rest) {
    char *end = NULL;
    while (g_ascii_isspace(*s))
        s++;
    if (!*s)
        return FALSE;
    double v = g_ascii_strtod(s, &end);
    if (end == s || !isfinite(v))
        return FALSE;
    while (g_ascii_isspace(*end))
        end++;
    *out = v;
    *rest = end;
    return TRUE;
}

gboolean conf_int(const ConfNode *map, const char *key, gboolean required, int64_t min, int64_t max,
                  int64_t *out, GError **err) {
    const ConfNode *n;
    if (!get_scalar(map, key, required, &n, err))
        return FALSE;
    if (!n)
        return TRUE;
    char *end = NULL;
    const char *s = n->value;
    errno = 0;
    gint64 v = g_ascii_strtoll(s, &end, 10);
    /* Only ERANGE means anything: GLib's first call may leave another errno behind when threads
     * race to set up its C locale (g_once waits on a futex), as a parallel sweep does. */
    if (end == s || *end || errno == ERANGE)
        return conf_fail(err, CONF_ERROR_VALUE, n, "'%s' must be a whole number, not '%s'", key, s);
    if (v < min || v > max)
        return conf_fail(err, CONF_ERROR_VALUE, n,
                         "'%s' is %" G_GINT64_FORMAT "; it must be between %" G_GINT64_FORMAT
                         " and %" G_GINT64_FORMAT,
                         key, v, min, max);
    *out = v;
    return TRUE;
}

gboolean conf_int32(const ConfNode *map, const char *key, gboolean required, int64_t min,
                    int64_t max, int *out, GError **err) {
    g_assert(min >= G_MININT && max <= G_MAXINT);
    int64_t v = *out;
    if (!conf_int(map, key, required, min, max, &v, err))
        return FALSE;
    *out = (int)v;
    return TRUE;
}

gboolean conf_double(const ConfNode *map, const char *key, gboolean required, double min,
                     double max, double *out, GError **err) {
    const ConfNode *n;
    if (!get_scalar(map, key, required, &n, err))
        return FALSE;
    if (!n)
        return TRUE;
    double v;
    const char *rest;
    if (!parse_number(n->value, &v, &rest) || *rest)
        return conf_fail(err, CONF_ERROR_VALUE, n, "'%s' must be a number, not '%s'", key,
                         n->value);
    if (v < min || v > max)
        return conf_fail(err, CONF_ERROR_VALUE, n, "'%s' is %g; it must be between %g and %g", key,
                         v, min, max);
    *out = v;
    return TRUE;
}

/* v as a boolean word into *out; FALSE when it is none. */
static gboolean bool_word(const char *v, gboolean *out) {
    if (!strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "on"))
        *out = TRUE;
    else if (!strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "off"))
        *out = FALSE;
    else
        return FALSE;
    return TRUE;
}

gboolean conf_bool(const ConfNode *map, const char *key, gboolean required, gboolean *out,
                   GError **err) {
    const ConfNode *n;
    if (!get_scalar(map, key, required, &n, err))
        return FALSE;
    if (n && !bool_word(n->value, out))
        return conf_fail(err, CONF_ERROR_VALUE, n, "'%s' must be true or false, not '%s'", key,
                         n->value);
    return TRUE;
}

gboolean conf_bool_or(const ConfNode *map, const char *key, gboolean required, const char *word,
                      int *out, GError **err) {
    const ConfNode *n;
    if (!get_scalar(map, key, required, &n, err))
        return FALSE;
    if (!n)
        return TRUE;
    gboolean b;
    if (!strcmp(n->value, word))
        *out = 2;
    else if (bool_word(n->value, &b))
        *out = b;
    else
        return conf_fail(err, CONF_ERROR_VALUE, n, "'%s' must be true, false or %s, not '%s'", key,
                         word, n->value);
    return TRUE;
}

gboolean conf_enum(const ConfNode *map, const char *key, gboolean required,
                   const char *const *choices, int *out, GError **err) {
    const ConfNode *n;
    if (!get_scalar(map, key, required, &n, err))
        return FALSE;
    if (!n)
        return TRUE;
    g_autoptr(GString) list = g_string_new(NULL);
    for (int i = 0; choices[i]; i++) {
        if (!strcmp(choices[i], n->value)) {
            *out = i;
            return TRUE;
        }
        g_string_append_printf(list, "%s%s", i ? ", " : "", choices[i]);
    }
    return conf_fail(err, CONF_ERROR_VALUE, n, "'%s' must be one of %s, not '%s'", key, list->str,
                     n->value);
}

gboolean conf_string(const ConfNode *map, const char *key, gboolean required, char **out,
                     GError **err) {
    const ConfNode *n;
    if (!get_scalar(map, key, required, &n, err))
        return FALSE;
    if (!n)
        return TRUE;
    g_free(*out);
    *out = g_strdup(n->value);
    return TRUE;
}

/* --- units --------------------------------------------------------------------------------- */

typedef struct {
    const char *prefix;
    double mult;
} Prefix;

static const Prefix si_bin_prefixes[] = {
    {"Ki", 1024.0},
    {"Mi", 1048576.0},
    {"Gi", 1073741824.0},
    {"Ti", 1099511627776.0},
    {"Pi", 1125899906842624.0},
    {"k", 1e3},
    {"K", 1e3},
    {"M", 1e6},
    {"G", 1e9},
    {"T", 1e12},
    {"P", 1e15},
    {"", 1.0},
};

/* Match "<prefix><unit>" exactly; sets *mult. */
static gboolean match_unit(const char *rest, const char *unit, double *mult) {
    for (size_t i = 0; i < G_N_ELEMENTS(si_bin_prefixes); i++) {
        size_t lp = strlen(si_bin_prefixes[i].prefix);
        if (strncmp(rest, si_bin_prefixes[i].prefix, lp) == 0 && strcmp(rest + lp, unit) == 0) {
            *mult = si_bin_prefixes[i].mult;
            return TRUE;
        }
    }
    return FALSE;
}

gboolean conf_parse_bytes(const char *s, double *out) {
    double v, mult = 1.0;
    const char *rest;
    if (!parse_number(s, &v, &rest))
        return FALSE;
    if (*rest && !match_unit(rest, "B", &mult))
        return FALSE;
    *out = v * mult;
    return isfinite(*out); /* 1e308TiB overflows to infinity */
}

gboolean conf_parse_rate(const char *s, double *out) {
    double v, mult;
    const char *rest;
    if (!parse_number(s, &v, &rest))
        return FALSE;
    if (match_unit(rest, "B/s", &mult))
        *out = v * mult;
    else if (match_unit(rest, "b/s", &mult))
        *out = v * mult / 8.0;
    else
        return FALSE;
    return isfinite(*out);
}

/* conf_parse_time, telling a duration too long for int64_t picoseconds (*too_long) from text
 * that is no duration. */
static gboolean parse_time(const char *s, int64_t *out, gboolean *too_long) {
    static const struct {
        const char *unit;
        double ps;
    } units[] = {{"ps", 1.0},        {"ns", 1e3}, {"us", 1e6},
                 {"\xc2\xb5s", 1e6}, {"ms", 1e9}, {"s", 1e12}};
    double v;
    const char *rest;
    if (!parse_number(s, &v, &rest))
        return FALSE;
    if (!*rest && v == 0.0) {
        *out = 0;
        return TRUE;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(units); i++) {
        if (strcmp(rest, units[i].unit) == 0) {
            double ps = v * units[i].ps;
            if (!(fabs(ps) <= 9e18)) {
                *too_long = TRUE;
                return FALSE;
            }
            *out = (int64_t)llround(ps);
            return TRUE;
        }
    }
    return FALSE;
}

gboolean conf_parse_time(const char *s, int64_t *out) {
    gboolean too_long = FALSE;
    return parse_time(s, out, &too_long);
}

gboolean conf_parse_flops(const char *s, double *out) {
    double v, mult;
    const char *rest;
    if (!parse_number(s, &v, &rest))
        return FALSE;
    if (match_unit(rest, "FLOP/s", &mult) || match_unit(rest, "FLOPS", &mult)) {
        *out = v * mult;
        return isfinite(*out);
    }
    return FALSE;
}

/* A double-valued quantity with units: parse, then check its sign. */
static gboolean get_quantity(const ConfNode *map, const char *key, gboolean required,
                             gboolean (*parse)(const char *, double *), const char *what,
                             gboolean zero_ok, double *out, GError **err) {
    const ConfNode *n;
    if (!get_scalar(map, key, required, &n, err))
        return FALSE;
    if (!n)
        return TRUE;
    double v = 0;
    if (!parse(n->value, &v)) {
        if (isinf(v)) /* parsed, but past the largest double */
            return conf_fail(err, CONF_ERROR_VALUE, n, "'%s' is too large ('%s')", key, n->value);
        return conf_fail(err, CONF_ERROR_VALUE, n, "'%s' must be %s, not '%s'", key, what,
                         n->value);
    }
    if (v < 0 || (!zero_ok && v == 0))
        return conf_fail(err, CONF_ERROR_VALUE, n, "'%s' %s ('%s')", key,
                         zero_ok ? "is a size and cannot be negative" : "must be positive",
                         n->value);
    *out = v;
    return TRUE;
}

gboolean conf_bytes(const ConfNode *map, const char *key, gboolean required, double *out,
                    GError **err) {
    return get_quantity(map, key, required, conf_parse_bytes,
                        "a size such as 64GiB, 1.5GB or 4096 (bytes)", TRUE, out, err);
}

gboolean conf_rate(const ConfNode *map, const char *key, gboolean required, double *out,
                   GError **err) {
    return get_quantity(map, key, required, conf_parse_rate, "a rate such as 25GB/s or 200Gb/s",
                        FALSE, out, err);
}

gboolean conf_flops(const ConfNode *map, const char *key, gboolean required, double *out,
                    GError **err) {
    return get_quantity(map, key, required, conf_parse_flops, "a compute rate such as 191.5TFLOP/s",
                        FALSE, out, err);
}

gboolean conf_time(const ConfNode *map, const char *key, gboolean required, int64_t *out,
                   GError **err) {
    const ConfNode *n;
    if (!get_scalar(map, key, required, &n, err))
        return FALSE;
    if (!n)
        return TRUE;
    int64_t v;
    gboolean too_long = FALSE;
    if (!parse_time(n->value, &v, &too_long) && too_long)
        return conf_fail(err, CONF_ERROR_VALUE, n,
                         "'%s' is too long ('%s'): durations are counted in whole picoseconds "
                         "and must stay within 9e18 ps (about 104 days)",
                         key, n->value);
    if (too_long || !conf_parse_time(n->value, &v))
        return conf_fail(err, CONF_ERROR_VALUE, n,
                         "'%s' must be a duration such as 2us, 300ns or 1.5ms, not '%s'", key,
                         n->value);
    if (v < 0)
        return conf_fail(err, CONF_ERROR_VALUE, n, "'%s' is a duration and cannot be negative",
                         key);
    *out = v;
    return TRUE;
}

/* --- overrides ----------------------------------------------------------------------------- */

gboolean conf_set_path(ConfNode *root, const char *path, const char *value, const char *origin,
                       GError **err) {
    g_auto(GStrv) parts = g_strsplit(path, ".", -1);
    ConfNode *cur = root;
    guint n = g_strv_length(parts);
    for (guint i = 0; i < n; i++) {
        if (!*parts[i]) {
            g_set_error(err, CONF_ERROR, CONF_ERROR_KEY, "%s: empty key in path '%s'", origin,
                        path);
            return FALSE;
        }
        if (cur->kind != CONF_MAP) {
            g_set_error(err, CONF_ERROR, CONF_ERROR_KEY,
                        "%s: '%s' is not a mapping, so '%s' cannot be set inside it", origin,
                        parts[i - 1], parts[i]);
            return FALSE;
        }
        if (i + 1 == n) {
            conf_put(cur, parts[i], conf_scalar_new(value, origin));
            return TRUE;
        }
        ConfNode *next = conf_get(cur, parts[i]);
        if (!next) {
            next = node_new(CONF_MAP, origin, 0, 0);
            conf_put(cur, parts[i], next);
        }
        cur = next;
    }
    return TRUE;
}
