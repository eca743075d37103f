/* zeropp: ZeRO++ (Wang et al. 2023, "ZeRO++: Extremely Efficient Collective Communication for
 * Giant Model Training", arXiv 2306.10209) as DeepSpeed implements it, on top of ZeRO-3.
 *
 * For: what replaces ZeRO-3's parameter allgathers and gradient reduce-scatters when
 * parallel.zeropp switches them on, as chains of steps (collectives and the quantization kernels
 * between them) that workload.c emits on one stream; the size of the blocks of data-parallel
 * replicas that layout.c makes DIM_DP_INTRA and DIM_DP_INTER of; hpZ's extra memory.
 *  - qwZ (zero_quantized_weights): every parameter allgather moves int8 values quantized in
 *    blocks, plus one fp32 scale per block (DeepSpeed's CUDAQuantizer: blocks of at most about
 *    8,000 elements), quantized before and dequantized after on the allgather stream.
 *  - hpZ (zero_hpz_partition_size): after a unit's first gather of the iteration a secondary copy
 *    of its parameters is partitioned over the node's DP ranks, and every later gather (backward,
 *    recomputation, further micro-batches) runs within the node.
 *  - qgZ (zero_quantized_gradients): each weight gradient of a bucket is reduced by an int4
 *    all-to-all within the node, a quantized reduction, an int4 all-to-all across nodes and a
 *    dequantize-and-reduce (DeepSpeed's all_to_all_quant_reduce, tensor by tensor); its vectors
 *    by a reduce-scatter each.
 * Not for: emitting tasks (workload.c) or running them (executor.c). */
#ifndef SIM_ZEROPP_H
#define SIM_ZEROPP_H

#include "device.h"
#include "workload.h"

/* One step of a chain on one stream: a collective, or a kernel serving the collective op/dim. */
typedef struct {
    gboolean kernel;  /* a quantization kernel (duration) rather than a collective (bytes) */
    CollOp op;        /* the collective (for a kernel: the one it serves, for the inventory) */
    Dim dim;          /* its group */
    double bytes;     /* collective: message size m, bytes */
    SimTime duration; /* kernel: picoseconds on the device's HBM */
} ZppStep;

#define ZPP_MAX_STEPS 8

/* DeepSpeed CUDAQuantizer.quantize's block count for a tensor of n elements (int8 weights, one
 * fp32 scale per block). */
double zeropp_weight_blocks(double n);

/* The steps of one parameter allgather of a tensor of n elements (gathered, on one TP rank),
 * elem bytes per element unquantized; secondary: hpZ's partition holds it (a use after the unit's
 * first of the iteration). Returns how many were written to out, 0 when ZeRO++ leaves this gather
 * as ZeRO-3's (the caller then issues its own). */
int zeropp_gather_steps(const Scenario *sc, const DeviceSpec *dev, double n, int elem,
                        gboolean secondary, ZppStep *out);

/* Whether qgZ replaces the gradient reduce-scatters (on, and the data-parallel ranks span more
 * than one node). */
gboolean zeropp_qgz(const Scenario *sc);

/* The steps that reduce one gradient tensor of n elements with qgZ: width is the larger of its
 * two dimensions, 0 for a 1-D tensor (which, like a tensor whose size does not divide by twice the
 * world, is reduce-scattered over the data-parallel ranks: one step). Returns 0 when qgZ is off or
 * all data-parallel ranks share one node (DeepSpeed then reduce-scatters the bucket). */
int zeropp_grad_steps(const Scenario *sc, const DeviceSpec *dev, double n, double width,
                      ZppStep *out);

/* hpZ's secondary partition: params / partition elements of elem bytes (0 without hpZ). */
double zeropp_secondary_bytes(const Scenario *sc, double params, int elem);

/* DP replicas of one DIM_DP_INTRA block (LayoutShape.dp_local): the hpZ partition, or the node's
 * DP ranks for qgZ; 1 when neither is on. Replicas simulated once simulate one block (their groups
 * differ inside it) and count it dp / span times. */
int zeropp_replica_span(const Scenario *sc);

#endif
