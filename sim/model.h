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
int model_unit_tensors(const ModelConfig *m, const ParamUnit *u, int seq_len, int tp,
                       double *sizes, int max);

/* --- operators ------------------------------------------------------------------------------ */

typedef enum { OP_GEMM, OP_BMM, OP_ELEMENTWISE, OP_COUNT } OpKind;

typedef struct {
    const char *name; /* static string */
    OpKind kind;
    double flops;    /* floating-point operations (multiply-add = 2) */
    double bytes;    /* bytes read and written in HBM */
    int64_t m, n, k; /* GEMM/BMM shape per batch (0 for element-wise) */
    int64_t batch;   /* BMM batch count (1 for GEMM) */
} ModelOp;

/* Where an op sits in a Megatron layer: the attention block ends with the first TP allreduce,
 * the MLP block with the second. */
typedef enum { SEG_ATTN, SEG_MLP, SEG_EMBED, SEG_HEAD, SEG_COUNT } Segment;

/* Forward operators of one segment for one micro-batch of b sequences of s tokens on one TP rank.
 * Appends ModelOp to ops. Backward is modelled as twice the forward cost of each operator
 * (a GEMM's data and weight gradients are two GEMMs of the forward's size). */
void model_segment_ops(const ModelConfig *m, Segment seg, int b, int s, int tp, Precision prec,
                       GArray *ops);

/* Model FLOPs of one forward pass of one micro-batch over the whole model (all TP ranks, all
 * stages), GEMMs and batched GEMMs only: the numerator of MFU. */
double model_forward_flops(const ModelConfig *m, int b, int s);

/* --- memory --------------------------------------------------------------------------------- */

typedef struct {
    double params_bytes;      /* model weights held */
    double grads_bytes;       /* gradients held */
    double optimizer_bytes;   /* Adam state (fp32 master, momentum, variance) */
    double activations_bytes; /* stored activations at the peak of the schedule */
    double total_bytes;
} ModelMemory;

/* Memory of one rank of pipeline stage `stage` (Rajbhandari et al. 2020 for the ZeRO stages,
 * Korthikanti et al. 2022 for activations). inflight: micro-batches whose activations a stage holds
 * at once (1 without PP; p - stage for 1F1B; all micro-batches for GPipe). */
ModelMemory model_memory(const ModelConfig *m, int seq_len, int micro_batch, int tp, int pp,
                         int stage, int dp, int zero, Precision prec, Recompute rc, int inflight);

#endif
