/* exec_host: what a stage program costs its host thread (the dispatch model in executor.c's
 * opening comment): per task, and summed for the report. Pure functions of the program and the
 * topology's host figures; nothing here runs during a simulation. */
#include "executor.h"

SimTime exec_host_cost(const TopologySpec *ts, const Task *t) {
    if (t->kind != TASK_COMPUTE && t->kind != TASK_KERNEL)
        return ts->host_comm_dispatch;
    SimTime op = t->phase == PHASE_BWD ? ts->host_bwd_op_dispatch : ts->host_op_dispatch;
    return t->host_ops * op + t->hooks * ts->host_hook;
}

/* exec_host_work in picoseconds (sums of whole picoseconds: exact in a double), of the tasks at
 * positions [from, to) of the program. */
static HostWork host_sums(const TopologySpec *ts, const Program *pg, guint from, guint to) {
    HostWork w = {0};
    for (guint k = from; k < to; k++) {
        const Task *t = &pg->tasks[k];
        double hooks = (double)t->hooks * ts->host_hook;
        if (t->kind == TASK_COMPUTE || t->kind == TASK_KERNEL) {
            w.dispatch_s += (double)exec_host_cost(ts, t) - hooks;
            w.hooks_s += hooks;
        } else {
            w.comm_s += (double)exec_host_cost(ts, t);
        }
        if (t->host_sync && k > 0) { /* as the executor: none before the first task */
            w.syncs++;
            if (t->phase == PHASE_OPTIMIZER)
                w.step_s += (double)ts->host_step;
        }
    }
    return w;
}

static HostWork host_seconds(HostWork w) {
    w.dispatch_s = sim_time_s(w.dispatch_s);
    w.hooks_s = sim_time_s(w.hooks_s);
    w.comm_s = sim_time_s(w.comm_s);
    w.step_s = sim_time_s(w.step_s);
    return w;
}

HostWork exec_host_work(const TopologySpec *ts, const Program *pg) {
    return host_seconds(host_sums(ts, pg, 0, pg->ntasks));
}

/* The position of micro-batch micro's first forward task in pg's issue order (ntasks: none). */
static guint forward_at(const Program *pg, int32_t micro) {
    for (guint k = 0; k < pg->ntasks; k++)
        if (pg->tasks[k].phase == PHASE_FWD && pg->tasks[k].micro == micro)
            return k;
    return pg->ntasks;
}

gboolean exec_host_work_extrapolate(const TopologySpec *ts, const Program *pg, int32_t first,
                                    int32_t q, int64_t k, HostWork *out) {
    guint at[3];
    for (int i = 0; i < 3; i++)
        at[i] = forward_at(pg, first + i * q);
    if (at[2] >= pg->ntasks || !(at[0] < at[1] && at[1] < at[2]))
        return FALSE;
    /* one period of the program: from a forward's first task to the next's, twice the same */
    HostWork a = host_sums(ts, pg, at[0], at[1]), b = host_sums(ts, pg, at[1], at[2]),
             w = host_sums(ts, pg, 0, pg->ntasks);
    if (a.dispatch_s != b.dispatch_s || a.hooks_s != b.hooks_s || a.comm_s != b.comm_s ||
        a.step_s != b.step_s || a.syncs != b.syncs || (double)k * a.syncs + w.syncs > G_MAXINT)
        return FALSE;
    w.dispatch_s += (double)k * a.dispatch_s;
    w.hooks_s += (double)k * a.hooks_s;
    w.comm_s += (double)k * a.comm_s;
    w.step_s += (double)k * a.step_s;
    w.syncs += (int)(k * a.syncs);
    *out = host_seconds(w);
    return TRUE;
}
