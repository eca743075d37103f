/* layout: which rank is which coordinate of the parallel layout, and who its groups and pipeline
 * neighbours are.
 *
 * For: ranks <-> coordinates (tp, cp, ep, dp, pp with v virtual stages per rank), the members of
 * any dimension's group, the number and size of those groups, and pipeline neighbours. It is the
 * only place in the simulator that computes a stride. Not for: what a rank runs (workload.c) or
 * where a rank sits in the machine (rank r runs on GPU r).
 *
 * Order (Megatron-LM's default "tp-cp-ep-dp-pp", megatron/core/parallel_state.py RankGenerator):
 * TP fastest, then CP, then DP (whose fastest part is EP: expert-parallel groups are consecutive
 * DP replicas, Megatron's expert-data-parallel split of the data-parallel ranks), then PP slowest:
 *   rank = ((pp_idx * dp + dp_idx) * cp + cp_idx) * tp + tp_idx, with dp_idx = dpo * ep + ep_idx.
 * CP is parallel.cp (par_cp.c); EP is parallel.ep (par_ep.c). DIM_EDP (expert data parallel)
 * is the slower part of dp_idx: stride tp cp ep, size dp / ep.
 *
 * With context parallelism DIM_DP's group is the data-parallel group with context parallelism,
 * the ranks that differ in cp_idx or dp_idx (stride tp, size cp dp: adjacent in the order, one
 * run): Megatron-LM reduces gradients and shards its distributed optimizer over it
 * (parallel_state.py get_data_parallel_group(with_context_parallel=True), which
 * distributed_data_parallel.py and the distributed optimizer use). At cp 1 it is the plain
 * data-parallel group. A rank's replica is still its dp_idx (layout_coord; DIM_DP_INTRA and
 * DIM_DP_INTER keep stride tp cp: blocks of whole replicas).
 */
#ifndef SIM_LAYOUT_H
#define SIM_LAYOUT_H

#include <glib.h>

/* Communication dimensions (a collective's or a send's). The order is the JSON report's.
 * DIM_EDP: expert data parallelism, the dp/ep ranks that hold the same experts (same ep_idx,
 * every dpo): Megatron-LM's expert-data-parallel group, DeepSpeed's expert_data_parallel_group,
 * over which expert gradients are reduced.
 * DIM_DP_INTRA and DIM_DP_INTER split data parallelism for ZeRO++ (zeropp.h) and FSDP's
 * HYBRID_SHARD (grads.c): blocks of dp_local consecutive DP replicas, which share a node (hpZ's
 * secondary partition, qgZ's first all-to-all; FSDP's shard group, which may span nodes), and the
 * replicas at the same place in every block (qgZ's second all-to-all; FSDP's replicate group).
 * Their traffic is data-parallel traffic on the links (layout_dim_class). */
typedef enum {
    DIM_DP,
    DIM_TP,
    DIM_PP,
    DIM_EP,
    DIM_EDP,
    DIM_CP, /* context parallelism: the ranks that differ only in cp_idx (stride tp, size cp) */
    DIM_DP_INTRA,
    DIM_DP_INTER,
    DIM_COUNT
} Dim;
#define DIM_LINK_CLASSES (DIM_CP + 1) /* the traffic classes links count bytes by */
const char *layout_dim_name(Dim d);
/* The link traffic class of a dimension's communication: dp, tp, pp, ep, edp or cp. */
Dim layout_dim_class(Dim d);

typedef struct {
    int tp, cp, dp, ep, pp; /* sizes; ep divides dp */
    int vpp;                /* virtual pipeline stages (model chunks) per rank, >= 1 */
    int dp_local;           /* DP replicas of a DIM_DP_INTRA block (ZeRO++, FSDP HYBRID_SHARD),
                               divides dp; 0 or 1: none (blocks of one, DIM_DP_INTER = DIM_DP) */
} LayoutShape;

/* Set dimension d's size in sh (one of tp, cp, dp, ep, pp) */
void layout_shape_set(LayoutShape *sh, Dim d, int size);

typedef struct {
    int tp, cp, dp, ep, pp; /* indices; ep = dp % shape.ep */
} LayoutCoord;

typedef struct Layout Layout;

Layout *layout_new(LayoutShape shape);
void layout_free(Layout *l);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Layout, layout_free)

int layout_ranks(const Layout *l);

LayoutCoord layout_coord(const Layout *l, int rank);
int layout_rank(const Layout *l, LayoutCoord c); /* inverse of layout_coord (c.ep is ignored) */
int layout_stage(const Layout *l, int rank);     /* pipeline stage (pp index) */
int layout_index(const Layout *l, Dim dim, int rank); /* coordinate along dim */

/* Groups of a dimension: ranks that differ only in that coordinate (DP: in dp_idx, and cp_idx
 * with context parallelism; CP: in cp_idx; EP: in ep_idx
 * within their block of ep DP replicas; EDP: in the block, dpo = dp_idx / ep, at the same ep_idx;
 * PP: in the stage). Groups are numbered 0..count-1 in the
 * order of their lowest rank's remaining coordinates. */
int layout_group_size(const Layout *l, Dim dim);
int layout_stride(const Layout *l, Dim dim); /* rank distance between neighbours along dim */
int layout_group_count(const Layout *l, Dim dim);
int layout_group_of(const Layout *l, Dim dim, int rank);
/* Members of group `group` of dim, ascending, into members (group size entries); returns the size.
 */
int layout_group_members(const Layout *l, Dim dim, int group, int *members);
/* Members of rank's group into members; returns the group's index. */
int layout_group(const Layout *l, Dim dim, int rank, int *members);
int layout_max_group_size(const Layout *l);

/* Pipeline neighbours: the rank of the same (tp, cp, dp) coordinates on the next (previous) stage,
 * or -1 past the last (before the first) stage. With virtual stages the pipeline is a ring: model
 * chunk k of the last stage feeds chunk k + 1 of the first (Narayanan et al. SC21, Section 2.2), so
 * the neighbours wrap around. */
int layout_pp_next(const Layout *l, int rank);
int layout_pp_prev(const Layout *l, int rank);

#endif
