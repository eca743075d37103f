/* scenario_fsdp: PyTorch FSDP1's prefetch and rate-limit settings, training.fsdp_backward_prefetch,
 * fsdp_forward_prefetch and fsdp_limit_all_gathers, and the errors they add.
 *
 * For: reading and checking them; what each changes in the gathers' timing is gathers.c's (with
 * its sources). Not for: the rest of the scenario (scenario.c), which calls scenario_load_fsdp
 * once the framework and zero are known. */
#include "scenario.h"

static const char *const bwd_prefetch_names[] = {"pre", "post", "none", NULL};

const char *scenario_fsdp_bwd_prefetch_name(FsdpBackwardPrefetch p) {
    return bwd_prefetch_names[p];
}

/* The defaults are FullyShardedDataParallel.__init__'s (torch 2.0-2.4,
 * torch/distributed/fsdp/fully_sharded_data_parallel.py): backward_prefetch
 * BackwardPrefetch.BACKWARD_PRE, forward_prefetch False, limit_all_gathers True. Each key is
 * FSDP's own: given under another framework, or without a sharded stage (zero 2 or 3), it would
 * change nothing, and a key that changes nothing silently is refused. */
gboolean scenario_load_fsdp(const ConfNode *tr, Scenario *s, GError **err) {
    static const char *const keys[] = {SCENARIO_FSDP_KEYS, NULL};
    int bwd = FSDP_BWD_PRE;
    /* the framework's own (framework.c): Megatron-FSDP has neither knob, and its _pre_backward
     * prefetches as BACKWARD_PRE does */
    const Framework *fw = framework_get(s->framework);
    s->fsdp_fwd_prefetch = fw->gather_fwd_prefetch;
    s->fsdp_limit_gathers = fw->gather_limit;
    if (!conf_enum(tr, keys[0], FALSE, bwd_prefetch_names, &bwd, err) ||
        !conf_bool(tr, keys[1], FALSE, &s->fsdp_fwd_prefetch, err) ||
        !conf_bool(tr, keys[2], FALSE, &s->fsdp_limit_gathers, err))
        return FALSE;
    s->fsdp_bwd_prefetch = bwd;
    for (int k = 0; keys[k]; k++) {
        const ConfNode *n = conf_get(tr, keys[k]);
        if (!n)
            continue;
        if (s->framework != FW_PYTORCH)
            return conf_fail(err, CONF_ERROR_INVALID, n,
                             "%s is PyTorch FSDP's setting, and training.framework is %s; set "
                             "training.framework: pytorch (with parallel.zero 2 or 3) or remove "
                             "it",
                             keys[k], framework_get(s->framework)->name);
        if (s->zero < 2)
            return conf_fail(err, CONF_ERROR_INVALID, n,
                             "%s is PyTorch FSDP's setting: it needs parallel.zero 3 "
                             "(FULL_SHARD, HYBRID_SHARD) or 2 (SHARD_GRAD_OP), and zero is %d",
                             keys[k], s->zero);
    }
    return TRUE;
}
