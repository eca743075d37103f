/* scenario_cp: context parallelism's part of the scenario (scenario_par.h): parallel.cp and
 * parallel.cp_comm, and the layout errors they add.
 *
 * For: reading and checking; what context parallelism runs is par_cp.c's (with its sources). */
#include "scenario_par.h"

#include <string.h>

static const char *const cp_comm_names[] = {"p2p", "all_gather", NULL};
static const char *const keys[] = {"cp", "cp_comm", NULL};

static gboolean load(const ConfNode *par, Scenario *s, GError **err) {
    int comm = CP_COMM_P2P;
    s->cp = 1;
    if (!conf_int32(par, "cp", FALSE, 1, 1 << 20, &s->cp, err) ||
        !conf_enum(par, "cp_comm", FALSE, cp_comm_names, &comm, err))
        return FALSE;
    s->cp_comm = comm;
    return TRUE;
}

/* in the reports only with context parallelism (the others' unchanged) */
static int report(const Scenario *s, ScenarioParKey *keys) {
    if (s->cp == 1)
        return 0;
    keys[0] = (ScenarioParKey){.key = "cp", .num = s->cp};
    keys[1] = (ScenarioParKey){.key = "cp_comm", .str = cp_comm_names[s->cp_comm]};
    return 2;
}

/* Megatron-LM's 2 cp chunks of each sequence divide it (check, and sim search's sizes) */
static gboolean search_fits(const Scenario *s, int size) {
    return s->seq_len % (2 * size) == 0;
}

/* Megatron-LM's --context-parallel-size and --cp-comm-type (megatron/training/arguments.py;
 * TransformerEngine's cp_comm_type) */
static const ScenarioParArg import_args[] = {{.arg = "context_parallel_size", .key = "cp"},
                                             {.arg = "cp_comm_type",
                                              .key = "cp_comm",
                                              .values = cp_comm_names,
                                              .unmodelled = "a2a and a2a+p2p are not modelled"},
                                             {0}};

static void describe(const Scenario *s, char *buf, size_t n) {
    if (s->cp > 1)
        g_snprintf(buf + strlen(buf), n - strlen(buf), " x CP %d (%s)", s->cp,
                   cp_comm_names[s->cp_comm]);
}

static int size(const Scenario *s) {
    return s->cp;
}

/* Megatron-LM splits each sequence into 2 cp chunks, rank i keeping chunks i and 2 cp - 1 - i
 * (megatron/training/utils.py get_batch_on_this_cp_rank: val.view(..., 2 * cp_size,
 * seq // (2 * cp_size), ...)), so that causal attention's work is even over the ranks. What is
 * refused, and why:
 * - a framework other than Megatron-LM: DeepSpeed's sequence parallelism is Ulysses (an
 *   all-to-all of heads), PyTorch's FSDP has no ring attention; neither is this one;
 * - attention: standard: Megatron-LM runs context parallelism only inside TransformerEngine's
 *   fused attention (DotProductAttention with cp_group; the unfused path has no CP);
 * - mixture of experts: Megatron folds its expert groups over tp x cp x dp in a rank generator of
 *   their own (parallel_state.py, expert_tensor_model_pipeline...); the layout here carves EP from
 *   DP alone;
 * - tp_comm_overlap: the CP plug-in emits the attention block's kernels itself (par_cp.c), and
 *   the producer GEMM's chunks are the walker's for blocks it emits;
 * - a zero-bubble schedule: wgrad.c splits the Builder's dense backward times into B and W, the
 *   CP plug-in's own attention times (par_cp.c) are not split. */
static gboolean check(const ConfNode *root, Scenario *s, GError **err) {
    const ConfNode *cpn = scenario_at(root, "parallel", "cp");
    if (s->cp == 1)
        return TRUE;
    if (!search_fits(s, s->cp))
        return conf_fail(err, CONF_ERROR_INVALID, cpn,
                         "context parallelism %d splits each sequence into 2 x %d = %d chunks "
                         "(Megatron-LM's load-balanced causal split), which do not divide seq_len "
                         "%d; choose seq_len a multiple of %d",
                         s->cp, s->cp, 2 * s->cp, s->seq_len, 2 * s->cp);
    if (s->framework != FW_MEGATRON)
        return conf_fail(err, CONF_ERROR_INVALID, cpn,
                         "context parallelism is Megatron-LM's (ring attention in "
                         "TransformerEngine); %s has none: set training.framework: megatron",
                         framework_get(s->framework)->name);
    if (s->model.attention != ATTN_FLASH)
        return conf_fail(err, CONF_ERROR_INVALID, cpn,
                         "context parallelism runs in TransformerEngine's fused attention only; "
                         "%s has attention: standard (set model.attention=flash)",
                         s->model.name);
    if (s->model.moe.experts > 0)
        return conf_fail(err, CONF_ERROR_INVALID, cpn,
                         "context parallelism with mixture-of-experts layers is not modelled "
                         "(Megatron-LM lays its expert groups over tp x cp x dp)");
    if (s->tp_overlap_chunks > 0)
        return conf_fail(err, CONF_ERROR_INVALID, scenario_at(root, "parallel", "tp_comm_overlap"),
                         "tp_comm_overlap with context parallelism is not modelled");
    if (schedule_get(s->schedule)->split)
        return conf_fail(err, CONF_ERROR_INVALID, scenario_at(root, "parallel", "schedule"),
                         "the %s schedule with context parallelism is not modelled (the ring "
                         "attention's backward is not split into input and weight gradients)",
                         schedule_name(s->schedule));
    return TRUE;
}

const ScenarioPar scenario_par_cp = {.name = "cp",
                                     .keys = keys,
                                     .load = load,
                                     .size = size,
                                     .label = "CP",
                                     .grad_group = TRUE,
                                     .report = report,
                                     .describe = describe,
                                     .search_fits = search_fits,
                                     .import_args = import_args,
                                     .check = check};
