/* executor: cursors over stage programs, one per simulated rank.
 *
 * State per rank is O(streams): next task, tasks done, busy flag per stream. A dependency on task
 * j is met when j's stream has completed more than j's position in it, because streams are in
 * order. Collective groups keep an arrival count; send/recv pairs meet in a channel at the
 * receiver. Memory is O(ranks + groups), independent of the number of tasks. */
#include "executor.h"

#include "conf.h"

typedef struct {
    guint32 next[STREAM_COUNT];
    guint32 done[STREAM_COUNT];
    uint8_t busy[STREAM_COUNT];
    uint8_t finished;
} RankState;

/* p2p channel at a receiver, one per direction: who has arrived */
typedef struct {
    uint8_t send_arrived, recv_arrived;
} Channel;

struct Executor {
    Engine *eng;
    Collectives *coll;
    const Workload *wl;
    const Scenario *sc;
    Stats *st;
    gboolean dedup;
    int nsim;
    int *job_rank; /* simulated index -> job rank */
    RankState *rs;
    int *arrived[STREAM_COUNT]; /* per collective stream, per group of its dimension: members
                                   arrived at the stream's current call */
    Channel *chan[2];           /* per simulated rank: [0] activations in, [1] gradients in */
    int *members;               /* scratch, largest group */
    const ExecObserver *obs;    /* NULL: nobody is watching */
};

static int sim_index(const Executor *ex, int rank) {
    if (!ex->dedup)
        return rank;
    if (workload_dp_index(ex->wl, rank) != 0)
        return -1;
    return workload_stage_of(ex->wl, rank) * ex->sc->tp + workload_tp_index(ex->wl, rank);
}

Executor *exec_new(Engine *eng, Collectives *coll, const Workload *wl, Stats *st, gboolean dedup) {
    Executor *ex = g_new0(Executor, 1);
    const Scenario *sc = workload_scenario(wl);
    ex->eng = eng;
    ex->coll = coll;
    ex->wl = wl;
    ex->sc = sc;
    ex->st = st;
    ex->dedup = dedup;
    ex->nsim = dedup ? sc->tp * sc->pp : sc->gpus;
    ex->job_rank = g_new(int, ex->nsim);
    for (int r = 0, i = 0; r < sc->gpus; r++)
        if (sim_index(ex, r) >= 0)
            ex->job_rank[i++] = r;
    ex->rs = g_new0(RankState, ex->nsim);
    ex->arrived[STREAM_TP] = g_new0(int, workload_group_count(wl, DIM_TP));
    ex->arrived[STREAM_DP] = g_new0(int, workload_group_count(wl, DIM_DP));
    ex->arrived[STREAM_DP_GATHER] = g_new0(int, workload_group_count(wl, DIM_DP));
    ex->chan[0] = g_new0(Channel, ex->nsim);
    ex->chan[1] = g_new0(Channel, ex->nsim);
    ex->members = g_new(int, MAX(MAX(sc->tp, sc->dp), 2));
    return ex;
}

void exec_free(Executor *ex) {
    if (!ex)
        return;
    g_free(ex->job_rank);
    g_free(ex->rs);
    for (int s = 0; s < STREAM_COUNT; s++)
        g_free(ex->arrived[s]);
    g_free(ex->chan[0]);
    g_free(ex->chan[1]);
    g_free(ex->members);
    g_free(ex);
}

void exec_set_observer(Executor *ex, const ExecObserver *obs) {
    ex->obs = obs;
}

int exec_ranks_simulated(const Executor *ex) {
    return ex->nsim;
}

int exec_job_rank(const Executor *ex, int i) {
    return ex->job_rank[i];
}

static const Program *program_of(const Executor *ex, int i) {
    return workload_program(ex->wl, workload_stage_of(ex->wl, ex->job_rank[i]));
}

static void try_advance(Executor *ex, int i);

/* The task at the head of stream s of simulated rank i. */
static const Task *head_task(const Executor *ex, int i, int s) {
    const Program *pg = program_of(ex, i);
    return &g_array_index(pg->tasks, Task,
                          g_array_index(pg->streams[s], guint32, ex->rs[i].next[s]));
}

static void observe_begin(const Executor *ex, int i, int s) {
    if (ex->obs)
        ex->obs->begin(ex->obs->ctx, ex->job_rank[i], head_task(ex, i, s), engine_now(ex->eng));
}

/* The task at the head of stream s of rank i has finished. */
static void complete(Executor *ex, int i, int s) {
    RankState *rs = &ex->rs[i];
    g_assert(rs->busy[s]);
    if (ex->obs)
        ex->obs->end(ex->obs->ctx, ex->job_rank[i], head_task(ex, i, s), engine_now(ex->eng));
    rs->busy[s] = 0;
    rs->done[s]++;
    rs->next[s]++;
    try_advance(ex, i);
}

static void on_compute_done(Engine *eng, void *ctx, uint64_t i) {
    Executor *ex = ctx;
    stats_compute(ex->st, (int)i, FALSE, engine_now(eng));
    complete(ex, (int)i, STREAM_COMPUTE);
}

/* arg: stream << 40 | dim << 32 | group. Each simulated member's head task on that stream is the
 * collective that finished. */
static void on_coll_done(void *ctx, uint64_t arg) {
    Executor *ex = ctx;
    StreamId s = (StreamId)(arg >> 40);
    Dim dim = (Dim)(arg >> 32 & 0xffu);
    int group = (int)(arg & 0xffffffffu);
    SimTime now = engine_now(ex->eng);
    int n = workload_group_members(ex->wl, dim, group, ex->members);
    for (int k = 0; k < n; k++) {
        int i = sim_index(ex, ex->members[k]);
        if (i < 0)
            continue;
        const Program *pg = program_of(ex, i);
        const Task *t = &g_array_index(pg->tasks, Task,
                                       g_array_index(pg->streams[s], guint32, ex->rs[i].next[s]));
        stats_comm(ex->st, i, t->op, dim, FALSE, now);
        complete(ex, i, s);
    }
}

static void start_collective(Executor *ex, int i, const Task *t) {
    Dim dim = t->dim;
    int n = workload_group_size(ex->wl, dim);
    int group = workload_group(ex->wl, dim, ex->job_rank[i], ex->members);
    int expected = ex->dedup && dim == DIM_DP ? 1 : n;
    StreamId s = t->stream;
    if (++ex->arrived[s][group] < expected)
        return;
    ex->arrived[s][group] = 0;
    SimTime now = engine_now(ex->eng);
    double volume = coll_volume(t->op, t->bytes, n);
    for (int k = 0; k < n; k++) {
        int j = sim_index(ex, ex->members[k]);
        if (j < 0)
            continue;
        stats_issue(ex->st, j, t->op, dim, t->bytes, volume);
        stats_comm(ex->st, j, t->op, dim, TRUE, now);
        observe_begin(ex, j, s);
    }
    /* deduplicated DP replicas: the group's traffic in the symmetric form (collectives.h) */
    int rep = ex->dedup && dim == DIM_DP ? ex->job_rank[i] : -1;
    coll_start_symmetric(ex->coll, t->op, ex->members, n, t->bytes, dim, rep, on_coll_done, ex,
                         (uint64_t)s << 40 | (uint64_t)dim << 32 | (uint32_t)group);
}

/* p2p: arg = receiver index << 1 | direction (0 activations forward, 1 gradients backward) */
static void p2p_ends(const Executor *ex, int recv_i, int dir, int *send_i, StreamId *send_s,
                     StreamId *recv_s) {
    int stride = ex->sc->dp * ex->sc->tp;
    int recv_rank = ex->job_rank[recv_i];
    int send_rank = dir == 0 ? recv_rank - stride : recv_rank + stride;
    *send_i = sim_index(ex, send_rank);
    *send_s = dir == 0 ? STREAM_PP_SEND_FWD : STREAM_PP_SEND_BWD;
    *recv_s = dir == 0 ? STREAM_PP_RECV_FWD : STREAM_PP_RECV_BWD;
}

static void on_p2p_done(void *ctx, uint64_t arg) {
    Executor *ex = ctx;
    int recv_i = (int)(arg >> 1), dir = (int)(arg & 1), send_i;
    StreamId ss, rs;
    p2p_ends(ex, recv_i, dir, &send_i, &ss, &rs);
    SimTime now = engine_now(ex->eng);
    stats_comm(ex->st, send_i, COLL_SEND, DIM_PP, FALSE, now);
    stats_comm(ex->st, recv_i, COLL_RECV, DIM_PP, FALSE, now);
    complete(ex, send_i, ss);
    complete(ex, recv_i, rs);
}

static void arrive_p2p(Executor *ex, int i, const Task *t) {
    int stride = ex->sc->dp * ex->sc->tp, rank = ex->job_rank[i];
    int recv_i, dir;
    if (t->kind == TASK_SEND) {
        dir = t->stream == STREAM_PP_SEND_FWD ? 0 : 1;
        recv_i = sim_index(ex, dir == 0 ? rank + stride : rank - stride);
        ex->chan[dir][recv_i].send_arrived = 1;
    } else {
        dir = t->stream == STREAM_PP_RECV_FWD ? 0 : 1;
        recv_i = i;
        ex->chan[dir][recv_i].recv_arrived = 1;
    }
    Channel *c = &ex->chan[dir][recv_i];
    if (!c->send_arrived || !c->recv_arrived)
        return;
    c->send_arrived = c->recv_arrived = 0;
    int send_i;
    StreamId ss, rs;
    p2p_ends(ex, recv_i, dir, &send_i, &ss, &rs);
    SimTime now = engine_now(ex->eng);
    stats_issue(ex->st, send_i, COLL_SEND, DIM_PP, t->bytes, t->bytes);
    stats_issue(ex->st, recv_i, COLL_RECV, DIM_PP, t->bytes, t->bytes);
    stats_comm(ex->st, send_i, COLL_SEND, DIM_PP, TRUE, now);
    stats_comm(ex->st, recv_i, COLL_RECV, DIM_PP, TRUE, now);
    observe_begin(ex, send_i, ss);
    observe_begin(ex, recv_i, rs);
    int ends[2] = {ex->job_rank[send_i], ex->job_rank[recv_i]};
    coll_start(ex->coll, COLL_SEND, ends, 2, t->bytes, DIM_PP, on_p2p_done, ex,
               (uint64_t)recv_i << 1 | (uint64_t)dir);
}

static gboolean deps_met(const Program *pg, const RankState *rs, const Task *t) {
    for (guint32 d = 0; d < t->dep_count; d++) {
        guint32 j = g_array_index(pg->deps, guint32, t->dep_first + d);
        const Task *dep = &g_array_index(pg->tasks, Task, j);
        if (rs->done[dep->stream] <= dep->seq)
            return FALSE;
    }
    return TRUE;
}

static void try_advance(Executor *ex, int i) {
    RankState *rs = &ex->rs[i];
    const Program *pg = program_of(ex, i);
    gboolean all_done = TRUE;
    for (int s = 0; s < STREAM_COUNT; s++) {
        GArray *stream = pg->streams[s];
        if (rs->next[s] < stream->len || rs->busy[s])
            all_done = FALSE;
        if (rs->busy[s] || rs->next[s] >= stream->len)
            continue;
        const Task *t =
            &g_array_index(pg->tasks, Task, g_array_index(stream, guint32, rs->next[s]));
        if (!deps_met(pg, rs, t))
            continue;
        rs->busy[s] = 1;
        switch (t->kind) {
        case TASK_COMPUTE:
            stats_compute(ex->st, i, TRUE, engine_now(ex->eng));
            observe_begin(ex, i, s);
            engine_schedule(ex->eng, t->duration, on_compute_done, ex, (uint64_t)i);
            break;
        case TASK_COLL:
            start_collective(ex, i, t);
            break;
        case TASK_SEND:
        case TASK_RECV:
            arrive_p2p(ex, i, t);
            break;
        }
    }
    if (all_done && !rs->finished) {
        rs->finished = 1;
        stats_finish(ex->st, i, engine_now(ex->eng));
    }
}

gboolean exec_run(Executor *ex, GError **err) {
    for (int i = 0; i < ex->nsim; i++)
        try_advance(ex, i);
    engine_run(ex->eng);
    for (int i = 0; i < ex->nsim; i++) {
        if (!ex->rs[i].finished) {
            g_set_error(err, CONF_ERROR, CONF_ERROR_INVALID,
                        "internal error: rank %d did not finish its program (a schedule "
                        "deadlock); please report this scenario",
                        ex->job_rank[i]);
            return FALSE;
        }
    }
    return TRUE;
}
