/* scenario_par: the table of the parallelisms' scenario parts (scenario_par.h). Its order is the
 * order of the layout errors' factors (TP x CP x PP) and of the checks. */
#include "scenario_par.h"

#include <string.h>

extern const ScenarioPar scenario_par_tp, scenario_par_cp, scenario_par_ep, scenario_par_dp;
const ScenarioPar *const scenario_pars[] = {&scenario_par_tp, &scenario_par_cp, &scenario_par_pp,
                                            &scenario_par_ep, &scenario_par_dp, NULL};

int scenario_par_report(const Scenario *s, ScenarioParKey *keys) {
    int n = 0;
    for (const ScenarioPar *const *p = scenario_pars; *p; p++)
        if ((*p)->report) {
            n += (*p)->report(s, keys + n);
            g_assert(n <= SCENARIO_PAR_KEYS - 2); /* room for the next entry's */
        }
    return n;
}

void scenario_par_describe(const Scenario *s, char *buf, size_t n) {
    buf[0] = '\0';
    for (const ScenarioPar *const *p = scenario_pars; *p; p++)
        if ((*p)->describe)
            (*p)->describe(s, buf, n);
}

int scenario_search_dims(const Scenario *s, const char **names) {
    int n = 0;
    for (const ScenarioPar *const *p = scenario_pars; *p; p++)
        if ((*p)->search_fits && (*p)->size(s) > 1) {
            g_assert(n < SCENARIO_SEARCH_DIMS);
            names[n++] = (*p)->name;
        }
    return n;
}

gboolean scenario_search_fits(const Scenario *s, const char *name, int size) {
    for (const ScenarioPar *const *p = scenario_pars; *p; p++)
        if ((*p)->search_fits && strcmp((*p)->name, name) == 0)
            return (*p)->search_fits(s, size);
    g_assert_not_reached();
}

int scenario_grad_group_ranks(const Scenario *s) {
    int n = s->dp;
    for (const ScenarioPar *const *p = scenario_pars; *p; p++)
        if ((*p)->grad_group)
            n *= (*p)->size(s);
    return n;
}
