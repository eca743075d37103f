/* model: parameter counts, operator inventories and memory of a GPT-style transformer.
 *
 * Sources: parameter count from the study's Eq. 1 (Anthony et al. 2024, arXiv 2408.10197);
 * per-layer FLOPs from Narayanan et al. 2021 (SC21, "Efficient Large-Scale Language Model
 * Training on GPU Clusters", 24bsh^2 + 4bs^2h per layer forward with a 4h MLP); operator split as
 * in Megatron-LM's ParallelTransformerLayer (Shoeybi et al. 2019); activation memory from
 * Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models", Eq. 2
 * with tensor parallelism and no sequence parallelism); optimizer memory from Rajbhandari et al.
 * 2020 (ZeRO, mixed-precision Adam keeps 2 + 2 + 12 bytes per parameter). */
#include "model.h"

void model_config_clear(ModelConfig *m) {
    g_clear_pointer(&m->name, g_free);
}

int model_elem_bytes(Precision p) {
    return p == PREC_FP32 ? 4 : 2;
}

int64_t model_padded_vocab(const ModelConfig *m, int tp) {
    int64_t mult = (int64_t)m->vocab_pad_multiple * tp;
    if (mult <= 0)
        return m->vocab;
    return (m->vocab + mult - 1) / mult * mult;
}

/* Per-layer parameters of one TP rank: weights split over tp, vectors (biases, norms) whole. */
static double layer_params(const ModelConfig *m, int tp) {
    double h = m->hidden, f = m->ffn_hidden;
    return (4.0 * h * h + 2.0 * h * f) / tp + (double)m->layer_vector_params_h * h;
}

static double embed_params(const ModelConfig *m, int seq_len, int tp) {
    double v = (double)model_padded_vocab(m, tp), h = m->hidden;
    return v * h / tp + (m->pos_emb == POS_LEARNED ? (double)seq_len * h : 0.0);
}

/* Final layer norm (2h) and, when untied or when the head sits on another stage than the
 * embedding, the output projection. */
static double head_params(const ModelConfig *m, int tp, gboolean separate_copy) {
    double v = (double)model_padded_vocab(m, tp), h = m->hidden;
    return 2.0 * h + ((!m->tied_embeddings || separate_copy) ? v * h / tp : 0.0);
}

double model_params(const ModelConfig *m, int seq_len, int tp) {
    double v = (double)model_padded_vocab(m, tp), h = m->hidden;
    return (m->tied_embeddings ? 1.0 : 2.0) * v * h +
           (m->pos_emb == POS_LEARNED ? (double)seq_len * h : 0.0) +
           (double)m->layers * layer_params(m, 1) + 2.0 * h;
}

GArray *model_stage_units(const ModelConfig *m, int seq_len, int tp, int pp, int stage) {
    g_assert(pp > 0 && m->layers % pp == 0 && stage >= 0 && stage < pp);
    GArray *units = g_array_new(FALSE, FALSE, sizeof(ParamUnit));
    int per = m->layers / pp;
    if (stage == 0) {
        ParamUnit u = {UNIT_EMBED, -1, embed_params(m, seq_len, tp)};
        g_array_append_val(units, u);
    }
    for (int l = stage * per; l < (stage + 1) * per; l++) {
        ParamUnit u = {UNIT_LAYER, l, layer_params(m, tp)};
        g_array_append_val(units, u);
    }
    if (stage == pp - 1) {
        ParamUnit u = {UNIT_HEAD, -1, head_params(m, tp, pp > 1)};
        g_array_append_val(units, u);
    }
    return units;
}

double model_stage_params(const ModelConfig *m, int seq_len, int tp, int pp, int stage) {
    g_autoptr(GArray) units = model_stage_units(m, seq_len, tp, pp, stage);
    double sum = 0;
    for (guint i = 0; i < units->len; i++)
        sum += g_array_index(units, ParamUnit, i).params;
    return sum;
}

int model_unit_tensors(const ModelConfig *m, const ParamUnit *u, int seq_len, int tp,
                       double *sizes, int max) {
    double h = m->hidden, f = m->ffn_hidden, v = (double)model_padded_vocab(m, tp);
    int n = 0;
#define PUSH(x)                                                                                    \
    do {                                                                                           \
        g_assert(n < max);                                                                         \
        sizes[n++] = (x);                                                                          \
    } while (0)
    double rest = u->params;
    if (u->kind == UNIT_EMBED) {
        PUSH(v * h / tp);
        if (m->pos_emb == POS_LEARNED)
            PUSH((double)seq_len * h);
    } else if (u->kind == UNIT_HEAD) {
        PUSH(h); /* final layer norm weight and bias */
        PUSH(h);
        if (rest > 2 * h)
            PUSH(rest - 2 * h);
    } else {
        PUSH(3 * h * h / tp);
        PUSH(h * h / tp);
        PUSH(h * f / tp);
        PUSH(f * h / tp);
        /* ln1 weight, bias; QKV bias; output bias; ln2 weight, bias; MLP biases */
        const double vec[] = {h, h, 3 * h, h, h, h, f, h};
        double budget = (double)m->layer_vector_params_h * h;
        for (size_t i = 0; i < G_N_ELEMENTS(vec) && budget > 0; i++) {
            PUSH(MIN(vec[i], budget));
            budget -= vec[i];
        }
        if (budget > 0)
            PUSH(budget);
    }
#undef PUSH
    return n;
}

/* --- operators ------------------------------------------------------------------------------ */

static void add_gemm(GArray *ops, const char *name, OpKind kind, int64_t batch, int64_t mm,
                     int64_t nn, int64_t kk, int e) {
    double b = (double)batch, M = (double)mm, N = (double)nn, K = (double)kk;
    ModelOp op = {name, kind, 2.0 * b * M * N * K, b * (M * K + K * N + M * N) * e, mm, nn,
                  kk,   batch};
    g_array_append_val(ops, op);
}

static void add_elem(GArray *ops, const char *name, double bytes) {
    ModelOp op = {name, OP_ELEMENTWISE, 0.0, bytes, 0, 0, 0, 1};
    g_array_append_val(ops, op);
}

void model_segment_ops(const ModelConfig *m, Segment seg, int b, int s, int tp, Precision prec,
                       GArray *ops) {
    int e = model_elem_bytes(prec);
    int64_t h = m->hidden, a = m->heads, f = m->ffn_hidden, bs = (int64_t)b * s;
    int64_t d = h / a;            /* head dimension */
    int64_t heads_local = a / tp; /* attention heads on this rank */
    double bsh = (double)bs * h;
    double scores = (double)b * heads_local * s * s; /* attention matrix elements */
    switch (seg) {
    case SEG_ATTN:
        add_elem(ops, "layernorm", 2.0 * bsh * e);
        add_gemm(ops, "qkv", OP_GEMM, 1, bs, 3 * h / tp, h, e);
        add_gemm(ops, "attn_scores", OP_BMM, (int64_t)b * heads_local, s, s, d, e);
        add_elem(ops, "softmax", 2.0 * scores * e);
        add_elem(ops, "attn_dropout", scores * (2.0 * e + 1.0));
        add_gemm(ops, "attn_context", OP_BMM, (int64_t)b * heads_local, s, d, s, e);
        add_gemm(ops, "attn_out", OP_GEMM, 1, bs, h, h / tp, e);
        add_elem(ops, "dropout_residual", bsh * (3.0 * e + 1.0));
        break;
    case SEG_MLP:
        add_elem(ops, "layernorm", 2.0 * bsh * e);
        add_gemm(ops, "mlp_fc1", OP_GEMM, 1, bs, f / tp, h, e);
        add_elem(ops, "gelu", 2.0 * (double)bs * (double)(f / tp) * e);
        add_gemm(ops, "mlp_fc2", OP_GEMM, 1, bs, h, f / tp, e);
        add_elem(ops, "dropout_residual", bsh * (3.0 * e + 1.0));
        break;
    case SEG_EMBED:
        add_elem(ops, "embedding", 2.0 * bsh * e);
        add_elem(ops, "embed_dropout", bsh * (2.0 * e + 1.0));
        break;
    case SEG_HEAD: {
        int64_t v = model_padded_vocab(m, tp) / tp;
        add_elem(ops, "final_layernorm", 2.0 * bsh * e);
        add_gemm(ops, "logits", OP_GEMM, 1, bs, v, h, e);
        add_elem(ops, "cross_entropy", 2.0 * (double)bs * (double)v * (e + 4.0));
        break;
    }
    default:
        g_assert_not_reached();
    }
}

double model_forward_flops(const ModelConfig *m, int b, int s) {
    double h = m->hidden, f = m->ffn_hidden, bs = (double)b * s;
    double layer = 2.0 * bs * (4.0 * h * h + 2.0 * h * f) + 4.0 * (double)b * s * s * h;
    return m->layers * layer + 2.0 * bs * h * (double)model_padded_vocab(m, 1);
}

/* --- memory --------------------------------------------------------------------------------- */

ModelMemory model_memory(const ModelConfig *m, int seq_len, int micro_batch, int tp, int pp,
                         int stage, int dp, int zero, Precision prec, Recompute rc, int inflight) {
    ModelMemory mem = {0};
    double psi = model_stage_params(m, seq_len, tp, pp, stage);
    int e = model_elem_bytes(prec);
    /* Mixed precision keeps an fp32 master copy, momentum and variance: 12 bytes/parameter
     * (ZeRO paper, K = 12); pure fp32 Adam keeps momentum and variance: 8. */
    double opt_per_param = prec == PREC_FP32 ? 8.0 : 12.0;
    mem.params_bytes = psi * e / (zero >= 3 ? dp : 1);
    mem.grads_bytes = psi * e / (zero >= 2 ? dp : 1);
    mem.optimizer_bytes = psi * opt_per_param / (zero >= 1 ? dp : 1);

    /* Korthikanti et al. 2022, bytes per layer per micro-batch with TP and no sequence
     * parallelism: sbh(10 + 24/t + 5as/(ht)); written for 2-byte activations, scaled by e/2. */
    double s = seq_len, b = micro_batch, h = m->hidden, a = m->heads, t = tp;
    double scale = e / 2.0;
    double full_layer = s * b * h * (10.0 + 24.0 / t + 5.0 * a * s / (h * t)) * scale;
    double per_layer;
    double working = 0.0;
    switch (rc) {
    case RECOMPUTE_FULL: /* only each layer's input is kept; one layer is rebuilt at a time */
        per_layer = 2.0 * s * b * h * scale;
        working = full_layer;
        break;
    case RECOMPUTE_SELECTIVE: /* the s^2 attention terms are recomputed */
        per_layer = s * b * h * (10.0 + 24.0 / t) * scale;
        break;
    default:
        per_layer = full_layer;
    }
    double layers = (double)m->layers / pp;
    double act = layers * per_layer * inflight + working;
    if (stage == 0) /* embedding dropout mask, 1 byte per element */
        act += s * b * h * inflight;
    if (stage == pp - 1) /* logits in fp32 for the loss and the head's input (ibid., Sec. 4.3) */
        act += 4.0 * s * b * h / t * (1.0 + (double)model_padded_vocab(m, tp) / h);
    mem.activations_bytes = act;
    mem.total_bytes =
        mem.params_bytes + mem.grads_bytes + mem.optimizer_bytes + mem.activations_bytes;
    return mem;
}
