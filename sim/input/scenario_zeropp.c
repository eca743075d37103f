/* scenario_zeropp: the data-parallel ranks a node shares, as two blocks of the scenario's
 * parallel keys use them: parallel.zeropp, ZeRO++ (Wang et al. 2023, "ZeRO++: Extremely Efficient
 * Collective Communication for Giant Model Training", arXiv 2306.10209), and
 * parallel.hybrid_shard, PyTorch FSDP's HYBRID_SHARD.
 *
 * For: reading and checking them against the layout. ZeRO++'s keys follow DeepSpeed's
 * zero_optimization options: qwz = zero_quantized_weights, hpz = zero_hpz_partition_size (a
 * number; `true` takes the data-parallel ranks of one node, the paper's choice), qgz =
 * zero_quantized_gradients. hybrid_shard is the size of FSDP's shard group (`true`: the
 * data-parallel ranks of one node, torch's default intra-node group).
 * Not for: what they do (sim/training/zeropp.c, gathers.c, grads.c). */
#include <string.h>

#include "scenario.h"

static int gcd(int a, int b) {
    while (b) {
        int t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Data-parallel ranks of one stage that share a node: rank = pp_idx dp tp + dp_idx tp + tp_idx,
 * so a block of q consecutive DP indices spans q tp GPUs, inside one node when q tp divides the
 * GPUs per node and q divides dp (workload.h's layout). */
static int dp_per_node(const Scenario *s) {
    int g = s->topo.gpus_per_node;
    return g % s->tp == 0 ? gcd(s->dp, g / s->tp) : 1;
}

/* The words conf_bool reads (hpz is a boolean or a partition size). */
static gboolean is_bool_word(const char *v) {
    static const char *const words[] = {"true", "false", "yes", "no", "on", "off"};
    for (size_t i = 0; i < G_N_ELEMENTS(words); i++)
        if (!strcmp(v, words[i]))
            return TRUE;
    return FALSE;
}

gboolean scenario_load_zeropp(const ConfNode *par, Scenario *s, GError **err) {
    static const char *const keys[] = {"qwz", "hpz", "qgz", NULL};
    memset(&s->zpp, 0, sizeof s->zpp);
    const ConfNode *z = par ? conf_get(par, "zeropp") : NULL;
    if (!z)
        return TRUE;
    if (!conf_expect_map(z, "parallel.zeropp", err) ||
        !conf_check_keys(z, keys, "parallel.zeropp", err) ||
        !conf_bool(z, "qwz", FALSE, &s->zpp.qwz, err) ||
        !conf_bool(z, "qgz", FALSE, &s->zpp.qgz, err))
        return FALSE;
    int g = s->topo.gpus_per_node, per_node = dp_per_node(s);
    const ConfNode *h = conf_get(z, "hpz");
    gboolean hpz_on = FALSE;
    int hpz = 0;
    if (h && h->kind == CONF_SCALAR && is_bool_word(h->value)) {
        if (!conf_bool(z, "hpz", FALSE, &hpz_on, err))
            return FALSE;
        hpz = hpz_on ? per_node : 0; /* checked below: at least 2 */
    } else if (h) {
        if (!conf_int32(z, "hpz", FALSE, 1, 1 << 20, &hpz, err))
            return FALSE;
        hpz_on = hpz > 1; /* DeepSpeed: zero_hpz_partition_size 1 (its default) is off */
        if (!hpz_on)
            hpz = 0;
    }
    if ((s->zpp.qwz || hpz_on || s->zpp.qgz) && s->zero != 3)
        return conf_fail(err, CONF_ERROR_INVALID, z,
                         "ZeRO++ (parallel.zeropp) builds on ZeRO-3's partitioned parameters, "
                         "but parallel.zero is %d; set parallel.zero: 3",
                         s->zero);
    if ((s->zpp.qwz || hpz_on || s->zpp.qgz) && s->framework != FW_DEEPSPEED)
        return conf_fail(err, CONF_ERROR_INVALID, z,
                         "ZeRO++ (parallel.zeropp) is DeepSpeed's; training.framework is %s",
                         framework_get(s->framework)->name);
    if (hpz_on && (s->dp % hpz != 0 || g % ((int64_t)hpz * s->tp) != 0))
        return conf_fail(err, CONF_ERROR_INVALID, h,
                         "hpZ partition of %d data-parallel ranks must divide DP %d and lie within "
                         "a node (%d x TP %d GPUs of the %d per node); %d would",
                         hpz, s->dp, hpz, s->tp, g, per_node);
    if (hpz_on && s->zpp.qgz && hpz != per_node)
        return conf_fail(err, CONF_ERROR_INVALID, h,
                         "with qgz, the hpZ partition must be the %d data-parallel ranks of a node "
                         "(qgZ's first all-to-all runs within the node); got %d",
                         per_node, hpz);
    if ((hpz_on || s->zpp.qgz) && per_node < 2)
        return conf_fail(err, CONF_ERROR_INVALID, hpz_on ? h : z,
                         "hpz and qgz need at least 2 data-parallel ranks in a node; with TP %d on "
                         "%d GPUs per node and DP %d there is %d",
                         s->tp, g, s->dp, per_node);
    s->zpp.hpz = hpz;
    s->zpp.local = hpz_on ? hpz : s->zpp.qgz ? per_node : 0;
    return TRUE;
}

/* parallel.hybrid_shard: FSDP's HYBRID_SHARD (zero 3) or _HYBRID_SHARD_ZERO2 (zero 2), the
 * ShardingStrategy values of torch/distributed/fsdp/api.py. Parameters, gradients and optimizer
 * state are sharded within a shard group and replicated across them: torch's default groups
 * (_init_utils.py _init_process_group_state_for_hybrid_shard without a device mesh or process
 * groups, then _init_intra_and_inter_node_groups) are the ranks of one node and the ranks at the
 * same place in every node; a device mesh (replicate, shard) names any shard size that divides
 * the data-parallel ranks. The shard group is LayoutShape.dp_local consecutive DP replicas
 * (layout.h's DIM_DP_INTRA; DIM_DP_INTER replicates). A group of every DP rank is FULL_SHARD
 * (SHARD_GRAD_OP), and is run as such. */
gboolean scenario_load_hybrid_shard(const ConfNode *par, Scenario *s, GError **err) {
    s->fsdp_shard = 0;
    const ConfNode *h = par ? conf_get(par, "hybrid_shard") : NULL;
    if (!h)
        return TRUE;
    int per_node = dp_per_node(s), n = 0;
    gboolean on = FALSE;
    if (h->kind == CONF_SCALAR && is_bool_word(h->value)) {
        if (!conf_bool(par, "hybrid_shard", FALSE, &on, err))
            return FALSE;
        n = per_node;
    } else {
        if (!conf_int32(par, "hybrid_shard", FALSE, 1, 1 << 20, &n, err))
            return FALSE;
        on = TRUE;
    }
    if (!on)
        return TRUE;
    if (s->framework != FW_PYTORCH)
        return conf_fail(err, CONF_ERROR_INVALID, h,
                         "hybrid_shard is PyTorch FSDP's HYBRID_SHARD, and training.framework is "
                         "%s; set training.framework: pytorch",
                         framework_get(s->framework)->name);
    if (s->zero != 2 && s->zero != 3)
        return conf_fail(err, CONF_ERROR_INVALID, h,
                         "hybrid_shard shards FSDP's units within a group: it needs parallel.zero "
                         "3 (HYBRID_SHARD) or 2 (_HYBRID_SHARD_ZERO2), and zero is %d",
                         s->zero);
    if (s->model.moe.experts > 0)
        return conf_fail(err, CONF_ERROR_INVALID, h,
                         "hybrid_shard with mixture-of-experts layers (%s) is not modelled",
                         s->model.name);
    if (n < 2 && is_bool_word(h->value))
        return conf_fail(err, CONF_ERROR_INVALID, h,
                         "hybrid_shard: true shards over the data-parallel ranks of one node, and "
                         "with TP %d on %d GPUs per node and DP %d there is %d; give it a size "
                         "of at least 2 that divides DP",
                         s->tp, s->topo.gpus_per_node, s->dp, per_node);
    if (n < 2)
        return conf_fail(err, CONF_ERROR_INVALID, h,
                         "a shard group of 1 data-parallel rank shards nothing (FSDP's NO_SHARD "
                         "is not modelled); give hybrid_shard a size of at least 2 that divides "
                         "DP %d",
                         s->dp);
    if (s->dp % n != 0)
        return conf_fail(err, CONF_ERROR_INVALID, h,
                         "a shard group of %d data-parallel ranks does not divide DP %d; give "
                         "hybrid_shard a divisor of %d (the ranks of a node: %d)",
                         n, s->dp, s->dp, per_node);
    s->fsdp_shard = n < s->dp ? n : 0; /* one group of them all: FULL_SHARD */
    return TRUE;
}
