/* scenario_device: a topology's `device:` block (inline or the resolved device file) into a
 * DeviceSpec: peaks, HBM, per-class memory efficiencies, measured kernels, the GEMM model's tiles,
 * waves, split-K and alignment, the flash-attention ceilings, interference. Every value is range
 * checked with FILE:LINE:COLUMN. Where the file comes from is scenario.c's. */
#include <math.h>
#include <string.h>

#include "scenario.h"

/* A list of numbers, e.g. [128, 128, 1.0]: exactly count of them, each in [min, max]. */
static gboolean load_num_tuple(const ConfNode *n, const char *what, int count, double min,
                               double max, double *out, GError **err) {
    if (n->kind != CONF_SEQ || (int)n->items->len != count)
        return conf_fail(err, CONF_ERROR_VALUE, n, "%s must be a list of %d numbers", what, count);
    for (int i = 0; i < count; i++) {
        const ConfNode *it = n->items->pdata[i];
        char *end = NULL;
        double v = it->kind == CONF_SCALAR ? g_ascii_strtod(it->value, &end) : 0.0;
        if (it->kind != CONF_SCALAR || end == it->value || *end || !isfinite(v))
            return conf_fail(err, CONF_ERROR_VALUE, it, "%s: expected a number", what);
        if (v < min || v > max)
            return conf_fail(err, CONF_ERROR_VALUE, it, "%s: %g is not between %g and %g", what, v,
                             min, max);
        out[i] = v;
    }
    return TRUE;
}

static gboolean is_pow2(double v) {
    int64_t i = (int64_t)v;
    return (double)i == v && i > 0 && (i & (i - 1)) == 0;
}

static gboolean load_gemm_model(const ConfNode *g, DeviceSpec *d, GError **err) {
    static const char *const keys[] = {"compute_units", "ceiling",           "bmm_ceiling",
                                       "flash_ceiling", "flash_bwd_ceiling", "flash_head_multiple",
                                       "tile_k",        "k_overhead",        "max_split_k",
                                       "tiles",         "alignment",         NULL};
    int64_t units = 0, tk = 0, split = 1, fhm = 32;
    d->bmm_ceiling = d->flash_ceiling = d->flash_bwd_ceiling = -1;
    if (!conf_check_keys(g, keys, "device.gemm", err) ||
        !conf_int(g, "compute_units", TRUE, 1, 1 << 20, &units, err) ||
        !conf_double(g, "ceiling", TRUE, 1e-6, 1.0, &d->ceiling, err) ||
        !conf_double(g, "bmm_ceiling", FALSE, 1e-6, 1.0, &d->bmm_ceiling, err) ||
        !conf_double(g, "flash_ceiling", FALSE, 1e-6, 1.0, &d->flash_ceiling, err) ||
        !conf_double(g, "flash_bwd_ceiling", FALSE, 1e-6, 1.0, &d->flash_bwd_ceiling, err) ||
        !conf_int(g, "tile_k", TRUE, 1, 4096, &tk, err) ||
        !conf_double(g, "k_overhead", TRUE, 0.0, 1e6, &d->k_overhead, err) ||
        !conf_int(g, "max_split_k", FALSE, 1, 256, &split, err) ||
        !conf_int(g, "flash_head_multiple", FALSE, 1, 1024, &fhm, err))
        return FALSE;
    d->flash_head_multiple = (int)fhm;
    d->compute_units = (int)units;
    d->tile_k = (int)tk;
    d->max_split_k = (int)split;
    if (d->bmm_ceiling < 0)
        d->bmm_ceiling = d->ceiling;
    if (d->flash_ceiling < 0)
        d->flash_ceiling = d->bmm_ceiling;
    if (d->flash_bwd_ceiling < 0)
        d->flash_bwd_ceiling = d->flash_ceiling;
    const ConfNode *tiles = conf_get(g, "tiles"), *align = conf_get(g, "alignment");
    if (!tiles)
        return conf_fail(err, CONF_ERROR_KEY, g,
                         "missing key 'tiles' (a list of [rows, cols, efficiency])");
    if (tiles->kind != CONF_SEQ || tiles->items->len < 1 || tiles->items->len > DEVICE_MAX_TILES)
        return conf_fail(err, CONF_ERROR_VALUE, tiles,
                         "device.gemm.tiles must be a list of 1 to %d [rows, cols, efficiency]",
                         DEVICE_MAX_TILES);
    d->ntiles = (int)tiles->items->len;
    for (int i = 0; i < d->ntiles; i++) {
        double v[3];
        if (!load_num_tuple(tiles->items->pdata[i], "a tile [rows, cols, efficiency]", 3, 0, 4096,
                            v, err))
            return FALSE;
        if (v[0] < 1 || v[1] < 1 || v[0] != floor(v[0]) || v[1] != floor(v[1]) || v[2] <= 0 ||
            v[2] > 1)
            return conf_fail(err, CONF_ERROR_VALUE, tiles->items->pdata[i],
                             "a tile is [rows, cols, efficiency]: whole rows and cols >= 1, "
                             "efficiency in (0, 1]");
        d->tiles[i] = (DeviceTile){(int)v[0], (int)v[1], v[2]};
    }
    d->nalign = 0;
    if (align) {
        if (align->kind != CONF_SEQ || align->items->len > DEVICE_MAX_ALIGN)
            return conf_fail(err, CONF_ERROR_VALUE, align,
                             "device.gemm.alignment must be a list of at most %d [bytes, factor]",
                             DEVICE_MAX_ALIGN);
        for (guint i = 0; i < align->items->len; i++) {
            double v[2];
            const ConfNode *it = align->items->pdata[i];
            if (!load_num_tuple(it, "an alignment class [bytes, factor]", 2, 0, 1 << 20, v, err))
                return FALSE;
            if (!is_pow2(v[0]) || v[1] <= 0 || v[1] > 1)
                return conf_fail(err, CONF_ERROR_VALUE, it,
                                 "an alignment class is [bytes, factor]: bytes a power of two, "
                                 "factor in (0, 1]");
            if (i > 0 && v[0] >= d->align[i - 1].bytes)
                return conf_fail(err, CONF_ERROR_VALUE, it,
                                 "alignment classes go from the largest bytes to the smallest");
            d->align[i] = (DeviceAlign){(int)v[0], v[1]};
            d->nalign++;
        }
    }
    return TRUE;
}

/* memory_efficiency: one fraction for every memory-bound kernel, or one per class. */
static gboolean load_mem_efficiency(const ConfNode *n, DeviceSpec *d, GError **err) {
    static const char *const keys[] = {"streaming", "reduction", "gemm", NULL};
    const ConfNode *me = conf_get(n, "memory_efficiency");
    if (!me)
        return conf_fail(err, CONF_ERROR_KEY, n,
                         "missing key 'memory_efficiency' (a fraction, or {streaming, reduction, "
                         "gemm})");
    if (me->kind == CONF_SCALAR) {
        double v = 0;
        if (!conf_double(n, "memory_efficiency", TRUE, 1e-6, 1.0, &v, err))
            return FALSE;
        for (int c = 0; c < MEM_CLASS_COUNT; c++)
            d->mem_efficiency[c] = v;
        return TRUE;
    }
    return conf_check_keys(me, keys, "device.memory_efficiency", err) &&
           conf_double(me, "streaming", TRUE, 1e-6, 1.0, &d->mem_efficiency[MEM_STREAMING], err) &&
           conf_double(me, "reduction", TRUE, 1e-6, 1.0, &d->mem_efficiency[MEM_REDUCTION], err) &&
           conf_double(me, "gemm", TRUE, 1e-6, 1.0, &d->mem_efficiency[MEM_GEMM], err);
}

/* kernels: {NAME: fraction, or [[max_row, fraction], ...] by row length, ascending}. */
static gboolean load_kernels(const ConfNode *ks, DeviceSpec *d, GError **err) {
    if (!conf_expect_map(ks, "device.kernels", err))
        return FALSE;
    if (ks->keys->len > DEVICE_MAX_KERNELS)
        return conf_fail(err, CONF_ERROR_VALUE, ks, "device.kernels lists %u kernels; at most %d",
                         ks->keys->len, DEVICE_MAX_KERNELS);
    for (guint i = 0; i < ks->keys->len; i++) {
        const char *name = ks->keys->pdata[i];
        const ConfNode *v = ks->items->pdata[i];
        DeviceKernel *k = &d->kernels[d->nkernels];
        if (v->kind == CONF_SCALAR) {
            double e = 0;
            if (!conf_double(ks, name, TRUE, 1e-6, 1.0, &e, err))
                return FALSE;
            k->nrows = 1;
            k->max_row[0] = INT64_MAX;
            k->efficiency[0] = e;
        } else {
            if (v->kind != CONF_SEQ || v->items->len < 1 || v->items->len > DEVICE_MAX_ROWS)
                return conf_fail(err, CONF_ERROR_VALUE, v,
                                 "device.kernels.%s must be a fraction of the HBM bandwidth or a "
                                 "list of 1 to %d [max_row, fraction]",
                                 name, DEVICE_MAX_ROWS);
            k->nrows = 0;
            for (guint j = 0; j < v->items->len; j++) {
                double t[2];
                const ConfNode *it = v->items->pdata[j];
                if (!load_num_tuple(it, "a row class [max_row, fraction]", 2, 0, 1e12, t, err))
                    return FALSE;
                if (t[0] < 1 || t[0] != floor(t[0]) || t[1] <= 0 || t[1] > 1 ||
                    (j > 0 && t[0] <= (double)k->max_row[j - 1]))
                    return conf_fail(err, CONF_ERROR_VALUE, it,
                                     "a row class is [max_row, fraction]: whole max_row, "
                                     "ascending, fraction in (0, 1]");
                k->max_row[j] = (int64_t)t[0];
                k->efficiency[j] = t[1];
                k->nrows++;
            }
        }
        k->name = g_strdup(name);
        d->nkernels++;
    }
    return TRUE;
}

gboolean scenario_load_device(const ConfNode *n, DeviceSpec *d, GError **err) {
    static const char *const keys[] = {"name",
                                       "peak_flops",
                                       "hbm_capacity",
                                       "hbm_bandwidth",
                                       "memory_efficiency",
                                       "launch_overhead",
                                       "gemm",
                                       "kernels",
                                       "efficiency",
                                       "interference",
                                       "sustained_clock",
                                       "calibration",
                                       NULL};
    static const char *const cal_keys[] = {"compute_scale", "fitted_on", "method", NULL};
    static const char *const intf_keys[] = {"intra_node", "inter_node", NULL};
    static const char *const peak_keys[] = {"fp16", "bf16", "fp32", "fp8", NULL};
    static const char *const eff_keys[] = {"gemm", "bmm", "elementwise", NULL};
    g_autoptr(ConfNode) file = NULL;
    if (n->kind == CONF_SCALAR) {
        if (!(file = scenario_load_device_file(n, err)))
            return FALSE;
        n = file;
    }
    if (!conf_check_keys(n, keys, "device", err))
        return FALSE;
    const ConfNode *peak = conf_get(n, "peak_flops"), *eff = conf_get(n, "efficiency"),
                   *gemm = conf_get(n, "gemm");
    if (!peak)
        return conf_fail(err, CONF_ERROR_KEY, n, "missing key 'peak_flops'");
    if (!eff == !gemm)
        return conf_fail(err, CONF_ERROR_KEY, eff ? eff : n,
                         "give the device either a 'gemm' block (the shape-aware GPU model) or an "
                         "'efficiency' block (a plain roofline), %s",
                         eff ? "not both" : "one of them");
    d->peak_flops[PREC_FP8] = 0.0;
    if (!conf_string(n, "name", TRUE, &d->name, err) ||
        !conf_check_keys(peak, peak_keys, "device.peak_flops", err) ||
        !conf_flops(peak, "fp16", TRUE, &d->peak_flops[PREC_FP16], err) ||
        !conf_flops(peak, "bf16", TRUE, &d->peak_flops[PREC_BF16], err) ||
        !conf_flops(peak, "fp32", TRUE, &d->peak_flops[PREC_FP32], err) ||
        !conf_flops(peak, "fp8", FALSE, &d->peak_flops[PREC_FP8], err) || /* absent: none */
        !conf_bytes(n, "hbm_capacity", TRUE, &d->hbm_capacity, err) ||
        !conf_rate(n, "hbm_bandwidth", TRUE, &d->hbm_bandwidth, err) ||
        !conf_time(n, "launch_overhead", FALSE, &d->launch_overhead, err))
        return FALSE;
    d->sustained_clock = d->compute_scale = 1.0;
    const ConfNode *cal = conf_get(n, "calibration");
    if (!conf_double(n, "sustained_clock", FALSE, 0.1, 1.5, &d->sustained_clock, err) ||
        (cal && (!conf_check_keys(cal, cal_keys, "device.calibration", err) ||
                 !conf_double(cal, "compute_scale", TRUE, 0.1, 2.0, &d->compute_scale, err))))
        return FALSE;
    const ConfNode *kernels = conf_get(n, "kernels"), *intf = conf_get(n, "interference");
    if (kernels && !load_kernels(kernels, d, err))
        return FALSE;
    if (intf && (!conf_check_keys(intf, intf_keys, "device.interference", err) ||
                 !conf_double(intf, "intra_node", TRUE, 0.0, 10.0, &d->interference_intra, err) ||
                 !conf_double(intf, "inter_node", TRUE, 0.0, 10.0, &d->interference_inter, err)))
        return FALSE;
    if (gemm)
        return load_mem_efficiency(n, d, err) && load_gemm_model(gemm, d, err);
    double e[3], mem_eff = 1.0;
    if (!conf_check_keys(eff, eff_keys, "device.efficiency", err) ||
        !conf_double(eff, "gemm", TRUE, 1e-6, 1.0, &e[0], err) ||
        !conf_double(eff, "bmm", TRUE, 1e-6, 1.0, &e[1], err) ||
        !conf_double(eff, "elementwise", TRUE, 1e-6, 1.0, &e[2], err) ||
        !conf_double(n, "memory_efficiency", FALSE, 1e-6, 1.0, &mem_eff, err))
        return FALSE;
    device_spec_set_roofline(d, e[0], e[1], e[2], mem_eff);
    return TRUE;
}
