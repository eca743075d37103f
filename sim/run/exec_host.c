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

/* exec_host_work in picoseconds (sums of whole picoseconds: exact in a double). */
static HostWork host_sums(const TopologySpec *ts, const Program *pg) {
    HostWork w = {0};
    for (guint k = 0; k < pg->ntasks; k++) {
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
    return host_seconds(host_sums(ts, pg));
}

/* x + k (x - y) where y - z = x - y exactly (STEADY STATE). */
static gboolean affine_step(double z, double y, double *x, int64_t k) {
    double d = *x - y;
    if (y - z != d)
        return FALSE;
    *x += (double)k * d;
    return TRUE;
}

gboolean exec_host_work_extrapolate(const TopologySpec *ts, const Program *pa, const Program *pb,
                                    const Program *pc, int64_t k, HostWork *out) {
    HostWork a = host_sums(ts, pa), b = host_sums(ts, pb), c = host_sums(ts, pc);
    double syncs = c.syncs;
    if (!affine_step(a.dispatch_s, b.dispatch_s, &c.dispatch_s, k) ||
        !affine_step(a.hooks_s, b.hooks_s, &c.hooks_s, k) ||
        !affine_step(a.comm_s, b.comm_s, &c.comm_s, k) ||
        !affine_step(a.step_s, b.step_s, &c.step_s, k) ||
        !affine_step(a.syncs, b.syncs, &syncs, k) || syncs > G_MAXINT)
        return FALSE;
    c.syncs = (int)syncs;
    *out = host_seconds(c);
    return TRUE;
}
