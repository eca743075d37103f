/* search: the parallel layouts worth simulating for a model on a number of nodes.
 *
 * For: `sim search`. Enumerates (TP, PP, DP, ZeRO stage, micro-batch, recomputation) for a fixed
 * global batch, as points of a Sweep whose varied columns are the layout. What the scenario loader
 * rejects (TP not dividing the heads, PP not dividing the layers) and what does not fit in memory
 * is left to the caller to drop, after sweep_prepare. Rules are in search.c.
 * Not for: ranking (the caller sorts results) or simulating. */
#ifndef SIM_SEARCH_H
#define SIM_SEARCH_H

#include "sweep.h"

typedef struct {
    int nodes;
    int64_t global_batch;     /* sequences per iteration, fixed across layouts */
    const int *micro_batches; /* candidate micro-batch sizes, n_micro of them */
    int n_micro;
} SearchSpace;

typedef struct {
    int enumerated;  /* layouts added as points */
    int batch;       /* skipped: the global batch is not a whole number of micro_batch x DP */
    int unsupported; /* skipped: ZeRO-2/3 with pipeline parallelism, ZeRO > 0 with DP 1 */
} SearchCounts;

/* The layout columns, in order: tp, pp, dp, zero, micro_batch, micro_batches, recompute. */
extern const char *const search_keys[];

/* Add every layout for sc's model and machine on space->nodes nodes to sw (explicit points).
 * sc gives the GPUs per node, the layers and heads. */
void search_add_layouts(Sweep *sw, const Scenario *sc, const SearchSpace *space,
                        SearchCounts *counts);

#endif
