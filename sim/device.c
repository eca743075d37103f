/* device: a roofline with a per-kind efficiency. */
#include "device.h"

#include <math.h>

void device_spec_clear(DeviceSpec *d) {
    g_clear_pointer(&d->name, g_free);
}

static SimTime seconds_to_ps(double s) {
    return (SimTime)llround(s * (double)SIM_PS_PER_S);
}

SimTime device_op_time(const DeviceSpec *d, const ModelOp *op, Precision prec) {
    double compute = 0.0, memory;
    if (op->kind == OP_ELEMENTWISE) {
        memory = op->bytes / (d->hbm_bandwidth * d->efficiency[OP_ELEMENTWISE]);
    } else {
        compute = op->flops / (d->peak_flops[prec] * d->efficiency[op->kind]);
        memory = op->bytes / (d->hbm_bandwidth * d->memory_efficiency);
    }
    return seconds_to_ps(fmax(compute, memory)) + d->launch_overhead;
}

SimTime device_optimizer_time(const DeviceSpec *d, double params, Precision prec) {
    /* Mixed-precision Adam per parameter: read grad (e), master, m, v (4 each); write master, m,
     * v (4 each) and the working copy (e). fp32: no master copy. */
    double e = model_elem_bytes(prec);
    double per_param = prec == PREC_FP32 ? 4.0 * 3 + 4.0 * 3 : e + 12.0 + 12.0 + e;
    double bytes = params * per_param;
    return seconds_to_ps(bytes / (d->hbm_bandwidth * d->efficiency[OP_ELEMENTWISE])) +
           d->launch_overhead;
}
