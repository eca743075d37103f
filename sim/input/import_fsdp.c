/* import_fsdp: the PyTorch FSDP formats of `sim import`: a MosaicML llm-foundry training YAML
 * (scripts/train/yamls/pretrain/mpt-1b.yaml and its kind, run by Composer) and a Hugging Face
 * accelerate config (`accelerate config`'s default_config.yaml, distributed_type FSDP), each
 * mapped onto training.framework pytorch with parallel.zero 3 (FULL_SHARD), 2 (SHARD_GRAD_OP),
 * 0 (NO_SHARD, DDP), parallel.hybrid_shard and the training.fsdp_* keys (scenario_fsdp.c).
 *
 * Sources, read for the names, the values and the defaults:
 * - llm-foundry llmfoundry/utils/config_utils.py: TrainConfig (precision 'amp_bf16',
 *   device_train_microbatch_size 'auto', global_train_batch_size, max_seq_len, variables) and
 *   calculate_batch_size_info (the global batch must divide by the world size; the per-GPU batch
 *   is global / world; a micro-batch above it is cut to it; accumulation ceil(batch / micro)).
 * - llm-foundry llmfoundry/models/mpt/configuration_mpt.py MPTConfig (d_model 2048, n_heads 16,
 *   n_layers 24, expansion_ratio 4, max_seq_len 2048, vocab_size 50368, learned_pos_emb True,
 *   no_bias False, norm_type low_precision_layernorm, tie_word_embeddings True, resid_pdrop 0)
 *   and llmfoundry/models/utils/config_defaults.py attn_config_defaults (attn_type
 *   multihead_attention, attn_impl flash, attn_pdrop 0, alibi and rope False,
 *   sliding_window_size -1) and ffn_config_defaults (ffn_type mptmlp);
 *   llmfoundry/models/layers/ffn.py resolve_ffn_hidden_size (int(d_model x expansion_ratio),
 *   which must be whole, unless ffn_config.ffn_hidden_size) and resolve_ffn_act_fn (GeLU).
 * - Composer composer/utils/parallelism.py FSDPConfig (sharding_strategy FULL_SHARD,
 *   mixed_precision DEFAULT, backward_prefetch BACKWARD_POST, forward_prefetch False,
 *   limit_all_gathers True, activation_checkpointing False, cpu_offload False,
 *   data_parallel_shard_degree -1) and get_mixed_precision (composer/trainer/mosaic_fsdp_utils.py;
 *   FULL: no MixedPrecision, parameters and reductions in fp32; PURE: param, reduce and buffer
 *   dtype the autocast dtype; DEFAULT: param and buffer dtype the autocast dtype and reduce_dtype
 *   fp32, where releases of the PyTorch 2.0 time left reduce_dtype None, which torch's
 *   FlatParamHandle._init_param_reduce_dtypes fills with param_dtype: then as PURE).
 * - accelerate src/accelerate/utils/launch.py prepare_multi_gpu_env (fsdp_config keys to FSDP_*
 *   variables) and utils/dataclasses.py FullyShardedDataParallelPlugin.__post_init__ (sharding
 *   strategy 1-5 or its name, default FULL_SHARD; backward prefetch default NO_PREFETCH, i.e.
 *   None; forward_prefetch, activation_checkpointing default false); utils/constants.py
 *   FSDP_SHARDING_STRATEGY and FSDP_BACKWARD_PREFETCH; Accelerator.prepare_model's
 *   set_mixed_precision (param, reduce and buffer dtype all the mixed_precision's).
 * - torch torch/distributed/fsdp/api.py ShardingStrategy (FULL_SHARD 1, SHARD_GRAD_OP 2,
 *   NO_SHARD 3, HYBRID_SHARD 4, _HYBRID_SHARD_ZERO2 5) and BackwardPrefetch.
 *
 * Not for: FSDP2 (fully_shard), host offload, Composer's tensor parallelism, models other than
 * MPT named in the file (an hf_causal_lm takes --model): each refused with its place. */
#include <string.h>

#include "conf.h"
#include "import_internal.h"
#include "scenario.h"

/* --- helpers ---------------------------------------------------------------------------------- */

/* The setting key, even when its value is "auto" or null (im_take passes over those). */
static ImportItem *find(Im *im, const char *key) {
    for (guint i = 0; i < im->items->len; i++) {
        ImportItem *it = im->items->pdata[i];
        if (!strcmp(it->key, key))
            return it;
    }
    return NULL;
}

static gboolean has_prefix(Im *im, const char *prefix) {
    for (guint i = 0; i < im->items->len; i++)
        if (g_str_has_prefix(((ImportItem *)im->items->pdata[i])->key, prefix))
            return TRUE;
    return FALSE;
}

/* The index of the value among names (case aside), or -1. */
static int one_of(const ImportItem *it, const char *const *names) {
    for (int i = 0; names[i]; i++)
        if (!g_ascii_strcasecmp(it->value, names[i]))
            return i;
    return -1;
}

/* A boolean setting, or def when absent; *it_out the setting (NULL: absent). */
static gboolean bool_of(Im *im, const char *key, gboolean def, gboolean *out, ImportItem **it_out,
                        GError **err) {
    ImportItem *it = im_take(im, key, NULL);
    *out = def;
    if (it_out)
        *it_out = it;
    return !it || im_as_bool(it, out, err);
}

/* Host offload is not modelled (see import_run.c): a setting that turns it on is refused. */
static gboolean refuse_offload(Im *im, const char *key, GError **err) {
    gboolean on;
    ImportItem *it;
    if (!bool_of(im, key, FALSE, &on, &it, err))
        return FALSE;
    return !on || im_fail(err, it,
                          "offloading to the host CPU is not modelled (the transfers over the "
                          "CPU-GPU links and the work on the host would be missing); set it false");
}

/* --- the MPT model (llm-foundry's mpt_causal_lm) -------------------------------------------- */

static gboolean mpt_mlp(Im *im, GString *m, Shape *sh, GError **err) {
    ImportItem *type = im_take(im, "model.ffn_config.ffn_type", NULL),
               *act = im_take(im, "model.ffn_config.ffn_act_fn.name", NULL);
    static const char *const types[] = {"mptmlp", "mptglu", "te_ln_mlp", NULL};
    int t = type ? one_of(type, types) : 0;
    if (t < 0)
        return im_fail(err, type,
                       "expected mptmlp, mptglu or te_ln_mlp (the MoE blocks of MegaBlocks are not "
                       "mapped)");
    gboolean silu = act && (!g_ascii_strcasecmp(act->value, "silu") ||
                            !g_ascii_strcasecmp(act->value, "swish"));
    if (act && !silu && g_ascii_strcasecmp(act->value, "gelu"))
        return im_fail(err, act, "the simulator models GeLU and SwiGLU MLPs only (gelu, silu)");
    if (t == 1 && !silu)
        return im_fail(err, type,
                       "a GeLU-gated MLP (mptglu with resolve_ffn_act_fn's default GeLU) cannot be "
                       "expressed; SwiGLU is modelled (ffn_config.ffn_act_fn.name: silu)");
    if (t != 1 && silu)
        return im_fail(err, act, "a silu MLP without the gate cannot be expressed");
    sh->swiglu = t == 1;
    im_put(m, "mlp", sh->swiglu ? "swiglu" : "gelu",
           type ? type->key : "ffn_type mptmlp (MPTConfig's default): GeLU");
    /* resolve_ffn_hidden_size: ffn_config.ffn_hidden_size, else int(d_model x expansion_ratio),
     * which must be whole */
    ImportItem *width = im_take(im, "model.ffn_config.ffn_hidden_size", NULL),
               *ratio = im_take(im, "model.expansion_ratio", NULL);
    double r = 4;
    if (width) {
        if (!im_as_int(width, 1, 1 << 26, &sh->ffn, err))
            return FALSE;
        im_put_int(m, "ffn_hidden", sh->ffn, width->key);
        return TRUE;
    }
    if (ratio && !im_as_double(ratio, 0.01, 1024, &r, err))
        return FALSE;
    double w = r * (double)sh->hidden;
    if (ratio && (w != (double)(int64_t)w || w > (1 << 26)))
        return im_fail(err, ratio,
                       "d_model %" G_GINT64_FORMAT " x expansion_ratio must be a whole width of at "
                       "most 2^26, as resolve_ffn_hidden_size requires",
                       sh->hidden);
    sh->ffn = (int64_t)w;
    g_autofree char *from = g_strdup_printf("expansion_ratio %g x d_model%s", r,
                                            ratio ? "" : " (4: MPTConfig's default)");
    im_put_int(m, "ffn_hidden", sh->ffn, from);
    return TRUE;
}

static gboolean mpt_layer(Im *im, GString *m, Shape *sh, int64_t *kv, GError **err) {
    ImportItem *norm = im_take(im, "model.norm_type", NULL);
    static const char *const norms[] = {"low_precision_layernorm", "layernorm",
                                        "low_precision_rmsnorm",   "rmsnorm",
                                        "triton_rmsnorm",          NULL};
    int n = norm ? one_of(norm, norms) : 0;
    if (n < 0)
        return im_fail(err, norm, "the simulator models LayerNorm and RMSNorm only");
    sh->rms = n >= 2;
    im_put(m, "norm", sh->rms ? "rmsnorm" : "layernorm",
           norm ? norm->key : "norm_type low_precision_layernorm (MPTConfig's default)");
    gboolean no_bias;
    ImportItem *nb;
    if (!bool_of(im, "model.no_bias", FALSE, &no_bias, &nb, err))
        return FALSE;
    sh->bias = !no_bias;
    im_put(m, "bias", sh->bias ? "true" : "false", nb ? nb->key : "no_bias false (MPTConfig)");
    /* attention: attn_type multihead (kv = heads), multiquery (1), grouped_query (kv_n_heads,
     * default 1); attn_impl flash or triton is a fused kernel, torch the standard computation */
    ImportItem *type = im_take(im, "model.attn_config.attn_type", NULL),
               *kvn = im_take(im, "model.attn_config.kv_n_heads", NULL),
               *impl = im_take(im, "model.attn_config.attn_impl", NULL),
               *win = im_take(im, "model.attn_config.sliding_window_size", NULL);
    static const char *const types[] = {"multihead_attention", "multiquery_attention",
                                        "grouped_query_attention", NULL};
    int t = type ? one_of(type, types) : 0;
    if (t < 0)
        return im_fail(err, type,
                       "expected multihead_attention, multiquery_attention or "
                       "grouped_query_attention");
    *kv = t == 0 ? 0 : 1;
    if (t == 2 && kvn && !im_as_int(kvn, 1, sh->heads, kv, err))
        return FALSE;
    if (t != 2 && kvn)
        kvn->used = FALSE; /* only grouped-query attention reads it */
    if (t)
        im_put_int(m, "kv_heads", *kv, t == 2 && kvn ? kvn->key : type->key);
    int64_t w = -1;
    if (win && !im_as_int(win, -1, INT64_C(1) << 40, &w, err))
        return FALSE;
    if (w != -1)
        return im_fail(err, win, "sliding-window (local) attention is not modelled; -1 is off");
    static const char *const impls[] = {"flash", "triton", "torch", NULL};
    int a = impl ? one_of(impl, impls) : 0;
    if (a < 0)
        return im_fail(err, impl, "expected flash, triton or torch");
    if (!impl)
        im_chose(im, "attention", "flash",
                 "attn_impl flash, llm-foundry's default (config_defaults.py; older releases: "
                 "triton, also a fused kernel)");
    im_put(m, "attention", a == 2 ? "standard" : "flash",
           impl ? impl->key : "attn_impl flash (default)");
    return TRUE;
}

static gboolean mpt_positions(Im *im, GString *m, GError **err) {
    gboolean learned, rope, alibi;
    ImportItem *l, *r, *a;
    if (!bool_of(im, "model.learned_pos_emb", TRUE, &learned, &l, err) ||
        !bool_of(im, "model.attn_config.rope", FALSE, &rope, &r, err) ||
        !bool_of(im, "model.attn_config.alibi", FALSE, &alibi, &a, err))
        return FALSE;
    if (alibi)
        return im_fail(err, a, "ALiBi is not modelled (learned and rotary positions are)");
    if (!rope && !learned) /* MPTConfig warns: no positional information at all */
        return im_fail(err, l, "a model without positions cannot be expressed (learned or rope)");
    /* MPTConfig turns learned_pos_emb off when rope is on */
    im_put(m, "pos_emb", rope ? "rotary" : "learned",
           rope ? r->key
           : l  ? l->key
                : "learned_pos_emb true (MPTConfig)");
    return TRUE;
}

static gboolean mpt_model(Im *im, const ImportOptions *opt, GString *m, int64_t seq, GError **err) {
    Shape sh = {0};
    g_autofree char *base = g_path_get_basename(im->path);
    char *dot = strrchr(base, '.');
    if (dot && dot != base)
        *dot = '\0';
    g_autofree char *name = im_yaml_quoted(opt->name ? opt->name : base);
    g_string_append(m, "model:\n");
    im_put(m, "name", name, opt->name ? "--name" : "the file's name");
    const char *why = "MPTConfig's default";
    int64_t v, kv = 0;
    if (!im_int_of(im, m, "layers", 1, 1 << 24, 24, why, &sh.layers, err, "model.n_layers", NULL) ||
        !im_int_of(im, m, "hidden", 1, 1 << 24, 2048, why, &sh.hidden, err, "model.d_model",
                   NULL) ||
        !im_int_of(im, m, "heads", 1, 1 << 24, 16, why, &sh.heads, err, "model.n_heads", NULL) ||
        !mpt_mlp(im, m, &sh, err) || !mpt_layer(im, m, &sh, &kv, err) ||
        !im_int_of(im, m, "vocab", 1, 1 << 28, 50368, why, &v, err, "model.vocab_size", NULL) ||
        !mpt_positions(im, m, err))
        return FALSE;
    im_put(m, "vocab_pad_multiple", "1", "MPT's vocabulary as configured");
    gboolean tied;
    ImportItem *tie;
    if (!bool_of(im, "model.tie_word_embeddings", TRUE, &tied, &tie, err))
        return FALSE;
    im_put(m, "tied_embeddings", tied ? "true" : "false",
           tie ? tie->key : "tie_word_embeddings true (MPTConfig)");
    static const struct {
        const char *key, *name;
    } drops[] = {{"attention_dropout", "model.attn_config.attn_pdrop"},
                 {"hidden_dropout", "model.resid_pdrop"}};
    for (size_t i = 0; i < G_N_ELEMENTS(drops); i++) {
        ImportItem *it = im_take(im, drops[i].name, NULL);
        double p = 0;
        if (it && !im_as_double(it, 0, 1, &p, err))
            return FALSE;
        g_autofree char *s = g_strdup_printf("%g", p);
        im_put(m, drops[i].key, s, it ? it->key : "MPTConfig's default 0");
    }
    /* the learned table is the training length's (model.max_seq_len, usually ${max_seq_len}) */
    ImportItem *ms = im_take(im, "model.max_seq_len", NULL);
    int64_t len;
    if (ms && (!im_as_int(ms, 1, 1 << 24, &len, err)))
        return FALSE;
    if (ms && len != seq) {
        ms->used = FALSE;
        ms->note = g_strdup("the learned position table is counted at training.seq_len");
    }
    im_put_vector_params(im, m, &sh, kv);
    return TRUE;
}

/* --- sharding, prefetch, precision ---------------------------------------------------------- */

/* torch's ShardingStrategy in its order (1-5); accelerate spells the fifth without '_'. */
static const struct {
    const char *name;
    int zero;
    gboolean hybrid;
} strategies[] = {{"FULL_SHARD", 3, FALSE},
                  {"SHARD_GRAD_OP", 2, FALSE},
                  {"NO_SHARD", 0, FALSE},
                  {"HYBRID_SHARD", 3, TRUE},
                  {"_HYBRID_SHARD_ZERO2", 2, TRUE}};

static int strategy_of(const ImportItem *it, gboolean numbers) {
    const char *v = it->value;
    if (numbers && v[0] >= '1' && v[0] <= '5' && !v[1])
        return v[0] - '1';
    for (size_t i = 0; i < G_N_ELEMENTS(strategies); i++)
        if (!g_ascii_strcasecmp(v, strategies[i].name) ||
            (i == 4 && !g_ascii_strcasecmp(v, strategies[i].name + 1)))
            return (int)i;
    return -1;
}

typedef struct {
    const char *strategy, *bwd, *fwd, *limit, *ckpt, *shard_degree; /* their keys */
    const char *bwd_default, *bwd_default_why;
} FsdpKeys;

static const FsdpKeys foundry_keys = {
    "fsdp_config.sharding_strategy",
    "fsdp_config.backward_prefetch",
    "fsdp_config.forward_prefetch",
    "fsdp_config.limit_all_gathers",
    "fsdp_config.activation_checkpointing",
    "fsdp_config.data_parallel_shard_degree",
    "post",
    "backward_prefetch BACKWARD_POST, Composer's FSDPConfig default"};
static const FsdpKeys accelerate_keys = {
    "fsdp_config.fsdp_sharding_strategy",
    "fsdp_config.fsdp_backward_prefetch",
    "fsdp_config.fsdp_forward_prefetch",
    NULL,
    "fsdp_config.fsdp_activation_checkpointing",
    NULL,
    "none",
    "no fsdp_backward_prefetch: accelerate's FullyShardedDataParallelPlugin reads NO_PREFETCH "
    "(BackwardPrefetch None)"};

static gboolean write_sharding(Im *im, const FsdpKeys *k, gboolean fsdp, GString *p, GString *t,
                               int *zero, GError **err) {
    ImportItem *st = im_take(im, k->strategy, NULL);
    int s = 0;
    if (st && (s = strategy_of(st, im->fmt == IMPORT_ACCELERATE)) < 0)
        return im_fail(err, st,
                       "expected FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD or "
                       "_HYBRID_SHARD_ZERO2%s",
                       im->fmt == IMPORT_ACCELERATE ? " (or 1-5)" : "");
    *zero = fsdp ? strategies[s].zero : 0;
    if (st && !fsdp) /* accelerate's MULTI_GPU: the fsdp_config is not read */
        st->used = FALSE, st->note = g_strdup("no effect: distributed_type is not FSDP");
    g_autofree char *from = !fsdp ? g_strdup("no FSDP: PyTorch DDP")
                            : st  ? g_strdup_printf("%s %s", st->key, strategies[s].name)
                                  : g_strdup("FULL_SHARD, the default sharding strategy");
    im_put_int(p, "zero", *zero, from);
    /* HYBRID_SHARD's shard group: Composer's data_parallel_shard_degree (a device mesh
     * (replicate, shard)), else torch's default, the ranks of one node */
    ImportItem *deg = k->shard_degree ? im_take(im, k->shard_degree, NULL) : NULL;
    int64_t d = -1;
    if (deg && !im_as_int(deg, -1, 1 << 24, &d, err))
        return FALSE;
    if (fsdp && strategies[s].hybrid) {
        if (d == 0 || d == 1)
            return im_fail(err, deg, "a shard group of %d rank cannot be (-1: the node's ranks)",
                           (int)d);
        if (d > 1)
            im_put_int(p, "hybrid_shard", d, deg->key);
        else
            im_put(p, "hybrid_shard", "true", "the ranks of one node (torch's default group)");
    } else if (d != -1) {
        return im_fail(err, deg,
                       "a shard group is HYBRID_SHARD's (or _HYBRID_SHARD_ZERO2's); with %s set "
                       "-1",
                       strategies[s].name);
    }
    if (*zero < 2) { /* FSDP's prefetch and rate limiter act on gathers; DDP has none */
        static const char *const none = "no effect without sharded parameters (NO_SHARD, DDP)";
        const char *keys[] = {
            k->bwd, k->fwd, k->limit,
            im->fmt == IMPORT_ACCELERATE ? "fsdp_config.fsdp_backward_prefetch_policy" : NULL};
        for (size_t i = 0; i < G_N_ELEMENTS(keys); i++) {
            ImportItem *it = keys[i] ? im_take(im, keys[i], NULL) : NULL;
            if (it)
                it->used = FALSE, it->note = g_strdup(none);
        }
        return TRUE;
    }
    ImportItem *b = im_take(
        im, k->bwd,
        im->fmt == IMPORT_ACCELERATE ? "fsdp_config.fsdp_backward_prefetch_policy" : NULL, NULL);
    static const char *const bwd[] = {"BACKWARD_PRE", "BACKWARD_POST", "NONE", "NO_PREFETCH", NULL};
    static const char *const bwd_key[] = {"pre", "post", "none", "none"};
    int bi = b ? one_of(b, bwd) : -1;
    if (b && bi < 0)
        return im_fail(err, b, "expected BACKWARD_PRE, BACKWARD_POST or %s",
                       im->fmt == IMPORT_ACCELERATE ? "NO_PREFETCH" : "NONE");
    if (!b)
        im_chose(im, "fsdp_backward_prefetch", k->bwd_default, k->bwd_default_why);
    im_put(t, "fsdp_backward_prefetch", b ? bwd_key[bi] : k->bwd_default, b ? b->key : "default");
    const char *bools[][2] = {{k->fwd, "fsdp_forward_prefetch"},
                              {k->limit, "fsdp_limit_all_gathers"}};
    for (size_t i = 0; i < G_N_ELEMENTS(bools); i++) {
        gboolean on;
        ImportItem *it = NULL;
        if (bools[i][0] && !bool_of(im, bools[i][0], FALSE, &on, &it, err))
            return FALSE;
        if (it)
            im_put(t, bools[i][1], on ? "true" : "false", it->key);
    }
    return TRUE;
}

/* Composer's precision (amp_bf16 ...) or accelerate's mixed_precision (bf16 ...), and Composer's
 * FSDP mixed_precision: PURE is what the simulator runs (gathers and reductions in the training
 * precision); DEFAULT reduces gradients in fp32, named beside the setting; FULL gathers in fp32,
 * which under a 16-bit autocast cannot be expressed. */
static gboolean write_precision(Im *im, gboolean fsdp, GString *t, GError **err) {
    gboolean foundry = im->fmt == IMPORT_FOUNDRY;
    ImportItem *pr = im_take(im, foundry ? "precision" : "mixed_precision", NULL);
    static const char *const foundry_names[] = {"amp_bf16", "amp_fp16", "amp_fp8", "fp32", NULL},
                             *const acc_names[] = {"bf16", "fp16", "fp8", "no", NULL},
                             *const sim_names[] = {"bf16", "fp16", "fp8", "fp32"};
    const char *const *names = foundry ? foundry_names : acc_names;
    int i = pr ? one_of(pr, names) : foundry ? 0 : 3;
    if (i < 0)
        return im_fail(err, pr, "expected %s, %s, %s or %s", names[0], names[1], names[2],
                       names[3]);
    if (!pr)
        im_chose(im, "precision", sim_names[i],
                 foundry ? "precision amp_bf16, TrainConfig's default"
                         : "mixed_precision no, accelerate's default");
    /* llm-foundry's validate_config (command_utils/train.py): amp_fp8 reaches only Transformer
     * Engine layers (model.fc_type te, or ffn_type te_ln_mlp); torch's Linear runs under the
     * bf16 autocast Composer opens with it */
    ImportItem *fc = foundry && i == 2 ? find(im, "model.fc_type") : NULL,
               *ffn = foundry && i == 2 ? find(im, "model.ffn_config.ffn_type") : NULL;
    gboolean te = (fc && !g_ascii_strcasecmp(fc->value, "te")) ||
                  (ffn && !g_ascii_strcasecmp(ffn->value, "te_ln_mlp"));
    if (fc && te)
        fc->used = TRUE;
    if (foundry && i == 2 && !te) {
        i = 0;
        im_put(t, "precision", "bf16",
               "precision amp_fp8 without Transformer Engine layers (fc_type te): llm-foundry "
               "warns that fp8 does not reach torch's Linear, which runs in bf16");
    } else {
        im_put(t, "precision", sim_names[i], pr ? pr->key : "default");
    }
    if (!foundry || !fsdp)
        return TRUE;
    ImportItem *mp = im_take(im, "fsdp_config.mixed_precision", NULL);
    static const char *const mps[] = {"PURE", "DEFAULT", "FULL", NULL};
    int m = mp ? one_of(mp, mps) : has_prefix(im, "fsdp_config.mixed_precision.") ? -1 : 1;
    if (mp && m < 0)
        return im_fail(err, mp, "expected PURE, DEFAULT or FULL");
    if (i == 3) /* fp32: every dtype is fp32 whatever the policy */
        return TRUE;
    if (m == 2)
        return im_fail(err, mp,
                       "FULL gathers parameters and reduces gradients in fp32 under %s compute, "
                       "which cannot be expressed (PURE: both in the training precision)",
                       pr ? pr->value : "amp_bf16");
    const char *dflt =
        "DEFAULT reduce-scatters gradients in fp32 (Composer's reduce_dtype; as PURE "
        "in releases that left it None); simulated in the training precision";
    if (m == 1 && !mp)
        im_chose(im, "fsdp mixed_precision", "DEFAULT (Composer's)", dflt);
    else if (m == 1)
        mp->used = FALSE, mp->note = g_strdup(dflt);
    if (m == -1) /* a mapping of dtypes (param_dtype, reduce_dtype, buffer_dtype) */
        for (guint j = 0; j < im->items->len; j++) {
            ImportItem *it = im->items->pdata[j];
            if (g_str_has_prefix(it->key, "fsdp_config.mixed_precision."))
                it->note = g_strdup("a MixedPrecision of its own; gathers and reductions "
                                    "simulated in training.precision");
        }
    return TRUE;
}

static gboolean write_recompute(Im *im, const char *key, GString *t, GError **err) {
    gboolean on;
    ImportItem *it;
    if (!bool_of(im, key, FALSE, &on, &it, err))
        return FALSE;
    if (it) /* each transformer block checkpointed whole */
        im_put(t, "recompute", on ? "full" : "none", it->key);
    return TRUE;
}

/* --- llm-foundry -------------------------------------------------------------------------- */

/* The GPUs per node of the topology the scenario names. */
static gboolean gpus_per_node(const ImportOptions *opt, int64_t *gpn, GError **err) {
    TopologySpec topo;
    if (!scenario_load_topology(opt->topology ? opt->topology : "frontier", NULL, &topo, err))
        return FALSE;
    *gpn = topo.gpus_per_node;
    topo_spec_clear(&topo);
    return TRUE;
}

/* calculate_batch_size_info on the world the scenario runs: the global batch over the GPUs, the
 * micro-batch cut to it, and an accumulation the simulator can run (whole micro-batches). */
static gboolean foundry_batch(Im *im, const ImportOptions *opt, GString *t, int64_t *nodes,
                              GError **err) {
    ImportItem *mb = find(im, "device_train_microbatch_size"),
               *gb = im_take(im, "global_train_batch_size", NULL);
    if (mb)
        mb->used = TRUE;
    if (!mb || !g_ascii_strcasecmp(mb->value, "auto")) {
        const char *why = "Composer searches at run time for the largest micro-batch that fits "
                          "(automicrobatching), which cannot be known without running the job; "
                          "write the number the run settled on";
        if (mb)
            return im_fail(err, mb, "%s", why);
        g_set_error(err, CONF_ERROR, CONF_ERROR_KEY,
                    "%s: no device_train_microbatch_size, whose default is auto: %s", im->path,
                    why);
        return FALSE;
    }
    int64_t micro, global, gpn;
    if (!im_as_int(mb, 1, 1 << 20, &micro, err))
        return FALSE;
    if (!gb) {
        g_set_error(err, CONF_ERROR, CONF_ERROR_KEY,
                    "%s: no global_train_batch_size, which llm-foundry's update_batch_size_info "
                    "requires",
                    im->path);
        return FALSE;
    }
    if (!im_as_int(gb, 1, INT64_C(1) << 40, &global, err) || !gpus_per_node(opt, &gpn, err))
        return FALSE;
    *nodes = opt->nodes > 0 ? opt->nodes : 1;
    if (opt->nodes <= 0)
        im_chose(im, "nodes", "1",
                 "the file does not say how many GPUs run it (Composer's world size); --nodes N "
                 "sets it");
    int64_t world = *nodes * gpn, batch = global / world;
    if (global % world)
        return im_fail(err, gb,
                       "llm-foundry requires a global batch that the %" G_GINT64_FORMAT
                       " GPUs divide (%" G_GINT64_FORMAT " nodes x %" G_GINT64_FORMAT
                       "); --nodes N sets the world",
                       world, *nodes, gpn);
    int64_t m = MIN(micro, batch);
    if (batch % m)
        return im_fail(err, mb,
                       "the per-GPU batch %" G_GINT64_FORMAT " (global %" G_GINT64_FORMAT
                       " over %" G_GINT64_FORMAT " GPUs) is no multiple of the micro-batch: "
                       "Composer would run %" G_GINT64_FORMAT
                       " micro-batches, the last of %" G_GINT64_FORMAT
                       ", which the simulator cannot express",
                       batch, global, world, (batch + m - 1) / m, batch % m);
    g_autofree char *from =
        m < micro ? g_strdup_printf("%s %" G_GINT64_FORMAT ", cut to the per-GPU batch as Composer "
                                    "does",
                                    mb->key, micro)
                  : g_strdup(mb->key);
    im_put_int(t, "micro_batch", m, from);
    im_put_int(t, "global_batch", global, gb->key);
    return TRUE;
}

static gboolean foundry(Im *im, const ImportOptions *opt, GString *model, GString *p, GString *t,
                        int64_t *nodes, GError **err) {
    ImportItem *name = im_take(im, "model.name", NULL);
    if (!opt->model && (!name || g_ascii_strcasecmp(name->value, "mpt_causal_lm"))) {
        if (name)
            return im_fail(err, name,
                           "only mpt_causal_lm's shape is in the file (an hf_causal_lm loads a "
                           "checkpoint's); name a shipped model with --model NAME, or import "
                           "the checkpoint's config.json");
        g_set_error(err, CONF_ERROR, CONF_ERROR_KEY,
                    "%s: no model.name; llm-foundry's TrainConfig requires a model", im->path);
        return FALSE;
    }
    if (opt->model && name)
        name->used = FALSE;
    ImportItem *seq = im_take(im, "max_seq_len", "model.max_seq_len", NULL);
    int64_t s = 2048;
    if (seq && !im_as_int(seq, 1, 1 << 24, &s, err))
        return FALSE;
    if (!seq)
        im_chose(im, "seq_len", "2048", "max_seq_len 2048, MPTConfig's default");
    if (opt->model)
        im_put_model_option(model, opt);
    else if (!mpt_model(im, opt, model, s, err))
        return FALSE;
    ImportItem *tp = im_take(im, "tp_config.tensor_parallel_degree", NULL);
    int64_t tpd = 1;
    if (tp && !im_as_int(tp, 1, 1 << 20, &tpd, err))
        return FALSE;
    if (tpd > 1)
        return im_fail(err, tp,
                       "Composer's tensor parallelism (DTensor layer plans) is not modelled; the "
                       "simulator's is Megatron-LM's");
    /* FSDP whenever fsdp_config is given, even empty (Composer's FSDPConfig defaults) */
    ImportItem *empty = im_take(im, "fsdp_config", NULL);
    gboolean fsdp = has_prefix(im, "fsdp_config.") || (empty && !strcmp(empty->value, "{}"));
    int zero;
    g_autoptr(GString) fs = g_string_new(NULL); /* the fsdp_ keys, last */
    if (!refuse_offload(im, "fsdp_config.cpu_offload", err) ||
        !refuse_offload(im, "fsdp_config.activation_cpu_offload", err) ||
        !write_sharding(im, &foundry_keys, fsdp, p, fs, &zero, err) ||
        !foundry_batch(im, opt, t, nodes, err))
        return FALSE;
    im_put_int(t, "seq_len", s, seq ? seq->key : "default");
    if (!write_precision(im, fsdp, t, err) ||
        !write_recompute(im, "fsdp_config.activation_checkpointing", t, err))
        return FALSE;
    g_string_append(t, fs->str);
    return TRUE;
}

/* --- accelerate --------------------------------------------------------------------------- */

static gboolean accelerate_nodes(Im *im, const ImportOptions *opt, int64_t *nodes, GError **err) {
    ImportItem *nm = im_take(im, "num_machines", NULL), *np = im_take(im, "num_processes", NULL);
    if (opt->nodes > 0) {
        *nodes = opt->nodes;
        if (nm)
            nm->used = FALSE;
        if (np)
            np->used = FALSE;
        return TRUE;
    }
    int64_t procs = 0, gpn;
    *nodes = 1;
    if ((nm && !im_as_int(nm, 1, 1 << 24, nodes, err)) ||
        (np && !im_as_int(np, 1, 1 << 30, &procs, err)) || !gpus_per_node(opt, &gpn, err))
        return FALSE;
    if (!nm)
        im_chose(im, "nodes", "1", "num_machines 1, accelerate's default; --nodes N sets it");
    if (np && procs != *nodes * gpn)
        return im_fail(err, np,
                       "%" G_GINT64_FORMAT " processes on %" G_GINT64_FORMAT
                       " machines, and the topology has %" G_GINT64_FORMAT
                       " GPUs a node: the simulator runs every GPU of its nodes (--topology "
                       "names the machine, --nodes N the nodes)",
                       procs, *nodes, gpn);
    return TRUE;
}

static gboolean accelerate(Im *im, const ImportOptions *opt, GString *model, GString *p, GString *t,
                           int64_t *nodes, GError **err) {
    ImportItem *dt = im_take(im, "distributed_type", NULL);
    static const char *const types[] = {"FSDP", "MULTI_GPU", NULL};
    int d = dt ? one_of(dt, types) : -1;
    if (!dt) {
        g_set_error(err, CONF_ERROR, CONF_ERROR_KEY, "%s: no distributed_type", im->path);
        return FALSE;
    }
    if (d < 0)
        return im_fail(err, dt,
                       "FSDP and MULTI_GPU (DDP) are read; a DEEPSPEED run imports its DeepSpeed "
                       "config (--format deepspeed), and the others are not modelled");
    gboolean cpu;
    ImportItem *uc;
    if (!bool_of(im, "use_cpu", FALSE, &cpu, &uc, err))
        return FALSE;
    if (cpu)
        return im_fail(err, uc, "training on the CPU is not modelled");
    if (!opt->model) {
        g_set_error(err, CONF_ERROR, CONF_ERROR_KEY,
                    "%s: an accelerate config holds no model; name one with --model NAME "
                    "(sim list models)",
                    im->path);
        return FALSE;
    }
    im_put_model_option(model, opt);
    gboolean fsdp = d == 0;
    if (fsdp) {
        /* FSDP2 (fully_shard: per-parameter DTensor shards, its own prefetch) is another
         * mechanism than the FSDP1 that training.framework pytorch runs */
        ImportItem *ver = im_take(im, "fsdp_config.fsdp_version", NULL);
        int64_t v = 1;
        if (ver && !im_as_int(ver, 1, 2, &v, err))
            return FALSE;
        if (v == 2)
            return im_fail(err, ver,
                           "FSDP2 (fully_shard) is not modelled; the simulator runs FSDP1's "
                           "FullyShardedDataParallel (fsdp_version: 1)");
        ImportItem *wrap = im_take(im, "fsdp_config.fsdp_auto_wrap_policy", NULL);
        if (wrap && !g_ascii_strcasecmp(wrap->value, "NO_WRAP"))
            return im_fail(err, wrap,
                           "one FSDP unit for the whole model is not modelled (each transformer "
                           "layer is a unit: TRANSFORMER_BASED_WRAP)");
        if (wrap && g_ascii_strcasecmp(wrap->value, "TRANSFORMER_BASED_WRAP"))
            wrap->used = FALSE, wrap->note = g_strdup("units by size; the simulator wraps each "
                                                      "transformer layer");
        if (!refuse_offload(im, "fsdp_config.fsdp_offload_params", err))
            return FALSE;
    }
    int zero;
    g_autoptr(GString) fs = g_string_new(NULL); /* the fsdp_ keys, last */
    if (!write_sharding(im, &accelerate_keys, fsdp, p, fs, &zero, err) ||
        !accelerate_nodes(im, opt, nodes, err) || !write_precision(im, fsdp, t, err) ||
        (fsdp && !write_recompute(im, accelerate_keys.ckpt, t, err)))
        return FALSE;
    /* the batch and the sequence are the training script's arguments, not the config's */
    im_chose(im, "micro_batch", "1",
             "the batch is the training script's (--set training.micro_batch=N)");
    im_chose(im, "seq_len", "2048", "the scenario's default (--set training.seq_len=N)");
    im_put(t, "micro_batch", "1", "default");
    im_put(t, "seq_len", "2048", "default");
    g_string_append(t, fs->str);
    return TRUE;
}

gboolean import_write_fsdp(Im *im, const ImportOptions *opt, GString *model, GString *par,
                           GString *train, int64_t *nodes, GError **err) {
    if (!(im->fmt == IMPORT_FOUNDRY ? foundry : accelerate)(im, opt, model, par, train, nodes, err))
        return FALSE;
    im_put(train, "framework", "pytorch",
           im->fmt == IMPORT_FOUNDRY ? "Composer runs PyTorch FSDP (DDP without fsdp_config)"
                                     : "accelerate runs PyTorch FSDP or DDP");
    return TRUE;
}
