/* scenario_dp: data parallelism's part of the scenario (scenario_par.h): parallel.dp, the ZeRO
 * stage and its buckets and ZeRO-3 limits, ZeRO++ and FSDP's hybrid shard (scenario_zeropp.c), and
 * training's FSDP prefetch keys (scenario_fsdp.c), with what the framework must allow.
 *
 * For: reading and checking; what data parallelism runs is sim/training's (grads.c, gathers.c,
 * workload.c, with their sources). */
#include <string.h>

#include "scenario_par.h"

static const char *const keys[] = {"dp",
                                   "zero",
                                   "bucket_size",
                                   "prefetch_bucket_size",
                                   "max_live_parameters",
                                   "persistence_threshold",
                                   "max_reuse_distance",
                                   "zeropp",
                                   "hybrid_shard",
                                   NULL};

static gboolean load(const ConfNode *par, Scenario *s, GError **err) {
    s->dp = 0; /* auto: the GPUs over tp x cp x pp (scenario.c) */
    s->zero = 0;
    s->bucket_bytes = -1; /* the framework's default, once it is known (check) */
    s->prefetch_elems = FRAMEWORK_ZERO3_PREFETCH_ELEMS;
    s->max_live_elems = FRAMEWORK_ZERO3_MAX_LIVE_ELEMS;
    s->persist_elems = -1; /* the framework's default, once it is known */
    s->max_reuse_elems = FRAMEWORK_ZERO3_MAX_REUSE_ELEMS;
    const ConfNode *dpn = conf_get(par, "dp");
    if (!conf_int32(par, "zero", FALSE, 0, 3, &s->zero, err) ||
        !conf_bytes(par, "bucket_size", FALSE, &s->bucket_bytes, err) ||
        !conf_double(par, "prefetch_bucket_size", FALSE, 0, 1e15, &s->prefetch_elems, err) ||
        !conf_double(par, "max_live_parameters", FALSE, 1, 1e15, &s->max_live_elems, err) ||
        !conf_double(par, "persistence_threshold", FALSE, 0, 1e15, &s->persist_elems, err) ||
        !conf_double(par, "max_reuse_distance", FALSE, 0, 1e15, &s->max_reuse_elems, err))
        return FALSE;
    if (dpn && !(dpn->kind == CONF_SCALAR && strcmp(dpn->value, "auto") == 0))
        return conf_int32(par, "dp", FALSE, 1, 1 << 30, &s->dp, err);
    return TRUE;
}

static gboolean check(const ConfNode *root, Scenario *s, GError **err) {
    const Framework *f = framework_get(s->framework);
    if (!framework_has_zero(s->framework, s->zero))
        return conf_fail(err, CONF_ERROR_INVALID, scenario_at(root, "parallel", "zero"),
                         "%s has no ZeRO stage %d (%s); use training.framework: deepspeed for "
                         "every stage",
                         f->name, s->zero,
                         s->framework == FW_MEGATRON
                             ? "0, 1: its distributed optimizer, or 3: Megatron-FSDP's "
                               "optim_grads_params; optim_grads is not modelled"
                             : "0: DDP, 2 and 3: FSDP SHARD_GRAD_OP and FULL_SHARD; "
                               "ZeroRedundancyOptimizer is not modelled");
    if (s->persist_elems < 0) /* DeepSpeed's default; FSDP's flat units keep nothing whole */
        s->persist_elems = s->framework == FW_DEEPSPEED ? FRAMEWORK_ZERO3_PERSISTENCE_ELEMS : 0;
    if (s->bucket_bytes < 0) /* framework.c: each framework's own default */
        s->bucket_bytes =
            framework_default_bucket_bytes(/* over the gradient group: Megatron-LM's */
                                           s->framework, scenario_grad_group_ranks(s),
                                           framework_bytes(s->framework, s->zero, s->precision)
                                               .reduce);
    if (s->bucket_bytes <= 0)
        return conf_fail(err, CONF_ERROR_VALUE, scenario_at(root, "parallel", "bucket_size"),
                         "bucket_size must be positive");
    const ConfNode *par = conf_get(root, "parallel");
    return scenario_load_zeropp(par, s, err) && scenario_load_hybrid_shard(par, s, err) &&
           scenario_load_fsdp(conf_get(root, "training"), s, err);
}

const ScenarioPar scenario_par_dp = {.name = "dp", .keys = keys, .load = load, .check = check};
