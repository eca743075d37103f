/* colocate: placement of several jobs on one machine, and their runs alone and together.
 *
 * A run here is sim.c's run_once without representatives, for one job or several on one engine,
 * network and collectives: each job has its workload, statistics and executor, its ranks mapped
 * onto the machine's GPUs (exec_set_gpus), and exec_run_together starts them all at time 0. */
#include "colocate.h"

#include <string.h>

#include "conf.h"
#include "executor.h"

struct Colocation {
    int njobs;
    ColocatePolicy policy;
    guint32 seed;
    int machine_nodes;   /* nodes the jobs were placed among */
    Topology *topo;      /* the machine, up to its last node in use */
    ColocateJob *job;    /* per job */
    int **node;          /* per job: machine node of each job node (ColocateJob.node) */
    int **gpu;           /* per job: machine GPU of each job rank */
    double **link_bytes; /* per job: bytes per link id, from its run alone */
    GArray *links;       /* ColocateLink, links of two jobs or more */
    SimTime window;      /* earliest together finish, ps */
    uint64_t events;
    double wall_s;
};

static const char *const policy_names[COLOCATE_POLICY_COUNT] = {"packed", "spread", "random"};

const char *colocate_policy_name(ColocatePolicy p) {
    return policy_names[p];
}

gboolean colocate_policy_parse(const char *name, ColocatePolicy *out) {
    for (int p = 0; p < COLOCATE_POLICY_COUNT; p++)
        if (strcmp(name, policy_names[p]) == 0) {
            *out = (ColocatePolicy)p;
            return TRUE;
        }
    return FALSE;
}

int colocate_machine_nodes(const TopologySpec *spec) {
    if (spec->machine_nodes > 0)
        return spec->machine_nodes;
    if (spec->nics > 0 && spec->fabric == FABRIC_DRAGONFLY)
        return spec->groups * spec->nodes_per_group;
    return 0;
}

/* --- placement ----------------------------------------------------------------------------- */

static gint cmp_int(gconstpointer a, gconstpointer b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* COLOCATE_SPREAD's order of machine nodes: node i of every group before node i + 1 of any on a
 * dragonfly (groups of nodes_per_group consecutive nodes), else ascending. The first `want`. */
static void spread_order(const TopologySpec *spec, int machine, int want, int *out) {
    gboolean df = spec->nics > 0 && spec->fabric == FABRIC_DRAGONFLY;
    int per = df ? spec->nodes_per_group : machine;
    int groups = (machine + per - 1) / per, k = 0;
    for (int i = 0; i < per && k < want; i++)
        for (int g = 0; g < groups && k < want; g++)
            if ((int64_t)g * per + i < machine)
                out[k++] = g * per + i;
}

/* A sparse shuffle's entry i: what was swapped into place i, else i itself. */
static int shuffled(GHashTable *moved, int i) {
    gpointer v;
    return g_hash_table_lookup_extended(moved, GINT_TO_POINTER(i), NULL, &v) ? GPOINTER_TO_INT(v)
                                                                             : i;
}

gboolean colocate_place(const TopologySpec *spec, int machine_nodes, const int *job_nodes,
                        int njobs, ColocatePolicy policy, guint32 seed, int **node, GError **err) {
    int64_t total = 0;
    for (int j = 0; j < njobs; j++)
        total += job_nodes[j];
    int machine = machine_nodes > 0 ? machine_nodes : (int)MIN(total, G_MAXINT);
    if (total > machine) {
        const char *at = spec->at[spec->machine_nodes > 0 ? TOPO_AT_MACHINE_NODES : TOPO_AT_GROUPS];
        g_set_error(err, CONF_ERROR, CONF_ERROR_INVALID,
                    "%s%smachine %s has %d nodes; the %d jobs need %" G_GINT64_FORMAT
                    " together (choose fewer or smaller jobs, or a larger machine)",
                    at ? at : "", at ? ": " : "", spec->name, machine, njobs, total);
        return FALSE;
    }
    int n = (int)total;
    g_autofree int *order = g_new(int, MAX(n, 1));
    if (policy == COLOCATE_PACKED) {
        for (int k = 0; k < n; k++)
            order[k] = k;
    } else if (policy == COLOCATE_SPREAD) {
        spread_order(spec, machine, n, order);
    } else { /* the first n of a Fisher-Yates shuffle of 0..machine-1, O(n) memory */
        g_autoptr(GRand) rng = g_rand_new_with_seed(seed);
        g_autoptr(GHashTable) moved = g_hash_table_new(g_direct_hash, g_direct_equal);
        for (int k = 0; k < n; k++) {
            int pick = (int)g_rand_int_range(rng, k, machine);
            int a = shuffled(moved, k);
            order[k] = shuffled(moved, pick);
            g_hash_table_insert(moved, GINT_TO_POINTER(pick), GINT_TO_POINTER(a));
        }
    }
    for (int j = 0; j < njobs; j++)
        node[j] = g_new(int, MAX(job_nodes[j], 1));
    if (policy == COLOCATE_SPREAD) { /* one node to each job in turn, in the spread order */
        g_autofree int *got = g_new0(int, MAX(njobs, 1));
        for (int k = 0; k < n;)
            for (int j = 0; j < njobs && k < n; j++)
                if (got[j] < job_nodes[j])
                    node[j][got[j]++] = order[k++];
    } else { /* job after job, in the order's consecutive runs */
        for (int j = 0, k = 0; j < njobs; k += job_nodes[j++])
            memcpy(node[j], order + k, sizeof(int) * (size_t)job_nodes[j]);
    }
    for (int j = 0; j < njobs; j++)
        qsort(node[j], (size_t)job_nodes[j], sizeof(int), cmp_int);
    return TRUE;
}

/* --- one machine ---------------------------------------------------------------------------- */

/* Where a's and b's machines differ (NULL: one machine): what the run shares between jobs, the
 * machine's nodes, links and fabric, its GPU, and the network and collective settings. */
static const char *machine_difference(const Scenario *a, const Scenario *b) {
    const TopologySpec *x = &a->topo, *y = &b->topo;
    if (strcmp(x->name, y->name) != 0)
        return "topology";
    if (strcmp(x->device.name, y->device.name) != 0 ||
        memcmp(x->device.peak_flops, y->device.peak_flops, sizeof x->device.peak_flops) != 0 ||
        x->device.hbm_bandwidth != y->device.hbm_bandwidth)
        return "topology.device";
    guint xp = x->pairs ? x->pairs->len : 0, yp = y->pairs ? y->pairs->len : 0;
    if (x->gpus_per_node != y->gpus_per_node || x->link_bandwidth != y->link_bandwidth ||
        x->link_latency != y->link_latency || x->switch_bandwidth != y->switch_bandwidth ||
        xp != yp || (xp && memcmp(x->pairs->data, y->pairs->data, xp * sizeof(TopoPair)) != 0))
        return "topology.node";
    if (x->nics != y->nics || memcmp(x->nic_gpu, y->nic_gpu, sizeof x->nic_gpu) != 0 ||
        x->nic_bandwidth != y->nic_bandwidth || x->pcie_bandwidth != y->pcie_bandwidth ||
        x->nic_latency != y->nic_latency)
        return "topology.node.nics";
    if (x->fabric != y->fabric || x->routing != y->routing ||
        x->fabric_latency != y->fabric_latency || x->switch_latency != y->switch_latency ||
        x->groups != y->groups || x->nodes_per_group != y->nodes_per_group ||
        x->switches_per_group != y->switches_per_group ||
        x->local_bandwidth != y->local_bandwidth || x->global_links != y->global_links ||
        x->global_bandwidth != y->global_bandwidth || x->nodes_per_leaf != y->nodes_per_leaf ||
        x->taper != y->taper || x->machine_nodes != y->machine_nodes)
        return "topology.fabric";
    if (a->contention != b->contention)
        return "sim.contention";
    if (a->detailed != b->detailed)
        return "sim.collectives";
    return NULL;
}

/* Jobs `which` (n of them) run on one engine and network from time 0. Not together: one job
 * alone, its alone figures and its bytes per link (link_bytes) and in all. Together: their
 * together figures, and the shared links' busy time. */
static gboolean simulate(Colocation *c, const Scenario *const *jobs, const int *which, int n,
                         gboolean together, GError **err) {
    const Scenario *first = jobs[0];
    g_autoptr(Engine) eng = engine_new();
    g_autoptr(Network) net = net_new(eng, c->topo);
    net_set_sharing(net, first->contention);
    g_autoptr(Collectives) coll = coll_new(eng, net, c->topo);
    coll_set_mode(coll, first->detailed ? COLL_MODE_DETAILED : COLL_MODE_AGGREGATED);
    g_autoptr(GPtrArray) wls = g_ptr_array_new_with_free_func((GDestroyNotify)workload_free);
    g_autoptr(GPtrArray) sts = g_ptr_array_new_with_free_func((GDestroyNotify)stats_free);
    g_autoptr(GPtrArray) exs = g_ptr_array_new_with_free_func((GDestroyNotify)exec_free);
    for (int k = 0; k < n; k++) {
        const Scenario *sc = jobs[which[k]];
        Workload *wl = workload_new(sc, c->topo);
        g_ptr_array_add(wls, wl);
        Stats *st = stats_new(sc->gpus, 1, sc->gpus);
        g_ptr_array_add(sts, st);
        Executor *ex = exec_new(eng, coll, wl, st, FALSE);
        g_ptr_array_add(exs, ex);
        exec_set_gpus(ex, c->gpu[which[k]]);
    }
    if (!exec_run_together((Executor *const *)exs->pdata, n, err))
        return FALSE;
    c->events += engine_events(eng);
    gboolean alone = !together;
    g_assert(together || n == 1);
    for (int k = 0; k < n; k++) {
        ColocateJob *jb = &c->job[which[k]];
        const Stats *st = sts->pdata[k];
        int crit = stats_critical_rank(st); /* every rank simulated: index = job rank */
        RankTimes t = stats_rank(st, crit);
        if (alone) {
            jb->alone = t.finish;
            jb->alone_critical = crit;
            jb->alone_times = t;
        } else {
            jb->together = t.finish;
            jb->together_critical = crit;
            jb->together_times = t;
        }
    }
    g_autoptr(GArray) used = net_busiest_links(net, topo_links(c->topo));
    g_autofree double *busy = alone ? NULL : g_new0(double, topo_links(c->topo));
    for (guint i = 0; i < used->len; i++) {
        const NetLinkStat *ls = &g_array_index(used, NetLinkStat, i);
        if (alone) {
            c->link_bytes[which[0]][ls->link] = ls->bytes;
            c->job[which[0]].bytes += ls->bytes;
        } else {
            busy[ls->link] = ls->busy_s;
        }
    }
    for (guint l = 0; !alone && l < c->links->len; l++) {
        ColocateLink *cl = &g_array_index(c->links, ColocateLink, l);
        cl->busy_s = busy[cl->link];
    }
    return TRUE;
}

static gint cmp_link(gconstpointer a, gconstpointer b) {
    const ColocateLink *x = a, *y = b;
    if (x->busy_s != y->busy_s)
        return x->busy_s > y->busy_s ? -1 : 1;
    return (x->link > y->link) - (x->link < y->link);
}

/* The links of two jobs or more, from the alone runs' bytes (a job's flows, their routes and so
 * their bytes on each link do not depend on what else runs: only their timing does). */
static void find_links(Colocation *c) {
    int32_t nl = topo_links(c->topo);
    for (int32_t l = 0; l < nl; l++) {
        int jobs = 0;
        for (int j = 0; j < c->njobs; j++)
            jobs += c->link_bytes[j][l] > 0;
        if (jobs < 2)
            continue;
        double *bytes = g_new(double, c->njobs);
        double sum = 0;
        for (int j = 0; j < c->njobs; j++) {
            bytes[j] = c->link_bytes[j][l];
            sum += bytes[j];
            c->job[j].shared_links += bytes[j] > 0;
        }
        double cap = topo_link_capacity(c->topo, l);
        ColocateLink cl = {l, cap, bytes, sum / cap, jobs};
        g_array_append_val(c->links, cl);
    }
}

Colocation *colocate_run(const Scenario *const *jobs, const char *const *paths, int njobs,
                         ColocatePolicy policy, guint32 seed, GError **err) {
    g_assert(njobs >= 1);
    gint64 t0 = g_get_monotonic_time();
    for (int j = 1; j < njobs; j++) {
        const char *what = machine_difference(jobs[0], jobs[j]);
        if (what && strcmp(what, "topology") == 0) {
            g_set_error(err, CONF_ERROR, CONF_ERROR_INVALID,
                        "%s and %s name different machines (topology %s and %s); colocated "
                        "jobs share one machine, so give them the same topology",
                        paths[0], paths[j], jobs[0]->topo.name, jobs[j]->topo.name);
            return NULL;
        }
        if (what) {
            g_set_error(err, CONF_ERROR, CONF_ERROR_INVALID,
                        "%s and %s differ in %s (topology %s both); colocated jobs share one "
                        "machine and network, so give them the same settings",
                        paths[0], paths[j], what, jobs[0]->topo.name);
            return NULL;
        }
    }
    for (int j = 0; j < njobs; j++) { /* what sim.c's run_once checks before it builds */
        const Scenario *sc = jobs[j];
        double opt_params = workload_first_stage_opt_params(sc);
        if (!device_ops_in_range(&sc->topo.device, &sc->model, sc->micro_batch, sc->seq_len, sc->tp,
                                 sc->precision, opt_params, err)) {
            g_prefix_error(err, "%s: ", paths[j]);
            return NULL;
        }
    }
    g_autoptr(Colocation) c = g_new0(Colocation, 1);
    c->njobs = njobs;
    c->policy = policy;
    c->seed = seed;
    c->job = g_new0(ColocateJob, njobs);
    c->node = g_new0(int *, njobs);
    c->gpu = g_new0(int *, njobs);
    c->link_bytes = g_new0(double *, njobs);
    c->links = g_array_new(FALSE, FALSE, sizeof(ColocateLink));
    const TopologySpec *spec = &jobs[0]->topo;
    g_autofree int *job_nodes = g_new(int, njobs);
    int64_t total = 0;
    for (int j = 0; j < njobs; j++)
        total += job_nodes[j] = jobs[j]->nodes;
    c->machine_nodes = colocate_machine_nodes(spec);
    if (c->machine_nodes == 0)
        c->machine_nodes = (int)MIN(total, G_MAXINT);
    if (!colocate_place(spec, c->machine_nodes, job_nodes, njobs, policy, seed, c->node, err))
        return NULL;
    int last = 0, g = spec->gpus_per_node;
    for (int j = 0; j < njobs; j++) {
        ColocateJob *jb = &c->job[j];
        jb->path = paths[j];
        jb->sc = jobs[j];
        jb->nodes = jobs[j]->nodes;
        jb->node = c->node[j];
        c->gpu[j] = g_new(int, jobs[j]->gpus);
        for (int r = 0; r < jobs[j]->gpus; r++)
            c->gpu[j][r] = c->node[j][r / g] * g + r % g;
        for (int k = 0; k < jb->nodes; k++)
            last = MAX(last, c->node[j][k]);
    }
    /* the machine up to its last node in use: the same links and routes for those as the whole */
    c->topo = topo_new(spec, last + 1, err);
    if (!c->topo)
        return NULL;
    for (int j = 0; j < njobs; j++) {
        c->link_bytes[j] = g_new0(double, topo_links(c->topo));
        if (!simulate(c, jobs, &j, 1, FALSE, err)) {
            g_prefix_error(err, "%s alone: ", paths[j]);
            return NULL;
        }
    }
    find_links(c);
    g_autofree int *all = g_new(int, njobs);
    for (int j = 0; j < njobs; j++)
        all[j] = j;
    if (!simulate(c, jobs, all, njobs, TRUE, err)) {
        g_prefix_error(err, "the jobs together: ");
        return NULL;
    }
    g_array_sort(c->links, cmp_link);
    c->window = SIM_TIME_MAX;
    for (int j = 0; j < njobs; j++)
        c->window = MIN(c->window, c->job[j].together);
    c->wall_s = (double)(g_get_monotonic_time() - t0) / 1e6;
    return g_steal_pointer(&c);
}

void colocate_free(Colocation *c) {
    if (!c)
        return;
    for (int j = 0; j < c->njobs; j++) {
        g_free(c->node[j]);
        g_free(c->gpu[j]);
        g_free(c->link_bytes[j]);
    }
    for (guint l = 0; c->links && l < c->links->len; l++)
        g_free((double *)g_array_index(c->links, ColocateLink, l).bytes);
    if (c->links)
        g_array_unref(c->links);
    g_free(c->node);
    g_free(c->gpu);
    g_free(c->link_bytes);
    g_free(c->job);
    topo_free(c->topo);
    g_free(c);
}

int colocate_jobs(const Colocation *c) {
    return c->njobs;
}

const ColocateJob *colocate_job(const Colocation *c, int j) {
    return &c->job[j];
}

ColocatePolicy colocate_policy(const Colocation *c) {
    return c->policy;
}

guint32 colocate_seed(const Colocation *c) {
    return c->seed;
}

int colocate_nodes(const Colocation *c) {
    return c->machine_nodes;
}

const Topology *colocate_topology(const Colocation *c) {
    return c->topo;
}

guint colocate_links(const Colocation *c) {
    return c->links->len;
}

const ColocateLink *colocate_link(const Colocation *c, guint i) {
    return &g_array_index(c->links, ColocateLink, i);
}

SimTime colocate_window(const Colocation *c) {
    return c->window;
}

uint64_t colocate_events(const Colocation *c) {
    return c->events;
}

double colocate_wall_s(const Colocation *c) {
    return c->wall_s;
}
