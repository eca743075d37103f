/* colocate: several training jobs on one machine at once, their traffic sharing its fabric.
 *
 * For: placing each job's nodes on the machine's nodes by a policy, then simulating every job
 * alone on its placement and all jobs together on one engine and one network (flows of different
 * jobs on a common link share it by the network's max-min model), and the links where they meet.
 * Each job keeps its own layout, programs and statistics; only its node ids map onto the machine
 * (job rank r on machine GPU node[r / G] * G + r % G, G GPUs per node).
 * Not for: formatting (report_colocate.c), or jobs that arrive and leave over time: every job
 * runs one iteration from time 0 (docs/colocate.md, "What together means").
 *
 * Every rank of every job is simulated (as `sim --all-ranks`): representatives stand for replicas
 * that do the same at the same times, which another job's traffic on some of their links breaks. */
#ifndef SIM_COLOCATE_H
#define SIM_COLOCATE_H

#include "scenario.h"
#include "stats.h"
#include "topology.h"

/* How the jobs' nodes are chosen among the machine's. */
typedef enum {
    COLOCATE_PACKED, /* job after job on consecutive nodes from node 0 */
    COLOCATE_SPREAD, /* one node to each job in turn; on a dragonfly each next node in the next
                        group (node i of every group before node i + 1 of any) */
    COLOCATE_RANDOM, /* a seeded uniform draw of distinct nodes, each job's sorted */
    COLOCATE_POLICY_COUNT
} ColocatePolicy;

const char *colocate_policy_name(ColocatePolicy p);
/* The policy named `name` (packed, spread, random); FALSE for another name. */
gboolean colocate_policy_parse(const char *name, ColocatePolicy *out);

/* Nodes the machine of spec has: fabric.nodes where given, else a dragonfly's groups x
 * nodes_per_group, else 0: a fabric of no stated size grows to what the jobs need. */
int colocate_machine_nodes(const TopologySpec *spec);

/* Place njobs jobs of job_nodes[j] nodes each on a machine of machine_nodes nodes (0: of exactly
 * their sum) by policy (seed: COLOCATE_RANDOM's draw). node[j] (g_new, job_nodes[j] entries, the
 * caller frees each) receives the machine node of each of job j's nodes, ascending. FALSE, with
 * err CONF_ERROR_INVALID, when the jobs need more nodes than the machine has. spec: the machine
 * (its group size for COLOCATE_SPREAD, and the messages). */
gboolean colocate_place(const TopologySpec *spec, int machine_nodes, const int *job_nodes,
                        int njobs, ColocatePolicy policy, guint32 seed, int **node, GError **err);

typedef struct Colocation Colocation;

typedef struct {
    const char *path;         /* the scenario as given */
    const Scenario *sc;       /* its scenario (the caller's) */
    int nodes;                /* job nodes */
    const int *node;          /* machine node of each job node, ascending */
    SimTime alone, together;  /* iteration (slowest rank's finish), picoseconds */
    int alone_critical;       /* job rank that finished last alone */
    int together_critical;    /* ... and together */
    RankTimes alone_times;    /* that rank's breakdown alone */
    RankTimes together_times; /* ... and together */
    double bytes;             /* bytes the job put on the machine's links (summed over links) */
    int shared_links;         /* of its links, those another job's traffic crosses too */
} ColocateJob;

typedef struct {
    int32_t link;        /* topology link id */
    double capacity;     /* bytes/s */
    const double *bytes; /* per job: bytes it carried for that job (alone and together alike) */
    double busy_s;       /* together: all its bytes / capacity, seconds */
    int jobs;            /* jobs whose traffic crosses it (>= 2) */
} ColocateLink;

/* Check that the jobs name one machine (the first's topology, device and network settings), place
 * them, and simulate each alone on its placement and all together. paths name the scenarios in
 * messages; both arrays must outlive the result. NULL and err: CONF_ERROR (the input's fault:
 * different machines, too many nodes, a layout the machine cannot hold) or EXEC_ERROR. */
Colocation *colocate_run(const Scenario *const *jobs, const char *const *paths, int njobs,
                         ColocatePolicy policy, guint32 seed, GError **err);
void colocate_free(Colocation *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Colocation, colocate_free)

int colocate_jobs(const Colocation *c);
const ColocateJob *colocate_job(const Colocation *c, int j);
ColocatePolicy colocate_policy(const Colocation *c);
guint32 colocate_seed(const Colocation *c);
/* The machine: its node count (what the jobs were placed among) and its topology. */
int colocate_nodes(const Colocation *c);
const Topology *colocate_topology(const Colocation *c);
/* Links carrying traffic of two jobs or more, busiest (busy_s) first, ties by link id. */
guint colocate_links(const Colocation *c);
const ColocateLink *colocate_link(const Colocation *c, guint i);
/* The time every job was running together: the earliest together finish, picoseconds. */
SimTime colocate_window(const Colocation *c);
/* Engine events of all the runs (alone and together), and host seconds spent. */
uint64_t colocate_events(const Colocation *c);
double colocate_wall_s(const Colocation *c);

#endif
