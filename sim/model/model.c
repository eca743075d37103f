/* model: parameter counts, operator inventories and memory of a GPT-style transformer.
 *
 * Sources: parameter count from the study's Eq. 1 (Anthony et al. 2024, arXiv 2408.10197);
 * per-layer FLOPs from Narayanan et al. 2021 (SC21, "Efficient Large-Scale Language Model
 * Training on GPU Clusters", 24bsh^2 + 4bs^2h per layer forward with a 4h MLP); operator split as
 * in Megatron-LM's ParallelTransformerLayer (Shoeybi et al. 2019); activation memory from
 * Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models", Eq. 2
 * with tensor parallelism and no sequence parallelism); optimizer memory from Rajbhandari et al.
 * 2020 (ZeRO, mixed-precision Adam keeps 2 + 2 + 12 bytes per parameter); the fused attention
 * kernel from Dao et al. 2022 (FlashAttention) and Dao 2023 (FlashAttention-2). */
#include "model_internal.h"
#include "schedule.h"

#include <string.h>

void model_config_clear(ModelConfig *m) {
    g_clear_pointer(&m->name, g_free);
}

int model_elem_bytes(Precision p) {
    return p == PREC_FP32 ? 4 : 2; /* fp8 keeps bf16 activations between its GEMMs */
}

int64_t model_padded_vocab(const ModelConfig *m, int tp) {
    int64_t mult = (int64_t)m->vocab_pad_multiple * tp;
    if (mult <= 0)
        return m->vocab;
    return (m->vocab + mult - 1) / mult * mult;
}

int model_kv_heads(const ModelConfig *m) {
    return m->kv_heads > 0 ? m->kv_heads : m->heads;
}

int64_t model_kv_width(const ModelConfig *m) {
    return (int64_t)m->hidden / m->heads * model_kv_heads(m);
}

double model_layer_matrix_params(const ModelConfig *m) {
    double h = m->hidden, f = m->ffn_hidden, kv = (double)model_kv_width(m);
    /* Q and O: h^2 each; K and V: h kv each (= 4h^2 with multi-head attention, Eq. 1's 12h^2
     * with the 8h^2 of a 4h GeLU MLP) */
    return 2.0 * h * h + 2.0 * h * kv + (m->mlp == MLP_SWIGLU ? 3.0 : 2.0) * h * f;
}

double model_norm_params(const ModelConfig *m) {
    return (m->norm == NORM_RMSNORM ? 1.0 : 2.0) * m->hidden;
}

/* A layer's vector tensors in the order frameworks register them: norm 1 (weight, bias), QKV
 * bias, output bias, norm 2 (weight, bias), MLP input bias, MLP output bias; absent ones are 0.
 * Returns the count written to v (8). */
int layer_vectors(const ModelConfig *m, double v[8]) {
    double h = m->hidden, f = m->ffn_hidden, kv = (double)model_kv_width(m);
    double nb = m->norm == NORM_RMSNORM ? 0.0 : h, bias = m->no_bias ? 0.0 : 1.0;
    double fc1 = m->mlp == MLP_SWIGLU ? 2.0 * f : f;
    double vec[8] = {h, nb, bias * (h + 2.0 * kv), bias * h, h, nb, bias * fc1, bias * h};
    memcpy(v, vec, sizeof vec);
    return 8;
}

double model_layer_vector_params(const ModelConfig *m) {
    if (m->layer_vector_params_h >= 0)
        return (double)m->layer_vector_params_h * m->hidden;
    double v[8], sum = 0;
    for (int i = 0, n = layer_vectors(m, v); i < n; i++)
        sum += v[i];
    return sum;
}

/* Per-layer parameters of one TP rank: weights split over tp, vectors (biases, norms) whole. */
static double layer_params(const ModelConfig *m, int tp) {
    return model_layer_matrix_params(m) / tp + model_layer_vector_params(m);
}

/* The layer's parameters that are not experts' (a MoE layer: attention, its norms and biases, the
 * second norm and the router), on one TP rank; its experts' are E/ep model_moe_expert_params. */
static double moe_dense_params(const ModelConfig *m, int tp) {
    double h = m->hidden, kv = (double)model_kv_width(m), v[8];
    layer_vectors(m, v); /* norm 1, QKV and output biases, norm 2: the first six */
    return (2.0 * h * h + 2.0 * h * kv) / tp + v[0] + v[1] + v[2] + v[3] + v[4] + v[5] +
           model_moe_router_params(m);
}

/* Layer `layer`'s parameters on one rank of TP tp and EP ep; *experts receives the experts'. */
static double layer_params_at(const ModelConfig *m, int tp, int ep, int layer, double *experts) {
    *experts = 0;
    if (!model_moe_layer(m, layer))
        return layer_params(m, tp);
    *experts = (double)(m->moe.experts / ep) * model_moe_expert_params(m, tp);
    return moe_dense_params(m, tp) + *experts;
}

/* The embedding norm's weight and bias (2h), whole on every TP rank. */
static double embed_norm_params(const ModelConfig *m) {
    return m->embed_norm ? 2.0 * m->hidden : 0.0;
}

static double embed_params(const ModelConfig *m, int seq_len, int tp) {
    double v = (double)model_padded_vocab(m, tp), h = m->hidden;
    return v * h / tp + (m->pos_emb == POS_LEARNED ? (double)seq_len * h : 0.0) +
           embed_norm_params(m);
}

/* Final norm (2h or h) and, when untied or when the head sits on another stage than the
 * embedding, the output projection. */
static double head_params(const ModelConfig *m, int tp, gboolean separate_copy) {
    double v = (double)model_padded_vocab(m, tp), h = m->hidden;
    return model_norm_params(m) + ((!m->tied_embeddings || separate_copy) ? v * h / tp : 0.0);
}

double model_params(const ModelConfig *m, int seq_len, int tp) {
    double v = (double)model_padded_vocab(m, tp), h = m->hidden;
    return (m->tied_embeddings ? 1.0 : 2.0) * v * h +
           (m->pos_emb == POS_LEARNED ? (double)seq_len * h : 0.0) + embed_norm_params(m) +
           (double)(m->layers - model_moe_layers(m, 0, m->layers)) * layer_params(m, 1) +
           (double)model_moe_layers(m, 0, m->layers) *
               (moe_dense_params(m, 1) + m->moe.experts * model_moe_expert_params(m, 1)) +
           model_norm_params(m);
}

GArray *model_stage_units(const ModelConfig *m, int seq_len, int tp, int pp, int stage) {
    return model_stage_units_ep(m, seq_len, tp, 1, pp, stage);
}

gboolean model_stage_split_set(const ModelConfig *m) {
    return m->first_stage_layers > 0 || m->last_stage_layers > 0;
}

gboolean model_stage_split_fits(const ModelConfig *m, int pp) {
    if (!model_stage_split_set(m))
        return pp > 0 && m->layers % pp == 0;
    int f = m->first_stage_layers, l = m->last_stage_layers;
    int left = pp - (f > 0) - (l > 0); /* stages that share the rest */
    int64_t rest = (int64_t)m->layers - f - l;
    if (pp < 2 || rest < 0)
        return FALSE;
    return left == 0 ? rest == 0 : rest > 0 && rest % left == 0;
}

int model_stage_layers(const ModelConfig *m, int pp, int stage, int *first) {
    g_assert(pp > 0 && stage >= 0 && stage < pp);
    if (pp == 1 || !model_stage_split_set(m)) {
        g_assert(m->layers % pp == 0);
        int per = m->layers / pp;
        *first = stage * per;
        return per;
    }
    g_assert(model_stage_split_fits(m, pp));
    int f = m->first_stage_layers, l = m->last_stage_layers;
    int left = pp - (f > 0) - (l > 0);
    int per = left > 0 ? (m->layers - f - l) / left : 0;
    int head = f > 0 ? f : per; /* stage 0's */
    if (stage == 0) {
        *first = 0;
        return head;
    }
    *first = head + (stage - 1) * per;
    return stage == pp - 1 && l > 0 ? l : per;
}

GArray *model_stage_units_ep(const ModelConfig *m, int seq_len, int tp, int ep, int pp, int stage) {
    g_assert(ep >= 1);
    GArray *units = g_array_new(FALSE, FALSE, sizeof(ParamUnit));
    int lo, n = model_stage_layers(m, pp, stage, &lo);
    if (stage == 0) {
        ParamUnit u = {UNIT_EMBED, -1, embed_params(m, seq_len, tp)};
        g_array_append_val(units, u);
    }
    for (int l = lo; l < lo + n; l++) {
        double experts;
        ParamUnit u = {UNIT_LAYER, l, layer_params_at(m, tp, ep, l, &experts)};
        g_array_append_val(units, u);
    }
    if (stage == pp - 1) {
        ParamUnit u = {UNIT_HEAD, -1, head_params(m, tp, pp > 1)};
        g_array_append_val(units, u);
    }
    return units;
}

double model_unit_expert_params(const ModelConfig *m, const ParamUnit *u, int tp, int ep) {
    if (u->kind != UNIT_LAYER || !model_moe_layer(m, u->layer))
        return 0;
    return (double)(m->moe.experts / ep) * model_moe_expert_params(m, tp);
}

double model_stage_params(const ModelConfig *m, int seq_len, int tp, int pp, int stage) {
    g_autoptr(GArray) units = model_stage_units(m, seq_len, tp, pp, stage);
    double sum = 0;
    for (guint i = 0; i < units->len; i++)
        sum += g_array_index(units, ParamUnit, i).params;
    return sum;
}

/* The unit's tensors, their segments and widths (either may be NULL). */
static int unit_tensors(const ModelConfig *m, const ParamUnit *u, int seq_len, int tp,
                        double *sizes, Segment *segs, double *widths, int max) {
    double h = m->hidden, f = m->ffn_hidden, v = (double)model_padded_vocab(m, tp);
    int n = 0;
    Segment seg = u->kind == UNIT_EMBED ? SEG_EMBED : u->kind == UNIT_HEAD ? SEG_HEAD : SEG_ATTN;
#define PUSH_W(x, w)                                                                               \
    do {                                                                                           \
        g_assert(n < max);                                                                         \
        if (segs)                                                                                  \
            segs[n] = seg;                                                                         \
        if (widths)                                                                                \
            widths[n] = (w);                                                                       \
        sizes[n++] = (x);                                                                          \
    } while (0)
#define PUSH(x) PUSH_W(x, 0.0) /* a vector */
    double rest = u->params;
    if (u->kind == UNIT_EMBED) {
        PUSH_W(v * h / tp, MAX(v / tp, h));
        if (m->pos_emb == POS_LEARNED)
            PUSH_W((double)seq_len * h, MAX((double)seq_len, h));
        if (m->embed_norm) { /* its weight and bias */
            PUSH(h);
            PUSH(h);
        }
    } else if (u->kind == UNIT_HEAD) {
        double norm = model_norm_params(m); /* final norm weight (and bias) */
        PUSH(h);
        if (norm > h)
            PUSH(norm - h);
        if (rest > norm)
            PUSH_W(rest - norm, MAX((rest - norm) / h, h));
    } else if (model_moe_layer(m, u->layer)) {
        /* a MoE layer's non-expert tensors (the experts' are reduced apart, workload.c): QKV,
         * output, norm 1 and attention biases (SEG_ATTN), the router and norm 2 (SEG_MLP) */
        double kv = (double)model_kv_width(m), vec[8];
        layer_vectors(m, vec);
        PUSH_W((h * h + 2.0 * h * kv) / tp, MAX((h + 2.0 * kv) / tp, h));
        PUSH_W(h * h / tp, h);
        for (int i = 0; i < 4; i++)
            if (vec[i] > 0)
                PUSH(vec[i]);
        seg = SEG_MLP;
        double router = model_moe_router_params(m);
        PUSH_W(router, MAX(router / h, h));
        for (int i = 4; i < 6; i++)
            if (vec[i] > 0)
                PUSH(vec[i]);
    } else {
        double kv = (double)model_kv_width(m), mlp_in = m->mlp == MLP_SWIGLU ? 2.0 * f : f;
        PUSH_W((h * h + 2.0 * h * kv) / tp, MAX((h + 2.0 * kv) / tp, h));
        PUSH_W(h * h / tp, h);
        seg = SEG_MLP;
        PUSH_W(h * mlp_in / tp, MAX(mlp_in / tp, h));
        PUSH_W(f * h / tp, MAX(f / tp, h));
        /* norm 1 weight, bias; QKV bias; output bias; norm 2 weight, bias; MLP biases, until the
         * layer's vector parameters are used up (the study's 8h stops inside the MLP's) */
        double vec[8];
        int nvec = layer_vectors(m, vec);
        double budget = model_layer_vector_params(m);
        for (int i = 0; i < nvec && budget > 0; i++) {
            if (vec[i] <= 0)
                continue;
            seg = i < 4 ? SEG_ATTN : SEG_MLP;
            PUSH(MIN(vec[i], budget));
            budget -= vec[i];
        }
        if (budget > 0)
            PUSH(budget);
    }
#undef PUSH
#undef PUSH_W
    return n;
}

int model_unit_tensor_segments(const ModelConfig *m, const ParamUnit *u, int seq_len, int tp,
                               double *sizes, Segment *segs, int max) {
    return unit_tensors(m, u, seq_len, tp, sizes, segs, NULL, max);
}

int model_unit_tensor_widths(const ModelConfig *m, const ParamUnit *u, int seq_len, int tp,
                             double *sizes, double *widths, int max) {
    return unit_tensors(m, u, seq_len, tp, sizes, NULL, widths, max);
}

int model_unit_tensors(const ModelConfig *m, const ParamUnit *u, int seq_len, int tp, double *sizes,
                       int max) {
    return model_unit_tensor_segments(m, u, seq_len, tp, sizes, NULL, max);
}

/* --- operators ------------------------------------------------------------------------------ */

/* C[m x n] = A[m x k] B[k x n], batch times: 2mnk FLOPs, each operand read or written once. */
void gemm_lead(OpList *l, const char *name, OpKind kind, int64_t batch, int64_t mm, int64_t nn,
               int64_t kk, gboolean core, unsigned lead) {
    double b = (double)batch, M = (double)mm, N = (double)nn, K = (double)kk;
    ModelOp op = {name,
                  kind,
                  2.0 * b * M * N * K,
                  b * (M * K + K * N + M * N) * l->e,
                  mm,
                  nn,
                  kk,
                  batch,
                  core,
                  lead,
                  FALSE,
                  FALSE};
    g_array_append_val(l->ops, op);
}

void gemm(OpList *l, const char *name, OpKind kind, int64_t batch, int64_t mm, int64_t nn,
          int64_t kk, gboolean core) {
    gemm_lead(l, name, kind, batch, mm, nn, kk, core, OP_LEAD_N | OP_LEAD_K);
}

/* The two gradient GEMMs of C = A B (m, n, k): dA = dC B^T is (m, k, n), dB = A^T dC is
 * (k, n, m). For a linear layer A is the activation and B the weight: data and weight gradient. */
void gemm_grads(OpList *l, const char *grad_a, const char *grad_b, OpKind kind, int64_t batch,
                int64_t mm, int64_t nn, int64_t kk, gboolean core) {
    gemm_lead(l, grad_a, kind, batch, mm, kk, nn, core, OP_LEAD_N | OP_LEAD_K);
    gemm_lead(l, grad_b, kind, batch, kk, nn, mm, core, OP_LEAD_M | OP_LEAD_N);
}

/* A memory-bound kernel moving `bytes`. Element-wise kernels (OP_ELEMENTWISE) have no shape;
 * row reductions (OP_REDUCTION) record their row length as n (a device may reach a different
 * share of its bandwidth on long rows). */
void mem_row(OpList *l, const char *name, OpKind kind, double bytes, gboolean core, int64_t row) {
    ModelOp op = {name, kind, 0.0, bytes, 0, row, 0, 1, core, 0, FALSE, FALSE};
    g_array_append_val(l->ops, op);
}

void mem(OpList *l, const char *name, OpKind kind, double bytes, gboolean core) {
    mem_row(l, name, kind, bytes, core, 0);
}

const char MODEL_FP8_WEIGHT_CAST[] = "fp8_cast_weight";

gboolean model_op_is_weight_cast(const ModelOp *op) {
    return op->name == MODEL_FP8_WEIGHT_CAST;
}

/* A linear layer's GEMM, C[bs x n] = A[bs x k] W[k x n], and in fp8 (Transformer Engine) what
 * comes with it: A's cast to fp8 with its transpose (TE's cast_transpose: read e bytes, write 1 + 1
 * per element; the transpose feeds the weight gradient) and W's likewise, a kernel of its own
 * (MODEL_FP8_WEIGHT_CAST: the workload runs it only where TE has no cached copy,
 * Framework.fp8_weight_cache), then the GEMM with 1-byte A and W at the fp8 peak, C written in
 * bf16. */
void linear(OpList *l, const char *name, int64_t bs, int64_t n, int64_t k) {
    if (!l->fp8) {
        gemm(l, name, OP_GEMM, 1, bs, n, k, FALSE);
        return;
    }
    double M = (double)bs, N = (double)n, K = (double)k;
    mem(l, "fp8_cast", OP_ELEMENTWISE, (l->e + 2.0) * M * K, FALSE);
    mem(l, MODEL_FP8_WEIGHT_CAST, OP_ELEMENTWISE, (l->e + 2.0) * K * N, FALSE);
    ModelOp op = {name, OP_GEMM, 2.0 * M * N * K, M * K + K * N + M * N * l->e, bs,    n,
                  k,    1,       FALSE,           OP_LEAD_N | OP_LEAD_K,        FALSE, TRUE};
    g_array_append_val(l->ops, op);
}

/* The gradient GEMMs of linear(): in fp8 the incoming gradient dC is cast to E5M2 with its
 * transpose first, then dA = dC W^T and dW = A^T dC both run in fp8 (TE's fprop, dgrad and
 * wgrad GEMMs) with the saved fp8 A^T and W^T. */
void linear_grads(OpList *l, const char *grad_a, const char *grad_b, int64_t bs, int64_t n,
                  int64_t k) {
    if (!l->fp8) {
        gemm_grads(l, grad_a, grad_b, OP_GEMM, 1, bs, n, k, FALSE);
        return;
    }
    double M = (double)bs, N = (double)n, K = (double)k;
    mem(l, "fp8_cast_bwd", OP_ELEMENTWISE, (l->e + 2.0) * M * N, FALSE);
    ModelOp da = {grad_a, OP_GEMM, 2.0 * M * N * K, M * N + N * K + M * K * l->e, bs,    k,
                  n,      1,       FALSE,           OP_LEAD_N | OP_LEAD_K,        FALSE, TRUE};
    ModelOp dw = {grad_b, OP_GEMM, 2.0 * M * N * K, K * M + M * N + K * N * l->e, k,     n,
                  bs,     1,       FALSE,           OP_LEAD_M | OP_LEAD_N,        FALSE, TRUE};
    g_array_append_val(l->ops, da);
    g_array_append_val(l->ops, dw);
}

/* Delayed scaling's bookkeeping once per block and pass (TE's amax_and_scale_update): read each
 * fp8 tensor's amax history (fp32, AMAX_HISTORY entries; TE's default history length), write its
 * new scale. A few kilobytes: the kernel's launch is what costs. The amax allreduce over the
 * data- and tensor-parallel group that TE runs with it (a few kilobytes) is not modelled. */
#define AMAX_HISTORY 1024
void fp8_amax(OpList *l, int gemms) {
    if (l->fp8) /* forward: input, weight, output per GEMM; backward: two gradients */
        mem_row(l, "fp8_amax", OP_REDUCTION, 5.0 * gemms * (AMAX_HISTORY + 2) * 4.0, FALSE,
                AMAX_HISTORY);
}

static double fwd_or(Pass pass, double fwd, double bwd) {
    return pass == PASS_FWD ? fwd : bwd;
}

gboolean model_op_replicated(const ModelOp *op) {
    /* the names the op lists below give the layer norms (norm_name), the bias/dropout-residual
     * adds (residual_name) and the embedding's dropout (attn_ops, mlp_ops, model_segment_ops) */
    static const char *const names[] = {"layernorm",
                                        "layernorm_bwd",
                                        "rmsnorm",
                                        "rmsnorm_bwd",
                                        "residual",
                                        "dropout_residual",
                                        "bias_residual",
                                        "dropout_residual_bwd",
                                        "embed_dropout",
                                        "embed_dropout_bwd",
                                        NULL};
    for (const char *const *n = names; *n; n++)
        if (strcmp(op->name, *n) == 0)
            return TRUE;
    return FALSE;
}

gboolean model_op_weight_grad(const ModelOp *op) {
    /* the dB names linear_grads and gemm_grads give weights (attn_out, qkv, mlp_fc1/2, logits,
     * router, expert_fc1/2); the batched GEMMs' dB (attn_context_dv, attn_scores_dk) are
     * activation gradients */
    return g_str_has_suffix(op->name, "_wgrad") || strcmp(op->name, "embedding_bwd") == 0;
}

ModelOp model_op_row_chunk(const ModelOp *op, int k, int e) {
    g_assert(op->kind == OP_GEMM && k >= 1);
    ModelOp c = *op;
    c.m = (op->m + k - 1) / k;
    double M = (double)c.m, N = (double)op->n, K = (double)op->k, B = (double)op->batch;
    c.flops = 2.0 * B * M * N * K;
    c.bytes = B * (M * K + K * N + M * N) * e;
    return c;
}

const char *model_segment_producer(Segment seg) {
    return seg == SEG_ATTN ? "attn_out" : seg == SEG_MLP ? "mlp_fc2" : NULL;
}

void model_op_sequence_split(ModelOp *op, int tp) {
    if (tp <= 1 || !model_op_replicated(op))
        return;
    op->bytes /= tp;
    op->flops /= tp;
}

/* FlashAttention forward: per (sequence, head) S = Q K^T and O = P V (4 s^2 d FLOPs) with the
 * s x s matrix kept on chip; reads Q, K, V, writes O and the row log-sum-exp (fp32). Backward
 * (FlashAttention-2, Dao 2023, Alg. 2): recomputes S and P, then dV, dP, dQ, dK: 5 products,
 * 10 s^2 d FLOPs; reads Q, K, V, O, dO, writes dQ, dK, dV. With grouped-query attention a
 * (sequence, head) pair reads its group's K and V, kv_ratio = kv_heads / heads of a head's worth
 * each once the group's heads share them (FlashAttention-2 indexes the kv head as head / group).
 * Causal: only the s(s+1)/2 scores on and below the diagonal count here; which blocks the kernel
 * visits is the device's business (device.c), since it depends on the kernel's block sizes. */
static void flash(OpList *l, Pass pass, int64_t batch, int64_t s, int64_t d, gboolean causal,
                  double kv_ratio) {
    double B = (double)batch, S = (double)s, D = (double)d;
    /* Q, O (and dO, dQ) per query head; K, V (and dK, dV) per key/value head, kv_ratio of them */
    double qo = fwd_or(pass, 2.0, 4.0), kvt = fwd_or(pass, 2.0, 4.0) * kv_ratio;
    gboolean fwd = pass == PASS_FWD;
    double scores = causal ? S * (S + 1.0) / 2.0 : S * S; /* per (sequence, head) */
    ModelOp op = {fwd ? "flash_attention" : "flash_attention_bwd",
                  OP_ATTENTION,
                  (fwd ? 4.0 : 10.0) * B * scores * D,
                  B * S * ((qo + kvt) * D * l->e + (fwd ? 4.0 : 8.0)),
                  s,
                  s,
                  d,
                  batch,
                  TRUE,
                  OP_LEAD_K, /* the head dimension */
                  causal,
                  FALSE};
    g_array_append_val(l->ops, op);
}

const char *norm_name(const ModelConfig *m, Pass pass) {
    if (m->norm == NORM_RMSNORM)
        return pass == PASS_FWD ? "rmsnorm" : "rmsnorm_bwd";
    return pass == PASS_FWD ? "layernorm" : "layernorm_bwd";
}

/* The residual add after a block: bias, (dropout,) residual, or a plain add without biases. */
const char *residual_name(const ModelConfig *m, gboolean hdrop) {
    return hdrop ? "dropout_residual" : m->no_bias ? "residual" : "bias_residual";
}

/* Attention block: layer norm, QKV projection (column-parallel), rotary embedding, the core,
 * output projection (row-parallel), bias-dropout-add (Megatron-LM's ParallelAttention as
 * GPT-NeoX runs it: without softmax fusion the causal mask is a masked_fill pass of its own; a
 * dropout of probability 0 runs no kernel). */
static void attn_ops(const ModelConfig *m, Pass pass, OpList *l, int64_t b, int64_t s, int tp) {
    int e = l->e;
    int64_t h = m->hidden, bs = b * s, d = h / m->heads, ht = h / tp;
    int64_t kvt = model_kv_width(m) / tp; /* K (and V) columns on this rank */
    int64_t batch = b * (m->heads / tp);  /* (sequence, head) pairs on this rank */
    double bsh = (double)bs * h, bsht = (double)bs * ht, bskv = (double)bs * kvt;
    double kv_ratio = (double)model_kv_heads(m) / m->heads;
    double scores = (double)batch * s * s; /* attention matrix elements */
    gboolean rotary = m->pos_emb == POS_ROTARY, flash_attn = m->attention == ATTN_FLASH;
    gboolean adrop = m->attention_dropout > 0, hdrop = m->hidden_dropout > 0;
    if (pass == PASS_FWD) {
        mem_row(l, norm_name(m, pass), OP_REDUCTION, 2.0 * bsh * e, FALSE, h);
        linear(l, "qkv", bs, ht + 2 * kvt, h);
        if (rotary) /* rotate q and k: read and write each */
            mem(l, "rotary", OP_ELEMENTWISE, 2.0 * (bsht + bskv) * e, FALSE);
        if (flash_attn) {
            flash(l, pass, batch, s, d, m->causal, kv_ratio);
        } else {
            /* ALiBi (Megatron-DeepSpeed's BLOOM attention): the scores are torch.baddbmm(bias,
             * q, k^T, beta=1), whose broadcast (b a/t, 1, s) bias PyTorch first expands and
             * copies into the result, which the batched GEMM then reads back (beta = 1): the
             * s^2 scores written once and read once more (the bias itself is small) */
            if (m->pos_emb == POS_ALIBI)
                mem(l, "alibi", OP_ELEMENTWISE, 2.0 * scores * e, TRUE);
            gemm(l, "attn_scores", OP_BMM, batch, s, s, d, TRUE);
            if (!m->softmax_fusion) /* masked_fill of the causal mask: read and write the scores */
                mem(l, "attn_mask", OP_ELEMENTWISE, 2.0 * scores * e, TRUE);
            /* read the scores, write the probabilities */
            mem_row(l, "softmax", OP_REDUCTION, 2.0 * scores * e, TRUE, s);
            if (adrop) /* and a 1-byte mask */
                mem(l, "attn_dropout", OP_ELEMENTWISE, scores * (2.0 * e + 1.0), TRUE);
            gemm(l, "attn_context", OP_BMM, batch, s, d, s, TRUE);
        }
        linear(l, "attn_out", bs, h, ht);
        fp8_amax(l, 2);
        /* read x and the residual, write the sum (and a 1-byte dropout mask) */
        mem(l, residual_name(m, hdrop), OP_ELEMENTWISE, bsh * (3.0 * e + (hdrop ? 1.0 : 0.0)),
            FALSE);
        return;
    }
    if (hdrop) /* the residual's gradient passes through; the dropout's is masked */
        mem(l, "dropout_residual_bwd", OP_ELEMENTWISE, bsh * (2.0 * e + 1.0), FALSE);
    linear_grads(l, "attn_out_dgrad", "attn_out_wgrad", bs, h, ht);
    if (flash_attn) {
        flash(l, pass, batch, s, d, m->causal, kv_ratio);
    } else {
        gemm_grads(l, "attn_context_dgrad", "attn_context_dv", OP_BMM, batch, s, d, s, TRUE);
        if (adrop)
            mem(l, "attn_dropout_bwd", OP_ELEMENTWISE, scores * (2.0 * e + 1.0), TRUE);
        /* read the probabilities and their gradient, write the scores' gradient */
        mem_row(l, "softmax_bwd", OP_REDUCTION, 3.0 * scores * e, TRUE, s);
        if (!m->softmax_fusion) /* zero the masked positions of the gradient */
            mem(l, "attn_mask_bwd", OP_ELEMENTWISE, 2.0 * scores * e, TRUE);
        gemm_grads(l, "attn_scores_dq", "attn_scores_dk", OP_BMM, batch, s, s, d, TRUE);
    }
    if (rotary)
        mem(l, "rotary_bwd", OP_ELEMENTWISE, 2.0 * (bsht + bskv) * e, FALSE);
    linear_grads(l, "qkv_dgrad", "qkv_wgrad", bs, ht + 2 * kvt, h);
    fp8_amax(l, 2);
    /* read the input and the gradient, write the input's gradient */
    mem_row(l, norm_name(m, pass), OP_REDUCTION, 3.0 * bsh * e, FALSE, h);
}

/* MLP block: norm, h -> ffn (column-parallel), bias and GeLU (one kernel when fused), ffn -> h
 * (row-parallel), bias-dropout-add. SwiGLU: h -> 2 ffn (gate and up in one column-parallel GEMM,
 * as Megatron-LM's --swiglu), silu(gate) * up as one element-wise kernel (reads 2 ffn, writes
 * ffn; backward reads both inputs and the gradient, writes two gradients), ffn -> h. */
static void mlp_ops(const ModelConfig *m, Pass pass, OpList *l, int64_t b, int64_t s, int tp) {
    int e = l->e;
    int64_t h = m->hidden, bs = b * s, ft = m->ffn_hidden / tp;
    gboolean swiglu = m->mlp == MLP_SWIGLU, hdrop = m->hidden_dropout > 0;
    int64_t fin = swiglu ? 2 * ft : ft; /* the input GEMM's width on this rank */
    double bsh = (double)bs * h, bsf = (double)bs * ft, bsfin = (double)bs * fin;
    if (pass == PASS_FWD) {
        mem_row(l, norm_name(m, pass), OP_REDUCTION, 2.0 * bsh * e, FALSE, h);
        linear(l, "mlp_fc1", bs, fin, h);
        if (!m->no_bias && !m->bias_gelu_fusion)
            mem(l, "mlp_bias", OP_ELEMENTWISE, 2.0 * bsfin * e, FALSE);
        if (swiglu)
            mem(l, "swiglu", OP_ELEMENTWISE, 3.0 * bsf * e, FALSE);
        else
            mem(l, "gelu", OP_ELEMENTWISE, 2.0 * bsf * e, FALSE);
        linear(l, "mlp_fc2", bs, h, ft);
        fp8_amax(l, 2);
        mem(l, residual_name(m, hdrop), OP_ELEMENTWISE, bsh * (3.0 * e + (hdrop ? 1.0 : 0.0)),
            FALSE);
        return;
    }
    if (hdrop)
        mem(l, "dropout_residual_bwd", OP_ELEMENTWISE, bsh * (2.0 * e + 1.0), FALSE);
    linear_grads(l, "mlp_fc2_dgrad", "mlp_fc2_wgrad", bs, h, ft);
    if (swiglu)
        mem(l, "swiglu_bwd", OP_ELEMENTWISE, 5.0 * bsf * e, FALSE);
    else
        mem(l, "gelu_bwd", OP_ELEMENTWISE, 3.0 * bsf * e, FALSE);
    linear_grads(l, "mlp_fc1_dgrad", "mlp_fc1_wgrad", bs, fin, h);
    fp8_amax(l, 2);
    mem_row(l, norm_name(m, pass), OP_REDUCTION, 3.0 * bsh * e, FALSE, h);
}

void model_segment_ops(const ModelConfig *m, Segment seg, Pass pass, int b, int s, int tp,
                       Precision prec, GArray *ops) {
    OpList l = {ops, model_elem_bytes(prec), prec == PREC_FP8};
    int e = l.e;
    int64_t h = m->hidden, bs = (int64_t)b * s;
    double bsh = (double)bs * h;
    switch (seg) {
    case SEG_ATTN:
        attn_ops(m, pass, &l, b, s, tp);
        break;
    case SEG_MLP:
        mlp_ops(m, pass, &l, b, s, tp);
        break;
    case SEG_EMBED:
        if (pass == PASS_FWD) {
            /* gather b s rows of the (vocabulary-parallel) table, write them */
            mem(&l, "embedding", OP_ELEMENTWISE, 2.0 * bsh * e, FALSE);
            if (m->embed_norm) /* BLOOM's word_embeddings_layernorm, before the dropout */
                mem_row(&l, norm_name(m, pass), OP_REDUCTION, 2.0 * bsh * e, FALSE, h);
            if (m->hidden_dropout > 0)
                mem(&l, "embed_dropout", OP_ELEMENTWISE, bsh * (2.0 * e + 1.0), FALSE);
        } else {
            if (m->hidden_dropout > 0)
                mem(&l, "embed_dropout_bwd", OP_ELEMENTWISE, bsh * (2.0 * e + 1.0), FALSE);
            if (m->embed_norm) /* as a layer's norm backward: read x and dy, write dx */
                mem_row(&l, norm_name(m, pass), OP_REDUCTION, 3.0 * bsh * e, FALSE, h);
            /* scatter-add the gradient rows into the fp32 gradient: read dy, read-modify-write */
            mem(&l, "embedding_bwd", OP_ELEMENTWISE, bsh * (e + 8.0), FALSE);
        }
        break;
    case SEG_HEAD: {
        int64_t v = model_padded_vocab(m, tp) / tp;
        double bsv = (double)bs * (double)v;
        if (pass == PASS_FWD) {
            mem_row(&l, norm_name(m, pass), OP_REDUCTION, 2.0 * bsh * e, FALSE, h);
            gemm(&l, "logits", OP_GEMM, 1, bs, v, h, FALSE);
            /* vocabulary-parallel cross-entropy: logits to fp32, max, sum of exponentials, and the
             * probabilities kept (fp32) for backward */
            mem_row(&l, "cross_entropy", OP_REDUCTION, 2.0 * bsv * (e + 4.0), FALSE, v);
        } else {
            /* the logits' gradient: probabilities minus the one-hot target */
            mem(&l, "cross_entropy_bwd", OP_ELEMENTWISE, bsv * (4.0 + e), FALSE);
            gemm_grads(&l, "logits_dgrad", "logits_wgrad", OP_GEMM, 1, bs, v, h, FALSE);
            mem_row(&l, norm_name(m, pass), OP_REDUCTION, 3.0 * bsh * e, FALSE, h);
        }
        break;
    }
    default:
        g_assert_not_reached();
    }
}

double model_forward_flops(const ModelConfig *m, int b, int s, int tp) {
    double h = m->hidden, bs = (double)b * s;
    /* 2 FLOPs per weight per token, plus Q K^T and P V: 4 b s^2 h (per query head, GQA or not) */
    double layer = 2.0 * bs * model_layer_matrix_params(m) + 4.0 * (double)b * s * s * h;
    /* a MoE layer: each token through k experts (the active parameters) and the router's h x E
     * GEMM; the capacity's padding slots are not model FLOPs */
    int nmoe = model_moe_layers(m, 0, m->layers);
    double kv = (double)model_kv_width(m);
    double moe = 2.0 * bs *
                     (2.0 * h * h + 2.0 * h * kv + model_moe_router_params(m) +
                      m->moe.top_k * (m->mlp == MLP_SWIGLU ? 3.0 : 2.0) * h * model_moe_ffn(m)) +
                 4.0 * (double)b * s * s * h;
    return (m->layers - nmoe) * layer + nmoe * moe +
           2.0 * bs * h * (double)model_padded_vocab(m, tp);
}

double model_neox_flops(const ModelConfig *m, int64_t global_batch, int s, int tp,
                        gboolean checkpoint_activations) {
    /* in get_flops's order of operations, so the figure matches GPT-NeoX's to the last bit */
    double v = (double)model_padded_vocab(m, tp), h = m->hidden, L = m->layers, seq = s;
    double factor = checkpoint_activations ? 4 : 3;
    return 24 * factor * (double)global_batch * seq * L * (h * h) *
           (1.0 + (seq / (6.0 * h)) + (v / (16.0 * L * h)));
}

/* --- memory --------------------------------------------------------------------------------- */

ModelMemory model_memory(const ModelConfig *m, const MemoryCase *c) {
    int seq_len = c->seq_len, micro_batch = c->micro_batch, tp = c->tp, pp = c->pp;
    int stage = c->stage, dp = c->dp, zero = c->zero;
    Precision prec = c->prec;
    Recompute rc = c->rc;
    double inflight = c->inflight;
    ModelMemory mem = {0};
    double psi = 0, psi_x = 0; /* every chunk's parameters; of them the experts' */
    int ep = c->ep > 0 ? c->ep : 1, nmoe = 0;
    for (int k = 0; k < c->vpp; k++) {
        g_autoptr(GArray) units = model_stage_units_ep(
            m, seq_len, tp, ep, pp * c->vpp, schedule_virtual_stage(c->vshape, pp, stage, k));
        for (guint i = 0; i < units->len; i++) {
            const ParamUnit *u = &g_array_index(units, ParamUnit, i);
            double x = model_unit_expert_params(m, u, tp, ep);
            psi += u->params - x;
            psi_x += x;
            nmoe += u->kind == UNIT_LAYER && model_moe_layer(m, u->layer);
        }
    }
    int e = model_elem_bytes(prec);
    /* Mixed precision keeps an fp32 master copy, momentum and variance: 12 bytes/parameter
     * (ZeRO paper, K = 12); pure fp32 Adam keeps momentum and variance: 8. */
    double opt_per_param = c->opt_bytes > 0 ? c->opt_bytes : prec == PREC_FP32 ? 8.0 : 12.0;
    int pe = c->param_bytes > 0 ? c->param_bytes : e, ge = c->grad_bytes > 0 ? c->grad_bytes : e;
    /* Expert parameters are already E/ep per rank; ZeRO partitions them over their own
     * expert-data-parallel group of dp/ep ranks (DeepSpeed's stage_1_and_2.py keeps MoE
     * parameter groups apart and partitions them over the expert-data-parallel group) */
    int edp = c->edp > 0 ? c->edp : dp / ep;
    mem.params_bytes = (psi + psi_x) * pe / (zero >= 3 ? dp : 1);
    mem.grads_bytes = psi * ge / (zero >= 2 ? dp : 1) + psi_x * ge / (zero >= 2 ? edp : 1);
    mem.optimizer_bytes =
        psi * opt_per_param / (zero >= 1 ? dp : 1) + psi_x * opt_per_param / (zero >= 1 ? edp : 1);

    /* Korthikanti et al. 2022 (Sec. 4.1, Eq. 2), bytes per layer per micro-batch with TP and no
     * sequence parallelism, 2-byte activations and 1-byte dropout masks: sbh(10 + 24/t + 5as/(ht)).
     * Replicated over TP: the two layer-norm inputs (4), the QKV and fc1 inputs (2 + 2), the two
     * hidden-dropout masks (1 + 1); split: Q, K, V (6), the projection input (2), GeLU's input
     * and output (16): 24/t; the s^2 terms: softmax output (2), attention-dropout mask (1) and
     * output (2): 5as/(ht). A dropout of probability 0 stores nothing: PyTorch's dropout returns
     * its input (aten/src/ATen/native/Dropout.cpp: is_fused_kernel_acceptable needs p > 0,
     * _dropout_impl returns input when p == 0), and the compute side runs no dropout kernel
     * (attn_ops). So the masks, and the attention-dropout output (the context product reads the
     * softmax output instead), count only when their probability is > 0; with both 0 (every
     * shipped model) a layer keeps sbh(8 + 24/t + 2as/(ht)). Scaled by e/2 for the activations;
     * masks stay 1 byte. */
    double s = seq_len, b = micro_batch, h = m->hidden, a = m->heads, t = tp;
    double scale = e / 2.0, sbh = s * b * h;
    gboolean adrop = m->attention_dropout > 0, hdrop = m->hidden_dropout > 0;
    /* Sequence parallelism (ibid., Sec. 4.2.2, Table 2: sbh(34/t + 5as/(ht))) splits the
     * replicated part along the sequence: the layer norms' and dropouts' inputs and masks (10 of
     * the 34 at fp16) go from sbh to sbh/t; the QKV and fc1 inputs Megatron-LM keeps sharded (and
     * gathers again in backward, par_tp.c) are already in the split term below. */
    double rep = c->sp ? 1.0 / t : 1.0;
    double masks = hdrop ? 2.0 * sbh * rep : 0.0; /* two hidden-dropout masks, 1 byte */
    /* The split term generalised (2-byte units of sbh): Q 2, K and V 2 r each with r =
     * kv_heads / heads (GQA stores the smaller K and V: 4r), the projection input 2; the MLP
     * keeps its input GEMM's output and the output GEMM's input, of width ffn = f: GeLU 2f/h
     * + 2f/h = 4f/h (16 for f = 4h), SwiGLU the gate and up outputs 2 x 2f/h (SwiGLU's
     * backward needs both) and their product 2f/h = 6f/h: the fused kernel (Megatron-LM's
     * bias_swiglu_impl, on by default) saves only its input and recomputes silu(gate) in
     * backward; unfused autograd would keep silu(gate) too (8f/h). RMSNorm saves its input as
     * LayerNorm does (the replicated 8); rotary saves nothing beyond the rotated Q and K the core
     * reads. A GPT-NeoX layer: 2 + 4 + 2 + 16 = 24. */
    double r = (double)model_kv_heads(m) / m->heads, f = m->ffn_hidden;
    double split = 2.0 + 4.0 * r + 2.0 + (m->mlp == MLP_SWIGLU ? 6.0 : 4.0) * f / h;
    double linear = sbh * (8.0 * rep + split / t) * scale + masks; /* what selective keeps */
    double scores = a * s * s * b / t; /* attention matrix elements per rank */
    double full_layer = linear + scores * (2.0 * scale + (adrop ? 1.0 + 2.0 * scale : 0.0));
    if (m->attention == ATTN_FLASH) /* the fused kernel stores no s x s matrix (ibid., Sec. 5); */
        full_layer = linear;        /* FlashAttention regenerates its dropout mask */
    double per_layer;
    double working = 0.0;
    switch (rc) {
    case RECOMPUTE_FULL: /* only each layer's input is kept (sequence-split under sequence
                            parallelism, as the layer receives it); one layer rebuilt at a time */
        per_layer = 2.0 * sbh * scale * rep;
        working = full_layer;
        break;
    case RECOMPUTE_SELECTIVE: /* the s^2 attention terms are recomputed */
        per_layer = linear;
        break;
    default:
        per_layer = full_layer;
    }
    int first; /* chunks of an interleaved stage hold layers / (pp vpp) each (no split then) */
    double layers =
        c->vpp > 1 ? (double)m->layers / pp : (double)model_stage_layers(m, pp, stage, &first);
    double act = layers * per_layer * inflight + working;
    if (nmoe > 0) { /* MoE layers keep more (or less) than dense ones: model_moe.c */
        double extra = model_moe_extra_act_bytes(m, micro_batch, seq_len, tp, prec);
        if (rc == RECOMPUTE_FULL) /* only the inputs are kept; the rebuilt layer may be a MoE one */
            act += MAX(0.0, extra);
        else
            act += nmoe * extra * inflight;
    }
    if (stage == 0 && hdrop) /* embedding dropout mask, 1 byte per element (split along the
                                sequence with sequence parallelism: after the reduce-scatter) */
        act += sbh * rep * c->ends_inflight;
    if (stage == (c->vshape ? 0 : pp - 1)) /* logits in fp32 for the loss and the head's input
                                               (ibid., Sec. 4.3), for every micro-batch in flight
                                               (1 under 1F1B on the last stage) */
        act += 4.0 * sbh / t * (1.0 + (double)model_padded_vocab(m, tp) / h) *
               (c->vshape ? c->head_inflight : c->ends_inflight);
    /* context parallelism: every kept tensor is of the rank's s / cp tokens (Megatron-LM's
     * get_batch_on_this_cp_rank; no s x s term: scenario_cp.c asks for fused attention) */
    mem.activations_bytes = act / (c->seq_split > 1 ? c->seq_split : 1);
    mem.total_bytes =
        mem.params_bytes + mem.grads_bytes + mem.optimizer_bytes + mem.activations_bytes;
    return mem;
}
