/* zeropp: ZeRO++'s communication (see zeropp.h), with its sources.
 *
 * Volumes per rank per iteration (the study's Sec. III definition, collective over g ranks moves
 * m(g-1)/g; all-to-all likewise), M = 2P bytes the fp16 parameters of a rank's stage, d DP ranks,
 * q of them per node, N = d/q nodes; the paper's Sec. 3 counts cross-node traffic in units of M:
 *   ZeRO-3:  allgather dp 2 x M(d-1)/d (forward, backward), reduce_scatter dp M(d-1)/d: 3M.
 *   qwZ:     each allgather of a tensor of n elements moves n int8 bytes, n(g-1)/g, and the fp32
 *            scales of its shard, 4 B(n/g) g (g-1)/g = 4 B(n/g)(g-1), where B is DeepSpeed's block
 *            count (zeropp_weight_blocks): forward P(d-1)/d + scales = 0.5 M(d-1)/d + scales.
 *   hpZ:     gathers after a unit's first move over the node's q ranks (dp_intra): backward
 *            M(q-1)/q in fp16 (P(q-1)/q with qwZ), and 0 across nodes.
 *   qgZ:     a bucket of b elements: all_to_all dp_intra of b/2 int4 bytes, (b/2)(q-1)/q, and 4b/h
 *            bytes of scales (one per h elements); then all_to_all dp_inter of b/(2q) bytes,
 *            (b/(2q))(N-1)/N, and 4b/(hq) of scales. Summed over the buckets (sum b = P):
 *            intra (M/4)(q-1)/q, inter (M/(4q))(N-1)/N per GPU, so (M/4)(N-1)/N per node's
 *            NICs: the paper's 0.25M across nodes, against ZeRO-3's M.
 * With all three on: forward 0.5M across nodes, backward allgather 0 across nodes, gradients
 * 0.25M: the paper's 0.75M against ZeRO-3's 3M (its Table 1 / Sec. 3 summary). */
#include "zeropp.h"

#include <math.h>

/* CUDAQuantizer (deepspeed/runtime/zero/partition_parameters.py): target_group_size = 8000 ("the
 * optimal size is 4k, so we set the target to be below 8k"); groups = ceil(n / 8000), raised until
 * n is a multiple of 8 groups, then doubled while n stays a multiple of 16 groups and the group
 * is over 8000 elements. DeepSpeed asserts n is a multiple of 8; for other n (not a real
 * DeepSpeed case) we keep ceil(n / 8000). */
#define ZPP_TARGET_GROUP 8000.0

double zeropp_weight_blocks(double n) {
    double g0 = ceil(n / ZPP_TARGET_GROUP);
    if (n < 8 || fmod(n, 8.0) != 0)
        return MAX(g0, 1.0);
    double g = g0;
    while (g < n && fmod(n, 8.0 * g) != 0) /* ends by g = n / 8 at the latest */
        g++;
    while (fmod(n, 16.0 * g) == 0 && n / g > ZPP_TARGET_GROUP)
        g *= 2;
    return g;
}

/* A memory-bound kernel that reads and writes `bytes` in HBM, costed as a streaming element-wise
 * op by the GPU model (device.c: bytes over the device's streaming bandwidth, plus its launch
 * overhead). */
static SimTime kernel_time(const DeviceSpec *dev, const char *name, double bytes) {
    ModelOp op = {.name = name, .kind = OP_ELEMENTWISE, .bytes = bytes};
    return device_op_time(dev, &op, PREC_FP16);
}

static int add_coll(ZppStep *out, int k, CollOp op, Dim dim, double bytes) {
    out[k] = (ZppStep){.op = op, .dim = dim, .bytes = bytes};
    return k + 1;
}

static int add_kernel(ZppStep *out, int k, CollOp op, Dim dim, SimTime t) {
    out[k] = (ZppStep){.kernel = TRUE, .op = op, .dim = dim, .duration = t};
    return k + 1;
}

int zeropp_gather_steps(const Scenario *sc, const DeviceSpec *dev, double n, int elem,
                        gboolean secondary, ZppStep *out) {
    const ZeroPP *z = &sc->zpp;
    gboolean hpz = secondary && z->hpz > 0;
    if (!z->qwz && !hpz)
        return 0;
    Dim dim = hpz ? DIM_DP_INTRA : DIM_DP;
    int g = hpz ? z->hpz : sc->dp;
    if (!z->qwz) /* hpZ alone: ZeRO-3's fp16 allgather, within the node */
        return add_coll(out, 0, COLL_ALLGATHER, dim, n * elem);
    /* qwZ: the shard (DeepSpeed pads it to ceil(n / g) elements) quantized to int8 with one fp32
     * scale per block; two allgathers, values and scales (all_gather_coalesced with quantize:
     * _dist_allgather_fn of quantized_param, then of scales), launched on the coordinator's
     * allgather stream; dequantize the gathered tensor, which the handle's wait() does on the
     * same stream (partitioned_param_coordinator.py, fetch_sub_module). */
    double shard = ceil(n / g), blocks = zeropp_weight_blocks(shard);
    int k = 0;
    k = add_kernel(out, k, COLL_ALLGATHER, dim,
                   kernel_time(dev, "zeropp_quantize", shard * elem + shard + 4 * blocks));
    k = add_coll(out, k, COLL_ALLGATHER, dim, n);
    k = add_coll(out, k, COLL_ALLGATHER, dim, 4 * blocks * g);
    k = add_kernel(out, k, COLL_ALLGATHER, dim,
                   kernel_time(dev, "zeropp_dequantize", n + 4 * blocks * g + n * elem));
    return k;
}

gboolean zeropp_qgz(const Scenario *sc) {
    int q = sc->zpp.local, nodes = q > 0 ? sc->dp / q : 1;
    return sc->zpp.qgz && nodes > 1; /* DeepSpeed: num_nodes == 1 reduce-scatters */
}

int zeropp_grad_steps(const Scenario *sc, const DeviceSpec *dev, double n, double width,
                      ZppStep *out) {
    int q = sc->zpp.local;
    if (!zeropp_qgz(sc))
        return 0;
    double e = 2, world = sc->gpus; /* the gradients are fp16 or bf16 */
    /* all_to_all_quant_reduce (deepspeed/runtime/comm/coalesced_collectives.py) takes the bucket's
     * gradients one tensor at a time. A 1-D tensor, or one whose numel is not a multiple of
     * 2 x world ("the constraint of 2-stage all-to-all"), goes through reduce_scatter_coalesced
     * of that tensor alone over the data-parallel ranks. */
    if (width <= 0 || fmod(n, 2 * world) != 0)
        return add_coll(out, 0, COLL_REDUCE_SCATTER, DIM_DP, n * e);
    /* A weight: swizzle_quant to int4 with intra_quant_group = max(rows, cols, world) scales,
     * all_to_all_single of values and scales in the node's group, quantized_reduction to 1/q of
     * the values (inter_quant_group = intra / q scales), all_to_all_single of both across nodes,
     * dequantize, and the average of the N chunks. */
    double groups = MAX(width, world);
    double v1 = n / 2, s1 = 4 * groups, v2 = v1 / q, s2 = s1 / q;
    int k = 0;
    k = add_kernel(out, k, COLL_ALL_TO_ALL, DIM_DP_INTRA,
                   kernel_time(dev, "zeropp_swizzle_quant", n * e + v1 + s1));
    k = add_coll(out, k, COLL_ALL_TO_ALL, DIM_DP_INTRA, v1);
    k = add_coll(out, k, COLL_ALL_TO_ALL, DIM_DP_INTRA, s1);
    k = add_kernel(out, k, COLL_ALL_TO_ALL, DIM_DP_INTER,
                   kernel_time(dev, "zeropp_quantized_reduction", v1 + s1 + v2 + s2));
    k = add_coll(out, k, COLL_ALL_TO_ALL, DIM_DP_INTER, v2);
    k = add_coll(out, k, COLL_ALL_TO_ALL, DIM_DP_INTER, s2);
    k = add_kernel(out, k, COLL_ALL_TO_ALL, DIM_DP_INTER,
                   kernel_time(dev, "zeropp_dequantize_reduce",
                               v2 + s2 + n / q * e + n / q * e + n / sc->dp * e));
    return k;
}

double zeropp_secondary_bytes(const Scenario *sc, double params, int elem) {
    /* _partition_param_sec: a secondary tensor of aligned_size / num_ranks_in_param_group
     * elements in the parameters' dtype, kept alongside ZeRO-3's primary shard. */
    return sc->zpp.hpz > 0 ? params / sc->zpp.hpz * elem : 0;
}

int zeropp_replica_span(const Scenario *sc) {
    return sc->zpp.local > 0 ? sc->zpp.local : 1;
}
