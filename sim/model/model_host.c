/* model_host: how many ATen operators the host dispatches for one transformer layer in PyTorch
 * eager, forward and backward, as measured by tools/host-calib/count_ops.py (TorchDispatchMode on
 * Debian's torch 1.13.1, every operator counted whether or not it launches a kernel: views,
 * allocations and casts cost the host as much as a launch). The data and how to rerun it are in
 * tools/host-calib/host_ops.csv and its README; the counts do not depend on the shapes or the
 * device.
 *
 * Styles, each written after its framework's code in count_ops.py:
 * - GPT-NeoX as the study ran it (configs/1-3B.yml: unfused scale, mask and softmax, unfused bias
 *   and GeLU, torch LayerNorm, partial rotary): 68 forward, 109 backward, 12 tensors;
 * - Megatron-LM's fused kernels (one op each for the masked softmax, bias-GeLU and
 *   bias-dropout-add, fused weight-gradient accumulation): 47 forward, 75 backward;
 * - Llama (RMSNorm, rotary, SwiGLU, grouped KV heads): 99 forward, 152 backward, 9 tensors; with
 *   the attention core one fused op (flash attention): 81 and 135.
 * A backward after the first micro-batch adds one accumulation per tensor (AccumulateGrad's add:
 * 121 = 109 + 12 for GPT-NeoX, 161 = 152 + 9 for Llama); Megatron-LM accumulates inside its
 * fused weight-gradient kernel, so its count does not grow. */
#include "model_internal.h"

/* Which measured style a model's layer is. */
typedef enum { STYLE_NEOX, STYLE_MEGATRON, STYLE_LLAMA, STYLE_LLAMA_FLASH } HostStyle;

static HostStyle host_style(const ModelConfig *m) {
    if (m->mlp == MLP_SWIGLU || m->norm == NORM_RMSNORM)
        return m->attention == ATTN_FLASH ? STYLE_LLAMA_FLASH : STYLE_LLAMA;
    if (m->softmax_fusion || m->bias_gelu_fusion || m->attention == ATTN_FLASH)
        return STYLE_MEGATRON;
    return STYLE_NEOX;
}

int model_layer_host_ops(const ModelConfig *m, gboolean backward, gboolean accumulating) {
    static const int fwd[] = {68, 47, 99, 81}, bwd[] = {109, 75, 152, 135};
    static const int accum[] = {12, 0, 9, 9}; /* AccumulateGrad adds, one per tensor */
    HostStyle s = host_style(m);
    return backward ? bwd[s] + (accumulating ? accum[s] : 0) : fwd[s];
}

/* The kernels each style's layer launches in the same measurement (the operators that are not
 * views, allocations or detaches): the host's operators per launched kernel is the ratio. */
double model_host_ops_per_kernel(const ModelConfig *m, gboolean backward) {
    static const double fwd[] = {68.0 / 29, 47.0 / 15, 99.0 / 36, 81.0 / 29};
    static const double bwd[] = {109.0 / 52, 75.0 / 37, 152.0 / 73, 135.0 / 67};
    HostStyle s = host_style(m);
    return backward ? bwd[s] : fwd[s];
}

/* Modules per unit, counted in each style's own model code:
 * - GPT-NeoX (megatron/model/transformer.py ParallelTransformerLayer): the layer, its two
 *   LayerNorms, ParallelSelfAttention with query_key_value, rotary_emb, scale_mask_softmax,
 *   attention_dropout and dense, ParallelMLP with dense_h_to_4h and dense_4h_to_h: 12;
 * - Megatron-LM (legacy megatron/model/transformer.py ParallelTransformerLayer): the layer,
 *   input_norm, ParallelAttention with query_key_value, CoreAttention (scale_mask_softmax,
 *   attention_dropout) and dense, post_attention_norm, ParallelMLP with dense_h_to_4h and
 *   dense_4h_to_h: 12;
 * - Llama (transformers' LlamaDecoderLayer): the layer, input_layernorm, post_attention_layernorm,
 *   LlamaAttention with q_proj, k_proj, v_proj, o_proj and rotary_emb, LlamaMLP with gate_proj,
 *   up_proj, down_proj and act_fn: 14.
 * The embedding unit (word embeddings, learned positions where present, embedding dropout and the
 * wrapper) and the head (final norm, output projection, the wrapper) are counted the same way. */
int model_unit_modules(const ModelConfig *m, const ParamUnit *u) {
    static const int layer[] = {12, 12, 14, 14};
    if (u->kind == UNIT_EMBED)
        return (m->pos_emb == POS_LEARNED ? 4 : 3) + (m->embed_norm ? 1 : 0);
    if (u->kind == UNIT_HEAD)
        return 3;
    return layer[host_style(m)];
}
