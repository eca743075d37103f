/* model_moe: mixture-of-experts layers as data: which layers are MoE, an expert's and the
 * router's parameters, expert capacity, the kernels of a MoE layer's MLP block and the activations
 * it keeps. Pure functions, no time; the all-to-alls around the experts are par_ep.c's.
 *
 * Sources:
 * - DeepSpeed-MoE (Rajbhandari et al., ICML 2022, arXiv 2201.05596) and DeepSpeed's
 *   deepspeed/moe/sharded_moe.py: the gate TopKGate is a bias-free Linear(h, E); top-k routing
 *   with capacity C = ceil(T / E x k c) slots per expert, at least min_capacity (_capacity, called
 *   by top1gating with c and top2gating with 2c), T the tokens of the rank's micro-batch (b s);
 *   the dispatched tensor is [E, C, h] whatever the routing (padding slots included), all-to-all'd
 *   over the expert-parallel group; a rank's E/ep experts then each see ep C rows, E C in all
 *   (deepspeed/moe/experts.py loops over its local experts, one MLP each).
 * - Megatron-DeepSpeed's expert_interval (get_num_experts_per_layer): layer_num = i + 1 is a MoE
 *   layer when layer_num % expert_interval == 0 (every = 2: the second, fourth, ... layer).
 * - Megatron-LM's MoE (megatron/core/transformer/moe/): the alltoall token dispatcher's
 *   permutation (moe_utils.py permute/unpermute) is how the dispatch and combine are costed here:
 *   memory-bound gathers, not DeepSpeed's dense einsum with the [T, E, C] mask.
 * - Mixtral (Jiang et al. 2024, arXiv 2401.04088): SwiGLU experts, top-2 of 8, a router without
 *   bias; the expert MLP is the model's mlp kind with moe.ffn_hidden.
 *
 * Imbalance iota >= 1 (moe.imbalance) is the busiest expert's load over the mean. It scales the
 * rows a rank's experts process and each all-to-all's message to iota E C: the rank holding the
 * busiest expert is the critical one, and every rank's all-to-all waits for it. With iota = 1 this
 * is DeepSpeed's padded [E, C, h] exactly; above 1 it reads as a dropless dispatcher (Megatron's
 * moe_token_dispatcher_type alltoall without capacity) whose largest expert gets iota k T / E x c.
 */
#include "model_internal.h"

#include <math.h>

gboolean model_moe_layer(const ModelConfig *m, int layer) {
    return m->moe.experts > 0 && layer >= 0 && (layer + 1) % m->moe.every == 0;
}

int model_moe_layers(const ModelConfig *m, int lo, int hi) {
    int n = 0;
    for (int l = lo; l < hi; l++)
        n += model_moe_layer(m, l);
    return n;
}

int model_moe_ffn(const ModelConfig *m) {
    return m->moe.ffn_hidden > 0 ? m->moe.ffn_hidden : m->ffn_hidden;
}

double model_moe_expert_params(const ModelConfig *m, int tp) {
    double h = m->hidden, f = model_moe_ffn(m);
    gboolean swiglu = m->mlp == MLP_SWIGLU;
    double matrices = (swiglu ? 3.0 : 2.0) * h * f;
    double biases = m->no_bias ? 0.0 : (swiglu ? 2.0 * f : f) + h; /* fc1 (gate, up) and fc2 */
    return matrices / tp + biases;
}

double model_moe_router_params(const ModelConfig *m) {
    return (double)m->hidden * m->moe.experts;
}

int64_t model_moe_capacity(const ModelConfig *m, int64_t tokens) {
    /* in _capacity's order: ceil((num_tokens / num_experts) * capacity_factor) with the top-k's
     * factor k c */
    double c = ceil(((double)tokens / m->moe.experts) * (m->moe.top_k * m->moe.capacity_factor));
    return MAX((int64_t)c, (int64_t)m->moe.min_capacity);
}

double model_moe_rows(const ModelConfig *m, int64_t tokens) {
    return m->moe.imbalance * m->moe.experts * (double)model_moe_capacity(m, tokens);
}

/* The rank's experts: E/ep MLPs of ep C iota rows each (model_moe_rows / (E/ep)), TP-sharded as
 * the dense MLP (fc1 column-, fc2 row-parallel). */
static void expert_ops(const ModelConfig *m, Pass pass, OpList *l, int64_t rows, int tp,
                       int local) {
    int e = l->e;
    int64_t h = m->hidden, ft = model_moe_ffn(m) / tp;
    gboolean swiglu = m->mlp == MLP_SWIGLU;
    int64_t fin = swiglu ? 2 * ft : ft;
    double rf = (double)rows * ft, rfin = (double)rows * fin;
    for (int x = 0; x < local; x++) {
        if (pass == PASS_FWD) {
            linear(l, "expert_fc1", rows, fin, h);
            if (!m->no_bias && !m->bias_gelu_fusion)
                mem(l, "expert_bias", OP_ELEMENTWISE, 2.0 * rfin * e, FALSE);
            mem(l, swiglu ? "swiglu" : "gelu", OP_ELEMENTWISE, (swiglu ? 3.0 : 2.0) * rf * e,
                FALSE);
            linear(l, "expert_fc2", rows, h, ft);
        } else {
            linear_grads(l, "expert_fc2_dgrad", "expert_fc2_wgrad", rows, h, ft);
            mem(l, swiglu ? "swiglu_bwd" : "gelu_bwd", OP_ELEMENTWISE,
                (swiglu ? 5.0 : 3.0) * rf * e, FALSE);
            linear_grads(l, "expert_fc1_dgrad", "expert_fc1_wgrad", rows, fin, h);
        }
        fp8_amax(l, 2);
    }
}

void model_moe_ops(const ModelConfig *m, MoePart part, Pass pass, int b, int s, int tp, int ep,
                   Precision prec, GArray *ops) {
    OpList l = {ops, model_elem_bytes(prec), prec == PREC_FP8};
    int e = l.e;
    int64_t h = m->hidden, bs = (int64_t)b * s, E = m->moe.experts;
    double bsh = (double)bs * h, bse = (double)bs * E;
    double rows = model_moe_rows(m, bs); /* rows moved and processed: iota E C */
    gboolean hdrop = m->hidden_dropout > 0;
    switch (part) {
    case MOE_ROUTE:
        if (pass == PASS_FWD) {
            mem_row(&l, norm_name(m, pass), OP_REDUCTION, 2.0 * bsh * e, FALSE, h);
            gemm(&l, "router", OP_GEMM, 1, bs, E, h, FALSE); /* replicated over TP */
            /* softmax over E and top-k: read the logits, write fp32 probabilities */
            mem_row(&l, "router_topk", OP_REDUCTION, bse * (e + 4.0), FALSE, E);
            /* permute: read each token's row, write it to its k slots (padding included) */
            mem(&l, "moe_permute", OP_ELEMENTWISE, (bsh + rows * h) * e, FALSE);
        } else {
            mem(&l, "moe_permute_bwd", OP_ELEMENTWISE, (bsh + rows * h) * e, FALSE);
            mem_row(&l, "router_topk_bwd", OP_REDUCTION, bse * (e + 8.0), FALSE, E);
            gemm_grads(&l, "router_dgrad", "router_wgrad", OP_GEMM, 1, bs, E, h, FALSE);
            mem_row(&l, norm_name(m, pass), OP_REDUCTION, 3.0 * bsh * e, FALSE, h);
        }
        break;
    case MOE_EXPERTS: {
        int local = m->moe.experts / ep;
        expert_ops(m, pass, &l, (int64_t)llround(rows / local), tp, local);
        break;
    }
    case MOE_COMBINE:
        if (pass == PASS_FWD) {
            /* unpermute: read the slots and the weights, write the weighted sum of k rows */
            mem(&l, "moe_unpermute", OP_ELEMENTWISE, (rows * h + bsh) * e, FALSE);
            mem(&l, residual_name(m, hdrop), OP_ELEMENTWISE, bsh * (3.0 * e + (hdrop ? 1.0 : 0.0)),
                FALSE);
        } else {
            if (hdrop)
                mem(&l, "dropout_residual_bwd", OP_ELEMENTWISE, bsh * (2.0 * e + 1.0), FALSE);
            /* the slots' gradient (read dy, write rows) and the weights' (read the saved rows) */
            mem(&l, "moe_unpermute_bwd", OP_ELEMENTWISE, (bsh + 2.0 * rows * h) * e, FALSE);
        }
        break;
    default:
        g_assert_not_reached();
    }
}

/* Activations of a MoE layer against a dense one (Korthikanti et al. 2022's accounting, model.c):
 * the attention block and the replicated 8 sbh (two norm inputs, the QKV input and the MLP's
 * input, which is now the router's and the permutation's) are the same. The dense MLP's split term
 * sb f/t x (2e GeLU: its input and output; 3e SwiGLU: gate, up, product) is gone; in its place a
 * MoE layer keeps
 *   4 sbE          the router's fp32 probabilities (top-k's and the weights' backward),
 *   R h e          the experts' input rows (fc1's input: the dispatch all-to-all's output),
 *   R f_e/t c e    the experts' intermediates, c = 2 (GeLU) or 3 (SwiGLU) as the dense MLP's,
 *   R h e          the experts' output rows (the combine's weight gradient reads them),
 * with R = model_moe_rows (iota E C) rows on the rank. Hidden-dropout masks are unchanged. */
double model_moe_extra_act_bytes(const ModelConfig *m, int b, int s, int tp, Precision prec) {
    double e = model_elem_bytes(prec), sb = (double)s * b, h = m->hidden;
    double c = m->mlp == MLP_SWIGLU ? 3.0 : 2.0;
    double R = model_moe_rows(m, (int64_t)b * s);
    double dense = sb * (double)m->ffn_hidden / tp * c * e;
    double moe =
        4.0 * sb * m->moe.experts + 2.0 * R * h * e + R * (double)model_moe_ffn(m) / tp * c * e;
    return moe - dense;
}
