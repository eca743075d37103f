/* scenario_moe: the model's `moe:` mapping, and expert parallelism's part of the scenario
 * (scenario_par.h): parallel.ep and the layout errors it and moe add.
 *
 * For: reading and checking; what the keys mean is model_moe.c's and par_ep.c's (with their
 * sources). Not for: the rest of the scenario (scenario.c), which calls scenario_load_moe. */
#include "scenario_par.h"

#include <string.h>

/* DeepSpeed's MoE defaults (deepspeed/moe/layer.py MoE.__init__): k = 1, capacity_factor 1,
 * min_capacity 4; every = 1 (Megatron-DeepSpeed's expert_interval default is 2, but an explicit
 * key reads better than a default that skips layers). */
gboolean scenario_load_moe(const ConfNode *n, ModelConfig *m, GError **err) {
    static const char *const keys[] = {"experts",         "top_k",        "every",     "ffn_hidden",
                                       "capacity_factor", "min_capacity", "imbalance", NULL};
    MoeConfig *x = &m->moe;
    *x = (MoeConfig){
        .top_k = 1, .every = 1, .capacity_factor = 1.0, .min_capacity = 4, .imbalance = 1.0};
    if (!n) {
        x->experts = 0;
        return TRUE;
    }
    if (!conf_check_keys(n, keys, "model.moe", err) ||
        !conf_int32(n, "experts", TRUE, 1, 1 << 20, &x->experts, err) ||
        !conf_int32(n, "top_k", FALSE, 1, 1 << 20, &x->top_k, err) ||
        !conf_int32(n, "every", FALSE, 1, 1 << 20, &x->every, err) ||
        !conf_int32(n, "ffn_hidden", FALSE, 1, 1 << 26, &x->ffn_hidden, err) ||
        !conf_double(n, "capacity_factor", FALSE, -1e300, 1e6, &x->capacity_factor, err) ||
        !conf_int32(n, "min_capacity", FALSE, 0, 1 << 30, &x->min_capacity, err) ||
        !conf_double(n, "imbalance", FALSE, -1e300, 1e6, &x->imbalance, err))
        return FALSE;
    if (x->top_k > x->experts)
        return conf_fail(err, CONF_ERROR_INVALID, conf_get(n, "top_k"),
                         "top_k %d exceeds the %d experts; a token is routed to at most every "
                         "expert once",
                         x->top_k, x->experts);
    if (!(x->capacity_factor > 0))
        return conf_fail(err, CONF_ERROR_VALUE, conf_get(n, "capacity_factor"),
                         "capacity_factor must be > 0 (DeepSpeed's training default is 1.0)");
    if (!(x->imbalance >= 1.0) || x->imbalance * x->top_k > x->experts)
        return conf_fail(err, CONF_ERROR_VALUE, conf_get(n, "imbalance"),
                         "imbalance (the busiest expert's load over the mean) must be in [1, %g] "
                         "= [1, experts / top_k]: 1 is uniform routing",
                         (double)x->experts / x->top_k);
    if (x->every > m->layers)
        return conf_fail(err, CONF_ERROR_INVALID, conf_get(n, "every"),
                         "every %d leaves the %d layers without a MoE layer", x->every, m->layers);
    if (m->parallel_residual)
        return conf_fail(err, CONF_ERROR_INVALID, n,
                         "moe with parallel_residual is not modelled (no such MoE model ships)");
    if (m->layer_vector_params_h >= 0)
        return conf_fail(err, CONF_ERROR_INVALID, n,
                         "moe derives the layers' vector parameters exactly; remove "
                         "layer_vector_params_h");
    return TRUE;
}

static const char *const ep_keys[] = {"ep", NULL};

static gboolean load(const ConfNode *par, Scenario *s, GError **err) {
    s->ep = 1;
    return conf_int32(par, "ep", FALSE, 1, 1 << 20, &s->ep, err);
}

static gboolean check(const ConfNode *root, Scenario *s, GError **err) {
    const MoeConfig *x = &s->model.moe;
    const ConfNode *epn = scenario_at(root, "parallel", "ep");
    if (s->ep > 1 && x->experts == 0)
        return conf_fail(err, CONF_ERROR_INVALID, epn,
                         "expert parallelism %d needs a model with moe: experts", s->ep);
    if (x->experts == 0)
        return TRUE;
    if (s->dp % s->ep != 0)
        return conf_fail(err, CONF_ERROR_INVALID, epn,
                         "expert parallelism %d does not divide DP %d (expert-parallel groups "
                         "are carved from the data-parallel ranks); use an ep that divides %d",
                         s->ep, s->dp, s->dp);
    if (x->experts % s->ep != 0)
        return conf_fail(err, CONF_ERROR_INVALID, epn,
                         "expert parallelism %d does not divide the %d experts (DeepSpeed: "
                         "num_experts %% ep_size == 0)",
                         s->ep, x->experts);
    if (model_moe_ffn(&s->model) % s->tp != 0)
        return conf_fail(err, CONF_ERROR_INVALID, scenario_at(root, "parallel", "tp"),
                         "tensor parallelism %d does not divide the experts' MLP width %d", s->tp,
                         model_moe_ffn(&s->model));
    if (s->zero == 3)
        return conf_fail(err, CONF_ERROR_INVALID, scenario_at(root, "parallel", "zero"),
                         "ZeRO-3 with mixture-of-experts layers is not modelled; use zero 0, 1 "
                         "or 2");
    return TRUE;
}

/* in the reports only with mixture-of-experts layers (dense models' unchanged) */
static int report(const Scenario *s, ScenarioParKey *keys) {
    if (s->model.moe.experts == 0)
        return 0;
    keys[0] = (ScenarioParKey){.key = "ep", .num = s->ep};
    return 1;
}

static void describe(const Scenario *s, char *buf, size_t n) {
    const ModelConfig *m = &s->model;
    if (m->moe.experts > 0)
        g_snprintf(buf + strlen(buf), n - strlen(buf),
                   " (EP %d x EDP %d), MoE %d experts top-%d on %d layers", s->ep, s->dp / s->ep,
                   m->moe.experts, m->moe.top_k, model_moe_layers(m, 0, m->layers));
}

/* expert parallelism's part of the scenario (scenario_par.h): carved from DP, so no factor of its
 * own in tp x cp x pp */
const ScenarioPar scenario_par_ep = {.name = "ep",
                                     .keys = ep_keys,
                                     .load = load,
                                     .check = check,
                                     .report = report,
                                     .describe = describe};
