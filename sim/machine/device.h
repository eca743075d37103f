/* device: how long one operator takes on one GPU.
 *
 * For: the time, achieved rate and bound of one kernel from its shape, FLOPs and bytes, on a GPU
 * described by data (topologies/devices/NAME.yaml). A roofline whose compute side knows shapes:
 *
 *   time = launch_overhead + max(compute, memory)
 *   memory  = bytes / (hbm_bandwidth x memory efficiency of the kernel's class)
 *   compute (GEMM, batched GEMM, fused attention) = waves x time of one tile / alignment factor
 *   one tile runs at peak x sustained_clock x compute_scale x ceiling x tile efficiency / units
 *
 * sustained_clock is the clock a GPU holds under training load relative to the clock at which
 * its ceilings were measured (a short benchmark runs at boost; hours of training run where power
 * and temperature let them); compute_scale is the one parameter tools/calibrate fits per device
 * on the device's calibrate rows (validation/), written into the device file with the rows it
 * came from (docs/validation.md "Calibration"). Both multiply every compute-bound kernel's rate;
 * memory-bound kernels are unaffected (HBM has its own clock).
 *
 * where the library's choice among tile shapes (and split-K) is modelled as the one that
 * finishes first: a tile of rows x cols outputs runs k_pad + k_overhead steps of the K loop,
 * k_pad = K rounded up to tile_k (tile quantization); tiles (x split) run in waves of
 * compute_units at a time (wave quantization); one compute unit runs a tile at
 * peak x ceiling x tile efficiency / compute_units. A GEMM whose rows and columns are multiples
 * of the largest tile, whose tile count fills whole waves and whose K is a multiple of tile_k
 * therefore runs at exactly ceiling x K / (K + k_overhead) of peak. Contiguous dimensions that
 * are not a multiple of 16 bytes lose the vectorised loads (the alignment factor). Splitting K
 * over s tiles costs writing and reading back s fp32 partial sums and a second kernel.
 * The fused attention kernel runs one query block (the largest tile's rows) of one (sequence,
 * head) per unit, over all keys, with the head dimension padded to flash_head_multiple, at
 * flash_ceiling (forward: 2 products) or flash_bwd_ceiling (backward: 5); with a causal mask,
 * query block i visits only the key blocks up to the end of its own rows, and the kernel takes as
 * many waves as its visited key steps fill with full-length units. Memory-bound kernels
 * reach their class's share of the bandwidth, or their own measured share (`kernels:`), which
 * for a row reduction may depend on the row length.
 *
 * Sources of the form: NVIDIA, "Matrix Multiplication Background User's Guide" (Deep Learning
 * Performance Documentation: tile and wave quantization, the 16-byte alignment rule); Anthony et
 * al. 2024, "The Case for Co-Designing Model Architectures with Hardware" (arXiv 2401.14489).
 * Each device's numbers are cited in its YAML file.
 *
 * Not for: when an operator runs (workload.c), or overlap between kernels. */
#ifndef SIM_DEVICE_H
#define SIM_DEVICE_H

#include <stdio.h>

#include "engine.h"
#include "model.h"

#define DEVICE_MAX_TILES 8
#define DEVICE_MAX_ALIGN 8

/* Memory-bound kernel classes, each with its own fraction of HBM bandwidth. */
typedef enum { MEM_STREAMING, MEM_REDUCTION, MEM_GEMM, MEM_CLASS_COUNT } MemClass;

typedef struct {
    int rows, cols;    /* output tile, elements */
    double efficiency; /* this tile's rate relative to the ceiling (smaller tiles reuse less) */
} DeviceTile;

typedef struct {
    int bytes;     /* a dimension whose size in bytes is a multiple of this (a power of two) */
    double factor; /* multiplies the GEMM's compute rate */
} DeviceAlign;

#define DEVICE_MAX_KERNELS 32
#define DEVICE_MAX_ROWS 8

/* A measured memory-bound kernel: its share of hbm_bandwidth, by row length for reductions (the
 * first class whose max_row is >= the kernel's row; past the last, the last). Overrides the
 * kernel's class (MemClass). */
typedef struct {
    char *name; /* the kernel's name in the model (model.c), e.g. "softmax" */
    int nrows;
    int64_t max_row[DEVICE_MAX_ROWS];
    double efficiency[DEVICE_MAX_ROWS];
} DeviceKernel;

typedef struct {
    char *name;                             /* e.g. "AMD MI250X GCD" */
    double peak_flops[PREC_COUNT];          /* matrix-unit peak per precision, FLOP/s */
    double hbm_capacity;                    /* bytes */
    double hbm_bandwidth;                   /* bytes/s */
    double mem_efficiency[MEM_CLASS_COUNT]; /* fraction of hbm_bandwidth each class reaches */
    SimTime launch_overhead;                /* per kernel, picoseconds */
    double sustained_clock;    /* clock under training load / clock the ceilings were measured at
                                  (0 is read as 1) */
    double compute_scale;      /* fitted by tools/calibrate on calibrate rows (0 is read as 1) */
    double interference_intra; /* compute takes 1 + this times as long while an intra-node
                                  communication of its GPU moves data (0: unaffected) */
    double interference_inter; /* the same while only inter-node communication does */
    int nkernels;              /* measured kernels that override their class */
    DeviceKernel kernels[DEVICE_MAX_KERNELS];
    /* GEMM model */
    int compute_units;        /* CUs / SMs: tiles run this many at a time */
    double ceiling;           /* fraction of peak a large, aligned GEMM reaches (K >> k_overhead) */
    double bmm_ceiling;       /* the same for batched GEMMs */
    double flash_ceiling;     /* the same for the fused attention kernel */
    double flash_bwd_ceiling; /* the same for its backward kernel */
    int flash_head_multiple;  /* the fused kernel pads the head dimension to a multiple of this */
    int tile_k;               /* K is padded to a multiple of this, elements */
    double k_overhead;        /* per tile: prologue and epilogue, in K steps (elements) */
    int max_split_k;          /* K may be split over up to this many tiles (1: never) */
    int ntiles;               /* tile shapes the library chooses from */
    DeviceTile tiles[DEVICE_MAX_TILES];
    int nalign; /* alignment classes, largest bytes first (0: no alignment effect) */
    DeviceAlign align[DEVICE_MAX_ALIGN];
} DeviceSpec;

void device_spec_clear(DeviceSpec *d);

/* The device as a plain roofline (the slice's model): compute = FLOPs / (peak x eff[kind]),
 * memory = bytes / (bandwidth x memory_efficiency), element-wise kernels at eff[ELEMENTWISE] of the
 * bandwidth; no shapes. What an inline topology `device:` with an `efficiency:` block means. */
void device_spec_set_roofline(DeviceSpec *d, double gemm_eff, double bmm_eff,
                              double elementwise_eff, double memory_eff);

typedef enum { DEVICE_BOUND_COMPUTE, DEVICE_BOUND_MEMORY, DEVICE_BOUND_LAUNCH } DeviceBound;
const char *device_bound_name(DeviceBound b);

typedef struct {
    SimTime time;      /* picoseconds, launch overhead included */
    double compute_s;  /* compute side of the roofline, seconds (0 for memory-bound kernels) */
    double memory_s;   /* memory side, seconds */
    double efficiency; /* achieved FLOP/s / peak (0 for memory-bound kernels) */
    double bandwidth;  /* achieved bytes/s */
    DeviceBound bound; /* the larger side, or the launch overhead when it exceeds both */
    int tile_rows;     /* chosen tile (GEMM-like kernels), elements */
    int tile_cols;
    int split_k;   /* chosen K split */
    int64_t tiles; /* work units: batch x row tiles x column tiles x split */
    int64_t waves; /* ceil(tiles / compute_units) */
    double align;  /* alignment factor applied */
    double flops;  /* FLOPs the kernel executes: op->flops, except the causal fused attention
                      kernel, which also computes the masked halves of its diagonal blocks */
} DeviceOpCost;

/* What multiplies every compute-bound kernel's rate: sustained_clock x compute_scale (an unset
 * factor, 0, counts as 1). */
double device_compute_factor(const DeviceSpec *d);

/* Cost of one kernel. */
DeviceOpCost device_op_cost(const DeviceSpec *d, const ModelOp *op, Precision prec);

/* Time of one kernel, picoseconds. */
SimTime device_op_time(const DeviceSpec *d, const ModelOp *op, Precision prec);

/* Bytes moved per parameter by the optimizer step: mixed-precision Adam reads the gradient
 * (e bytes), the fp32 master weight, momentum and variance (4 each), writes those three and the
 * working copy (e); fp32 Adam has no master copy. */
double device_optimizer_bytes_per_param(Precision prec);

/* Time of the optimizer step over `params` local parameters: a memory-bound streaming kernel.
 * Picoseconds. */
SimTime device_optimizer_time(const DeviceSpec *d, double params, Precision prec);

/* The `sim --ops` table: every kernel of one transformer layer (forward, recomputation when rc
 * asks for it, backward), of the embedding and of the head, and the optimizer step over
 * opt_params parameters, with time, FLOPs, achieved TFLOP/s, bytes, achieved bandwidth and bound,
 * and a summary of where the layer's time goes. csv: one row per kernel instead. Fails, writing
 * nothing, when a kernel's time is beyond SIM_TIME_MAX. */
/* FALSE (err naming the kernel) when some kernel of one layer, of the embedding or head, or the
 * optimizer over opt_params parameters would take SIM_TIME_MAX or more: checked before a run so
 * that the message names the kernel rather than an overflowed iteration. */
gboolean device_ops_in_range(const DeviceSpec *d, const ModelConfig *m, int b, int s, int tp,
                             Precision prec, double opt_params, GError **err);

gboolean device_write_ops(FILE *out, const DeviceSpec *d, const ModelConfig *m, int b, int s,
                          int tp, Precision prec, Recompute rc, double opt_params, gboolean csv,
                          GError **err);

#endif
