/* device: a shape-aware roofline per kernel (see device.h for the model and its sources). */
#include "device.h"

#include "machine_error.h"

#include <math.h>
#include <string.h>

void device_spec_clear(DeviceSpec *d) {
    g_clear_pointer(&d->name, g_free);
    for (int i = 0; i < d->nkernels; i++)
        g_clear_pointer(&d->kernels[i].name, g_free);
    d->nkernels = 0;
}

/* Share of HBM bandwidth a memory-bound kernel reaches: its measured entry if the device has one,
 * else its class's. O(kernels) string compares; called when programs are built, not per event. */
static double mem_efficiency(const DeviceSpec *d, const char *name, int64_t row, MemClass mc) {
    for (int i = 0; i < d->nkernels; i++) {
        const DeviceKernel *k = &d->kernels[i];
        if (strcmp(k->name, name) != 0)
            continue;
        for (int j = 0; j < k->nrows; j++)
            if (row <= k->max_row[j])
                return k->efficiency[j];
        return k->efficiency[k->nrows - 1];
    }
    return d->mem_efficiency[mc];
}

void device_spec_set_roofline(DeviceSpec *d, double gemm_eff, double bmm_eff,
                              double elementwise_eff, double memory_eff) {
    /* One "tile" per output element on one unit, no K padding or overhead, no alignment: compute
     * reduces to FLOPs / (peak x efficiency) exactly. */
    d->compute_units = 1;
    d->ceiling = gemm_eff;
    d->bmm_ceiling = bmm_eff;
    d->flash_ceiling = bmm_eff;
    d->flash_bwd_ceiling = bmm_eff;
    d->flash_head_multiple = 1;
    d->tile_k = 1;
    d->k_overhead = 0.0;
    d->max_split_k = 1;
    d->ntiles = 1;
    d->tiles[0] = (DeviceTile){1, 1, 1.0};
    d->nalign = 0;
    d->mem_efficiency[MEM_STREAMING] = elementwise_eff;
    d->mem_efficiency[MEM_REDUCTION] = elementwise_eff;
    d->mem_efficiency[MEM_GEMM] = memory_eff;
}

double device_compute_factor(const DeviceSpec *d) {
    double clock = d->sustained_clock > 0 ? d->sustained_clock : 1.0;
    double scale = d->compute_scale > 0 ? d->compute_scale : 1.0;
    return clock * scale;
}

static const char *const bound_names[] = {"compute", "memory", "launch"};

const char *device_bound_name(DeviceBound b) {
    return bound_names[b];
}

static int64_t ceil_div(int64_t a, int64_t b) {
    return (a + b - 1) / b;
}

/* Largest power of two dividing v (v > 0). */
static int64_t pow2_part(int64_t v) {
    return v & -v;
}

/* The alignment factor: the smallest power-of-two byte alignment over the op's contiguous
 * dimensions (op->lead), looked up in the device's classes (largest first; below the last class,
 * the last factor). */
static double align_factor(const DeviceSpec *d, const ModelOp *op, int e) {
    if (d->nalign == 0)
        return 1.0;
    int64_t dims[3] = {op->m, op->n, op->k}, a = INT64_MAX;
    for (int i = 0; i < 3; i++)
        if ((op->lead & (1u << i)) && dims[i] > 0)
            a = MIN(a, pow2_part(dims[i] * e));
    if (a == INT64_MAX)
        return 1.0;
    for (int i = 0; i < d->nalign; i++)
        if (a >= d->align[i].bytes)
            return d->align[i].factor;
    return d->align[d->nalign - 1].factor;
}

/* The K loop of an fp8 GEMM. tile_k and k_overhead describe the 16-bit kernels the ceilings were
 * fitted on. A K step moves the same bytes at 1 byte an element: Hopper's warpgroup MMA takes
 * K = 32 fp8 elements an instruction where it takes 16 of bf16 (PTX ISA, wgmma.mma_async shapes
 * m64nNk32 for .e4m3/.e5m2, m64nNk16 for .f16/.bf16), so K pads to twice tile_k. A tile's prologue
 * and epilogue (filling the operand pipeline, converting the fp32 accumulators and writing C in
 * bf16) move the same bytes and take the same time as at 16 bits, which the K loop, running at the
 * fp8 peak, covers in k_overhead x peak_fp8 / peak_bf16 elements. */
static void fp8_k_loop(const DeviceSpec *d, int64_t *tile_k, double *k_overhead) {
    *tile_k = 2 * d->tile_k;
    if (d->peak_flops[PREC_BF16] > 0)
        *k_overhead = d->k_overhead * d->peak_flops[PREC_FP8] / d->peak_flops[PREC_BF16];
}

/* Compute time of batch x (m x n x k) products at the given ceiling: the fastest tile shape and K
 * split, waves of compute_units tiles, K padded to tile_k plus k_overhead per tile (an fp8 GEMM's
 * K loop: fp8_k_loop). Split-K writes fp32 partial sums and reads them back once. Fills the tile
 * fields of c. Seconds. */
static double tiled_compute_s(const DeviceSpec *d, int64_t batch, int64_t m, int64_t n, int64_t k,
                              double ceiling, Precision prec, DeviceOpCost *c) {
    double unit_rate = /* FLOP/s per unit */
        d->peak_flops[prec] * device_compute_factor(d) * ceiling / d->compute_units;
    int64_t tk = d->tile_k;
    double k_overhead = d->k_overhead;
    if (prec == PREC_FP8)
        fp8_k_loop(d, &tk, &k_overhead);
    int64_t kp = ceil_div(k, tk) * tk;
    double partial_bw = d->hbm_bandwidth * d->mem_efficiency[MEM_GEMM];
    double best = INFINITY;
    for (int i = 0; i < d->ntiles; i++) {
        const DeviceTile *t = &d->tiles[i];
        int64_t tiles = batch * ceil_div(m, t->rows) * ceil_div(n, t->cols);
        for (int split = 1; split <= d->max_split_k; split++) {
            int64_t ks = ceil_div(ceil_div(kp, split), tk) * tk; /* K per split, padded */
            if (split > 1 && ks * (split - 1) >= kp)
                break; /* the last split would be empty */
            int64_t units = tiles * split, waves = ceil_div(units, d->compute_units);
            double s = (double)waves * 2.0 * t->rows * t->cols * ((double)ks + k_overhead) /
                       (unit_rate * t->efficiency);
            if (split > 1) /* and a second kernel that reduces them */
                s += 2.0 * split * (double)batch * (double)m * (double)n * 4.0 / partial_bw +
                     sim_time_s(d->launch_overhead);
            if (s < best) {
                best = s;
                c->tile_rows = t->rows;
                c->tile_cols = t->cols;
                c->split_k = split;
                c->tiles = units;
                c->waves = waves;
            }
        }
    }
    return best;
}

/* The fused attention kernel (FlashAttention-2's grid): one work unit per block of query rows (the
 * largest tile's rows) of one (sequence, head), looping over the keys in tile_k steps; the head
 * dimension is padded to the kernel's instantiated sizes (flash_head_multiple). Per unit:
 * `products` (2 forward, 5 backward) rows x d_pad x (keys + k_overhead) multiply-adds.
 *
 * Non-causal, every unit runs s_pad = s rounded up to tile_k keys: waves = ceil(units / compute
 * units). Causal, query block i (rows [i Br, (i+1) Br)) visits the keys up to (i+1) Br, rounded
 * up to tile_k and at most s_pad: FlashAttention-2's n_block_max = ceil((m_block + 1) kBlockM /
 * kBlockN) (flash_fwd_kernel.h, compute_attn_1rowblock; PyTorch vendors it under
 * aten/src/ATen/native/transformers/cuda/flash_attn/). Its backward runs one unit per key block
 * and visits the query blocks from the diagonal down (m_block_min in flash_bwd_kernel.h): the same
 * triangle of tiles, transposed, so the same count is used for both. With s = n Br and tile_k
 * dividing Br that is (n+1)/(2n) of the tiles. The units differ in length; the GPU's block
 * scheduler fills compute units as others finish, so the kernel takes the waves its total key
 * steps fill with full-length units, rounded up: ceil(sum_i (keys_i + k_overhead) batch /
 * ((s_pad + k_overhead) compute_units)). The ceilings were measured non-causal (kern_bench.py
 * calls SDPA with is_causal=False) and are applied to the tiles executed.
 * Fills the tile fields and executed FLOPs of c. Seconds. O(s / rows). */
static double flash_compute_s(const DeviceSpec *d, const ModelOp *op, Precision prec,
                              DeviceOpCost *c) {
    int64_t rows = d->tiles[0].rows, tk = d->tile_k, s = op->m;
    int64_t dpad = ceil_div(op->k, d->flash_head_multiple) * d->flash_head_multiple;
    int64_t spad = ceil_div(op->n, tk) * tk, blocks = ceil_div(s, rows);
    double batch = (double)op->batch, dh = (double)op->k;
    /* scores op->flops counts per (sequence, head): s^2, or s(s+1)/2 causal */
    double scores = op->causal ? (double)s * ((double)s + 1.0) / 2.0 : (double)s * (double)op->n;
    double products = round(op->flops / (2.0 * batch * scores * dh));
    double ceiling = products > 2.0 ? d->flash_bwd_ceiling : d->flash_ceiling;
    double unit_rate = d->peak_flops[prec] * device_compute_factor(d) * ceiling / d->compute_units;
    double full = (double)spad + d->k_overhead; /* K steps of a unit that visits every key */
    double steps = 0, executed = 0;             /* per (sequence, head): K steps, score elements */
    for (int64_t i = 0; i < blocks; i++) {
        int64_t keys = op->causal ? MIN(spad, ceil_div((i + 1) * rows, tk) * tk) : spad;
        steps += (double)keys + d->k_overhead;
        executed += (double)MIN(rows, s - i * rows) * (double)MIN(keys, op->n);
    }
    c->tiles = op->batch * blocks;
    /* full-length units the key steps fill; exact for the non-causal kernel (steps = blocks x
     * full), a relative guard against rounding up an integer that lost its last bit */
    double units = batch * steps / full;
    c->waves = (int64_t)ceil(units / d->compute_units * (1.0 - 1e-12));
    c->tile_rows = (int)rows;
    c->tile_cols = (int)dpad;
    c->split_k = 1;
    c->align = align_factor(d, op, model_elem_bytes(prec));
    c->flops = products * 2.0 * batch * executed * dh;
    return (double)c->waves * products * 2.0 * (double)rows * (double)dpad * full / unit_rate /
           c->align;
}

DeviceOpCost device_op_cost(const DeviceSpec *d, const ModelOp *op, Precision prec) {
    DeviceOpCost c = {0};
    /* an fp8 GEMM runs at the fp8 peak on 1-byte operands; under precision fp8 every other
     * kernel is bf16, at the bf16 peak */
    if (op->fp8)
        prec = PREC_FP8;
    else if (prec == PREC_FP8)
        prec = PREC_BF16;
    int e = op->fp8 ? 1 : model_elem_bytes(prec);
    MemClass mc = op->kind == OP_ELEMENTWISE ? MEM_STREAMING
                  : op->kind == OP_REDUCTION ? MEM_REDUCTION
                                             : MEM_GEMM;
    double meff = op->kind == OP_ELEMENTWISE || op->kind == OP_REDUCTION
                      ? mem_efficiency(d, op->name, op->n, mc)
                      : d->mem_efficiency[mc];
    c.memory_s = op->bytes / (d->hbm_bandwidth * meff);
    c.align = 1.0;
    c.flops = op->flops;
    if (op->kind == OP_GEMM || op->kind == OP_BMM) {
        c.align = align_factor(d, op, e);
        double ceiling = op->kind == OP_GEMM ? d->ceiling : d->bmm_ceiling;
        c.compute_s =
            tiled_compute_s(d, op->batch, op->m, op->n, op->k, ceiling, prec, &c) / c.align;
    } else if (op->kind == OP_ATTENTION) {
        c.compute_s = flash_compute_s(d, op, prec, &c);
    }
    double body = fmax(c.compute_s, c.memory_s);
    c.time = sim_time_add(sim_time_from_s(body), d->launch_overhead);
    double t = sim_time_s(c.time);
    c.bound = c.compute_s >= c.memory_s ? DEVICE_BOUND_COMPUTE : DEVICE_BOUND_MEMORY;
    if (sim_time_s(d->launch_overhead) > body)
        c.bound = DEVICE_BOUND_LAUNCH;
    c.efficiency = t > 0 ? c.flops / t / d->peak_flops[prec] : 0.0;
    c.bandwidth = t > 0 ? op->bytes / t : 0.0;
    return c;
}

SimTime device_op_time(const DeviceSpec *d, const ModelOp *op, Precision prec) {
    return device_op_cost(d, op, prec).time;
}

double device_optimizer_bytes_per_param(Precision prec) {
    double e = model_elem_bytes(prec);
    return prec == PREC_FP32 ? 4.0 * 3 + 4.0 * 3 : e + 12.0 + 12.0 + e;
}

SimTime device_optimizer_time(const DeviceSpec *d, double params, Precision prec) {
    double bytes = params * device_optimizer_bytes_per_param(prec);
    double eff = mem_efficiency(d, "adam", 0, MEM_STREAMING);
    return sim_time_add(sim_time_from_s(bytes / (d->hbm_bandwidth * eff)), d->launch_overhead);
}

/* --- the ops table --------------------------------------------------------------------------- */

static const char *const kind_names[OP_COUNT] = {"gemm", "bmm", "attention", "elementwise",
                                                 "reduction"};

typedef struct {
    double time_s, flops;
} Tally;

/* One kernel; share_of: the time its share is of (the layer, or the embedding or head). */
static void write_row(FILE *out, const char *pass, const ModelOp *op, const DeviceOpCost *c,
                      double share_of, gboolean csv) {
    double t = sim_time_s(c->time);
    char shape[64] = "", tile[32] = "";
    if (op->kind != OP_ELEMENTWISE && op->kind != OP_REDUCTION) {
        if (op->batch > 1)
            g_snprintf(shape, sizeof shape, "%" G_GINT64_FORMAT "x", op->batch);
        g_snprintf(shape + strlen(shape), sizeof shape - strlen(shape),
                   "%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT, op->m, op->n,
                   op->k);
        g_snprintf(tile, sizeof tile, "%dx%d%s", c->tile_rows, c->tile_cols,
                   c->split_k > 1 ? "/s" : "");
        if (c->split_k > 1)
            g_snprintf(tile + strlen(tile), sizeof tile - strlen(tile), "%d", c->split_k);
    }
    if (csv) {
        fprintf(out,
                "%s,%s,%s,%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT
                ",%" G_GINT64_FORMAT ",%.6g,%.6g,%.6g,%.4f,%.4f,%.4f,%s,%d,%d,%d,%" G_GINT64_FORMAT
                ",%.3f\n",
                pass, op->name, kind_names[op->kind], op->batch, op->m, op->n, op->k, c->flops,
                op->bytes, t, c->flops / t / 1e12, c->efficiency, op->bytes / t / 1e9,
                device_bound_name(c->bound), c->tile_rows, c->tile_cols, c->split_k, c->waves,
                c->align);
        return;
    }
    char tflops[16] = "-", eff[16] = "-";
    if (c->flops > 0) {
        g_snprintf(tflops, sizeof tflops, "%.1f", c->flops / t / 1e12);
        g_snprintf(eff, sizeof eff, "%.0f%%", 100.0 * c->efficiency);
    }
    char waves[24] = "";
    if (c->waves > 0)
        g_snprintf(waves, sizeof waves, "%" G_GINT64_FORMAT, c->waves);
    fprintf(out, "%-5s %-20s %-22s %10.1f %5.1f%% %9.2f %8s %5s %8.3f %7.0f  %-7s %-9s %5s%s\n",
            pass, op->name, shape, t * 1e6, share_of > 0 ? 100.0 * t / share_of : 0.0,
            c->flops / 1e9, tflops, eff, op->bytes / 1e9, op->bytes / t / 1e9,
            device_bound_name(c->bound), tile, waves, c->align < 1.0 ? " misaligned" : "");
}

/* Time of a list of kernels, seconds. */
static double list_s(const DeviceSpec *d, const GArray *ops, Precision prec) {
    double s = 0;
    for (guint i = 0; i < ops->len; i++)
        s += sim_time_s(device_op_time(d, &g_array_index(ops, ModelOp, i), prec));
    return s;
}

/* Fails naming the first kernel whose time is beyond SIM_TIME_MAX (a rate too small or a shape
 * too large), which the table would otherwise print as nonsense. */
static gboolean ops_in_range(GArray *seg_ops[SEG_COUNT][PASS_COUNT], const DeviceSpec *d,
                             Precision prec, double opt_params, GError **err) {
    const char *bad = NULL;
    for (int g = 0; g < SEG_COUNT && !bad; g++)
        for (int p = 0; p < PASS_COUNT && !bad; p++)
            for (guint i = 0; i < seg_ops[g][p]->len && !bad; i++) {
                const ModelOp *op = &g_array_index(seg_ops[g][p], ModelOp, i);
                if (device_op_time(d, op, prec) == SIM_TIME_MAX)
                    bad = op->name;
            }
    if (!bad && device_optimizer_time(d, opt_params, prec) == SIM_TIME_MAX)
        bad = "adam";
    if (!bad)
        return TRUE;
    g_set_error(err, MACHINE_ERROR, MACHINE_ERROR_RANGE,
                "kernel '%s' would take longer than %.0f days on %s, beyond what 64-bit "
                "picoseconds hold: peak_flops or hbm_bandwidth too small, or micro_batch x seq_len "
                "too large?",
                bad, (double)SIM_TIME_MAX / (double)SIM_PS_PER_S / 86400.0, d->name);
    return FALSE;
}

gboolean device_ops_in_range(const DeviceSpec *d, const ModelConfig *m, int b, int s, int tp,
                             Precision prec, double opt_params, GError **err) {
    GArray *seg_ops[SEG_COUNT][PASS_COUNT];
    for (int g = 0; g < SEG_COUNT; g++)
        for (int p = 0; p < PASS_COUNT; p++) {
            seg_ops[g][p] = g_array_new(FALSE, FALSE, sizeof(ModelOp));
            model_segment_ops(m, g, p, b, s, tp, prec, seg_ops[g][p]);
        }
    gboolean ok = ops_in_range(seg_ops, d, prec, opt_params, err);
    for (int g = 0; g < SEG_COUNT; g++)
        for (int p = 0; p < PASS_COUNT; p++)
            g_array_unref(seg_ops[g][p]);
    return ok;
}

gboolean device_write_ops(FILE *out, const DeviceSpec *d, const ModelConfig *m, int b, int s,
                          int tp, Precision prec, Recompute rc, double opt_params, gboolean csv,
                          GError **err) {
    GArray *seg_ops[SEG_COUNT][PASS_COUNT];
    for (int g = 0; g < SEG_COUNT; g++)
        for (int p = 0; p < PASS_COUNT; p++) {
            seg_ops[g][p] = g_array_new(FALSE, FALSE, sizeof(ModelOp));
            model_segment_ops(m, g, p, b, s, tp, prec, seg_ops[g][p]);
        }
    if (!ops_in_range(seg_ops, d, prec, opt_params, err)) {
        for (int g = 0; g < SEG_COUNT; g++)
            for (int p = 0; p < PASS_COUNT; p++)
                g_array_unref(seg_ops[g][p]);
        return FALSE;
    }
    /* One layer: attention and MLP forward, their recomputation, backward. */
    struct {
        const char *pass;
        Segment seg;
        Pass p;
    } layer[6];
    int nlayer = 0;
    layer[nlayer++] = (typeof(layer[0])){"fwd", SEG_ATTN, PASS_FWD};
    layer[nlayer++] = (typeof(layer[0])){"fwd", SEG_MLP, PASS_FWD};
    if (rc == RECOMPUTE_FULL) {
        layer[nlayer++] = (typeof(layer[0])){"rec", SEG_ATTN, PASS_FWD};
        layer[nlayer++] = (typeof(layer[0])){"rec", SEG_MLP, PASS_FWD};
    }
    layer[nlayer++] = (typeof(layer[0])){"bwd", SEG_MLP, PASS_BWD};
    layer[nlayer++] = (typeof(layer[0])){"bwd", SEG_ATTN, PASS_BWD};

    double layer_s = 0, pass_s[3] = {0};
    for (int i = 0; i < nlayer; i++) {
        double t = list_s(d, seg_ops[layer[i].seg][layer[i].p], prec);
        layer_s += t;
        pass_s[layer[i].pass[0] == 'f' ? 0 : layer[i].pass[0] == 'r' ? 1 : 2] += t;
    }
    double sel_s = 0; /* selective recomputation: the attention core again */
    if (rc == RECOMPUTE_SELECTIVE) {
        const GArray *fa = seg_ops[SEG_ATTN][PASS_FWD];
        for (guint i = 0; i < fa->len; i++)
            if (g_array_index(fa, ModelOp, i).attn_core)
                sel_s += sim_time_s(device_op_time(d, &g_array_index(fa, ModelOp, i), prec));
        layer_s += sel_s;
        pass_s[1] += sel_s;
    }

    if (csv)
        fputs("pass,kernel,kind,batch,m,n,k,flops,bytes,time_s,tflops,efficiency,gbps,bound,"
              "tile_rows,tile_cols,split_k,waves,align\n",
              out);
    else {
        fprintf(out,
                "kernels of one transformer layer: %s on %s\n"
                "micro-batch %d x sequence %d, TP %d, %s, attention %s, recompute %s; per "
                "micro-batch, one TP rank\n\n",
                m->name, d->name, b, s, tp,
                prec == PREC_FP32   ? "fp32"
                : prec == PREC_BF16 ? "bf16"
                : prec == PREC_FP8  ? "fp8 GEMMs, bf16 elsewhere"
                                    : "fp16",
                m->attention == ATTN_FLASH ? "flash" : "standard",
                rc == RECOMPUTE_FULL        ? "full"
                : rc == RECOMPUTE_SELECTIVE ? "selective"
                                            : "none");
        fprintf(out, "%-5s %-20s %-22s %10s %6s %9s %8s %5s %8s %7s  %-7s %-9s %5s\n", "pass",
                "kernel", "shape (b x m x n x k)", "time us", "share", "GFLOP", "TFLOP/s", "eff",
                "GB", "GB/s", "bound", "tile", "waves");
    }
    Tally by_kind[OP_COUNT] = {{0}};
    for (int i = 0; i < nlayer; i++) {
        const GArray *ops = seg_ops[layer[i].seg][layer[i].p];
        for (guint j = 0; j < ops->len; j++) {
            const ModelOp *op = &g_array_index(ops, ModelOp, j);
            DeviceOpCost c = device_op_cost(d, op, prec);
            write_row(out, layer[i].pass, op, &c, layer_s, csv);
            by_kind[op->kind].time_s += sim_time_s(c.time);
            by_kind[op->kind].flops += c.flops;
        }
    }
    if (rc == RECOMPUTE_SELECTIVE) {
        const GArray *fa = seg_ops[SEG_ATTN][PASS_FWD];
        for (guint j = 0; j < fa->len; j++) {
            const ModelOp *op = &g_array_index(fa, ModelOp, j);
            if (!op->attn_core)
                continue;
            DeviceOpCost c = device_op_cost(d, op, prec);
            write_row(out, "rec", op, &c, layer_s, csv);
            by_kind[op->kind].time_s += sim_time_s(c.time);
            by_kind[op->kind].flops += c.flops;
        }
    }
    if (!csv) {
        double flops = 0;
        for (int k = 0; k < OP_COUNT; k++)
            flops += by_kind[k].flops;
        fprintf(out,
                "\nlayer      %.3f ms = forward %.3f + recompute %.3f + backward %.3f; "
                "%.1f TFLOP/s executed (%.0f%% of peak)\n",
                layer_s * 1e3, pass_s[0] * 1e3, pass_s[1] * 1e3, pass_s[2] * 1e3,
                flops / layer_s / 1e12, 100.0 * flops / layer_s / d->peak_flops[prec]);
        fputs("where the layer's time goes:\n", out);
        for (int k = 0; k < OP_COUNT; k++) {
            if (by_kind[k].time_s <= 0)
                continue;
            fprintf(out, "  %-12s %5.1f%% of the time", kind_names[k],
                    100.0 * by_kind[k].time_s / layer_s);
            if (by_kind[k].flops > 0)
                fprintf(out, ", %6.1f TFLOP/s (%.0f%% of peak)",
                        by_kind[k].flops / by_kind[k].time_s / 1e12,
                        100.0 * by_kind[k].flops / by_kind[k].time_s / d->peak_flops[prec]);
            fputc('\n', out);
        }
    }
    /* embedding, head, optimizer */
    static const struct {
        Segment seg;
        const char *label;
    } ends[] = {{SEG_EMBED, "embedding"}, {SEG_HEAD, "head"}};
    if (!csv)
        fputs("\nonce per micro-batch (first and last pipeline stage):\n", out);
    for (size_t g = 0; g < G_N_ELEMENTS(ends); g++) {
        double seg_s = list_s(d, seg_ops[ends[g].seg][PASS_FWD], prec) +
                       list_s(d, seg_ops[ends[g].seg][PASS_BWD], prec);
        for (int p = 0; p < PASS_COUNT; p++) {
            const GArray *ops = seg_ops[ends[g].seg][p];
            for (guint j = 0; j < ops->len; j++) {
                const ModelOp *op = &g_array_index(ops, ModelOp, j);
                DeviceOpCost c = device_op_cost(d, op, prec);
                write_row(out, p == PASS_FWD ? "fwd" : "bwd", op, &c, seg_s, csv);
            }
        }
        if (!csv)
            fprintf(out, "%-9s  %.3f ms forward + backward (shares above are of this)\n",
                    ends[g].label, seg_s * 1e3);
    }
    ModelOp opt = {"adam", OP_ELEMENTWISE,
                   0.0,    opt_params * device_optimizer_bytes_per_param(prec),
                   0,      0,
                   0,      1,
                   FALSE,  0,
                   FALSE,  FALSE};
    DeviceOpCost oc = {0};
    oc.align = 1.0;
    oc.time = device_optimizer_time(d, opt_params, prec);
    oc.memory_s = sim_time_s(oc.time);
    oc.bound = DEVICE_BOUND_MEMORY;
    oc.bandwidth = opt.bytes / oc.memory_s;
    if (!csv)
        fprintf(out, "\nonce per iteration: the optimizer over %.4g local parameters\n",
                opt_params);
    write_row(out, "opt", &opt, &oc, oc.memory_s, csv);
    for (int g = 0; g < SEG_COUNT; g++)
        for (int p = 0; p < PASS_COUNT; p++)
            g_array_unref(seg_ops[g][p]);
    return TRUE;
}
