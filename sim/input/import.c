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
#include "import.h"
#include "scenario.h"

typedef struct {
    GPtrArray *items; /* ImportItem */
    const char *path;
    ImportFormat fmt;
    GString *defaults; /* "#   key: value  (reason)" lines */
} Im;

/* The first present setting among the NULL-terminated names; marks it read. NULL if none. */
static ImportItem *take(Im *im, ...) {
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
                break;
            }
        }
    va_end(ap);
    if (found)
        found->used = TRUE;
    return found;
}

static gboolean fail(GError **err, const ImportItem *it, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static gboolean fail(GError **err, const ImportItem *it, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(err, CONF_ERROR, CONF_ERROR_VALUE, "%s: %s = %s: %s", it->where, it->key, it->value,
                msg);
    return FALSE;
}

static gboolean as_int(const ImportItem *it, int64_t min, int64_t max, int64_t *out, GError **err) {
    char *end = NULL;
    double v = g_ascii_strtod(it->value, &end);
    /* the range first: casting a double outside int64_t's range is undefined */
    if (!end || end == it->value || *end || !(v >= (double)min && v <= (double)max) ||
        v != (double)(int64_t)v)
        return fail(err, it,
                    "expected a whole number between %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT,
                    min, max);
    *out = (int64_t)v;
    return TRUE;
}

static gboolean as_bool(const ImportItem *it, gboolean *out, GError **err) {
    static const char *const yes[] = {"true", "yes", "on", "1", NULL}, *const no[] = {"false", "no",
                                                                                      "off", "0",
                                                                                      NULL};
    for (int i = 0; yes[i]; i++) {
        if (g_ascii_strcasecmp(it->value, yes[i]) == 0)
            return *out = TRUE, TRUE;
        if (g_ascii_strcasecmp(it->value, no[i]) == 0)
            return *out = FALSE, TRUE;
    }
    return fail(err, it, "expected true or false");
}

/* The value of a setting as a probability or a plain number. */
static gboolean as_double(const ImportItem *it, double min, double max, double *out, GError **err) {
    char *end = NULL;
    double v = g_ascii_strtod(it->value, &end);
    if (!end || end == it->value || *end || !(v >= min && v <= max))
        return fail(err, it, "expected a number between %g and %g", min, max);
    *out = v;
    return TRUE;
}

static void chose(Im *im, const char *key, const char *value, const char *why) {
    g_string_append_printf(im->defaults, "#   %s: %s  (%s)\n", key, value, why);
}

/* One line of a section: "  key: value" and a comment naming where it came from. */
static void put(GString *out, const char *key, const char *value, const char *from) {
    g_autofree char *kv = g_strdup_printf("  %s: %s", key, value);
    g_string_append_printf(out, "%-34s # %s\n", kv, from);
}

static void put_int(GString *out, const char *key, int64_t v, const char *from) {
    g_autofree char *s = g_strdup_printf("%" G_GINT64_FORMAT, v);
    put(out, key, s, from);
}

/* An integer setting into out when present (its key in *from), else def with a default note
 * (why NULL: the scenario's own default, left unwritten). Returns FALSE on a bad value. */
static gboolean int_of(Im *im, GString *sec, const char *key, int64_t min, int64_t max, int64_t def,
                       const char *why, int64_t *out, GError **err, ...) {
    va_list ap;
    va_start(ap, err);
    ImportItem *it = NULL;
    for (const char *k; !it && (k = va_arg(ap, const char *));)
        it = take(im, k, NULL);
    va_end(ap);
    if (it) {
        if (!as_int(it, min, max, out, err))
            return FALSE;
        put_int(sec, key, *out, it->key);
        return TRUE;
    }
    *out = def;
    if (why) {
        g_autofree char *s = g_strdup_printf("%" G_GINT64_FORMAT, def);
        chose(im, key, s, why);
        put(sec, key, s, "default");
    }
    return TRUE;
}

static gboolean value_has(const ImportItem *it, const char *needle) {
    g_autofree char *low = g_ascii_strdown(it->value, -1);
    return strstr(low, needle) != NULL;
}

/* --- the model ----------------------------------------------------------------------------- */

typedef struct {
    int64_t layers, hidden, heads, ffn;
    gboolean swiglu, rms, bias;
} Shape;

static gboolean model_mlp(Im *im, GString *m, Shape *sh, GError **err) {
    ImportItem *act = take(im, "hidden_act", "activation", "activation_function", NULL);
    ImportItem *swi = take(im, "swiglu", NULL);
    gboolean on = FALSE;
    if (swi && !as_bool(swi, &on, err))
        return FALSE;
    if (act) {
        static const char *const gelu[] = {"gelu",        "gelu_new",          "gelu_fast",
                                           "gelu_python", "gelu_pytorch_tanh", NULL};
        static const char *const gated[] = {"silu", "swish", "swiglu", NULL};
        gboolean is_gelu = g_strv_contains(gelu, act->value) && !on,
                 is_swiglu = g_strv_contains(gated, act->value) || on;
        if (!is_gelu && !is_swiglu)
            return fail(err, act,
                        "the simulator models GeLU and SwiGLU MLPs only (gelu, gelu_new, "
                        "gelu_fast, silu, swish, swiglu)");
        sh->swiglu = is_swiglu;
        put(m, "mlp", is_swiglu ? "swiglu" : "gelu",
            g_str_equal(act->value, "silu") ? "hidden_act silu: a gated (SwiGLU) MLP as Llama's"
                                            : act->key);
    } else {
        sh->swiglu = on;
        if (swi)
            put(m, "mlp", on ? "swiglu" : "gelu", swi->key);
        else
            chose(im, "mlp", "gelu",
                  "the file names no activation; GeLU is the frameworks' default");
    }
    return TRUE;
}

static gboolean model_norm(Im *im, GString *m, Shape *sh, GError **err) {
    ImportItem *n = take(im, "norm", "normalization", NULL);
    ImportItem *rms_eps = take(im, "rms_norm_eps", NULL);
    ImportItem *ln_eps =
        take(im, "layer_norm_eps", "layer_norm_epsilon", "layernorm_epsilon", NULL);
    if (n) {
        g_autofree char *low = g_ascii_strdown(n->value, -1);
        if (strcmp(low, "layernorm") && strcmp(low, "rmsnorm"))
            return fail(err, n, "the simulator models LayerNorm and RMSNorm only");
        sh->rms = strcmp(low, "rmsnorm") == 0;
        put(m, "norm", sh->rms ? "rmsnorm" : "layernorm", n->key);
    } else if (rms_eps || ln_eps) {
        sh->rms = rms_eps != NULL;
        put(m, "norm", sh->rms ? "rmsnorm" : "layernorm", (rms_eps ? rms_eps : ln_eps)->key);
    } else {
        sh->rms = FALSE;
        chose(im, "norm", "layernorm", "the file names no norm; LayerNorm is the default");
    }
    return TRUE;
}

static gboolean model_bias(Im *im, GString *m, Shape *sh, GError **err) {
    ImportItem *ab = take(im, "attention_bias", NULL), *mb = take(im, "mlp_bias", NULL);
    ImportItem *dis = take(im, "disable_bias_linear", NULL);
    gboolean a = TRUE, b = TRUE;
    if ((ab && !as_bool(ab, &a, err)) || (mb && !as_bool(mb, &b, err)))
        return FALSE;
    if (dis) {
        gboolean off;
        if (!as_bool(dis, &off, err))
            return FALSE;
        sh->bias = !off;
        put(m, "bias", sh->bias ? "true" : "false", dis->key);
    } else if (ab || mb) {
        if (ab && mb && a != b)
            return fail(err, mb,
                        "biases on some linears only cannot be expressed (bias: true "
                        "or false for all; attention_bias = %s)",
                        ab->value);
        sh->bias = ab ? a : b;
        put(m, "bias", sh->bias ? "true" : "false", (ab ? ab : mb)->key);
    } else if (im->fmt == IMPORT_HF && sh->rms) {
        sh->bias = FALSE;
        chose(im, "bias", "false",
              "Llama-style config (RMSNorm): LlamaConfig's attention_bias "
              "and mlp_bias default false");
        put(m, "bias", "false", "default");
    } else {
        sh->bias = TRUE;
    }
    return TRUE;
}

static gboolean model_positions(Im *im, GString *m, GError **err) {
    ImportItem *pe = take(im, "pos_emb", "position_embedding_type", NULL);
    ImportItem *rope = take(im, "use_rotary_position_embeddings", NULL);
    gboolean on = FALSE;
    if (rope && !as_bool(rope, &on, err))
        return FALSE;
    if (pe) {
        g_autofree char *low = g_ascii_strdown(pe->value, -1);
        gboolean rotary = !strcmp(low, "rotary") || !strcmp(low, "rope");
        if (!rotary && strcmp(low, "learned") && strcmp(low, "learned_absolute"))
            return fail(err, pe, "the simulator models learned and rotary positions only");
        put(m, "pos_emb", rotary ? "rotary" : "learned", pe->key);
    } else if (rope) {
        put(m, "pos_emb", on ? "rotary" : "learned", rope->key);
    } else if (im->fmt == IMPORT_HF) {
        ImportItem *theta = take(im, "rope_theta", NULL);
        ImportItem *npos = take(im, "n_positions", NULL);
        put(m, "pos_emb", npos && !theta ? "learned" : "rotary",
            theta  ? "rope_theta"
            : npos ? "n_positions: a learned table"
                   : "default");
        if (!theta && !npos)
            chose(im, "pos_emb", "rotary", "config.json names no positions; rotary as Llama");
    } else {
        chose(im, "pos_emb", "learned",
              "the file names none; GPT-NeoX's and Megatron-LM's default is learned");
        put(m, "pos_emb", "learned", "default");
    }
    return TRUE;
}

static gboolean model_embeddings(Im *im, GString *m, GError **err) {
    ImportItem *tie = take(im, "tie_word_embeddings", NULL);
    ImportItem *untie = take(im, "no_weight_tying", "untie_embeddings_and_output_weights", NULL);
    gboolean v;
    if (tie) {
        if (!as_bool(tie, &v, err))
            return FALSE;
        put(m, "tied_embeddings", v ? "true" : "false", tie->key);
    } else if (untie) {
        if (!as_bool(untie, &v, err))
            return FALSE;
        put(m, "tied_embeddings", v ? "false" : "true", untie->key);
    } else {
        chose(im, "tied_embeddings", "true",
              im->fmt == IMPORT_HF ? "PretrainedConfig's tie_word_embeddings default"
                                   : "the framework ties input and output embeddings by default");
        put(m, "tied_embeddings", "true", "default");
    }
    return TRUE;
}

static gboolean model_vocab(Im *im, GString *m, GError **err) {
    int64_t v;
    ImportItem *it = take(im, "vocab_size", "padded_vocab_size", NULL);
    if (it) {
        if (!as_int(it, 1, 1 << 28, &v, err))
            return FALSE;
        put_int(m, "vocab", v, it->key);
    } else {
        ImportItem *tok = take(im, "vocab_file", "tokenizer_type", NULL);
        gboolean neox20b = tok && value_has(tok, "20b");
        v = neox20b ? 50277 : 50257;
        chose(im, "vocab", neox20b ? "50277" : "50257",
              neox20b ? "the GPT-NeoX-20B tokenizer"
                      : "the file has no vocabulary size; the GPT-2 BPE's 50257 (correct it "
                        "with --set model.vocab=N)");
        put_int(m, "vocab", v, tok ? tok->key : "default");
    }
    ImportItem *pad = take(im, "make_vocab_size_divisible_by", NULL);
    int64_t mult;
    if (pad) {
        if (!as_int(pad, 1, 1 << 20, &mult, err))
            return FALSE;
        put_int(m, "vocab_pad_multiple", mult, pad->key);
    } else if (im->fmt == IMPORT_HF) {
        chose(im, "vocab_pad_multiple", "1", "the checkpoint's vocabulary as it is");
        put(m, "vocab_pad_multiple", "1", "default");
    }
    return TRUE;
}

static gboolean model_attention(Im *im, GString *m, GError **err) {
    ImportItem *cfg = take(im, "attention_config", NULL);
    ImportItem *fl = take(im, "use_flash_attn", NULL);
    gboolean on = FALSE;
    if (fl && !as_bool(fl, &on, err))
        return FALSE;
    if (cfg) {
        gboolean flash = value_has(cfg, "flash"), global = value_has(cfg, "global");
        g_autofree char *rest = g_ascii_strdown(cfg->value, -1);
        /* every layer's type must be global or flash: others (sparse, local, ...) are not modelled
         */
        for (const char *w = rest; *w; w++)
            if (g_ascii_isalpha(*w)) {
                size_t n = 0;
                while (g_ascii_isalnum(w[n]) || w[n] == '_')
                    n++;
                if (!((n == 5 && !strncmp(w, "flash", 5)) || (n == 6 && !strncmp(w, "global", 6))))
                    return fail(err, cfg, "only global and flash attention can be expressed");
                w += n - 1;
            }
        if (flash && global)
            return fail(err, cfg, "a mix of global and flash layers cannot be expressed");
        put(m, "attention", flash ? "flash" : "standard", cfg->key);
    } else if (fl) {
        put(m, "attention", on ? "flash" : "standard", fl->key);
    } else if (im->fmt == IMPORT_HF) {
        chose(im, "attention", "flash",
              "config.json does not say how attention runs; a fused "
              "kernel as modern trainers use");
        put(m, "attention", "flash", "default");
    }
    return TRUE;
}

static gboolean model_misc(Im *im, GString *m, GError **err) {
    static const struct {
        const char *key, *names[3];
        gboolean megatron_on; /* Megatron-LM's default: on, unless --no-... */
    } flags[] = {
        {"parallel_residual", {"gpt_j_residual", "use_parallel_residual", NULL}, FALSE},
        {"softmax_fusion", {"scaled_upper_triang_masked_softmax_fusion", NULL, NULL}, TRUE},
        {"bias_gelu_fusion", {"bias_gelu_fusion", NULL, NULL}, TRUE},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(flags); i++) {
        ImportItem *it = take(im, flags[i].names[0], flags[i].names[1], NULL);
        gboolean v;
        if (it) {
            if (!as_bool(it, &v, err))
                return FALSE;
            put(m, flags[i].key, v ? "true" : "false", it->key);
        } else if (im->fmt == IMPORT_MEGATRON && flags[i].megatron_on) {
            const char *off = i == 1 ? "no_masked_softmax_fusion" : "no_bias_gelu_fusion";
            ImportItem *no = take(im, off, NULL);
            put(m, flags[i].key, no ? "false" : "true", no ? no->key : "Megatron-LM default");
        }
    }
    static const struct {
        const char *key, *a, *b;
    } drops[] = {{"attention_dropout", "attention_dropout", "attn_pdrop"},
                 {"hidden_dropout", "hidden_dropout", "resid_pdrop"}};
    for (size_t i = 0; i < G_N_ELEMENTS(drops); i++) {
        ImportItem *it = take(im, drops[i].a, drops[i].b, NULL);
        double p = 0.0;
        if (it) {
            if (!as_double(it, 0.0, 1.0, &p, err))
                return FALSE;
            g_autofree char *s = g_strdup_printf("%g", p);
            put(m, drops[i].key, s, it->key);
        } else if (im->fmt == IMPORT_MEGATRON) {
            chose(im, drops[i].key, "0.1", "Megatron-LM's default");
            put(m, drops[i].key, "0.1", "default");
        }
    }
    /* mixture of experts (the model's moe mapping): Hugging Face num_local_experts and
     * num_experts_per_tok (Mixtral), Megatron-LM --num-experts and --moe-router-topk, GPT-NeoX
     * moe_num_experts and moe_top_k; the rest are the moe keys' defaults (DeepSpeed's) */
    ImportItem *moe = take(im, "num_local_experts", "num_experts", "moe_num_experts", NULL);
    int64_t experts = 0, top_k = 1;
    if (moe && !as_int(moe, 0, 1 << 20, &experts, err))
        return FALSE;
    ImportItem *k = take(im, "num_experts_per_tok", "moe_router_topk", "moe_top_k", NULL);
    if (k && !as_int(k, 1, 1 << 20, &top_k, err))
        return FALSE;
    if (experts > 1) {
        if (top_k > experts)
            return fail(err, k,
                        "top-k routing to more experts than the %" G_GINT64_FORMAT " there are",
                        experts);
        g_autofree char *v = g_strdup_printf(
            "{experts: %" G_GINT64_FORMAT ", top_k: %" G_GINT64_FORMAT "}", experts, top_k);
        g_autofree char *from = g_strdup_printf("%s%s%s", moe->key, k ? ", " : "", k ? k->key : "");
        put(m, "moe", v, from);
        if (!k)
            chose(im, "moe.top_k", "1", "DeepSpeed's default k");
        chose(im, "moe.capacity_factor", "1.0", "DeepSpeed's default; a dropless run's mean load");
    }
    return TRUE;
}

static char *model_name(Im *im, const ImportOptions *opt) {
    if (opt->name)
        return g_strdup(opt->name);
    ImportItem *n = take(im, "_name_or_path", NULL);
    g_autofree char *base = g_path_get_basename(n && *n->value ? n->value : im->path);
    char *dot = strrchr(base, '.');
    if (dot && dot != base && !n)
        *dot = '\0';
    return g_strdup(base);
}

static gboolean write_model(Im *im, const ImportOptions *opt, GString *m, Shape *sh, GError **err) {
    g_autofree char *name = model_name(im, opt);
    g_autofree char *esc = g_strescape(name, NULL);
    g_autofree char *quoted = g_strdup_printf("\"%s\"", esc);
    put(m, "name", quoted, opt->name ? "--name" : "from the file");
    int64_t kv = 0;
    ImportItem *need[3] = {take(im, "num_layers", "num_hidden_layers", "n_layer", NULL),
                           take(im, "hidden_size", "n_embd", NULL),
                           take(im, "num_attention_heads", "n_head", NULL)};
    static const char *const keys[] = {"layers", "hidden", "heads"},
                             *const what[] = {"num-layers / num_hidden_layers",
                                              "hidden-size / hidden_size",
                                              "num-attention-heads / num_attention_heads"};
    int64_t *dst[] = {&sh->layers, &sh->hidden, &sh->heads};
    for (int i = 0; i < 3; i++) {
        if (!need[i]) {
            g_set_error(err, CONF_ERROR, CONF_ERROR_KEY,
                        "%s: the model's %s is missing (%s); or name a shipped model with "
                        "--model NAME",
                        im->path, keys[i], what[i]);
            return FALSE;
        }
        if (!as_int(need[i], 1, 1 << 24, dst[i], err))
            return FALSE;
        put_int(m, keys[i], *dst[i], need[i]->key);
    }
    ImportItem *kvh = take(im, "num_key_value_heads", "num_kv_heads", NULL);
    ImportItem *gqa = take(im, "group_query_attention", NULL),
               *groups = take(im, "num_query_groups", NULL);
    if (!kvh && groups && gqa)
        kvh = groups;
    else if (groups)
        groups->used = FALSE; /* without --group-query-attention Megatron ignores it */
    if (kvh) {
        if (!as_int(kvh, 1, sh->heads, &kv, err))
            return FALSE;
        put_int(m, "kv_heads", kv, kvh->key);
    }
    if (!model_mlp(im, m, sh, err) || !model_norm(im, m, sh, err))
        return FALSE;
    ImportItem *ffn = take(im, "intermediate_size", "ffn_hidden_size", "n_inner", NULL);
    if (ffn) {
        if (!as_int(ffn, 1, 1 << 26, &sh->ffn, err))
            return FALSE;
        put_int(m, "ffn_hidden", sh->ffn, ffn->key);
    } else if (sh->swiglu) { /* Megatron-LM's --swiglu width */
        sh->ffn = (int64_t)(4 * sh->hidden * 2 / 3 / 64) * 64;
        chose(im, "ffn_hidden", "int(4h x 2/3 / 64) x 64", "Megatron-LM's width for --swiglu");
        put_int(m, "ffn_hidden", sh->ffn, "default");
    }
    if (!model_bias(im, m, sh, err) || !model_vocab(im, m, err) || !model_positions(im, m, err) ||
        !model_embeddings(im, m, err) || !model_attention(im, m, err) || !model_misc(im, m, err))
        return FALSE;
    /* A GPT-NeoX-shaped layer (GeLU, LayerNorm, biases, multi-head) counts the study's 8h of
     * vectors unless told otherwise. A checkpoint (config.json) or a Megatron-LM model has
     * exactly two LayerNorms (4h) and its biases (QKV 3h, output h, MLP ffn + h): written out
     * when a whole number of h; a GPT-NeoX import keeps the study's form. */
    if (!sh->swiglu && !sh->rms && sh->bias && (kv == 0 || kv == sh->heads)) {
        int64_t ffn = sh->ffn ? sh->ffn : 4 * sh->hidden, vec = 9 * sh->hidden + ffn;
        if (im->fmt != IMPORT_NEOX && vec % sh->hidden == 0)
            put_int(m, "layer_vector_params_h", vec / sh->hidden,
                    "two LayerNorms (4h) and biases (5h + ffn): the exact count");
        else
            chose(im, "layer_vector_params_h", "8",
                  "the study's Eq. 1 (GPT-NeoX's code holds 13; --set "
                  "model.layer_vector_params_h=13 for its exact count)");
    }
    return TRUE;
}

/* --- layout and training ------------------------------------------------------------------- */

typedef struct {
    int64_t tp, pp, zero, micro, accum, global, seq;
    int elem_bytes;
} Run;

/* Megatron-LM's interleaved schedule (megatron/training/arguments.py): the model chunks per rank
 * come from --num-layers-per-virtual-pipeline-stage N as layers / (pp N), or directly from
 * --num-virtual-stages-per-pipeline-rank; and its --sequence-parallel. */
static gboolean write_megatron_layout(Im *im, GString *p, const Run *r, int64_t layers,
                                      GError **err) {
    ImportItem *sp = take(im, "sequence_parallel", NULL);
    gboolean on = FALSE;
    if (sp && !as_bool(sp, &on, err))
        return FALSE;
    if (on)
        put(p, "sequence_parallel", "true", sp->key);
    ImportItem *per = take(im, "num_layers_per_virtual_pipeline_stage", NULL),
               *direct = take(im, "num_virtual_stages_per_pipeline_rank", NULL);
    int64_t v = 0, n;
    if (direct && !as_int(direct, 1, 1 << 20, &v, err))
        return FALSE;
    if (per) {
        if (!as_int(per, 1, 1 << 20, &n, err))
            return FALSE;
        if (layers <= 0 || layers % (r->pp * n) != 0)
            return fail(err, per,
                        "%" G_GINT64_FORMAT " layers per virtual stage with pipeline parallelism "
                        "%" G_GINT64_FORMAT " needs a layer count that pp x %" G_GINT64_FORMAT
                        " divides (%" G_GINT64_FORMAT ")",
                        n, r->pp, n, layers);
        v = layers / (r->pp * n);
    }
    if (v > 1) {
        ImportItem *from = per ? per : direct;
        put(p, "schedule", "interleaved", from->key);
        put_int(p, "virtual_stages", v, from->key);
    }
    return TRUE;
}

static gboolean write_parallel(Im *im, GString *p, Run *r, GError **err) {
    if (!int_of(im, p, "tp", 1, 1 << 20, 1, NULL, &r->tp, err, "model_parallel_size",
                "tensor_model_parallel_size", NULL))
        return FALSE;
    ImportItem *pp = take(im, "pipe_parallel_size", "pipeline_model_parallel_size", NULL);
    r->pp = 1;
    if (pp) {
        if (!as_int(pp, 0, 1 << 20, &r->pp, err))
            return FALSE;
        /* GPT-NeoX: 0 runs without the pipeline engine, one stage */
        put_int(p, "pp", MAX(r->pp, 1), r->pp ? pp->key : "pipe_parallel_size 0: no pipeline");
        r->pp = MAX(r->pp, 1);
    }
    ImportItem *dist = take(im, "use_distributed_optimizer", NULL);
    if (!int_of(im, p, "zero", 0, 3, dist ? 1 : 0, NULL, &r->zero, err, "zero_optimization.stage",
                NULL))
        return FALSE;
    if (dist && !strstr(p->str, "zero:"))
        put(p, "zero", "1", "use_distributed_optimizer: optimizer state sharded over DP");
    static const struct {
        const char *key, *name;
        gboolean bytes; /* DeepSpeed gives elements; the scenario key is a size */
    } sizes[] = {{"bucket_size", "zero_optimization.reduce_bucket_size", TRUE},
                 {"prefetch_bucket_size", "zero_optimization.stage3_prefetch_bucket_size", FALSE},
                 {"max_live_parameters", "zero_optimization.stage3_max_live_parameters", FALSE}};
    for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
        ImportItem *it = take(im, sizes[i].name, NULL);
        int64_t v;
        if (!it)
            continue;
        if (!as_int(it, 0, INT64_C(1) << 50, &v, err))
            return FALSE;
        g_autofree char *from =
            sizes[i].bytes ? g_strdup_printf("%s: %" G_GINT64_FORMAT " elements x %d bytes",
                                             it->key, v, r->elem_bytes)
                           : g_strdup(it->key);
        put_int(p, sizes[i].key, sizes[i].bytes ? v * r->elem_bytes : v, from);
    }
    return TRUE;
}

static gboolean write_precision(Im *im, GString *t, Run *r, GError **err) {
    ImportItem *fp16 = take(im, "fp16.enabled", "fp16", NULL),
               *bf16 = take(im, "bf16.enabled", "bf16", NULL), *prec = take(im, "precision", NULL),
               *fp8 = take(im, "fp8_format", "fp8", NULL);
    gboolean on16 = FALSE, onb = FALSE;
    if ((fp16 && !as_bool(fp16, &on16, err)) || (bf16 && !as_bool(bf16, &onb, err)))
        return FALSE;
    const char *name = NULL, *from = NULL;
    if (fp8) {
        name = "fp8", from = fp8->key;
    } else if (prec) {
        g_autofree char *low = g_ascii_strdown(prec->value, -1);
        name = strstr(low, "bf") ? "bf16" : strstr(low, "16") ? "fp16" : "fp32";
        from = prec->key;
    } else if (onb || on16) {
        name = onb ? "bf16" : "fp16", from = (onb ? bf16 : fp16)->key;
    } else if (im->fmt == IMPORT_HF) {
        ImportItem *dt = take(im, "torch_dtype", NULL);
        name = "bf16";
        chose(im, "precision", "bf16",
              dt ? "torch_dtype is the checkpoint's, not the training's"
                 : "config.json says nothing of training precision");
        from = "default";
    } else {
        name = "fp32";
        chose(im, "precision", "fp32",
              "neither fp16 nor bf16 is enabled (\"auto\" counts as not set)");
        from = "default";
    }
    r->elem_bytes = strcmp(name, "fp32") ? 2 : 4;
    put(t, "precision", name, from);
    return TRUE;
}

static gboolean write_training(Im *im, GString *t, Run *r, GError **err) {
    if (!int_of(im, t, "micro_batch", 1, 1 << 20, 1, "the file gives no micro-batch", &r->micro,
                err, "train_micro_batch_size_per_gpu", "micro_batch_size", NULL) ||
        !int_of(im, t, "grad_accum", 1, 1 << 24, 0, NULL, &r->accum, err,
                "gradient_accumulation_steps", "gas", NULL))
        return FALSE;
    ImportItem *gb = take(im, "train_batch_size", "global_batch_size", NULL);
    r->global = 0;
    if (gb && !as_int(gb, 1, INT64_C(1) << 40, &r->global, err))
        return FALSE;
    if (gb && !r->accum)
        put_int(t, "global_batch", r->global, gb->key);
    else if (gb) /* both: accumulation written; the global batch fixes DP (nodes) */
        gb->used = TRUE;
    ImportItem *seq = take(im, "seq_length", "seq_len", NULL);
    if (seq) {
        if (!as_int(seq, 1, 1 << 24, &r->seq, err))
            return FALSE;
        put_int(t, "seq_len", r->seq, seq->key);
    } else {
        ImportItem *maxp = take(im, "max_position_embeddings", "n_positions", NULL);
        int64_t mp = 2048;
        if (maxp && !as_int(maxp, 1, 1 << 24, &mp, err))
            return FALSE;
        r->seq = MIN(mp, 8192);
        g_autofree char *why = g_strdup_printf("no training sequence length; %s",
                                               maxp ? "max_position_embeddings, at most 8192"
                                                    : "the scenario default");
        g_autofree char *s = g_strdup_printf("%" G_GINT64_FORMAT, r->seq);
        chose(im, "seq_len", s, why);
        put(t, "seq_len", s, "default");
    }
    ImportItem *ck = take(im, "checkpoint_activations", NULL),
               *gran = take(im, "recompute_granularity", NULL),
               *sel = take(im, "recompute_activations", NULL);
    gboolean on = FALSE;
    if (gran) {
        g_autofree char *low = g_ascii_strdown(gran->value, -1);
        if (strcmp(low, "full") && strcmp(low, "selective"))
            return fail(err, gran, "expected full or selective");
        put(t, "recompute", low, gran->key);
    } else if (sel) {
        if (!as_bool(sel, &on, err))
            return FALSE;
        put(t, "recompute", on ? "selective" : "none", sel->key);
    } else if (ck) {
        if (!as_bool(ck, &on, err))
            return FALSE;
        put(t, "recompute", on ? "full" : "none", ck->key);
    }
    ImportItem *sync = take(im, "synchronize_each_layer", NULL);
    if (sync) {
        if (!as_bool(sync, &on, err))
            return FALSE;
        put(t, "synchronize_each_layer", on ? "true" : "false", sync->key);
    }
    put(t, "framework", im->fmt == IMPORT_MEGATRON ? "megatron" : "deepspeed",
        im->fmt == IMPORT_MEGATRON ? "Megatron-LM arguments"
        : im->fmt == IMPORT_HF     ? "default"
                                   : "GPT-NeoX and DeepSpeed run DeepSpeed");
    if (im->fmt == IMPORT_HF)
        chose(im, "framework", "deepspeed", "config.json names no trainer");
    return TRUE;
}

/* Nodes: given, or the fewest that hold TP x PP x DP, DP from the global batch when the file
 * gives it with the micro-batch and accumulation (DeepSpeed's train_batch_size =
 * micro x accumulation x DP), else 1. */
static gboolean nodes_for(Im *im, const ImportOptions *opt, const Run *r, int64_t *nodes,
                          GError **err) {
    ImportItem *nn = take(im, "nnodes", NULL); /* torchrun's, before the script */
    if (opt->nodes > 0) {
        *nodes = opt->nodes;
        if (nn)
            nn->used = FALSE;
        return TRUE;
    }
    if (nn) {
        if (!as_int(nn, 1, 1 << 24, nodes, err))
            return FALSE;
        g_autofree char *v = g_strdup_printf("%" G_GINT64_FORMAT, *nodes);
        chose(im, "nodes", v, "torchrun's --nnodes");
        return TRUE;
    }
    TopologySpec topo;
    if (!scenario_load_topology(opt->topology ? opt->topology : "frontier", NULL, &topo, err))
        return FALSE;
    int64_t gpn = topo.gpus_per_node, dp = 1;
    topo_spec_clear(&topo);
    if (r->global && r->accum && r->global % (r->micro * r->accum) == 0)
        dp = r->global / (r->micro * r->accum);
    int64_t ranks = r->tp * r->pp * dp;
    *nodes = (ranks + gpn - 1) / gpn;
    g_autofree char *v = g_strdup_printf("%" G_GINT64_FORMAT, *nodes);
    g_autofree char *why = g_strdup_printf(
        "the fewest that hold TP %" G_GINT64_FORMAT " x PP %" G_GINT64_FORMAT
        " x DP %" G_GINT64_FORMAT " at %" G_GINT64_FORMAT " GPUs per node%s; --nodes N sets it",
        r->tp, r->pp, dp, gpn, dp > 1 ? " (DP from the global batch)" : "");
    chose(im, "nodes", v, why);
    return TRUE;
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
    Shape sh = {0};
    Run r = {0};
    /* the precision first: DeepSpeed's bucket sizes are in elements of it */
    if (!write_precision(&im, train, &r, err))
        return NULL;
    if (opt->model) {
        g_string_append_printf(model, "model: %s%*s # --model\n", opt->model,
                               (int)MAX(0, 27 - (int)strlen(opt->model)), "");
    } else if (fmt == IMPORT_DEEPSPEED) {
        g_set_error(err, CONF_ERROR, CONF_ERROR_KEY,
                    "%s: a DeepSpeed config holds no model; name one with --model NAME "
                    "(sim list models)",
                    path);
        return NULL;
    } else {
        g_string_append(model, "model:\n");
        if (!write_model(&im, opt, model, &sh, err))
            return NULL;
    }
    int64_t nodes;
    if (!write_parallel(&im, par, &r, err) ||
        !write_megatron_layout(&im, par, &r, sh.layers, err) ||
        !write_training(&im, train, &r, err) || !nodes_for(&im, opt, &r, &nodes, err))
        return NULL;
    if (!opt->topology)
        chose(&im, "topology", "frontier", "the file names no machine; --topology NAME sets it");

    GString *out = g_string_new(NULL);
    g_autofree char *base = g_path_get_basename(path);
    g_string_append_printf(out, "# Imported by `sim import` from %s (%s).\n", path,
                           import_format_name(fmt));
    g_string_append(out, "# Not mapped (no scenario key; left out):\n");
    guint unmapped = 0;
    for (guint i = 0; i < items->len; i++) {
        ImportItem *it = items->pdata[i];
        if (!it->used) {
            g_autofree char *v = g_strndup(it->value, 60);
            g_string_append_printf(out, "#   %s = %s%s  (%s)\n", it->key, v,
                                   strlen(it->value) > 60 ? "..." : "", it->where);
            unmapped++;
        }
    }
    if (!unmapped)
        g_string_append(out, "#   none\n");
    g_string_append_printf(out, "# Defaults chosen (the file does not say):\n%s",
                           defaults->len ? defaults->str : "#   none\n");
    g_string_append_printf(out, "description: \"imported from %s (%s)\"\n", base,
                           import_format_name(fmt));
    g_string_append(out, model->str);
    g_string_append_printf(out, "topology: %s\nnodes: %" G_GINT64_FORMAT "\n",
                           opt->topology ? opt->topology : "frontier", nodes);
    g_string_append_printf(out, "parallel:\n%s  dp: auto\n", par->str);
    g_string_append_printf(out, "training:\n%s", train->str);
    return g_string_free(out, FALSE);
}
