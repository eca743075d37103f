/* scenario_par: each parallelism's part of a scenario, declared in one place: the keys of the
 * `parallel:` block it owns, how it reads them, what it adds to the layout's size, and the checks
 * it makes once the layout and the batch are known. What a parallelism runs is its plug-in's in
 * the training layer (sim/training/parallelism.h); this is the scenario's side of it.
 *
 * scenario.c walks the table (scenario_pars) in order: every entry's load after the defaults;
 * every check_layout before the data-parallel size is derived (what the model's shape must
 * allow); every check after the batch is known (what the framework, schedule and model must
 * allow). Adding a parallelism: a scenario_NAME.c with its entry, the entry in scenario_par.c's
 * table, and its fields in Scenario. Not for use outside sim/input/. */
#ifndef SIM_SCENARIO_PAR_H
#define SIM_SCENARIO_PAR_H

#include "scenario.h"

/* sim import: a framework argument (normalised: dashes to underscores) that sets one of a
 * parallelism's keys */
typedef struct {
    const char *arg; /* "context_parallel_size"; NULL ends a list */
    const char *key; /* its key in the parallel block ("cp") */
    /* the values it takes, NULL-terminated, and what else it takes that is not modelled (for the
     * error); values NULL: a size, an integer >= 1 */
    const char *const *values;
    const char *unmodelled;
} ScenarioParArg;

typedef struct {
    const char *name;
    const char *const *keys; /* its keys of the parallel block, NULL-terminated */
    /* reads its keys from the block par into s (after the scenario's defaults; may be NULL) */
    gboolean (*load)(const ConfNode *par, Scenario *s, GError **err);
    /* its factor of the model-parallel size tp x cp x pp, which the data-parallel size divides
     * the GPUs by, and its label in the layout errors ("TP"); NULL: none (carved from DP, or DP) */
    int (*size)(const Scenario *s);
    const char *label;
    gboolean label_always; /* labelled in the errors even at size 1 */
    /* its ranks join the data-parallel gradient group, which holds dp x its size ranks (context
     * parallelism's: Megatron-LM reduces over dp x cp) */
    gboolean grad_group;
    /* what the reports say of it where the scenario turns it on (each may be NULL): its keys in
     * the JSON report's parallel block (returns how many, at most 2), its words on the text
     * report's layout line, appended to buf (n bytes) */
    int (*report)(const Scenario *s, ScenarioParKey *keys);
    void (*describe)(const Scenario *s, char *buf, size_t n);
    /* sim search: whether it may take size (a power of 2 above 1) on the scenario's model and
     * batch; the search explores it where the scenario's size is above 1. NULL: not searched
     * (a dimension of search.c's own, or none). */
    gboolean (*search_fits)(const Scenario *s, int size);
    /* sim import: Megatron-LM's arguments for it, the first setting its size, the others mapped
     * only where that is above 1 (at 1 they are listed as not mapped); NULL: none beyond what
     * import_run.c maps itself (tp, pp, the data-parallel schemes) */
    const ScenarioParArg *import_args;
    /* checks (each may be NULL): of the model's shape, before DP is derived; of everything else,
     * once the layout and batch are known (root: the whole scenario, for the key to blame) */
    gboolean (*check_layout)(const ConfNode *root, Scenario *s, GError **err);
    gboolean (*check)(const ConfNode *root, Scenario *s, GError **err);
} ScenarioPar;

/* The entries (scenario_tp.c, scenario_cp.c, scenario_pipe.c, scenario_moe.c, scenario_dp.c) are
 * declared where their table is (scenario_par.c), but the pipeline's, which scenario.c's layout
 * errors name */
extern const ScenarioPar scenario_par_pp;

/* The table, in order, NULL-terminated */
extern const ScenarioPar *const scenario_pars[];

/* The ranks of the data-parallel gradient group: dp times the size of every entry with
 * grad_group */
int scenario_grad_group_ranks(const Scenario *s);

#endif
