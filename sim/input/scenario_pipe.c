/* scenario_pipe: pipeline parallelism's part of the scenario (scenario_par.h): parallel.pp, the
 * schedule and its keys, and the schedule's rules once the layout is known (the schedules are
 * sim/model/schedule.c's).
 *
 * For: reading the keys and refusing what a schedule cannot run, with the key to blame. */
#include "scenario_par.h"

static const char *const keys[] = {"pp",
                                   "schedule",
                                   "virtual_stages",
                                   "overlap_p2p_comm",
                                   "pipeline_scatter_gather",
                                   "first_stage_layers",
                                   "last_stage_layers",
                                   NULL};

static gboolean load(const ConfNode *par, Scenario *s, GError **err) {
    int sched = SCHED_1F1B;
    s->pp = 1;
    s->virtual_stages = 0; /* not given */
    if (!conf_int32(par, "pp", FALSE, 1, 1 << 20, &s->pp, err) ||
        !conf_enum(par, "schedule", FALSE, schedule_names, &sched, err) ||
        !conf_int32(par, "virtual_stages", FALSE, 1, 1 << 20, &s->virtual_stages, err) ||
        !conf_bool(par, "overlap_p2p_comm", FALSE, &s->overlap_p2p_comm, err) ||
        !conf_bool(par, "pipeline_scatter_gather", FALSE, &s->pp_scatter_gather, err) ||
        !conf_int32(par, "first_stage_layers", FALSE, 1, 1 << 20, &s->model.first_stage_layers,
                    err) ||
        !conf_int32(par, "last_stage_layers", FALSE, 1, 1 << 20, &s->model.last_stage_layers, err))
        return FALSE;
    s->schedule = sched;
    return TRUE;
}

static int size(const Scenario *s) {
    return s->pp;
}

/* parallel.first_stage_layers and last_stage_layers: the end stages' layer counts, the other
 * stages sharing the rest evenly (Megatron-LM's --decoder-first-pipeline-num-layers and
 * --decoder-last-pipeline-num-layers, megatron/core/transformer/transformer_block.py
 * get_num_layers_to_build; DeepSpeed's PipelineModule partition_method "type:transformer|
 * embedding", which BLOOM used, counts the embedding and the head as one layer each and so gives
 * the end stages one layer fewer). Read into the model (load, after the model file), whose
 * per-stage counts use it. */
static const ConfNode *split_at(const ConfNode *root, const Scenario *s) {
    return scenario_at(root, "parallel",
                       s->model.first_stage_layers > 0 ? "first_stage_layers"
                                                       : "last_stage_layers");
}

static gboolean check_split(const ConfNode *root, Scenario *s, GError **err) {
    int f = s->model.first_stage_layers, l = s->model.last_stage_layers;
    const ConfNode *at = split_at(root, s);
    if (s->pp < 2)
        return conf_fail(err, CONF_ERROR_INVALID, at,
                         "first_stage_layers and last_stage_layers split the layers over a "
                         "pipeline: they need pp >= 2, got pp %d",
                         s->pp);
    if (!model_stage_split_fits(&s->model, s->pp)) {
        int left = s->pp - (f > 0) - (l > 0);
        if ((int64_t)f + l > s->model.layers)
            return conf_fail(err, CONF_ERROR_INVALID, at,
                             "first_stage_layers %d and last_stage_layers %d add up to more than "
                             "the %d layers of %s",
                             f, l, s->model.layers, s->model.name);
        return conf_fail(err, CONF_ERROR_INVALID, at,
                         "first_stage_layers %d and last_stage_layers %d leave %" G_GINT64_FORMAT
                         " of the %d layers of %s to %d other stage(s), which must share them "
                         "evenly with at least one layer each%s",
                         f, l, (int64_t)s->model.layers - f - l, s->model.layers, s->model.name,
                         left, left == 0 ? " (none left: the two must sum to the layers)" : "");
    }
    return TRUE;
}

static gboolean check_layout(const ConfNode *root, Scenario *s, GError **err) {
    if (model_stage_split_set(&s->model))
        return check_split(root, s, err);
    if (s->model.layers % s->pp != 0)
        return conf_fail(err, CONF_ERROR_INVALID, scenario_at(root, "parallel", "pp"),
                         "pipeline parallelism %d does not divide the %d layers of %s", s->pp,
                         s->model.layers, s->model.name);
    return TRUE;
}

/* ZB-V's: two chunks a stage, placed in a V (schedule.c), so virtual_stages 2 and no other, and
 * layers that split evenly over the 2 pp chunks (the sail-sg repository's README: "ZBV schedule
 * requires the number of layers per pipeline to be an even number"); any number of micro-batches
 * (below 2 pp - 1 the pattern's missing ones are left out, as its get_zb_v_schedule does). */
static gboolean check_v(const ConfNode *root, Scenario *s, GError **err) {
    const char *name = schedule_name(s->schedule);
    if (s->virtual_stages != 2)
        return conf_fail(err, CONF_ERROR_INVALID, scenario_at(root, "parallel", "virtual_stages"),
                         "the %s schedule runs 2 model chunks per stage in a V: virtual_stages "
                         "must be 2 (or left out), got %d",
                         name, s->virtual_stages);
    if (s->pp < 2)
        return conf_fail(err, CONF_ERROR_INVALID, scenario_at(root, "parallel", "schedule"),
                         "the %s schedule needs pipeline parallelism (pp >= 2), got pp %d", name,
                         s->pp);
    if (s->model.layers % (2 * (int64_t)s->pp) != 0)
        return conf_fail(err, CONF_ERROR_INVALID, scenario_at(root, "parallel", "pp"),
                         "the %s schedule splits the %d layers of %s into 2 x pp %d = %d chunks, "
                         "which do not divide them; choose pp so that 2 x pp divides %d",
                         name, s->model.layers, s->model.name, s->pp, 2 * s->pp, s->model.layers);
    if (s->sync_each_layer && s->recompute == RECOMPUTE_FULL) /* as under interleaved, below */
        return conf_fail(err, CONF_ERROR_INVALID,
                         scenario_at(root, "training", "synchronize_each_layer"),
                         "synchronize_each_layer is GPT-NeoX's (DeepSpeed's pipeline engine, "
                         "which has no %s schedule) and is not modelled with it; set it to false",
                         name);
    return TRUE;
}

/* parallel.virtual_stages and the interleaved schedule's constraints, as Megatron-LM enforces them
 * (megatron/arguments.py and get_forward_backward_func in megatron/schedules.py): the layers split
 * evenly over pp x v model chunks, and the micro-batches a multiple of pp. */
static gboolean check(const ConfNode *root, Scenario *s, GError **err) {
    gboolean chunked = schedule_get(s->schedule)->chunked;
    /* Megatron-LM's overlap_p2p_comm (megatron/core/model_parallel_config.py) is read by its
     * interleaved schedule alone (schedules.py forward_backward_pipelining_with_interleaving).
     * Not given, it is what Megatron-LM's pretrain scripts get: on (megatron/training/
     * arguments.py, --no-overlap-p2p-communication is store_false into overlap_p2p_comm, which
     * validate_args turns off for the other schedules); ModelParallelConfig's own default, off,
     * is what NeMo's configs and 2021-2022 Megatron-LM run, and their scenarios say so. */
    if (!conf_get(conf_get(root, "parallel"), "overlap_p2p_comm"))
        s->overlap_p2p_comm = s->schedule == SCHED_INTERLEAVED && s->framework == FW_MEGATRON;
    /* Each pipeline send split over the TP ranks and gathered at the receiver: 2021-2022
     * Megatron-LM's --no-scatter-gather-tensors-in-pipeline (arguments.py, store_false: on unless
     * given; p2p_communication.py _communicate), which Megatron-core dropped, so off for megatron
     * unless the scenario sets it; DeepSpeed's pipeline engine partitions its pipeline tensors
     * whenever TP > 1 (framework.c), so on for deepspeed unless the scenario turns it off (later
     * DeepSpeed's pipeline.pipe_partitioned). PyTorch has no pipeline engine of its own here. */
    if (!conf_get(conf_get(root, "parallel"), "pipeline_scatter_gather"))
        s->pp_scatter_gather = framework_get(s->framework)->pipe_partitioned;
    if (s->pp_scatter_gather && s->framework == FW_PYTORCH)
        return conf_fail(err, CONF_ERROR_INVALID,
                         scenario_at(root, "parallel", "pipeline_scatter_gather"),
                         "pipeline_scatter_gather is Megatron-LM's (2021-2022) and DeepSpeed's "
                         "pipeline engines' split of each send over the TP ranks: it needs "
                         "training.framework: megatron or deepspeed (got %s); remove it",
                         framework_names[s->framework]);
    if (s->overlap_p2p_comm && (s->schedule != SCHED_INTERLEAVED || s->framework != FW_MEGATRON))
        return conf_fail(err, CONF_ERROR_INVALID, scenario_at(root, "parallel", "overlap_p2p_comm"),
                         "overlap_p2p_comm is Megatron-LM's, for its interleaved schedule: it "
                         "needs schedule: interleaved and training.framework: megatron "
                         "(got %s, %s); remove it or set it to false",
                         schedule_name(s->schedule), framework_names[s->framework]);
    if (!chunked) {
        if (s->virtual_stages > 1)
            return conf_fail(err, CONF_ERROR_INVALID,
                             scenario_at(root, "parallel", "virtual_stages"),
                             "virtual_stages %d needs schedule: interleaved (the %s schedule runs "
                             "one model chunk per stage)",
                             s->virtual_stages, schedule_name(s->schedule));
        s->virtual_stages = 1;
        if (schedule_get(s->schedule)->split && s->pp < 2) /* nothing to fill at pp 1 */
            return conf_fail(err, CONF_ERROR_INVALID, scenario_at(root, "parallel", "schedule"),
                             "the %s schedule needs pipeline parallelism (pp >= 2), got pp %d",
                             schedule_name(s->schedule), s->pp);
        return TRUE;
    }
    if (model_stage_split_set(&s->model))
        return conf_fail(err, CONF_ERROR_INVALID, split_at(root, s),
                         "first_stage_layers and last_stage_layers split the layers over one "
                         "model chunk per stage: not with the %s schedule",
                         schedule_name(s->schedule));
    if (s->virtual_stages == 0)
        s->virtual_stages = 2; /* the default docs/scenarios.md gives */
    if (schedule_get(s->schedule)->vshape)
        return check_v(root, s, err);
    int v = s->virtual_stages, L = s->model.layers;
    if (s->pp < 2)
        return conf_fail(err, CONF_ERROR_INVALID, scenario_at(root, "parallel", "schedule"),
                         "the interleaved schedule needs pipeline parallelism (pp >= 2), got pp %d",
                         s->pp);
    if (L % ((int64_t)s->pp * v) != 0)
        return conf_fail(err, CONF_ERROR_INVALID, scenario_at(root, "parallel", "virtual_stages"),
                         "pp %d x virtual_stages %d = %" G_GINT64_FORMAT
                         " model chunks do not divide the %d layers of %s; choose virtual_stages "
                         "so that pp x virtual_stages divides %d",
                         s->pp, v, (int64_t)s->pp * v, L, s->model.name, L);
    if (s->sync_each_layer && s->recompute == RECOMPUTE_FULL)
        return conf_fail(
            err, CONF_ERROR_INVALID, scenario_at(root, "training", "synchronize_each_layer"),
            "synchronize_each_layer is GPT-NeoX's (DeepSpeed's pipeline engine, "
            "which has no interleaved schedule) and is not modelled with Megatron-LM's "
            "interleaved schedule; set it to false");
    if (s->grad_accum % s->pp != 0)
        return conf_fail(err, CONF_ERROR_INVALID,
                         s->global_batch && !conf_get(conf_get(root, "training"), "grad_accum")
                             ? scenario_at(root, "training", "global_batch")
                             : scenario_at(root, "training", "grad_accum"),
                         "the interleaved schedule needs the micro-batches per iteration (%d) to "
                         "be a multiple of pp %d (Megatron-LM's rule); change grad_accum or "
                         "global_batch",
                         s->grad_accum, s->pp);
    return TRUE;
}

/* The split, where the scenario sets one: each end stage's layer count */
static int report(const Scenario *s, ScenarioParKey *k) {
    if (!model_stage_split_set(&s->model))
        return 0;
    int first;
    k[0] = (ScenarioParKey){.key = "first_stage_layers",
                            .num = model_stage_layers(&s->model, s->pp, 0, &first)};
    k[1] = (ScenarioParKey){.key = "last_stage_layers",
                            .num = model_stage_layers(&s->model, s->pp, s->pp - 1, &first)};
    return 2;
}

const ScenarioPar scenario_par_pp = {.name = "pp",
                                     .keys = keys,
                                     .load = load,
                                     .size = size,
                                     .label = "PP",
                                     .label_always = TRUE,
                                     .report = report,
                                     .check_layout = check_layout,
                                     .check = check};
