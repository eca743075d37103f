/* import: the settings a reader found (import_read.c) mapped onto scenario keys, and the scenario
 * written out. Every format's names for one setting are looked up together (GPT-NeoX's
 * num-layers, Megatron-LM's --num-layers, Hugging Face's num_hidden_layers), so a format only
 * adds names. What the file does not say is the framework's own default, each written under
 * "Defaults chosen" with its reason; every setting no key takes is listed under "Not mapped".
 *
 * Sources for the names and defaults: GPT-NeoX megatron/neox_arguments/neox_args.py (norm
 * layernorm, pos_emb learned, no_weight_tying false, make_vocab_size_divisible_by 128, zero and
 * precision blocks as DeepSpeed's); Megatron-LM megatron/training/arguments.py (--swiglu's
 * default ffn width int(4h * 2/3 / 64) * 64, --normalization, --disable-bias-linear,
 * --untie-embeddings-and-output-weights, --position-embedding-type learned_absolute | rope,
 * dropouts 0.1, masked-softmax and bias-GeLU fusions on, --use-distributed-optimizer);
 * DeepSpeed's config (train_micro_batch_size_per_gpu, gradient_accumulation_steps,
 * train_batch_size, zero_optimization.*, in elements); Hugging Face transformers'
 * PretrainedConfig (tie_word_embeddings true unless set) and LlamaConfig (attention_bias and
 * mlp_bias false, hidden_act silu in a gated MLP). */
#include <stdarg.h>
#include <string.h>

#include "conf.h"
#include "import_internal.h"
#include "scenario.h"
#include "yaml_out.h"

/* The first present setting among the NULL-terminated names; marks it read. NULL if none. */
ImportItem *im_take(Im *im, ...) {
    va_list ap;
    va_start(ap, im);
    ImportItem *found = NULL;
    for (const char *k; !found && (k = va_arg(ap, const char *));)
        for (guint i = 0; i < im->items->len; i++) {
            ImportItem *it = im->items->pdata[i];
            /* null, and DeepSpeed's "auto" (filled in by the Hugging Face Trainer from its own
             * arguments), say nothing: such a setting stays among the unmapped */
            if (strcmp(it->key, k) == 0 && strcmp(it->value, "null") != 0 &&
                strcmp(it->value, "auto") != 0) {
                found = it;
                /* a flag given twice: Megatron-LM's argparse keeps the last (the first is then
                 * listed as not mapped); elsewhere the first of two spellings counts */
                if (im->fmt != IMPORT_MEGATRON)
                    break;
            }
        }
    va_end(ap);
    if (found)
        found->used = TRUE;
    return found;
}

/* A setting the mapper needs whose value only running the script would give. */
/* A value as a message shows it: at most 60 characters. */
static char *shown(const char *value) {
    if (g_utf8_strlen(value, -1) <= 60)
        return g_strdup(value);
    g_autofree char *head = g_utf8_substring(value, 0, 60);
    return g_strconcat(head, "...", NULL);
}

static gboolean fail_unknown(GError **err, const ImportItem *it) {
    g_autofree char *v = shown(it->value);
    g_set_error(err, CONF_ERROR, CONF_ERROR_VALUE,
                "%s: %s = %s: its value comes from %s, which cannot be known without running "
                "it; write the value in the file",
                it->where, it->key, v, it->unknown);
    return FALSE;
}

gboolean im_fail(GError **err, const ImportItem *it, const char *fmt, ...) {
    if (it->unknown)
        return fail_unknown(err, it);
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_autofree char *v = shown(it->value);
    g_set_error(err, CONF_ERROR, CONF_ERROR_VALUE, "%s: %s = %s: %s", it->where, it->key, v, msg);
    return FALSE;
}

gboolean im_as_int(const ImportItem *it, int64_t min, int64_t max, int64_t *out, GError **err) {
    char *end = NULL;
    double v = g_ascii_strtod(it->value, &end);
    /* the range first: casting a double outside int64_t's range is undefined */
    if (!end || end == it->value || *end || !(v >= (double)min && v <= (double)max) ||
        v != (double)(int64_t)v)
        return im_fail(err, it,
                       "expected a whole number between %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT,
                       min, max);
    *out = (int64_t)v;
    return TRUE;
}

gboolean im_as_bool(const ImportItem *it, gboolean *out, GError **err) {
    static const char *const yes[] = {"true", "yes", "on", "1", NULL}, *const no[] = {"false", "no",
                                                                                      "off", "0",
                                                                                      NULL};
    for (int i = 0; yes[i]; i++) {
        if (g_ascii_strcasecmp(it->value, yes[i]) == 0)
            return *out = TRUE, TRUE;
        if (g_ascii_strcasecmp(it->value, no[i]) == 0)
            return *out = FALSE, TRUE;
    }
    return im_fail(err, it, "expected true or false");
}

/* The value of a setting as a probability or a plain number. */
gboolean im_as_double(const ImportItem *it, double min, double max, double *out, GError **err) {
    char *end = NULL;
    double v = g_ascii_strtod(it->value, &end);
    if (!end || end == it->value || *end || !(v >= min && v <= max))
        return im_fail(err, it, "expected a number between %g and %g", min, max);
    *out = v;
    return TRUE;
}

void im_chose(Im *im, const char *key, const char *value, const char *why) {
    g_string_append_printf(im->defaults, "#   %s: %s  (%s)\n", key, value, why);
}

/* One line of a section: "  key: value" and a comment naming where it came from. */
void im_put(GString *out, const char *key, const char *value, const char *from) {
    g_autofree char *kv = g_strdup_printf("  %s: %s", key, value);
    g_string_append_printf(out, "%-34s # %s\n", kv, from);
}

gboolean im_put_switch(Im *im, GString *out, const char *arg, const char *key, GError **err) {
    ImportItem *it = im_take(im, arg, NULL);
    gboolean on = FALSE;
    if (it && !im_as_bool(it, &on, err))
        return FALSE;
    if (on)
        im_put(out, key, "true", it->key);
    return TRUE;
}

void im_put_int(GString *out, const char *key, int64_t v, const char *from) {
    g_autofree char *s = g_strdup_printf("%" G_GINT64_FORMAT, v);
    im_put(out, key, s, from);
}

/* An integer setting into out when present (its key in *from), else def with a default note
 * (why NULL: the scenario's own default, left unwritten). Returns FALSE on a bad value. */
gboolean im_int_of(Im *im, GString *sec, const char *key, int64_t min, int64_t max, int64_t def,
                   const char *why, int64_t *out, GError **err, ...) {
    va_list ap;
    va_start(ap, err);
    ImportItem *it = NULL;
    for (const char *k; !it && (k = va_arg(ap, const char *));)
        it = im_take(im, k, NULL);
    va_end(ap);
    if (it) {
        if (!im_as_int(it, min, max, out, err))
            return FALSE;
        im_put_int(sec, key, *out, it->key);
        return TRUE;
    }
    *out = def;
    if (why) {
        g_autofree char *s = g_strdup_printf("%" G_GINT64_FORMAT, def);
        im_chose(im, key, s, why);
        im_put(sec, key, s, "default");
    }
    return TRUE;
}

gboolean im_value_has(const ImportItem *it, const char *needle) {
    g_autofree char *low = g_ascii_strdown(it->value, -1);
    return strstr(low, needle) != NULL;
}
/* Text from the file or the command line made safe for the scenario written (YAML 1.1, which
 * libyaml reads): valid UTF-8 (other bytes become U+FFFD), and no character that YAML takes as a
 * line break or that a comment cannot hold: the C0 controls, DEL, and NEL, LS and PS (YAML 1.1
 * section 5.4, "Line Break Characters"), each written as an escape \xHH or \uHHHH. Unescaped, a
 * newline in a config file's name turned the rest of the name into live scenario keys. For the
 * comments the scenario carries; its scalars go through libyaml's emitter (yaml_out.c). At most
 * max characters (0: all), then "...". */
static char *yaml_safe(const char *s, glong max) {
    g_autofree char *valid = g_utf8_make_valid(s, -1);
    GString *out = g_string_new(NULL);
    glong n = 0;
    for (const char *p = valid; *p; p = g_utf8_next_char(p), n++) {
        gunichar c = g_utf8_get_char(p);
        if (max && n == max) {
            g_string_append(out, "...");
            break;
        }
        if (c < 0x20 || c == 0x7f)
            g_string_append_printf(out, "\\x%02x", c);
        else if (c == 0x85 || c == 0x2028 || c == 0x2029)
            g_string_append_printf(out, "\\u%04x", c);
        else
            g_string_append_unichar(out, c);
    }
    return g_string_free(out, FALSE);
}

char *im_yaml_quoted(const char *s) {
    GString *out = g_string_new(NULL);
    yaml_out_quoted(out, s);
    return g_string_free(out, FALSE);
}

/* A shipped model named by --model: the model line. */
void im_put_model_option(GString *m, const ImportOptions *opt) {
    g_autofree char *q = im_yaml_quoted(opt->model);
    g_string_append_printf(m, "model: %s%*s # --model\n", q, (int)MAX(0, 27 - (int)strlen(q)), "");
}

/* The sections of GPT-NeoX, Megatron-LM, DeepSpeed and Hugging Face files. */
static gboolean write_sections(Im *im, const ImportOptions *opt, GString *model, GString *par,
                               GString *train, int64_t *nodes, GError **err) {
    Shape sh = {0};
    Run r = {0};
    /* the precision first: DeepSpeed's bucket sizes are in elements of it */
    if (!import_write_precision(im, train, &r, err))
        return FALSE;
    if (opt->model) {
        im_put_model_option(model, opt);
    } else if (im->fmt == IMPORT_DEEPSPEED) {
        g_set_error(err, CONF_ERROR, CONF_ERROR_KEY,
                    "%s: a DeepSpeed config holds no model; name one with --model NAME "
                    "(sim list models)",
                    im->path);
        return FALSE;
    } else {
        g_string_append(model, "model:\n");
        if (!import_write_model(im, opt, model, &sh, err))
            return FALSE;
    }
    return import_write_parallel(im, par, &r, err) &&
           import_write_megatron_layout(im, par, &r, sh.layers, err) &&
           import_write_training(im, train, &r, err) && import_nodes_for(im, opt, &r, nodes, err);
}

char *import_scenario(const char *path, const ImportOptions *opt, GError **err) {
    ImportFormat fmt = opt->format;
    g_autoptr(GPtrArray) items = import_read(path, &fmt, err);
    if (!items)
        return NULL;
    g_autoptr(GString) defaults = g_string_new(NULL);
    Im im = {items, path, fmt, defaults};
    g_autoptr(GString) model = g_string_new(NULL), par = g_string_new(NULL),
                       train = g_string_new(NULL);
    int64_t nodes;
    gboolean fsdp = fmt == IMPORT_FOUNDRY || fmt == IMPORT_ACCELERATE; /* import_fsdp.c */
    if (!(fsdp ? import_write_fsdp : write_sections)(&im, opt, model, par, train, &nodes, err))
        return NULL;
    if (!opt->topology)
        im_chose(&im, "topology", "frontier", "the file names no machine; --topology NAME sets it");
    for (guint i = 0; i < items->len; i++) { /* a setting read whose value is not known */
        ImportItem *it = items->pdata[i];
        if (it->used && it->unknown) {
            fail_unknown(err, it);
            return NULL;
        }
    }
    /* what a value read was interpolated from (llm-foundry's variables) is read with it, and so
     * on down a chain of references (a stack, not recursion: a chain may be long); O(references) */
    g_autoptr(GPtrArray) read = g_ptr_array_new();
    for (guint i = 0; i < items->len; i++)
        if (((ImportItem *)items->pdata[i])->used)
            g_ptr_array_add(read, items->pdata[i]);
    while (read->len) {
        ImportItem *it = g_ptr_array_steal_index_fast(read, read->len - 1);
        for (GSList *l = it->refs; l; l = l->next) {
            ImportItem *src = l->data;
            if (!src->used)
                src->used = TRUE, g_ptr_array_add(read, src);
        }
    }

    GString *out = g_string_new(NULL);
    g_autofree char *base = g_path_get_basename(path);
    g_autofree char *path_c = yaml_safe(path, 0);
    g_string_append_printf(out, "# Imported by `sim import` from %s (%s).\n", path_c,
                           import_format_name(fmt));
    g_string_append(out, "# Not mapped (no scenario key; left out):\n");
    guint unmapped = 0;
    for (guint i = 0; i < items->len; i++) {
        ImportItem *it = items->pdata[i];
        if (!it->used) {
            g_autofree char *k = yaml_safe(it->key, 0), *v = yaml_safe(it->value, 60),
                            *w = yaml_safe(it->where, 0);
            g_autofree char *n = it->note ? yaml_safe(it->note, 0) : NULL;
            g_string_append_printf(out, "#   %s = %s  (%s%s%s)\n", k, v, w, n ? "; " : "",
                                   n ? n : "");
            unmapped++;
        }
    }
    if (!unmapped)
        g_string_append(out, "#   none\n");
    g_string_append_printf(out, "# Defaults chosen (the file does not say):\n%s",
                           defaults->len ? defaults->str : "#   none\n");
    g_autofree char *what = g_strdup_printf("imported from %s (%s)", base, import_format_name(fmt));
    g_autofree char *desc = im_yaml_quoted(what),
                    *topo = im_yaml_quoted(opt->topology ? opt->topology : "frontier");
    g_string_append_printf(out, "description: %s\n", desc);
    g_string_append(out, model->str);
    g_string_append_printf(out, "topology: %s\nnodes: %" G_GINT64_FORMAT "\n", topo, nodes);
    g_string_append_printf(out, "parallel:\n%s  dp: auto\n", par->str);
    g_string_append_printf(out, "training:\n%s", train->str);
    return g_string_free(out, FALSE);
}
