/* scenario_zeropp: the scenario's parallel.zeropp block, ZeRO++ (Wang et al. 2023, "ZeRO++:
 * Extremely Efficient Collective Communication for Giant Model Training", arXiv 2306.10209).
 *
 * For: reading and checking the three switches against the layout. The keys follow DeepSpeed's
 * zero_optimization options: qwz = zero_quantized_weights, hpz = zero_hpz_partition_size (a
 * number; `true` takes the data-parallel ranks of one node, the paper's choice), qgz =
 * zero_quantized_gradients.
 * Not for: what the switches do (sim/training/zeropp.c). */
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
    /* Data-parallel ranks of one stage that share a node: rank = pp_idx dp tp + dp_idx tp +
     * tp_idx, so a block of q consecutive DP indices spans q tp GPUs, inside one node when q tp
     * divides the GPUs per node and q divides dp (workload.h's layout). */
    int g = s->topo.gpus_per_node;
    int per_node = g % s->tp == 0 ? gcd(s->dp, g / s->tp) : 1;
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
