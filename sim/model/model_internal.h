/* model_internal: the operator-list helpers model.c and model_moe.c share. Not for use outside
 * sim/model/. */
#ifndef SIM_MODEL_INTERNAL_H
#define SIM_MODEL_INTERNAL_H

#include "model.h"

/* Appends kernels to one list; e is the activation element size, bytes. */
typedef struct {
    GArray *ops;
    int e;
    gboolean fp8; /* the layer's linear GEMMs in fp8 (Transformer Engine) */
} OpList;

/* A layer's vector tensors (norm 1 weight, bias; QKV bias; output bias; norm 2 weight, bias;
 * MLP input bias; MLP output bias), absent ones 0. Returns 8. */
int layer_vectors(const ModelConfig *m, double v[8]);

void gemm_lead(OpList *l, const char *name, OpKind kind, int64_t batch, int64_t mm, int64_t nn,
               int64_t kk, gboolean core, unsigned lead);
void gemm(OpList *l, const char *name, OpKind kind, int64_t batch, int64_t mm, int64_t nn,
          int64_t kk, gboolean core);
void gemm_grads(OpList *l, const char *grad_a, const char *grad_b, OpKind kind, int64_t batch,
                int64_t mm, int64_t nn, int64_t kk, gboolean core);
void mem_row(OpList *l, const char *name, OpKind kind, double bytes, gboolean core, int64_t row);
void mem(OpList *l, const char *name, OpKind kind, double bytes, gboolean core);
void linear(OpList *l, const char *name, int64_t bs, int64_t n, int64_t k);
void linear_grads(OpList *l, const char *grad_a, const char *grad_b, int64_t bs, int64_t n,
                  int64_t k);
void fp8_amax(OpList *l, int gemms);
const char *norm_name(const ModelConfig *m, Pass pass);
const char *residual_name(const ModelConfig *m, gboolean hdrop);

#endif
