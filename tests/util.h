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
/* Load a shipped scenario with overrides, requiring it refused with a message holding want. */
void load_fails(const char *file, const char *const *sets, const char *want);
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
/* Parameters of stage 0 (pp 1) in tensors under the ZeRO-3 persistence threshold: kept whole,
 * never gathered. */
double persistent_params(const Scenario *sc);
/* The deduplicated run one and the all-ranks run all agree: the same iteration and the same
 * communication inventory (op, dim, calls and total volume per row). */
void assert_same_inventory(const SimRun *one, const SimRun *all);
/* A random flow's loads (NetLoad; g_array_unref): up to maxn - 1 distinct links, each picked from
 * the previous flow's links (half the time, so that flows share links and classes form) or else
 * from pool (or any link), with weights 1 to maxw - 1 (mostly 1 where mostly_one). */
GArray *random_flow_loads(GRand *rng, int nlinks, const GArray *prev, const int32_t *pool,
                          int npool, int maxn, int maxw, gboolean mostly_one);
/* Flows over the loads in flows[i] (NetLoad arrays), bytes[i] each after lat[i], class
 * i % NET_CLASSES, on topo, solved twice with a network switch off and on (set(net, FALSE), then
 * TRUE): asserts that every flow ends at the same picosecond and every link carries the same bytes
 * by class (and that the few busiest links are the first of them all). looked: the links the
 * solves looked at, off and on. n at most 128. */
void assert_flows_alike(const Topology *topo, GArray *const *flows, int n, const double *bytes,
                        const SimTime *lat, void (*set)(Network *, gboolean), uint64_t looked[2]);
/* Run a suite; returns the process exit status. */
int run_suite(Suite *s);

#endif
