/* model: the transformer as data. Parameter counts (the study's Eq. 1), per-layer operators with
 * their FLOPs and bytes moved, and memory per GPU (parameters, gradients, optimizer state and
 * activations).
 *
 * For: pure functions of a model configuration and a parallel layout. No I/O, no time: how long an
 * operator takes is device.c's business, and when it runs is the workload's. */
#ifndef SIM_MODEL_H
#define SIM_MODEL_H

#include <glib.h>
#include <stdint.h>

/* Positions: a learned s x h table added to the embedding (GPT-2), rotary embeddings applied to Q
 * and K in every layer (RoFormer; GPT-NeoX, Llama), or ALiBi (Press et al. 2022, "Train Short,
 * Test Long": a per-head linear bias added to the attention scores; BLOOM): no parameters. */
typedef enum { POS_LEARNED, POS_ROTARY, POS_ALIBI } PosEmb;
/* fp8: Transformer Engine style (NVIDIA TE, "Using FP8 with Transformer Engine"; Micikevicius et
 * al. 2022, "FP8 Formats for Deep Learning"): the transformer layers' linear GEMMs in fp8 (E4M3
 * forward, E5M2 gradients) at the device's fp8 peak, everything else (attention's core, norms,
 * the output layer, activations, weights and gradients as stored) in bf16, plus the casts to fp8
 * and the amax bookkeeping of delayed scaling. */
typedef enum { PREC_FP16, PREC_BF16, PREC_FP32, PREC_FP8, PREC_COUNT } Precision;
typedef enum { RECOMPUTE_NONE, RECOMPUTE_SELECTIVE, RECOMPUTE_FULL } Recompute;
/* How attention's core (scores, softmax, dropout, context) runs: as separate kernels that write
 * the s x s score matrix to HBM (Megatron-LM), or as one fused kernel that keeps it on chip
 * (FlashAttention, Dao et al. 2022/2023). Same FLOPs, different memory traffic. */
typedef enum { ATTN_STANDARD, ATTN_FLASH } AttentionImpl;
/* The MLP: GPT's two matrices h -> ffn -> h with GeLU between, or SwiGLU's three (Shazeer 2020,
 * "GLU Variants Improve Transformer"; Llama): gate and up, h -> ffn each (one fused GEMM of width
 * 2 ffn in Megatron-LM), silu(gate) * up, then down, ffn -> h. */
typedef enum { MLP_GELU, MLP_SWIGLU } MlpKind;
/* LayerNorm (weight and bias, h each) or RMSNorm (Zhang and Sennrich 2019; weight only). */
typedef enum { NORM_LAYERNORM, NORM_RMSNORM } NormKind;

/* Mixture of experts (the YAML's `moe:` mapping; model_moe.c has the sources). A MoE layer's
 * MLP is E expert MLPs of the model's mlp kind with a router (a bias-free h x E linear) picking
 * top_k of them per token. */
typedef struct {
    int experts;            /* E; 0: no MoE layers (a dense model) */
    int top_k;              /* k: experts per token */
    int every;              /* MoE on layers l (0-based) with (l + 1) % every == 0: 1 every layer,
                               2 every other (Megatron-DeepSpeed's expert_interval) */
    int ffn_hidden;         /* an expert's MLP width; 0 reads as the model's ffn_hidden */
    double capacity_factor; /* c (training): slots per expert C = ceil(k T / E x c), T tokens */
    int min_capacity;       /* C at least this (DeepSpeed's min_capacity, default 4) */
    double imbalance;       /* busiest expert's load over the mean, >= 1 (1: uniform routing) */
} MoeConfig;

typedef struct {
    char *name;                 /* e.g. "gpt-neox-13b" */
    int layers;                 /* L */
    int hidden;                 /* h */
    int heads;                  /* a: query heads */
    int kv_heads;               /* key/value heads: heads (multi-head), fewer for grouped-query
                                   attention (Ainslie et al. 2023), 1 for multi-query; 0 reads
                                   as heads. K and V are h x kv_heads/heads wide */
    MlpKind mlp;                /* gelu (GPT-NeoX) or swiglu (Llama) */
    NormKind norm;              /* layernorm (GPT-NeoX) or rmsnorm (Llama) */
    gboolean no_bias;           /* linears without biases (Llama; the YAML key is bias: false) */
    int ffn_hidden;             /* MLP width; 4h in GPT-NeoX */
    int vocab;                  /* tokenizer vocabulary before padding */
    int vocab_pad_multiple;     /* padded to a multiple of this x TP (GPT-NeoX: 128) */
    PosEmb pos_emb;             /* learned positions add s*h parameters (Eq. 1) */
    gboolean embed_norm;        /* a LayerNorm on the embedding's output (BLOOM's
                                   --embed-layernorm): 2h parameters, a norm kernel */
    gboolean tied_embeddings;   /* one V x h matrix for input and output */
    gboolean parallel_residual; /* GPT-J style attention+MLP in parallel (20B) */
    int layer_vector_params_h;  /* per-layer bias + layer-norm parameters, in units of h:
                                   8 in the study's Eq. 1, 13 in GPT-NeoX's code; -1: derived
                                   exactly from norm, bias, mlp and kv_heads
                                   (model_layer_vector_params) */
    AttentionImpl attention;    /* standard (default) or flash; GPT-NeoX's attention_config */
    gboolean causal;            /* causal mask (GPT, the default): each query attends to the keys
                                   at or before it. The fused kernel then skips the key blocks
                                   above the diagonal; the standard path computes all s^2 scores
                                   and masks them either way */
    double attention_dropout;   /* probability; 0 runs no dropout kernel (GPT-NeoX configs: 0) */
    double hidden_dropout;      /* after the embedding and each block's output; 0: no kernel */
    gboolean softmax_fusion;    /* one fused scale-mask-softmax kernel instead of a mask kernel
                                   and a softmax kernel (scaled_upper_triang_masked_softmax_fusion) */
    gboolean bias_gelu_fusion;  /* bias add fused into the GeLU kernel (bias_gelu_fusion) */
    MoeConfig moe;              /* mixture of experts (model_moe.c); moe.experts 0: dense */
    /* How the layers split over pipeline stages: not the model's own, but every per-stage count
     * below reads it, so the scenario reads it here (parallel.first_stage_layers and
     * last_stage_layers; Megatron-LM's --decoder-first-pipeline-num-layers and
     * --decoder-last-pipeline-num-layers). 0: that end stage takes an even share of the layers,
     * as every stage does when both are 0 (model_stage_layers). */
    int first_stage_layers, last_stage_layers;
} ModelConfig;

void model_config_clear(ModelConfig *m);

/* Bytes per element for activations, parameters and gradients (fp8: 2, they stay bf16). */
int model_elem_bytes(Precision p);

/* Vocabulary padded as GPT-NeoX does: to a multiple of vocab_pad_multiple * tp. */
int64_t model_padded_vocab(const ModelConfig *m, int tp);

/* Key/value heads (kv_heads, or heads when 0). */
int model_kv_heads(const ModelConfig *m);

/* Width of the K (and of the V) projection: h x kv_heads / heads. */
int64_t model_kv_width(const ModelConfig *m);

/* Weight matrices of one layer, whole (all TP ranks): Q and O h^2 each, K and V h x kv_width
 * each, the MLP 2 h ffn (GeLU) or 3 h ffn (SwiGLU). */
double model_layer_matrix_params(const ModelConfig *m);

/* Vector parameters of one layer (norms and biases): layer_vector_params_h x h when given, else
 * two norms (2h each for LayerNorm, h for RMSNorm) plus, with biases, QKV (h + 2 kv_width),
 * output (h), MLP input (ffn, 2 ffn for SwiGLU) and output (h). GPT-NeoX: 13h. */
double model_layer_vector_params(const ModelConfig *m);

/* Parameters of the final norm: 2h (LayerNorm) or h (RMSNorm). */
double model_norm_params(const ModelConfig *m);

/* Parameters of the whole model (Eq. 1 of the study, generalised): P = (1 or 2)Vh + [sh] +
 * L(matrices + vectors) + final norm, V padded for tp. A GPT-NeoX layer (multi-head, GeLU,
 * LayerNorm, k = layer_vector_params_h) gives Eq. 1's L(4h^2 + 2h ffn + k h) + 2h. */
double model_params(const ModelConfig *m, int seq_len, int tp);

/* Where parameters live. A "unit" is what a ZeRO-3 allgather or a gradient bucket handles at once:
 * the embedding, one transformer layer, or the head (final norm + output projection). */
typedef enum { UNIT_EMBED, UNIT_LAYER, UNIT_HEAD } UnitKind;
typedef struct {
    UnitKind kind;
    int layer;     /* global layer index for UNIT_LAYER, else -1 */
    double params; /* parameters held by one rank of the TP group (its shard); a MoE layer's
                      include its rank's E/ep experts (model_unit_expert_params) */
} ParamUnit;

/* The layers stage `stage` of `pp` holds: their count, and in *first the index of the first. With
 * pp >= 2 and first_stage_layers or last_stage_layers set, the end stages hold those and the other
 * stages share the rest evenly (model_stage_split_fits must hold); else every stage holds
 * layers / pp (pp must divide layers). */
int model_stage_layers(const ModelConfig *m, int pp, int stage, int *first);
/* Whether the model's stage split can be laid over pp stages: none set, or pp >= 2 with each end
 * stage's count at least 1 and the rest a multiple of the stages left (none left: no rest). */
gboolean model_stage_split_fits(const ModelConfig *m, int pp);
/* Whether the model sets a stage split (first_stage_layers or last_stage_layers). */
gboolean model_stage_split_set(const ModelConfig *m);

/* The units pipeline stage `stage` of `pp` holds, in forward order, sharded over tp ranks, its
 * layers as model_stage_layers says. Returns a GArray of ParamUnit. */
GArray *model_stage_units(const ModelConfig *m, int seq_len, int tp, int pp, int stage);

/* The same with expert parallelism ep (ep divides the experts): a MoE layer holds E/ep experts. */
GArray *model_stage_units_ep(const ModelConfig *m, int seq_len, int tp, int ep, int pp, int stage);

/* Of u->params, those of the rank's E/ep experts (0 but for a MoE layer): reduced over the
 * expert-data-parallel group instead of DP. */
double model_unit_expert_params(const ModelConfig *m, const ParamUnit *u, int tp, int ep);

/* Parameters of one rank of a stage: the sum of model_stage_units. */
double model_stage_params(const ModelConfig *m, int seq_len, int tp, int pp, int stage);

/* The parameter tensors of a unit on one TP rank, in the order a framework registers them (sizes
 * in parameters, written to sizes, at most max; returns the count). They add up to u->params.
 * A layer: QKV, attention-output and two MLP weights (sharded by TP), then its vector parameters
 * (layer norm weights and biases, QKV, output and MLP biases) until the model's
 * layer_vector_params_h x h are used up. ZeRO-3 gathers parameters tensor by tensor. */
int model_unit_tensors(const ModelConfig *m, const ParamUnit *u, int seq_len, int tp, double *sizes,
                       int max);

/* --- operators ------------------------------------------------------------------------------ */

/* What bounds an operator's kernel: GEMMs and batched GEMMs (tensor cores, shape-dependent), the
 * fused attention kernel, and two kinds of memory-bound kernels: streaming (each element read and
 * written once: GeLU, dropout, residual adds, the optimizer) and row reductions (layer norm,
 * softmax, cross-entropy), which reach less of the HBM bandwidth. */
typedef enum { OP_GEMM, OP_BMM, OP_ATTENTION, OP_ELEMENTWISE, OP_REDUCTION, OP_COUNT } OpKind;

typedef enum { PASS_FWD, PASS_BWD, PASS_COUNT } Pass;

typedef struct {
    const char *name; /* static string */
    OpKind kind;
    double flops;       /* floating-point operations executed (multiply-add = 2); the causal
                           fused kernel: those of the lower triangle, diagonal included, s(s+1)/2
                           scores per (sequence, head); the device adds the masked halves of
                           the diagonal blocks it computes (DeviceOpCost.flops) */
    double bytes;       /* bytes read and written in HBM, each operand once */
    int64_t m, n, k;    /* GEMM/BMM shape per batch: C[m x n] = A[m x k] B[k x n]; the fused
                           attention kernel: m = n = s, k = d; a row reduction: n = row length;
                           else 0 */
    int64_t batch;      /* BMM batch count: (micro-batch x heads on this rank); 1 for a GEMM */
    gboolean attn_core; /* attention's core (scores, softmax, dropout, context, or the fused
                           kernel): what selective recomputation redoes */
    unsigned lead;      /* OP_LEAD_* of the dimensions that are contiguous in some operand (their
                           alignment decides the kernel's vector width) */
    gboolean causal;    /* the fused attention kernel with a causal mask: query block i visits
                           the keys up to the end of its own block only */
    gboolean fp8;       /* a GEMM with fp8 operands (precision fp8): runs at the device's fp8
                           peak; A and B 1 byte per element, C 2 */
} ModelOp;

/* Whether op does the same work on every TP rank over all s tokens (layer norms, dropout,
 * residual adds: what Korthikanti et al. 2022, Sec. 4.2.2, split along the sequence). */
gboolean model_op_replicated(const ModelOp *op);
/* Whether a backward op computes a weight gradient and nothing else (the W pass of zero-bubble
 * schedules, Qi et al. 2024, Sec. 2): a linear layer's dW = A^T dC GEMM ("*_wgrad", the second
 * of the two equal-FLOP GEMMs its backward is) and the embedding's scatter-add into its table's
 * gradient. Input-gradient GEMMs, the attention core, softmax, norms and element-wise backward
 * ops have no weight gradient of their own or fuse it into the input-gradient kernel: B. */
gboolean model_op_weight_grad(const ModelOp *op);
/* The op as sequence parallelism runs it: a replicated op on s/tp of the tokens, its bytes and
 * FLOPs divided by tp (row reductions keep their row length); other ops unchanged. */
void model_op_sequence_split(ModelOp *op, int tp);
/* Under fp8, the kernel that casts a linear layer's weight (and its transpose) to fp8 (model.c
 * linear): the one a framework that caches fp8 weights runs only in a step's first micro-batch
 * (Framework.fp8_weight_cache). Ops carry this name as their name pointer. */
extern const char MODEL_FP8_WEIGHT_CAST[];
gboolean model_op_is_weight_cast(const ModelOp *op);
/* A GEMM's row chunk: the same GEMM on ceil(m / k) of its m rows (the weight read again), as a
 * producer GEMM split into k chunks runs it (tensor-parallel communication overlap). e: bytes per
 * element. */
ModelOp model_op_row_chunk(const ModelOp *op, int k, int e);

/* Contiguous dimensions. Forward GEMMs (activation x weight^T as nn.Linear, Q K^T, P V) read A
 * along k and write C along n; dA = dC B^T likewise; dB = A^T dC reads A^T along m. */
#define OP_LEAD_M 1u
#define OP_LEAD_N 2u
#define OP_LEAD_K 4u

/* Where an op sits in a Megatron layer: the attention block ends with the first TP allreduce,
 * the MLP block with the second. */
typedef enum { SEG_ATTN, SEG_MLP, SEG_EMBED, SEG_HEAD, SEG_COUNT } Segment;

/* The producer GEMM of a segment's forward, whose output the row-parallel collective carries:
 * "attn_out" for the attention, "mlp_fc2" for the MLP; NULL for the others. */
const char *model_segment_producer(Segment seg);

/* model_unit_tensors, and for each tensor the larger of its two dimensions on this TP rank (a
 * weight [out, in] as torch holds it); 0 for a vector (a 1-D tensor). */
int model_unit_tensor_widths(const ModelConfig *m, const ParamUnit *u, int seq_len, int tp,
                             double *sizes, double *widths, int max);

/* model_unit_tensors, and for each tensor the segment whose backward produces its gradient (a
 * layer's QKV and output weights, first layer norm and attention biases: SEG_ATTN; its MLP
 * weights and biases and second layer norm: SEG_MLP). segs may be NULL. */
int model_unit_tensor_segments(const ModelConfig *m, const ParamUnit *u, int seq_len, int tp,
                               double *sizes, Segment *segs, int max);

/* The kernels of one segment, forward or backward, for one micro-batch of b sequences of s tokens
 * on one TP rank, in the order they run. Appends ModelOp to ops.
 * Backward is written out kernel by kernel: each GEMM C = A B (m, n, k) becomes its two gradient
 * GEMMs, dA = dC B^T (m, k, n) and dB = A^T dC (k, n, m), with their own shapes; memory-bound
 * kernels read the saved input and the incoming gradient and write the outgoing one; the fused
 * attention kernel's backward recomputes the scores (5 products instead of 2, FlashAttention-2). */
void model_segment_ops(const ModelConfig *m, Segment seg, Pass pass, int b, int s, int tp,
                       Precision prec, GArray *ops);

/* Model FLOPs of one forward pass of one micro-batch over the whole model (all TP ranks, all
 * stages), GEMMs and batched GEMMs only: the numerator of MFU. The output projection runs over
 * the vocabulary padded for tp, as the run (and the report's model.vocab) has it. Attention
 * counts all s^2 scores, causal or not (the convention of Narayanan et al. 2021). */
double model_forward_flops(const ModelConfig *m, int b, int s, int tp);

/* FLOPs of one iteration as GPT-NeoX logs them (megatron/logging.py, get_flops, after
 * Megatron-DeepSpeed and Narayanan et al. 2021): 24 f B s L h^2 (1 + s/(6h) + V/(16 L h)) with
 * B the global batch in sequences, V the vocabulary padded for tp, and f = 4 when activations are
 * checkpointed (it counts the recomputed forward), else 3. It assumes a 4h MLP whatever
 * ffn_hidden is. */
double model_neox_flops(const ModelConfig *m, int64_t global_batch, int s, int tp,
                        gboolean checkpoint_activations);

/* --- memory --------------------------------------------------------------------------------- */

typedef struct {
    double params_bytes;      /* model weights held */
    double grads_bytes;       /* gradients held */
    double optimizer_bytes;   /* Adam state (fp32 master, momentum, variance) */
    double activations_bytes; /* stored activations at the peak of the schedule */
    double buffers_bytes;     /* communication buffers: the gradient bucket being reduced and
                                 ZeRO-3's gathered parameters (workload_memory) */
    double hpz_bytes;         /* ZeRO++ hpZ's secondary parameter partition (workload_memory) */
    double total_bytes;
} ModelMemory;

/* Host work (model_host.c, measured by tools/host-calib/count_ops.py): the ATen operators PyTorch
 * eager dispatches for one transformer layer's forward, or its backward (accumulating: not the
 * first micro-batch, AccumulateGrad adds one per tensor); and the operators per kernel launched,
 * for units other than layers. */
int model_layer_host_ops(const ModelConfig *m, gboolean backward, gboolean accumulating);
double model_host_ops_per_kernel(const ModelConfig *m, gboolean backward);
/* nn.Modules in unit u (the unit's own module and every submodule, with or without parameters):
 * DeepSpeed's ZeRO-3 hooks each of them (framework.c). */
int model_unit_modules(const ModelConfig *m, const ParamUnit *u);

/* The layout and settings memory depends on: what one rank of a stage runs and holds (named
 * fields rather than a dozen positional ints, which are easy to swap unseen). */
typedef struct {
    int seq_len, micro_batch, tp, pp;
    int vpp; /* model chunks per stage (interleaved schedule), >= 1: the stage holds
                virtual stages c pp + stage, c = 0..vpp-1, of pp vpp (with vshape: stage and
                2 pp - 1 - stage) */
    int stage, dp, zero;
    Precision prec;
    Recompute rc;
    double inflight; /* micro-batches of the stage's whole layer set whose activations it holds at
                        once (a chunk's counts 1/vpp): 1 without PP; p - stage for 1F1B; all
                        micro-batches for GPipe */
    double ends_inflight; /* micro-batches whose embedding (stage 0) or logits (last stage)
                             activations the stage holds at once: its first (last) chunk's */
    gboolean vshape;      /* the two chunks placed in a V (ZB-V, schedule_virtual_stage): stage
                             0 holds the embedding and the logits, the last stage neither */
    double head_inflight; /* with vshape: micro-batches whose logits stage 0 holds at once (its
                             chunk 1's); ends_inflight counts then the embedding's alone */
    int ep;               /* expert parallelism (0 reads as 1): expert parameters, gradients and
                             optimizer state divided by ep, ZeRO's partition of them over edp */
    int edp;              /* the ranks ZeRO partitions the experts' state over (0: dp / ep) */
    gboolean sp;          /* Megatron-LM's sequence parallelism: what every TP rank kept whole
                             is split along the sequence */
    int seq_split;        /* ranks each sequence's tokens are split over (context parallelism's
                             cp; 0 reads as 1): each rank keeps the activations of s / seq_split
                             tokens (the fused attention context parallelism needs stores no
                             s x s term); dp is then the dp x cp ranks ZeRO partitions over */
    /* Bytes per parameter of the weights, the gradients and the optimizer's state as the
     * training framework keeps them (0: the precision's element size for weights and gradients,
     * 12 for mixed precision's Adam, 8 for fp32's) */
    int param_bytes, grad_bytes;
    double opt_bytes;
} MemoryCase;
/* Memory of one rank of pipeline stage c->stage (Rajbhandari et al. 2020 for the ZeRO stages,
 * Korthikanti et al. 2022 for activations). */
ModelMemory model_memory(const ModelConfig *m, const MemoryCase *c);

/* --- mixture of experts (model_moe.c) -------------------------------------------------------- */

/* Whether layer `layer` (0-based, global) is a MoE layer. */
gboolean model_moe_layer(const ModelConfig *m, int layer);
/* MoE layers among layers [lo, hi). */
int model_moe_layers(const ModelConfig *m, int lo, int hi);
/* An expert's MLP width (moe.ffn_hidden, or ffn_hidden). */
int model_moe_ffn(const ModelConfig *m);
/* One expert's parameters on one TP rank: its matrices / tp plus its biases (whole, as the dense
 * layer's vectors are counted). */
double model_moe_expert_params(const ModelConfig *m, int tp);
/* The router: h x E, no bias, replicated over TP. */
double model_moe_router_params(const ModelConfig *m);
/* Expert slots per expert for `tokens` tokens on a rank: C = max(min_capacity,
 * ceil(tokens / E x k c)) (DeepSpeed sharded_moe.py _capacity). */
int64_t model_moe_capacity(const ModelConfig *m, int64_t tokens);
/* Token rows a rank's experts process and each all-to-all moves, per micro-batch:
 * imbalance x E x C (the dispatched [E, C, h] tensor, scaled to the busiest expert). */
double model_moe_rows(const ModelConfig *m, int64_t tokens);

/* The parts of a MoE layer's MLP block, in forward order: routing (norm, router, top-k, dispatch
 * permutation) before the dispatch all-to-all; the rank's experts; the combine after the second
 * all-to-all (weighted sum, residual). */
typedef enum { MOE_ROUTE, MOE_EXPERTS, MOE_COMBINE, MOE_PART_COUNT } MoePart;
void model_moe_ops(const ModelConfig *m, MoePart part, Pass pass, int b, int s, int tp, int ep,
                   Precision prec, GArray *ops);
/* Activation bytes a MoE layer keeps beyond a dense layer's (can be negative), per micro-batch on
 * one rank, without recomputation (the derivation is in model_moe.c). */
double model_moe_extra_act_bytes(const ModelConfig *m, int b, int s, int tp, Precision prec);

#endif
