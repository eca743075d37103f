/* reps: which ranks a run simulates (representatives), from the layout's coordinates. What each
 * stands for, and why that is exact, is in executor.h and docs/speed.md ("Representatives"). */
#include "exec_internal.h"

gboolean exec_tp_interchangeable(const Scenario *sc, const Layout *lay) {
    const TopologySpec *ts = &sc->topo;
    int tp = layout_group_size(lay, DIM_TP), pp = layout_group_size(lay, DIM_PP);
    int dp = layout_group_size(lay, DIM_DP); /* cp x dp with context parallelism */
    /* no context parallelism, TP groups within a node */
    if (tp <= 1 || layout_group_size(lay, DIM_CP) != 1 || layout_ranks(lay) != tp * dp * pp ||
        ts->gpus_per_node % tp != 0)
        return FALSE;
    /* data parallelism: a TP group fills its node, so that a DP group has one GPU on each of
     * its nodes (by that GPU's NIC) and TP peer k's DP group is rank 0's shifted by k (TP_PEERS
     * in executor.c); not with experts or with blocks of replicas (ZeRO++, HYBRID_SHARD), whose
     * groups differ */
    if (dp > 1 && (tp != ts->gpus_per_node || layout_group_size(lay, DIM_EP) != 1 ||
                   layout_group_size(lay, DIM_DP_INTRA) != 1 || layout_stride(lay, DIM_TP) != 1 ||
                   layout_stride(lay, DIM_DP) != tp))
        return FALSE;
    if (ts->switch_bandwidth <= 0) /* a GPU mesh: GPUs may differ in their links */
        return FALSE;
    if (sc->nodes > 1) {
        if (ts->nics != ts->gpus_per_node ||
            (ts->fabric != FABRIC_FAT_TREE && ts->fabric != FABRIC_FLAT))
            return FALSE;
        for (int k = 0; k < ts->nics; k++)
            if (ts->nic_gpu[k] != k)
                return FALSE;
    }
    return TRUE;
}

int exec_rep_index_given(const Layout *lay, gboolean dedup, gboolean tp_rep, int rank) {
    if (!dedup)
        return rank;
    /* with dedup: one DIM_DP_INTRA block of DP replicas (replica 0 without ZeRO++), every CP rank
     * of them (their groups differ) */
    if (layout_index(lay, DIM_DP_INTER, rank) > 0)
        return -1;
    if (tp_rep) /* CP 1, replica 0: one rank per pipeline stage, its TP rank 0 */
        return layout_index(lay, DIM_TP, rank) == 0 ? layout_stage(lay, rank) : -1;
    /* one rank per DIM_DP_INTER group: the DP replicas of block 0 (replica 0 without ZeRO++, where
     * DIM_DP_INTER is DIM_DP) */
    return layout_group_of(lay, DIM_DP_INTER, rank);
}

int exec_rep_index(const Scenario *sc, const Layout *lay, gboolean dedup, int rank) {
    return exec_rep_index_given(lay, dedup, dedup && exec_tp_interchangeable(sc, lay), rank);
}

int exec_sim_count(const Scenario *sc, const Layout *lay, gboolean dedup, int *weight) {
    if (!dedup) {
        *weight = 1;
        return sc->gpus;
    }
    if (exec_tp_interchangeable(sc, lay)) {
        *weight = sc->dp * sc->tp;
        return layout_group_size(lay, DIM_PP);
    }
    /* each stands for dp / span replicas */
    *weight = sc->dp / layout_group_size(lay, DIM_DP_INTRA);
    return layout_group_count(lay, DIM_DP_INTER);
}
