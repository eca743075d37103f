/* report_scenario: a resolved scenario tree (scenario_resolve) written back as YAML, each value
 * followed by where it came from (file:line:column, or the --set that gave it), for
 * `sim --print-scenario`: the output side of the report module, for the input.
 *
 * Block style throughout; a scalar is written plain when YAML reads it back as the same string
 * (letters, digits and . _ / + - : without ": " or a leading indicator), else double-quoted by
 * libyaml's emitter (yaml_out.c). */
#include <string.h>

#include "report.h"
#include "yaml_out.h"

static gboolean plain_ok(const char *s) {
    if (!*s || strchr("-?:,[]{}#&*!|>'\"%@` ", s[0]) || strstr(s, ": ") || strstr(s, " #") ||
        s[strlen(s) - 1] == ':' || s[strlen(s) - 1] == ' ')
        return FALSE;
    for (const char *p = s; *p; p++)
        if (!g_ascii_isalnum(*p) && !strchr("._/+-:() ", *p))
            return FALSE;
    return TRUE;
}

static void scalar(GString *out, const ConfNode *n) {
    if (plain_ok(n->value))
        g_string_append(out, n->value);
    else
        yaml_out_quoted(out, n->value);
    g_autofree char *where = conf_where(n);
    g_string_append_printf(out, "    # %s\n", where);
}

static void indent(GString *out, int depth) {
    for (int i = 0; i < depth; i++)
        g_string_append(out, "  ");
}

static void write_node(GString *out, const ConfNode *n, int depth) {
    for (guint i = 0; n->kind != CONF_SCALAR && i < n->items->len; i++) {
        const ConfNode *c = n->items->pdata[i];
        indent(out, depth);
        if (n->kind == CONF_MAP) {
            const char *key = n->keys->pdata[i];
            if (plain_ok(key))
                g_string_append(out, key);
            else
                yaml_out_quoted(out, key);
            g_string_append(out, ":");
        } else {
            g_string_append(out, "-");
        }
        if (c->kind == CONF_SCALAR) {
            g_string_append_c(out, ' ');
            scalar(out, c);
        } else if (c->items->len == 0) {
            g_string_append(out, c->kind == CONF_MAP ? " {}\n" : " []\n");
        } else {
            g_string_append_c(out, '\n');
            write_node(out, c, depth + 1);
        }
    }
}

void report_scenario_yaml(GString *out, const ConfNode *n) {
    if (n->kind == CONF_SCALAR)
        scalar(out, n);
    else
        write_node(out, n, 0);
}
