/* import_model: the model section of `sim import`'s scenario (import.c has the sources of the
 * names and defaults): layers, widths, heads, the MLP, norm, biases, positions, embeddings,
 * vocabulary, attention and experts, each from whichever format's name the file uses. */
#include <string.h>

#include "conf.h"
#include "import_internal.h"

static gboolean model_mlp(Im *im, GString *m, Shape *sh, GError **err) {
    ImportItem *act = im_take(im, "hidden_act", "activation", "activation_function", NULL);
    ImportItem *swi = im_take(im, "swiglu", NULL);
    gboolean on = FALSE;
    if (swi && !im_as_bool(swi, &on, err))
        return FALSE;
    if (act) {
        static const char *const gelu[] = {"gelu",        "gelu_new",          "gelu_fast",
                                           "gelu_python", "gelu_pytorch_tanh", NULL};
        static const char *const gated[] = {"silu", "swish", "swiglu", NULL};
        gboolean is_gelu = g_strv_contains(gelu, act->value) && !on,
                 is_swiglu = g_strv_contains(gated, act->value) || on;
        if (!is_gelu && !is_swiglu)
            return im_fail(err, act,
                           "the simulator models GeLU and SwiGLU MLPs only (gelu, gelu_new, "
                           "gelu_fast, silu, swish, swiglu)");
        sh->swiglu = is_swiglu;
        im_put(m, "mlp", is_swiglu ? "swiglu" : "gelu",
               g_str_equal(act->value, "silu") ? "hidden_act silu: a gated (SwiGLU) MLP as Llama's"
                                               : act->key);
    } else {
        sh->swiglu = on;
        if (swi)
            im_put(m, "mlp", on ? "swiglu" : "gelu", swi->key);
        else
            im_chose(im, "mlp", "gelu",
                     "the file names no activation; GeLU is the frameworks' default");
    }
    return TRUE;
}

static gboolean model_norm(Im *im, GString *m, Shape *sh, GError **err) {
    ImportItem *n = im_take(im, "norm", "normalization", NULL);
    ImportItem *rms_eps = im_take(im, "rms_norm_eps", NULL);
    ImportItem *ln_eps =
        im_take(im, "layer_norm_eps", "layer_norm_epsilon", "layernorm_epsilon", NULL);
    if (n) {
        g_autofree char *low = g_ascii_strdown(n->value, -1);
        if (strcmp(low, "layernorm") && strcmp(low, "rmsnorm"))
            return im_fail(err, n, "the simulator models LayerNorm and RMSNorm only");
        sh->rms = strcmp(low, "rmsnorm") == 0;
        im_put(m, "norm", sh->rms ? "rmsnorm" : "layernorm", n->key);
    } else if (rms_eps || ln_eps) {
        sh->rms = rms_eps != NULL;
        im_put(m, "norm", sh->rms ? "rmsnorm" : "layernorm", (rms_eps ? rms_eps : ln_eps)->key);
    } else {
        sh->rms = FALSE;
        im_chose(im, "norm", "layernorm", "the file names no norm; LayerNorm is the default");
    }
    return TRUE;
}

static gboolean model_bias(Im *im, GString *m, Shape *sh, GError **err) {
    ImportItem *ab = im_take(im, "attention_bias", NULL), *mb = im_take(im, "mlp_bias", NULL);
    ImportItem *dis = im_take(im, "disable_bias_linear", NULL);
    gboolean a = TRUE, b = TRUE;
    if ((ab && !im_as_bool(ab, &a, err)) || (mb && !im_as_bool(mb, &b, err)))
        return FALSE;
    if (dis) {
        gboolean off;
        if (!im_as_bool(dis, &off, err))
            return FALSE;
        sh->bias = !off;
        im_put(m, "bias", sh->bias ? "true" : "false", dis->key);
    } else if (ab || mb) {
        if (ab && mb && a != b)
            return im_fail(err, mb,
                           "biases on some linears only cannot be expressed (bias: true "
                           "or false for all; attention_bias = %s)",
                           ab->value);
        sh->bias = ab ? a : b;
        im_put(m, "bias", sh->bias ? "true" : "false", (ab ? ab : mb)->key);
    } else if (im->fmt == IMPORT_HF && sh->rms) {
        sh->bias = FALSE;
        im_chose(im, "bias", "false",
                 "Llama-style config (RMSNorm): LlamaConfig's attention_bias "
                 "and mlp_bias default false");
        im_put(m, "bias", "false", "default");
    } else {
        sh->bias = TRUE;
    }
    return TRUE;
}

static gboolean model_positions(Im *im, GString *m, GError **err) {
    ImportItem *pe = im_take(im, "pos_emb", "position_embedding_type", NULL);
    ImportItem *rope = im_take(im, "use_rotary_position_embeddings", NULL);
    gboolean on = FALSE;
    if (rope && !im_as_bool(rope, &on, err))
        return FALSE;
    if (pe) {
        g_autofree char *low = g_ascii_strdown(pe->value, -1);
        gboolean rotary = !strcmp(low, "rotary") || !strcmp(low, "rope");
        gboolean alibi = !strcmp(low, "alibi"); /* Megatron-DeepSpeed's BLOOM option */
        if (!rotary && !alibi && strcmp(low, "learned") && strcmp(low, "learned_absolute"))
            return im_fail(err, pe,
                           "the simulator models learned, rotary and ALiBi positions only");
        im_put(m, "pos_emb", rotary ? "rotary" : alibi ? "alibi" : "learned", pe->key);
    } else if (rope) {
        im_put(m, "pos_emb", on ? "rotary" : "learned", rope->key);
    } else if (im->fmt == IMPORT_HF) {
        ImportItem *theta = im_take(im, "rope_theta", NULL);
        ImportItem *npos = im_take(im, "n_positions", NULL);
        im_put(m, "pos_emb", npos && !theta ? "learned" : "rotary",
               theta  ? "rope_theta"
               : npos ? "n_positions: a learned table"
                      : "default");
        if (!theta && !npos)
            im_chose(im, "pos_emb", "rotary", "config.json names no positions; rotary as Llama");
    } else {
        im_chose(im, "pos_emb", "learned",
                 "the file names none; GPT-NeoX's and Megatron-LM's default is learned");
        im_put(m, "pos_emb", "learned", "default");
    }
    return TRUE;
}

static gboolean model_embeddings(Im *im, GString *m, GError **err) {
    ImportItem *tie = im_take(im, "tie_word_embeddings", NULL);
    ImportItem *untie = im_take(im, "no_weight_tying", "untie_embeddings_and_output_weights", NULL);
    gboolean v;
    if (tie) {
        if (!im_as_bool(tie, &v, err))
            return FALSE;
        im_put(m, "tied_embeddings", v ? "true" : "false", tie->key);
    } else if (untie) {
        if (!im_as_bool(untie, &v, err))
            return FALSE;
        im_put(m, "tied_embeddings", v ? "false" : "true", untie->key);
    } else {
        im_chose(im, "tied_embeddings", "true",
                 im->fmt == IMPORT_HF
                     ? "PretrainedConfig's tie_word_embeddings default"
                     : "the framework ties input and output embeddings by default");
        im_put(m, "tied_embeddings", "true", "default");
    }
    return TRUE;
}

static gboolean model_vocab(Im *im, GString *m, GError **err) {
    int64_t v;
    ImportItem *it = im_take(im, "vocab_size", "padded_vocab_size", NULL);
    if (it) {
        if (!im_as_int(it, 1, 1 << 28, &v, err))
            return FALSE;
        im_put_int(m, "vocab", v, it->key);
    } else {
        ImportItem *tok = im_take(im, "vocab_file", "tokenizer_type", NULL);
        gboolean neox20b = tok && im_value_has(tok, "20b");
        v = neox20b ? 50277 : 50257;
        im_chose(im, "vocab", neox20b ? "50277" : "50257",
                 neox20b ? "the GPT-NeoX-20B tokenizer"
                         : "the file has no vocabulary size; the GPT-2 BPE's 50257 (correct it "
                           "with --set model.vocab=N)");
        im_put_int(m, "vocab", v, tok ? tok->key : "default");
    }
    ImportItem *pad = im_take(im, "make_vocab_size_divisible_by", NULL);
    int64_t mult;
    if (pad) {
        if (!im_as_int(pad, 1, 1 << 20, &mult, err))
            return FALSE;
        im_put_int(m, "vocab_pad_multiple", mult, pad->key);
    } else if (im->fmt == IMPORT_HF) {
        im_chose(im, "vocab_pad_multiple", "1", "the checkpoint's vocabulary as it is");
        im_put(m, "vocab_pad_multiple", "1", "default");
    }
    return TRUE;
}

static gboolean model_attention(Im *im, GString *m, GError **err) {
    ImportItem *cfg = im_take(im, "attention_config", NULL);
    ImportItem *fl = im_take(im, "use_flash_attn", NULL);
    /* Megatron-LM's --attention-backend (megatron/training/arguments.py, AttnBackend: flash,
     * fused, unfused, local, auto): flash and fused are Transformer Engine's fused kernels, which
     * never hold the s x s scores; unfused and local are the standard computation; auto lets
     * Transformer Engine choose, and it picks a fused kernel wherever one applies */
    ImportItem *be = im_take(im, "attention_backend", NULL);
    gboolean on = FALSE;
    if (fl && !im_as_bool(fl, &on, err))
        return FALSE;
    if (be && !fl && !cfg) {
        g_autofree char *low = g_ascii_strdown(be->value, -1);
        gboolean fused = !strcmp(low, "flash") || !strcmp(low, "fused") || !strcmp(low, "auto");
        if (!fused && strcmp(low, "unfused") && strcmp(low, "local"))
            return im_fail(err, be, "expected flash, fused, unfused, local or auto");
        im_put(m, "attention", fused ? "flash" : "standard",
               !strcmp(low, "auto") ? "attention_backend auto: Transformer Engine's fused kernel"
                                    : be->key);
        return TRUE;
    }
    if (be)
        be->used = FALSE; /* --use-flash-attn or attention_config decides */
    if (cfg) {
        gboolean flash = im_value_has(cfg, "flash"), global = im_value_has(cfg, "global");
        g_autofree char *rest = g_ascii_strdown(cfg->value, -1);
        /* every layer's type must be global or flash: others (sparse, local, ...) are not modelled
         */
        for (const char *w = rest; *w; w++)
            if (g_ascii_isalpha(*w)) {
                size_t n = 0;
                while (g_ascii_isalnum(w[n]) || w[n] == '_')
                    n++;
                if (!((n == 5 && !strncmp(w, "flash", 5)) || (n == 6 && !strncmp(w, "global", 6))))
                    return im_fail(err, cfg, "only global and flash attention can be expressed");
                w += n - 1;
            }
        if (flash && global)
            return im_fail(err, cfg, "a mix of global and flash layers cannot be expressed");
        im_put(m, "attention", flash ? "flash" : "standard", cfg->key);
    } else if (fl) {
        im_put(m, "attention", on ? "flash" : "standard", fl->key);
    } else if (im->fmt == IMPORT_HF) {
        im_chose(im, "attention", "flash",
                 "config.json does not say how attention runs; a fused "
                 "kernel as modern trainers use");
        im_put(m, "attention", "flash", "default");
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
        ImportItem *it = im_take(im, flags[i].names[0], flags[i].names[1], NULL);
        gboolean v;
        if (it) {
            if (!im_as_bool(it, &v, err))
                return FALSE;
            im_put(m, flags[i].key, v ? "true" : "false", it->key);
        } else if (im->fmt == IMPORT_MEGATRON && flags[i].megatron_on) {
            const char *off = i == 1 ? "no_masked_softmax_fusion" : "no_bias_gelu_fusion";
            ImportItem *no = im_take(im, off, NULL);
            im_put(m, flags[i].key, no ? "false" : "true", no ? no->key : "Megatron-LM default");
        }
    }
    static const struct {
        const char *key, *a, *b;
    } drops[] = {{"attention_dropout", "attention_dropout", "attn_pdrop"},
                 {"hidden_dropout", "hidden_dropout", "resid_pdrop"}};
    for (size_t i = 0; i < G_N_ELEMENTS(drops); i++) {
        ImportItem *it = im_take(im, drops[i].a, drops[i].b, NULL);
        double p = 0.0;
        if (it) {
            if (!im_as_double(it, 0.0, 1.0, &p, err))
                return FALSE;
            g_autofree char *s = g_strdup_printf("%g", p);
            im_put(m, drops[i].key, s, it->key);
        } else if (im->fmt == IMPORT_MEGATRON) {
            im_chose(im, drops[i].key, "0.1", "Megatron-LM's default");
            im_put(m, drops[i].key, "0.1", "default");
        }
    }
    /* mixture of experts (the model's moe mapping): Hugging Face num_local_experts and
     * num_experts_per_tok (Mixtral), Megatron-LM --num-experts and --moe-router-topk, GPT-NeoX
     * moe_num_experts and moe_top_k; the rest are the moe keys' defaults (DeepSpeed's) */
    ImportItem *moe = im_take(im, "num_local_experts", "num_experts", "moe_num_experts", NULL);
    int64_t experts = 0, top_k = 1;
    if (moe && !im_as_int(moe, 0, 1 << 20, &experts, err))
        return FALSE;
    ImportItem *k = im_take(im, "num_experts_per_tok", "moe_router_topk", "moe_top_k", NULL);
    if (k && !im_as_int(k, 1, 1 << 20, &top_k, err))
        return FALSE;
    if (experts > 1) {
        if (top_k > experts)
            return im_fail(err, k,
                           "top-k routing to more experts than the %" G_GINT64_FORMAT " there are",
                           experts);
        g_autofree char *v = g_strdup_printf(
            "{experts: %" G_GINT64_FORMAT ", top_k: %" G_GINT64_FORMAT "}", experts, top_k);
        g_autofree char *from = g_strdup_printf("%s%s%s", moe->key, k ? ", " : "", k ? k->key : "");
        im_put(m, "moe", v, from);
        if (!k)
            im_chose(im, "moe.top_k", "1", "DeepSpeed's default k");
        im_chose(im, "moe.capacity_factor", "1.0",
                 "DeepSpeed's default; a dropless run's mean load");
    }
    return TRUE;
}

static char *model_name(Im *im, const ImportOptions *opt) {
    if (opt->name)
        return g_strdup(opt->name);
    ImportItem *n = im_take(im, "_name_or_path", NULL);
    g_autofree char *base = g_path_get_basename(n && *n->value ? n->value : im->path);
    char *dot = strrchr(base, '.');
    if (dot && dot != base && !n)
        *dot = '\0';
    if (n || strcmp(base, "config") != 0)
        return g_strdup(base);
    /* every Hugging Face file is config.json: name the model by its folder (a download such as
     * Meta-Llama-3-8B/config.json), unless that is the hub cache's commit hash or nothing, then
     * by its model_type */
    g_autofree char *dir = g_path_get_dirname(im->path);
    g_autofree char *folder = g_path_get_basename(dir);
    gboolean hash = strlen(folder) == 40 && strspn(folder, "0123456789abcdef") == 40;
    if (!hash && strcmp(folder, ".") && strcmp(folder, "/"))
        return g_strdup(folder);
    ImportItem *type = im_take(im, "model_type", NULL);
    return g_strdup(type && *type->value ? type->value : base);
}

/* A GPT-NeoX-shaped layer (GeLU, LayerNorm, biases, multi-head; kv 0 or heads) counts the
 * study's 8h of vectors unless told otherwise. A checkpoint (config.json), a Megatron-LM or an MPT
 * model has exactly two LayerNorms (4h) and its biases (QKV 3h, output h, MLP ffn + h): written
 * out when a whole number of h; a GPT-NeoX import keeps the study's form. */
void im_put_vector_params(Im *im, GString *m, const Shape *sh, int64_t kv) {
    if (sh->swiglu || sh->rms || !sh->bias || (kv != 0 && kv != sh->heads))
        return;
    int64_t ffn = sh->ffn ? sh->ffn : 4 * sh->hidden, vec = 9 * sh->hidden + ffn;
    if (im->fmt != IMPORT_NEOX && vec % sh->hidden == 0)
        im_put_int(m, "layer_vector_params_h", vec / sh->hidden,
                   "two LayerNorms (4h) and biases (5h + ffn): the exact count");
    else
        im_chose(im, "layer_vector_params_h", "8",
                 "the study's Eq. 1 (GPT-NeoX's code holds 13; --set "
                 "model.layer_vector_params_h=13 for its exact count)");
}

gboolean import_write_model(Im *im, const ImportOptions *opt, GString *m, Shape *sh, GError **err) {
    g_autofree char *name = model_name(im, opt);
    g_autofree char *quoted = im_yaml_quoted(name);
    im_put(m, "name", quoted, opt->name ? "--name" : "from the file");
    int64_t kv = 0;
    ImportItem *need[3] = {im_take(im, "num_layers", "num_hidden_layers", "n_layer", NULL),
                           im_take(im, "hidden_size", "n_embd", NULL),
                           im_take(im, "num_attention_heads", "n_head", NULL)};
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
        if (!im_as_int(need[i], 1, 1 << 24, dst[i], err))
            return FALSE;
        im_put_int(m, keys[i], *dst[i], need[i]->key);
    }
    ImportItem *kvh = im_take(im, "num_key_value_heads", "num_kv_heads", NULL);
    ImportItem *gqa = im_take(im, "group_query_attention", NULL),
               *groups = im_take(im, "num_query_groups", NULL);
    if (!kvh && groups && gqa)
        kvh = groups;
    else if (groups)
        groups->used = FALSE; /* without --group-query-attention Megatron ignores it */
    if (kvh) {
        if (!im_as_int(kvh, 1, sh->heads, &kv, err))
            return FALSE;
        im_put_int(m, "kv_heads", kv, kvh->key);
    }
    if (!model_mlp(im, m, sh, err) || !model_norm(im, m, sh, err))
        return FALSE;
    ImportItem *ffn = im_take(im, "intermediate_size", "ffn_hidden_size", "n_inner", NULL);
    /* GPT-NeoX's expansion_factor (neox_args.py; megatron/model/transformer.py ParallelMLP:
     * ffn_dim = int(expansion_factor * hidden_size)): its 1-3B config's 8 is a 16384-wide MLP,
     * which the import had simulated as 4h */
    ImportItem *xf = ffn ? NULL : im_take(im, "expansion_factor", NULL);
    double factor = 0;
    if (xf && !im_as_double(xf, 0.01, 1024, &factor, err))
        return FALSE;
    if (ffn) {
        if (!im_as_int(ffn, 1, 1 << 26, &sh->ffn, err))
            return FALSE;
        im_put_int(m, "ffn_hidden", sh->ffn, ffn->key);
    } else if (xf) {
        double width = factor * (double)sh->hidden;
        if (sh->swiglu)
            return im_fail(err, xf,
                           "a gated MLP's width from expansion_factor is not mapped; give the "
                           "width as intermediate_size (or --set model.ffn_hidden=N after import)");
        if (width != (double)(int64_t)width || width > (1 << 26))
            return im_fail(err, xf,
                           "expansion_factor x hidden %" G_GINT64_FORMAT
                           " must be a whole width of at most 2^26",
                           sh->hidden);
        sh->ffn = (int64_t)width;
        g_autofree char *from = g_strdup_printf("expansion_factor %g x hidden", factor);
        im_put_int(m, "ffn_hidden", sh->ffn, from);
    } else if (sh->swiglu) { /* Megatron-LM's --swiglu width */
        sh->ffn = (int64_t)(4 * sh->hidden * 2 / 3 / 64) * 64;
        im_chose(im, "ffn_hidden", "int(4h x 2/3 / 64) x 64", "Megatron-LM's width for --swiglu");
        im_put_int(m, "ffn_hidden", sh->ffn, "default");
    }
    if (!model_bias(im, m, sh, err) || !model_vocab(im, m, err) || !model_positions(im, m, err) ||
        /* Megatron-DeepSpeed's --embed-layernorm (BLOOM): a LayerNorm after the word embeddings */
        !im_put_switch(im, m, "embed_layernorm", "embed_norm", err) ||
        !model_embeddings(im, m, err) || !model_attention(im, m, err) || !model_misc(im, m, err))
        return FALSE;
    im_put_vector_params(im, m, sh, kv);
    return TRUE;
}
