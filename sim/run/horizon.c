/* horizon: stopping a run as soon as its iteration is known to end past its horizon
 * (exec_set_horizon), before its clock gets there.
 *
 * HORIZON. A layout search reruns a candidate only to learn whether it beats the K-th best
 * known time T; once its iteration must exceed T the rest of the run is waste (cmd_search.c,
 * PRUNING). The engine stops at the first event later than T; this stops earlier. For each task
 * of a stage's program, tail is a lower bound on the time from the task's start to the end of
 * the program on the rank that runs it: the longest path from the task to any last task, along
 * the edges that order starts after ends (the next task of its stream; the tasks that list it
 * as a dependency), each task weighing what it lasts at least. A run whose task starts at s with
 * s + tail > horizon stops, failing with EXEC_ERROR_HORIZON: its iteration exceeds the horizon.
 *
 * Claim: in the run, the rank finishes no earlier than s + tail. Proof. The executor starts a
 * task only after its stream's previous task and every dependency have ended (start_ready,
 * deps_met: a dependency is met once its task finished), and host issue only delays it further.
 * A compute task lasts at least its duration less half a picosecond: its work at full speed is
 * kept exact as its speed 1 / (1 + sigma) <= 1 changes (comm_change), and only its end is
 * rounded to the picosecond; a kernel lasts its duration; a communication at least nothing. So
 * along any path the ends follow the starts by at least the weights (duration less 1 ps, floored
 * at 0, for compute; duration for kernels; 0 otherwise), and the rank's last task ends no earlier
 * than s plus the path's weight: the iteration, the slowest rank's finish, no earlier. Float
 * error in the work left (relative 1e-15 an operation) is covered by lowering each tail by a
 * relative 1e-9. The same holds in sim_bound's run (compute at full speed, exact durations),
 * whose horizon is the bound's (sim.c, LOWER BOUND).
 *
 * Cost: O(tasks + dependencies) a stage, once per run with a horizon; one load and compare at
 * each task start of such a run. */
#include "bigmem.h"
#include "exec_internal.h"

#include <math.h>

/* What task t lasts at least, ps (the weights above). */
static SimTime least(const Task *t) {
    if (t->kind == TASK_COMPUTE)
        return MAX(0, t->duration - 1);
    return t->kind == TASK_KERNEL ? t->duration : 0;
}

/* Every edge goes from a task to one issued later (a stream lists its tasks in issue order; a
 * dependency is on a task issued before), so one pass from the last task back pushes each task's
 * tail to its predecessors. */
void exec_program_tails(const Program *pg, SimTime *tail) {
    g_autofree guint32 *pos = g_new(guint32, MAX(pg->ntasks, 1));    /* task -> stream position */
    g_autofree SimTime *after = g_new0(SimTime, MAX(pg->ntasks, 1)); /* longest successor */
    for (int s = 0; s < STREAM_COUNT; s++)
        for (guint32 p = 0; p < pg->nstream[s]; p++)
            pos[pg->streams[s][p]] = p;
    for (guint32 k = pg->ntasks; k-- > 0;) {
        const Task *t = &pg->tasks[k];
        SimTime here = least(t) + after[k];
        tail[k] = (SimTime)floor((double)here * (1 - 1e-9));
        if (pos[k] > 0) {
            guint32 prev = pg->streams[t->stream][pos[k] - 1];
            g_assert(prev < k);
            after[prev] = MAX(after[prev], here);
        }
        for (guint32 d = 0; d < t->dep_count; d++) {
            guint32 dep = pg->deps[t->dep_first + d];
            guint32 j = pg->streams[TASK_DEP_STREAM(dep)][TASK_DEP_POS(dep)];
            g_assert(j < k);
            after[j] = MAX(after[j], here);
        }
    }
}

void exec_tails_new(Executor *ex) {
    size_t n = 0;
    for (int s = 0; s < ex->sc->pp; s++)
        n += ex->prog[s]->ntasks;
    ex->tail_all = bigmem_new0(MAX(n, 1), sizeof(SimTime));
    ex->tail = g_new(SimTime *, ex->sc->pp);
    n = 0;
    for (int s = 0; s < ex->sc->pp; s++) {
        ex->tail[s] = ex->tail_all + n;
        exec_program_tails(ex->prog[s], ex->tail[s]);
        n += ex->prog[s]->ntasks;
    }
}

void exec_tails_free(Executor *ex) {
    bigmem_free(ex->tail_all);
    g_free(ex->tail);
    ex->tail_all = NULL;
    ex->tail = NULL;
}
