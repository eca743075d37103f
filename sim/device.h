/* device: how long one operator takes on one GPU.
 *
 * For: a roofline per operator, time = max(FLOPs / (peak x efficiency of its kind),
 * bytes / (HBM bandwidth x memory efficiency)) + a fixed kernel launch overhead.
 * Not for: shapes (tile and wave quantization come with the calibrated GPU model), or when an
 * operator runs. */
#ifndef SIM_DEVICE_H
#define SIM_DEVICE_H

#include "engine.h"
#include "model.h"

typedef struct {
    char *name;                    /* e.g. "AMD MI250X GCD" */
    double peak_flops[PREC_COUNT]; /* matrix-core peak per precision, FLOP/s */
    double hbm_capacity;           /* bytes */
    double hbm_bandwidth;          /* bytes/s */
    double efficiency[OP_COUNT];   /* fraction of peak FLOP/s (GEMM, BMM) or of HBM bandwidth
                                      (element-wise) that the kind of operator reaches */
    double memory_efficiency;      /* fraction of HBM bandwidth any operator reaches */
    SimTime launch_overhead;       /* per operator, picoseconds */
} DeviceSpec;

void device_spec_clear(DeviceSpec *d);

/* Time of one operator, picoseconds. */
SimTime device_op_time(const DeviceSpec *d, const ModelOp *op, Precision prec);

/* Time of the optimizer step over `params` local parameters: memory-bound Adam reading and
 * writing gradients, master weights, momentum and variance. Picoseconds. */
SimTime device_optimizer_time(const DeviceSpec *d, double params, Precision prec);

#endif
