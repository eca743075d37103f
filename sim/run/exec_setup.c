/* exec_setup: an executor made, set up and freed, and what it tells after a run (executor.h);
 * executor.c runs it. Every per-rank array is sized here: the simulated ranks (reps.c), their
 * cursors and p2p channels, and per stage the prefix sums of the host's issue costs
 * (exec_host_cost) and the tasks it synchronises before. */
#include "exec_internal.h"

#include "bigmem.h"

/* Programs (tasks and launch times) larger than this are read ahead (complete() in executor.c;
 * docs/speed.md "Memory"); smaller ones stay in cache, where reading ahead only costs
 * instructions. */
#define PREFETCH_BYTES ((size_t)8 << 20)

Executor *exec_new(Engine *eng, Collectives *coll, const Workload *wl, Stats *st, gboolean dedup) {
    Executor *ex = g_new0(Executor, 1);
    const Scenario *sc = workload_scenario(wl);
    ex->eng = eng;
    ex->coll = coll;
    ex->wl = wl;
    ex->sc = sc;
    ex->lay = workload_layout(wl);
    ex->st = st;
    ex->dedup = dedup;
    ex->dedup_tp = dedup && exec_tp_interchangeable(sc, ex->lay);
    ex->span = dedup ? layout_group_size(ex->lay, DIM_DP_INTRA) : sc->dp;
    int weight;
    ex->nsim = exec_sim_count(sc, ex->lay, dedup, &weight);
    ex->horizon = SIM_TIME_MAX;
    ex->job_rank = bigmem_new0(ex->nsim, sizeof(int)); /* read on every event: huge pages */
    ex->sim_of = bigmem_new0(sc->gpus, sizeof(int));
    for (int r = 0, i = 0; r < sc->gpus; r++)
        if ((ex->sim_of[r] = exec_rep_index_given(ex->lay, dedup, ex->dedup_tp, r)) >= 0)
            ex->job_rank[i++] = r;
    /* per simulated rank: with every rank of a large machine, many MiB (bigmem.h) */
    ex->rs = bigmem_new0(ex->nsim, sizeof(RankState));
    for (int c = 0; c < (schedule_get(sc->schedule)->vshape ? WORKLOAD_PP_CHANNELS : 2); c++) {
        ex->chan[c] = bigmem_new0(ex->nsim, sizeof(Channel));
        ex->p2p_group[c] = bigmem_new0(ex->nsim, sizeof(const CollGroup *));
    }
    ex->members = g_new(int, layout_max_group_size(ex->lay));
    ex->done_members = g_new(int, layout_max_group_size(ex->lay));
    const TopologySpec *ts = &sc->topo;
    ex->host = sc->host && (ts->host_op_dispatch > 0 || ts->host_bwd_op_dispatch > 0 ||
                            ts->host_hook > 0 || ts->host_comm_dispatch > 0 || ts->host_step > 0);
    ex->interference = sc->interference &&
                       (ts->device.interference_intra > 0 || ts->device.interference_inter > 0);
    ex->prog = g_new(const Program *, sc->pp);
    size_t prog_bytes = 0;
    for (int s = 0; s < sc->pp; s++) {
        ex->prog[s] = workload_program(wl, s);
        prog_bytes += ex->prog[s]->ntasks * (sizeof(Task) + sizeof(SimTime));
    }
    ex->prefetch = prog_bytes > PREFETCH_BYTES;
    ex->host_cum = g_new0(SimTime *, sc->pp);
    ex->syncs = g_new(GArray *, sc->pp);
    size_t ncum = 0; /* every stage's in one array: 8 bytes a task (bigmem.h) */
    for (int s = 0; s < sc->pp; s++)
        ncum += (size_t)workload_program(wl, s)->ntasks + 1;
    ex->host_cum_all = bigmem_new0(ncum, sizeof(SimTime));
    ncum = 0;
    for (int s = 0; s < sc->pp; s++) {
        const Program *pg = workload_program(wl, s);
        SimTime *cum = ex->host_cum[s] = ex->host_cum_all + ncum;
        ncum += (size_t)pg->ntasks + 1;
        ex->syncs[s] = g_array_new(FALSE, FALSE, sizeof(guint32));
        cum[0] = 0;
        for (guint k = 0; k < pg->ntasks; k++) {
            const Task *t = &pg->tasks[k];
            cum[k + 1] = cum[k] + exec_host_cost(ts, t);
            if (t->host_sync && k > 0)
                g_array_append_val(ex->syncs[s], k);
        }
    }
    return ex;
}

void exec_free(Executor *ex) {
    if (!ex)
        return;
    bigmem_free(ex->job_rank);
    bigmem_free(ex->sim_of);
    gang_free(ex);
    bigmem_free(ex->rs);
    for (int s = 0; s < STREAM_COUNT; s++)
        for (int d = 0; d < DIM_COUNT; d++)
            g_free(ex->arrived[s][d]);
    for (int c = 0; c < WORKLOAD_PP_CHANNELS; c++) {
        bigmem_free(ex->chan[c]);
        bigmem_free(ex->p2p_group[c]);
    }
    for (int d = 0; d < DIM_COUNT; d++)
        g_free(ex->cgroup[d]);
    g_free(ex->members);
    g_free(ex->done_members);
    g_free(ex->mapped);
    bigmem_free(ex->host_cum_all);
    g_free(ex->host_cum);
    g_free(ex->prog);
    for (int s = 0; s < ex->sc->pp; s++)
        g_array_unref(ex->syncs[s]);
    g_free(ex->syncs);
    g_free(ex);
}

void exec_set_observer(Executor *ex, const ExecObserver *obs) {
    ex->obs = obs;
}

void exec_set_cut(Executor *ex, ExecCutFn fn, void *ctx) {
    ex->cut = fn;
    ex->cut_ctx = ctx;
    ex->cut_micro = -1;
}

void exec_set_horizon(Executor *ex, SimTime horizon) {
    ex->horizon = horizon;
}

void exec_set_gpus(Executor *ex, const int *gpu) {
    g_assert(!ex->dedup || !gpu); /* copies and the symmetric form take GPU ids for job ranks */
    ex->gpu = gpu;
    g_free(ex->mapped);
    ex->mapped = gpu ? g_new(int, MAX(2, layout_max_group_size(ex->lay))) : NULL;
}

void exec_set_bound(Executor *ex) {
    ex->bound = TRUE;
    ex->interference = FALSE;
}

int exec_ranks_simulated(const Executor *ex) {
    return ex->nsim;
}

uint64_t exec_group_events(const Executor *ex) {
    return (uint64_t)ex->gang_events;
}

int exec_job_rank(const Executor *ex, int i) {
    return ex->job_rank[i];
}
