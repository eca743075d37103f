/* Helpers shared by the Check suites. */
#ifndef SIM_TEST_UTIL_H
#define SIM_TEST_UTIL_H

#include <check.h>

#include "collectives.h"
#include "report.h"
#include "scenario.h"
#include "sim.h"

/* Path of a shipped scenario, e.g. scen("1.3B_ddp.yaml"); static buffer. */
const char *scen(const char *file);
/* Write text to a fresh temporary .yaml file; returns its path (g_free it). */
char *write_temp_yaml(const char *text);
/* Load a shipped scenario with overrides (NULL-terminated list), failing the test on error. */
Scenario *load_ok(const char *file, const char *const *sets);
/* Load and simulate; fails the test on error. */
SimRun *run_ok(const Scenario *sc, int dedup);
/* The scenario's machine at its node count, failing the test on error. */
Topology *topo_ok(const Scenario *sc);
/* The JSON report of a run, timing off. g_free it. */
char *json_of(const SimRun *run);
/* Time of one collective of `bytes` over members on the scenario's machine, alone on an idle
 * network, as the simulation would run it (picoseconds). */
SimTime coll_time_alone(const Scenario *sc, CollOp op, const int *members, int n, double bytes);
/* Sum of the alone times (picoseconds) of one allgather over members (n of them) per parameter
 * tensor of every unit of stage 0, at elem bytes per parameter: one ZeRO-3 gather of the stage. */
double gathers_alone(const Scenario *sc, const int *members, int n, int elem);
/* The deduplicated run one and the all-ranks run all agree: the same iteration and the same
 * communication inventory (op, dim, calls and total volume per row). */
void assert_same_inventory(const SimRun *one, const SimRun *all);
/* Run a suite; returns the process exit status. */
int run_suite(Suite *s);

#endif
