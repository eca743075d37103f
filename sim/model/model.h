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

typedef enum { POS_LEARNED, POS_ROTARY } PosEmb;
typedef enum { PREC_FP16, PREC_BF16, PREC_FP32, PREC_COUNT } Precision;
typedef enum { RECOMPUTE_NONE, RECOMPUTE_SELECTIVE, RECOMPUTE_FULL } Recompute;
/* How attention's core (scores, softmax, dropout, context) runs: as separate kernels that write
 * the s x s score matrix to HBM (Megatron-LM), or as one fused kernel that keeps it on chip
 * (FlashAttention, Dao et al. 2022/2023). Same FLOPs, different memory traffic. */
typedef enum { ATTN_STANDARD, ATTN_FLASH } AttentionImpl;

typedef struct {
    char *name;                 /* e.g. "gpt-neox-13b" */
    int layers;                 /* L */
    int hidden;                 /* h */
    int heads;                  /* a */
    int ffn_hidden;             /* MLP width; 4h in GPT-NeoX */
    int vocab;                  /* tokenizer vocabulary before padding */
    int vocab_pad_multiple;     /* padded to a multiple of this x TP (GPT-NeoX: 128) */
    PosEmb pos_emb;             /* learned positions add s*h parameters (Eq. 1) */
    gboolean tied_embeddings;   /* one V x h matrix for input and output */
    gboolean parallel_residual; /* GPT-J style attention+MLP in parallel (20B) */
    int layer_vector_params_h;  /* per-layer bias + layer-norm parameters, in units of h:
                                   8 in the study's Eq. 1, 13 in GPT-NeoX's code */
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
} ModelConfig;

void model_config_clear(ModelConfig *m);

/* Bytes per element for activations, parameters and gradients. */
int model_elem_bytes(Precision p);

/* Vocabulary padded as GPT-NeoX does: to a multiple of vocab_pad_multiple * tp. */
int64_t model_padded_vocab(const ModelConfig *m, int tp);

/* Parameters of the whole model (Eq. 1 of the study, generalised to ffn_hidden and the vector
 * parameter count): P = (1 or 2)Vh + [sh] + L(4h^2 + 2h*ffn + k h) + 2h, V padded for tp. */
double model_params(const ModelConfig *m, int seq_len, int tp);

/* Where parameters live. A "unit" is what a ZeRO-3 allgather or a gradient bucket handles at once:
 * the embedding, one transformer layer, or the head (final norm + output projection). */
typedef enum { UNIT_EMBED, UNIT_LAYER, UNIT_HEAD } UnitKind;
typedef struct {
    UnitKind kind;
    int layer;     /* global layer index for UNIT_LAYER, else -1 */
    double params; /* parameters held by one rank of the TP group (its shard) */
} ParamUnit;

/* The units pipeline stage `stage` of `pp` holds, in forward order, sharded over tp ranks.
 * Layers are split evenly (pp must divide layers). Returns a GArray of ParamUnit. */
GArray *model_stage_units(const ModelConfig *m, int seq_len, int tp, int pp, int stage);

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
} ModelOp;

/* Contiguous dimensions. Forward GEMMs (activation x weight^T as nn.Linear, Q K^T, P V) read A
 * along k and write C along n; dA = dC B^T likewise; dB = A^T dC reads A^T along m. */
#define OP_LEAD_M 1u
#define OP_LEAD_N 2u
#define OP_LEAD_K 4u

/* Where an op sits in a Megatron layer: the attention block ends with the first TP allreduce,
 * the MLP block with the second. */
typedef enum { SEG_ATTN, SEG_MLP, SEG_EMBED, SEG_HEAD, SEG_COUNT } Segment;

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

/* Memory of one rank of pipeline stage `stage` (Rajbhandari et al. 2020 for the ZeRO stages,
 * Korthikanti et al. 2022 for activations). inflight: micro-batches whose activations a stage holds
 * at once (1 without PP; p - stage for 1F1B; all micro-batches for GPipe). */
ModelMemory model_memory(const ModelConfig *m, int seq_len, int micro_batch, int tp, int pp,
                         int stage, int dp, int zero, Precision prec, Recompute rc, int inflight);

#endif
