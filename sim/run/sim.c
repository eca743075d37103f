/* sim: builds the layers bottom-up, runs, summarises. */
#include "machine_error.h"
#include "sim_internal.h"

#include <math.h>
#include <string.h>
#include <sys/resource.h>

void sim_run_free(SimRun *run) {
    if (!run)
        return;
    exec_free(run->ex);
    stats_free(run->st);
    workload_free(run->wl);
    coll_free(run->coll);
    net_free(run->net);
    topo_free(run->topo);
    engine_free(run->eng);
    if (run->links)
        g_array_unref(run->links);
    g_free(run->own_sc);
    g_free(run);
}

gboolean sim_error_is_input(const GError *err) {
    /* the machine's errors (a topology that cannot be built, a time past 64-bit picoseconds) are
     * the input's too: the topology file or the sizes asked for */
    return err->domain == CONF_ERROR || err->domain == MACHINE_ERROR ||
           g_error_matches(err, EXEC_ERROR, EXEC_ERROR_OVERFLOW);
}

SimRun *sim_run(const Scenario *sc, int dedup, GError **err) {
    return sim_run_observed(sc, dedup, NULL, err);
}

gboolean sim_inspect(const Scenario *sc, SimInspect *out, GError **err) {
    g_autoptr(Topology) topo = topo_new(&sc->topo, sc->nodes, err);
    if (!topo)
        return FALSE;
    g_autoptr(Workload) wl = workload_new(sc, topo);
    out->memory = workload_memory(wl);
    out->fits = out->memory.total_bytes <= sc->topo.device.hbm_capacity;
    memset(out->comm_kinds, 0, sizeof out->comm_kinds);
    for (int s = 0; s < sc->pp; s++) {
        const Program *pg = workload_program(wl, s);
        for (guint i = 0; i < pg->ntasks; i++) {
            const Task *t = &pg->tasks[i];
            int k = t->op * DIM_COUNT + t->dim;
            if (t->kind != TASK_COMPUTE)
                out->comm_kinds[k / 64] |= G_GUINT64_CONSTANT(1) << (k % 64);
        }
    }
    return TRUE;
}

/* READ AHEAD (engine.c) pays where the ranks' state outgrows the last-level cache a process
 * gets; below, its instructions only cost (docs/speed.md, "Read-ahead", with the measurements;
 * tools/memlatency.c measures that cache). */
#define READ_AHEAD_BYTES ((size_t)8 << 20)

static void note_work(void *ctx, int32_t link, double time, SimTime from, SimTime now);

/* sim_bound's run: (2) of LOWER BOUND, kept as flows start (note_work). */
struct LinkWork {
    double *total;    /* per link id: work of its flows so far, ps */
    double *lead;     /* per link id: max over its flows of start - work of those before, ps */
    double instances; /* task instances of the job (the rounding margin) */
};
typedef struct LinkWork LinkWork;

/* The bound sim_bound returns for the run's raw figure b (ps): lowered by its rounding margin
 * (LOWER BOUND). */
static SimTime bound_lowered(double b, double instances) {
    return MAX(0, (SimTime)floor(b * (1 - 1e-9) - 2.0 * instances));
}

/* The horizon for the bound's run such that a raw figure past it is lowered to past `horizon`:
 * raw > h implies raw (1 - 1e-9) - 2 instances >= horizon + 1. */
static SimTime bound_run_horizon(SimTime horizon, double instances) {
    if (horizon == SIM_TIME_MAX)
        return SIM_TIME_MAX;
    double h = ceil(((double)horizon + 1 + 2.0 * instances) / (1 - 1e-9));
    return h >= (double)SIM_TIME_MAX ? SIM_TIME_MAX : (SimTime)h;
}

void sim_host_cost(SimSummary *s, gint64 t0) {
    s->wall_s = (double)(g_get_monotonic_time() - t0) / 1e6;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    s->peak_rss_bytes = (double)ru.ru_maxrss * 1024.0;
    s->page_faults = (double)ru.ru_minflt + (double)ru.ru_majflt; /* each first touch of a page */
}

void sim_figures(SimRun *run) {
    const Scenario *sc = run->sc;
    SimSummary *s = &run->sum;
    run->critical_index = stats_critical_rank(run->st);
    s->critical_rank = exec_job_rank(run->ex, run->critical_index);
    s->critical = stats_rank(run->st, run->critical_index);
    s->iteration = s->critical.finish;
    s->overlap = s->critical.comm > 0
                     ? (double)(s->critical.comm - s->critical.exposed) / (double)s->critical.comm
                     : 0.0;
    s->model_flops = workload_model_flops(sc);
    double secs = sim_time_s(s->iteration);
    s->tflops_per_gpu = secs > 0 ? s->model_flops / secs / sc->gpus / 1e12 : 0.0;
    s->mfu = s->tflops_per_gpu * 1e12 / sc->topo.device.peak_flops[sc->precision];
    s->neox_flops = workload_neox_flops(sc);
    /* get_flops: flops_per_iteration / (iter_time_s * world_size) */
    s->neox_tflops_per_gpu = secs > 0 ? s->neox_flops / (secs * sc->gpus) / 1e12 : 0.0;
    s->memory = workload_memory(run->wl);
    s->params = model_params(&sc->model, sc->seq_len, sc->tp);
}

/* One run, with representatives (dd) or every rank; with work, sim_bound's run (LOWER BOUND),
 * whose links' work goes there, horizon then being the bound's (bound_run_horizon). */
static SimRun *run_once(const Scenario *sc, gboolean dd, SimTime horizon, LinkWork *work,
                        const ExecObserver *obs, SteadyCuts *cuts, GError **err) {
    gint64 t0 = g_get_monotonic_time();
    g_autoptr(SimRun) run = g_new0(SimRun, 1);
    run->sc = sc;
    double opt_params = workload_first_stage_opt_params(sc);
    if (!device_ops_in_range(&sc->topo.device, &sc->model, sc->micro_batch, sc->seq_len, sc->tp,
                             sc->precision, opt_params, err))
        return NULL;
    run->topo = topo_new(&sc->topo, sc->nodes, err);
    if (!run->topo)
        return NULL;
    run->eng = engine_new();
    run->net = net_new(run->eng, run->topo);
    net_set_sharing(run->net, sc->contention);
    run->coll = coll_new(run->eng, run->net, run->topo);
    coll_set_mode(run->coll, sc->detailed ? COLL_MODE_DETAILED : COLL_MODE_AGGREGATED);
    run->wl = workload_new(sc, run->topo);
    if (work) { /* the bound's margin, and the horizon its raw figure must stay under */
        for (int s = 0; s < sc->pp; s++)
            work->instances += (double)workload_program(run->wl, s)->ntasks * (sc->gpus / sc->pp);
        horizon = bound_run_horizon(horizon, work->instances);
    }
    /* with dedup: representatives (exec_sim_count), each standing for `weight` job ranks */
    int weight, nsim = exec_sim_count(sc, workload_layout(run->wl), dd, &weight);
    run->st = stats_new(nsim, weight, sc->gpus);
    run->ex = exec_new(run->eng, run->coll, run->wl, run->st, dd);
    exec_set_observer(run->ex, obs);
    if (obs) /* a trace lists tasks in the order they come, which EARLY ACTIVATION (network.c) may
                change within a picosecond: off, as groups in step are */
        net_set_early_activation(run->net, FALSE);
    exec_set_horizon(run->ex, horizon);
    if (work) {
        net_set_sharing(run->net, FALSE);
        net_set_flow_observer(run->net, note_work, work);
        exec_set_bound(run->ex);
        coll_set_bound(run->coll);
    }
    if (cuts)
        steady_cuts_arm(cuts, run);
    run->sum.micro_batches_simulated = sc->grad_accum;
    run->sum.read_ahead = exec_state_bytes(run->ex) > READ_AHEAD_BYTES;
    engine_set_read_ahead(run->eng, run->sum.read_ahead);
    if (!exec_run(run->ex, err))
        return NULL;

    sim_figures(run);
    SimSummary *s = &run->sum;
    if (s->iteration > horizon) { /* its last event was the one past the horizon */
        g_set_error(err, EXEC_ERROR, EXEC_ERROR_HORIZON, "the iteration lasts past the horizon");
        return NULL;
    }
    s->events = engine_events(run->eng);
    s->solves = net_solves(run->net);
    s->solved_links = net_solved_links(run->net);
    s->lane_events = engine_lane_events(run->eng);
    s->early_activations = net_early_flows(run->net);
    s->rank_events = s->events + exec_group_events(run->ex);
    s->ranks_simulated = exec_ranks_simulated(run->ex);
    coll_copies_evenness(run->coll, &s->copy_sends, &s->uneven_sends, &s->copy_pace_ratio);
    sim_host_cost(s, t0);
    return g_steal_pointer(&run);
}

/* EXACT REPRESENTATIVES. Representatives are exact where the replicas they stand for would do
 * the same at the same times. A run learns otherwise only as it builds its pipeline sends: where
 * the copies a send carries would not keep one pace (UNEVEN COPIES in coll_streams.c: a
 * dragonfly's global links picked per GPU pair), the one flow holds them in step at the slowest
 * copy's pace, where simulated apart they drift and spread over time (1T_full_frontier: 210.2 s
 * deduplicated against 90.8 s with every rank, docs/speed.md "Representatives"). So by default
 * (DEDUP_EXACT) such a run is made again with every rank, and its report says so with the
 * deduplicated trial's counts (SimSummary.trial_*); DEDUP_ESTIMATE keeps the deduplicated figures.
 * The trial costs what a deduplicated run costs, a small part of the run with every rank. An
 * observer sees only the run whose figures are reported. */
Dedup sim_trial_mode(const SimSummary *trial) {
    return trial->uneven_sends > 0 ? DEDUP_OFF : DEDUP_ESTIMATE;
}

void sim_keep_trial(SimRun *run, const SimSummary *trial) {
    if (sim_trial_mode(trial) != DEDUP_OFF)
        return;
    SimSummary *s = &run->sum;
    s->dedup_rerun = TRUE;
    s->trial_events = trial->events;
    s->trial_copy_sends = trial->copy_sends;
    s->trial_uneven_sends = trial->uneven_sends;
    s->trial_pace_ratio = trial->copy_pace_ratio;
}

Dedup sim_dedup_mode(const Scenario *sc, int dedup) {
    /* where one replica cannot stand for the others (a parallelism's claim, or a scheme's block
     * of replicas that straddles the pipeline's), every rank is simulated */
    if (!workload_replicas_exact(sc))
        return DEDUP_OFF;
    return dedup < 0 ? sc->dedup_replicas : (Dedup)dedup;
}

/* sim_run_observed with a horizon for the run whose figures count (not a trial's, whose
 * iteration may overstate the answer's), every micro-batch simulated. */
SimRun *sim_run_mode(const Scenario *sc, int dedup, SimTime horizon, const ExecObserver *obs,
                     SteadyCuts *cuts, GError **err) {
    gint64 t0 = g_get_monotonic_time();
    Dedup mode = sim_dedup_mode(sc, dedup);
    if (mode != DEDUP_EXACT)
        return run_once(sc, mode != DEDUP_OFF, horizon, NULL, obs, cuts, err);
    g_autoptr(SimRun) trial = run_once(sc, TRUE, SIM_TIME_MAX, NULL, NULL, cuts, err);
    if (trial && sim_trial_mode(&trial->sum) == DEDUP_ESTIMATE && trial->sum.iteration > horizon) {
        g_set_error(err, EXEC_ERROR, EXEC_ERROR_HORIZON, "the iteration lasts past the horizon");
        return NULL;
    }
    if (!trial || (sim_trial_mode(&trial->sum) == DEDUP_ESTIMATE && !obs))
        return g_steal_pointer(&trial);
    Dedup settled = sim_trial_mode(&trial->sum);
    SimSummary kept = trial->sum; /* the trial's memory goes before the run that counts */
    g_clear_pointer(&trial, sim_run_free);
    SimRun *run = run_once(sc, settled != DEDUP_OFF, horizon, NULL, obs, cuts, err);
    if (!run)
        return NULL;
    sim_keep_trial(run, &kept);
    run->sum.wall_s = (double)(g_get_monotonic_time() - t0) / 1e6;
    return run;
}

/* sim_run_mode, or where the scenario's pipeline repeats, STEADY STATE (steady.c). An observer
 * sees every task of the run whose figures count, so it gets every micro-batch. */
static SimRun *run_mode(const Scenario *sc, int dedup, SimTime horizon, const ExecObserver *obs,
                        GError **err) {
    if (!obs && steady_applies(sc))
        return steady_run(sc, dedup, horizon, err);
    return sim_run_mode(sc, dedup, horizon, obs, NULL, err);
}

SimRun *sim_run_observed(const Scenario *sc, int dedup, const ExecObserver *obs, GError **err) {
    return run_mode(sc, dedup, SIM_TIME_MAX, obs, err);
}

SimRun *sim_run_within(const Scenario *sc, int dedup, SimTime horizon, GError **err) {
    return run_mode(sc, dedup, horizon, NULL, err);
}

/* LOWER BOUND. sim_bound's run is the deduplicated one with four changes (exec_set_bound,
 * coll_set_bound, net_set_sharing off): compute is never slowed by communication, every flow
 * moves at its own bottleneck's rate (latency + bytes / min over its links of capacity / weight)
 * whatever else is in flight, every collective and send of a simulated rank is started with the
 * members, op and bytes the run with every rank gives it and chooses the same algorithm,
 * protocol and phases (on every node's loads, as that run does), and each flow loads some of
 * the links the run with every rank's flow loads, each with the same weight: a pipeline send
 * its own path alone (no copies of other replicas), a data-parallel collective the symmetric
 * form that leaves out the other nodes' local links and folds nothing onto the simulated rank's
 * node (coll_streams_set_drop_only). The bound is the larger of two:
 *
 * (1) The critical path: that run's iteration (its slowest simulated rank's finish). Claim: no
 * simulated rank finishes later in it than the same rank in the run with every rank
 * (sim.dedup_replicas: false, which DEDUP_EXACT's rerun is), whose iteration is the slowest of
 * all ranks' finishes. Proof. In both runs a task starts at the latest of: its stream's previous
 * task's end, its dependencies' ends, its issue by the host (fixed dispatch costs after the
 * host's last synchronisation, itself the latest end of the tasks issued before it, plus
 * host_step), for a collective every simulated member's arrival, for a send or receive its
 * partner's arrival (executor.c: try_advance starts a task the moment these hold, and nothing
 * else delays it). The pairing is fixed by program order (a group's k-th call on a stream meets
 * its members' k-th; a channel's k-th send its k-th receive), so both runs execute the same task
 * instances with the same precedences, except that the bound's collectives wait for a subset of
 * the members (the simulated ones): a maximum over fewer terms, never larger. No duration
 * exceeds the exact run's: a compute task takes its duration at full speed, where the exact
 * run's speed is 1 / (1 + sigma) <= 1 (the device's interference figures are >= 0 when loaded);
 * a kernel the same fixed time; a flow its latency plus bytes at the rate it would have alone
 * over its links, some of the exact flow's with the same weights, where under max-min sharing a
 * link of capacity c carries sum w r <= c, so the exact flow's rate never exceeds c / w on any
 * of its links, the bound's among them; a collective is its phases (or detailed steps) one after
 * another, each ending when its last flow does. Start = max of ends, end = start + duration,
 * both monotone in every term: by induction over task instances in the exact run's order of
 * ends, each starts and ends in the bound no later than in the exact run. QED.
 *
 * (2) The links' work: for every link, and every time s at which one of the bound run's flows
 * over it starts, s plus the time at the link's full capacity of the bytes of those of its flows
 * that start at or after s. Claim: the exact run is no shorter. Proof. Each of the bound run's
 * flows is a distinct flow of the exact run (a group's k-th call is started once in each, a
 * simulated rank's send once) with the same bytes, and on every link it loads the same weight,
 * starting no earlier, by (1). A link carries at most its capacity under any sharing, so those
 * flows' bytes over it take that long after s, and each flow ends before the iteration does
 * (its task ends before its ranks finish). QED. This is what sees some of the contention (1)
 * leaves out: the data-parallel rings of a node's GPUs sharing its NICs, which (1) gives each
 * alone. It does not see the other replicas' pipeline sends (only the simulated ones' are
 * started), nor what must follow a flow. With sim.contention off a link may carry more than its
 * capacity, and (2) is not used.
 *
 * Rounding: each time is rounded to the picosecond once per task end or rate change (at most
 * half a picosecond, either way), so the runs' ends may differ from the argument by a picosecond
 * per task instance on the path that sets the finish, and by float error in the rates (relative
 * 1e-15 an operation). The bound returned is lowered by 2 ps per task instance of the job and by
 * a relative 1e-9. */
/* (2) above, kept as flows start (in time order, so a flow's `from` is at or after every earlier
 * start): per link, the work so far (total) and the largest start minus the work before it
 * (lead), so that the link's bound is total + lead, O(1) a load. The start (`now`, not `from`)
 * is what is used: flows come in order of it, and a flow's bytes cannot move before it. */
static void note_work(void *ctx, int32_t link, double time, SimTime from, SimTime now) {
    LinkWork *w = ctx;
    (void)from;
    if (w->total[link] == 0 || (double)now - w->total[link] > w->lead[link])
        w->lead[link] = (double)now - w->total[link];
    w->total[link] += time;
}

static double links_bound(const LinkWork *w, int32_t links) {
    double best = 0;
    for (int32_t l = 0; l < links; l++)
        if (w->total[l] > 0)
            best = MAX(best, w->total[l] + w->lead[l]);
    return best;
}

SimTime sim_bound_within(const Scenario *sc, SimTime horizon, GError **err) {
    g_autoptr(Topology) machine = topo_new(&sc->topo, sc->nodes, err);
    if (!machine)
        return -1;
    int32_t links = topo_links(machine);
    g_autofree double *total = g_new0(double, links), *lead = g_new0(double, links);
    LinkWork work = {total, lead, 0};
    /* ep > 1: never deduplicated (sim_dedup_mode), so every rank */
    g_autoptr(SimRun) run = run_once(sc, sim_dedup_mode(sc, DEDUP_ESTIMATE) != DEDUP_OFF, horizon,
                                     &work, NULL, NULL, err);
    if (!run)
        return -1;
    double b = (double)run->sum.iteration;
    if (sc->contention) /* (2) holds only where links share: off, each flow moves as if alone */
        b = MAX(b, links_bound(&work, links));
    SimTime bound = bound_lowered(b, work.instances);
    if (bound > horizon) {
        g_set_error(err, EXEC_ERROR, EXEC_ERROR_HORIZON, "the bound lies past the horizon");
        return -1;
    }
    return bound;
}

SimTime sim_bound(const Scenario *sc, GError **err) {
    return sim_bound_within(sc, SIM_TIME_MAX, err);
}

HostWork sim_host_work(const SimRun *run) {
    const Scenario *sc = run->sc;
    if (!sc->host)
        return (HostWork){0};
    if (run->sum.steady == STEADY_EXTRAPOLATED)
        return run->host;
    int stage = layout_stage(workload_layout(run->wl), run->sum.critical_rank);
    return exec_host_work(&sc->topo, workload_program(run->wl, stage));
}

GArray *sim_busiest_links(const SimRun *run, int max) {
    if (!run->links)
        return net_busiest_links(run->net, max);
    guint n = MIN(run->links->len, (guint)MAX(max, 0));
    GArray *out = g_array_sized_new(FALSE, FALSE, sizeof(NetLinkStat), n);
    return g_array_append_vals(out, run->links->data, n);
}

const Network *sim_network(const SimRun *run) {
    return run->net;
}

const Workload *sim_workload(const SimRun *run) {
    return run->wl;
}

const Topology *sim_topology(const SimRun *run) {
    return run->topo;
}

const SimSummary *sim_summary(const SimRun *run) {
    return &run->sum;
}

const Scenario *sim_scenario(const SimRun *run) {
    return run->sc;
}

const Stats *sim_stats(const SimRun *run) {
    return run->st;
}

int sim_critical_index(const SimRun *run) {
    return run->critical_index;
}

int sim_index_of(const SimRun *run, int job_rank) {
    for (int i = 0; i < run->sum.ranks_simulated; i++)
        if (exec_job_rank(run->ex, i) == job_rank)
            return i;
    return -1;
}
