/* executor: cursors over stage programs, one per simulated rank.
 *
 * State per rank is O(streams): next task (also the tasks done), busy flag per stream. A
 * dependency on task j is met when j's stream has completed more than j's position in it, because
 * streams are in order. Collective groups keep an arrival count; send/recv pairs meet in a channel
 * at the receiver. Memory is O(ranks + groups) per rank, plus one prefix sum of host costs per
 * stage.
 *
 * The host: one CPU thread per rank issues the program's tasks in issue order (Program.tasks),
 * each costing host_op_dispatch per kernel (compute) or host_comm_dispatch per call, back to back
 * from time 0, so task k is issued at base + sum of the costs of tasks first..k. It runs ahead of
 * the GPU except before a task marked host_sync (workload.c: the optimizer step, and with
 * GPT-NeoX's synchronize_each_layer every checkpointed layer's boundaries): there it waits until
 * every task issued before has finished (a device-wide synchronize); at the optimizer step (the
 * overflow check's device-to-host read: Megatron-LM's found_inf.item() in optimizer.py
 * _unscale_main_grads_and_check_for_nan, DeepSpeed ZeRO's overflow_gpu[0].item() in has_overflow,
 * PyTorch's GradScaler.step found_inf.item()) it also spends host_step. A task starts no earlier
 * than it is issued.
 *
 * Interference: while any communication of a rank moves data, its running compute task
 * progresses at 1 / (1 + sigma) of its speed (sigma: the device's intra- or inter-node figure,
 * the larger of those in flight). Work left is rescaled at each change and the completion timer
 * moved (engine_timer_set), so a task of C alone, overlapped for D by a communication that starts
 * with it, ends at C + sigma D / (1 + sigma) when D < C (1 + sigma). */
#include "exec_internal.h"

#include <math.h>

G_DEFINE_QUARK(sim - exec - error - quark, exec_error)
G_STATIC_ASSERT(DIM_COUNT <= NET_CLASSES); /* collectives tag their traffic with their dim */
G_STATIC_ASSERT(STREAM_COUNT <= 16);       /* RankState.waiting: a bit per stream */

/* The machine GPUs of n job ranks, for the collectives layer, which knows GPUs, not ranks
 * (exec_set_gpus): ranks itself where GPU r runs rank r, else a scratch copy. Called at a group's
 * first use only (the group is kept). */
static const int *machine_gpus(Executor *ex, const int *ranks, int n) {
    if (!ex->gpu)
        return ranks;
    for (int k = 0; k < n; k++)
        ex->mapped[k] = ex->gpu[ranks[k]];
    return ex->mapped;
}

static int sim_index(const Executor *ex, int rank) {
    return ex->sim_of[rank];
}

/* The ranks of one DP replica in a data-parallel group: 1, or those of the dimensions that join
 * the gradient reduction (context parallelism's cp: layout.h) */
static int replica_share(const Executor *ex) {
    return layout_group_size(ex->lay, DIM_DP) / ex->sc->dp;
}

/* Members of a group of dimension dim (n ranks) that are simulated: with dedup, the DP indices
 * below span (a DIM_DP_INTRA block lies wholly among them, a DIM_DP_INTER group has one); one of
 * a TP group where its ranks are interchangeable. */

static int simulated_members(const Executor *ex, Dim dim, int n) {
    if (!ex->dedup)
        return n;
    switch (dim) {
    case DIM_DP: /* with context parallelism, the cp ranks of each (layout.h) */
        return ex->span * replica_share(ex);
    case DIM_DP_INTER:
        return 1;
    case DIM_TP:
        return ex->dedup_tp ? 1 : n;
    default:
        return n;
    }
}

static const Program *program_of(const Executor *ex, int i) {
    return ex->prog[ex->rs[i].stage];
}

static void try_advance(Executor *ex, int i);

/* The task at the head of stream s of simulated rank i. */
static const Task *head_task(const Executor *ex, int i, int s) {
    const Program *pg = program_of(ex, i);
    return &pg->tasks[pg->streams[s][ex->rs[i].next[s]]];
}

static void observe_begin(const Executor *ex, int i, int s) {
    if (ex->obs)
        ex->obs->begin(ex->obs->ctx, ex->job_rank[i], head_task(ex, i, s), engine_now(ex->eng));
}

/* The task at the head of stream s of rank i has finished: its bookkeeping (complete() goes
 * on to start what it enabled). */
static void finish_task(Executor *ex, int i, int s) {
    RankState *rs = &ex->rs[i];
    g_assert(rs->busy[s]);
    if (ex->obs)
        ex->obs->end(ex->obs->ctx, ex->job_rank[i], head_task(ex, i, s), engine_now(ex->eng));
    rs->busy[s] = 0;
    rs->completed++;
    const Program *pg = program_of(ex, i);
    guint32 at = ++rs->next[s];
    if (at < pg->nstream[s])
        rs->waiting |= (uint16_t)(1u << s);
    /* the task after the next one in this stream: by the time it is due, its record and its
     * launch time are in cache (a Megatron-style pipeline's programs, read by every rank's cursor
     * at once, outgrow the caches; docs/speed.md, "Memory") */
    if (ex->prefetch && at + 1 < pg->nstream[s]) {
        guint32 k = pg->streams[s][at + 1];
        __builtin_prefetch(&pg->tasks[k]);
        if (ex->host)
            __builtin_prefetch(&ex->host_cum[rs->stage][k + 1]);
    }
}

/* The task at the head of stream s of rank i has finished: start what it enabled. */
static void complete(Executor *ex, int i, int s) {
    finish_task(ex, i, s);
    try_advance(ex, i);
}

/* After the ends of rank i's own tasks at one picosecond: its TP group ties if its members'
 * states are equal, before any of them starts what the ends enabled (so that no member's compute
 * is timed only to be cancelled by the tie), and goes on as one or each alone. */
static void on_settle(Engine *eng, void *ctx, uint64_t lead) {
    (void)eng;
    Executor *ex = ctx;
    ex->gang_pending[lead] = 0;
    ex->gang_events--; /* an event of its own, standing for no rank-event */
    if (!ex->rs[lead].tied)
        gang_try_tie(ex, (int)lead, (int)lead);
    if (ex->rs[lead].tied) {
        try_advance(ex, (int)lead);
        return;
    }
    gang_release(ex, (int)lead); /* its followers' timers, held since it parted (gang.c) */
    for (int j = (int)lead; j >= 0; j = ex->gang_next[j])
        try_advance(ex, j);
    gang_settle(ex, (int)lead);
}

/* complete() for the end of a task of rank i's own (its send, its kernel, its collective other
 * than a tied group's): where TP groups are formed, what it enabled starts in a settling event
 * after the other ends at this picosecond (engine order: a new event at now runs after those
 * queued), one per group (GROUPS IN STEP, gang.c). */
static void complete_own(Executor *ex, int i, int s) {
    if (ex->gang_size == 0) {
        complete(ex, i, s);
        return;
    }
    finish_task(ex, i, s);
    exec_settle_later(ex, ex->gang_lead[i]);
}

void exec_settle_later(Executor *ex, int lead) {
    if (!ex->gang_pending[lead]) {
        ex->gang_pending[lead] = 1;
        engine_schedule(ex->eng, 0, on_settle, ex, (uint64_t)lead);
    }
}

static void on_compute_done(Engine *eng, void *ctx, uint64_t i) {
    Executor *ex = ctx;
    RankState *rs = &ex->rs[i];
    SimTime now = engine_now(eng);
    SimTime extra = now - rs->comp_start - head_task(ex, (int)i, STREAM_COMPUTE)->duration;
    if (gang_leads(ex, (int)i))
        ex->gang_events += ex->gang_size - 1;
    GANG_EACH(ex, (int)i, j) { /* a tied group's members end together (gang.c) */
        if (extra > 0)
            stats_interference(ex->st, j, extra);
        stats_compute(ex->st, j, FALSE, now);
    }
    complete(ex, (int)i, STREAM_COMPUTE);
}

/* Time at full speed `work` takes at slowdown sigma, picoseconds. */
static SimTime stretch(double work, double sigma) {
    return sim_time_from_ps(sigma == 0 ? work : work * (1.0 + sigma));
}

/* A communication of simulated rank i, across nodes or not, starts (+1) or stops (-1) moving
 * data: recompute its compute slowdown and, when it changed, move the running task's end. */
static void comm_change(Executor *ex, int i, gboolean inter, int delta) {
    RankState *rs = &ex->rs[i];
    if (inter)
        rs->comm_inter += delta;
    else
        rs->comm_intra += delta;
    g_assert(rs->comm_inter >= 0 && rs->comm_intra >= 0);
    if (!ex->interference)
        return;
    const DeviceSpec *d = &ex->sc->topo.device;
    double sigma = MAX(rs->comm_intra > 0 ? d->interference_intra : 0.0,
                       rs->comm_inter > 0 ? d->interference_inter : 0.0);
    if (sigma == rs->sigma)
        return;
    if (rs->busy[STREAM_COMPUTE]) {
        SimTime now = engine_now(ex->eng);
        rs->work_left = MAX(0.0, rs->work_left - (double)(now - rs->run_since) / (1.0 + rs->sigma));
        rs->run_since = now;
        engine_timer_set(ex->eng, &rs->comp, stretch(rs->work_left, sigma));
    }
    rs->sigma = sigma;
}

/* arg: inter << 48 | stream << 40 | dim << 32 | group (inter: the group spans nodes, carried
 * here rather than read again from the group, long out of cache when the collective ends). Each
 * simulated member's head task on that stream is the collective that finished. */
static void on_coll_done(void *ctx, uint64_t arg) {
    Executor *ex = ctx;
    StreamId s = (StreamId)(arg >> 40 & 0xffu);
    Dim dim = (Dim)(arg >> 32 & 0xffu);
    int group = (int)(arg & 0xffffffffu);
    gboolean inter = (gboolean)(arg >> 48 & 1);
    SimTime now = engine_now(ex->eng);
    /* its own copy of the members: complete() may start the next collective, which fills
     * ex->members with another group (a rank's expert and dense buckets share a stream) */
    int *members = ex->done_members;
    int n = layout_group_members(ex->lay, dim, group, members);
    int first = sim_index(ex, members[0]);
    if (dim == DIM_TP && first >= 0 && gang_leads(ex, first)) { /* a tied group (gang.c) */
        const Task *t = head_task(ex, first, s);
        GANG_EACH(ex, first, j)
        stats_comm(ex->st, j, t->op, dim, FALSE, now);
        comm_change(ex, first, inter, -1);
        complete(ex, first, s);
        return;
    }
    for (int k = 0; k < n; k++) {
        int i = sim_index(ex, members[k]);
        if (i < 0)
            continue;
        gang_own(ex, i); /* another dimension's group: its members' TP groups may be tied */
        const Task *t = head_task(ex, i, s);
        stats_comm(ex->st, i, t->op, dim, FALSE, now);
        comm_change(ex, i, inter, -1);
        complete_own(ex, i, s);
    }
}

static void start_collective(Executor *ex, int i, const Task *t) {
    Dim dim = t->dim;
    int n = layout_group_size(ex->lay, dim);
    int group = layout_group_of(ex->lay, dim, ex->job_rank[i]);
    int expected = simulated_members(ex, dim, n);
    StreamId s = t->stream;
    int *arrived = ex->arrived[s][dim];
    if (!arrived)
        arrived = ex->arrived[s][dim] = g_new0(int, layout_group_count(ex->lay, dim));
    /* a tied group arrives at its TP collective as a whole (gang.c) */
    int arriving = gang_leads(ex, i) ? ex->gang_size : 1;
    g_assert(arriving == 1 || dim == DIM_TP);
    if ((arrived[group] += arriving) < expected) /* the members are listed once, by the last */
        return;
    arrived[group] = 0;
    layout_group_members(ex->lay, dim, group, ex->members);
    if (!ex->cgroup[dim])
        ex->cgroup[dim] = g_new0(const CollGroup *, layout_group_count(ex->lay, dim));
    const CollGroup **g = &ex->cgroup[dim][group];
    if (!*g) /* a dimension's collectives are all ordered (CP's sendrecv) or none: one group serves
                every op */
        *g = coll_group(ex->coll, t->op, machine_gpus(ex, ex->members, n), n);
    SimTime now = engine_now(ex->eng);
    double volume = coll_volume(t->op, t->bytes, n);
    gboolean inter = coll_group_spans_nodes(*g);
    for (int k = 0; k < n; k++) {
        int j = sim_index(ex, ex->members[k]);
        if (j < 0)
            continue;
        /* a member of a tied group: its TP collective is the group's, counted on its first
         * member's state; another dimension's concerns it alone. A group that arrived tied is
         * this one (i its first member): its followers' states, stale, are not read. */
        gboolean stale =
            dim == DIM_TP && (arriving > 1 ? j != i : ex->rs[j].tied && ex->gang_lead[j] != j);
        if (dim != DIM_TP)
            gang_own(ex, j);
        stats_issue(ex->st, j, t->op, dim, t->bytes, volume);
        stats_comm(ex->st, j, t->op, dim, TRUE, now);
        if (stale)
            continue;
        comm_change(ex, j, inter, +1);
        observe_begin(ex, j, s);
    }
    /* deduplicated DP replicas: the group's traffic in the symmetric form (collectives.h); a
     * context-parallel group's, which may cross nodes, carries the groups of the replicas this
     * one stands for as images (COLL_IMAGES), as a pipeline send does (arrive_p2p) */
    Dim cls = layout_dim_class(dim);
    /* not with context parallelism: the data-parallel group holds the cp simulated ranks of a
     * replica, whose nodes carry other traffic of their own (their pipeline sends), each its
     * own share of the group's (a node standing for them all would leave the others' idle) */
    gboolean symmetric = cls == DIM_DP && replica_share(ex) == 1;
    CollCall call = {.op = t->op, .group = *g, .bytes = t->bytes, .cls = cls};
    if (ex->dedup && symmetric) { /* in the bound's run too: coll_set_bound */
        call.form = COLL_SYMMETRIC;
        call.rep = ex->job_rank[i];
    }
    if (workload_dim_images(cls) && ex->dedup && !ex->bound && ex->sc->dp > ex->span) {
        g_assert(!ex->dedup_tp); /* no CP or EP where TP peers are interchangeable */
        call.copies = ex->sc->dp / ex->span;
        call.stride = layout_stride(ex->lay, DIM_DP_INTER);
        call.form = COLL_IMAGES;
    }
    /* TP_PEERS. Where rank 0 of a TP group stands for it (exec_tp_interchangeable), its peers'
     * collectives of another dimension (their data-parallel groups: rank 0's shifted by k) run in
     * the same flow as copies. A TP group fills its node, so a DP group has one GPU on each of
     * its nodes and goes by that GPU's own NIC (coll_channels_build); every GPU reaches every
     * NIC alike and NIC k of every node sits alike on the fabric, so rotating every node's GPUs
     * and NICs by k is a symmetry of the machine and of the programs that maps peer 0's group
     * to peer k's: max-min rates being unique, every copy moves at the same rate (collectives.h,
     * copies), and each loads its own GPU's links and NIC, where that peer's pipeline sends meet
     * it. tests: test_tp_peers_as_copies, test_tp_dedup_matches_all_ranks. Not in the bound's
     * run, whose flows may load less than the exact run's (exec_set_bound). */
    if (ex->dedup_tp && dim != DIM_TP && !ex->bound) {
        call.copies = ex->sc->tp;
        call.stride = layout_stride(ex->lay, DIM_TP);
    }
    coll_start(ex->coll, &call, on_coll_done, ex,
               (uint64_t)inter << 48 | (uint64_t)s << 40 | (uint64_t)dim << 32 | (uint32_t)group);
}

/* p2p: arg = receiver index << 3 | inter << 2 | channel (workload_pp_channel: 0 activations
 * forward, 1 gradients backward, 2 and 3 the same for ZB-V's chunk 1 the other way; inter: the
 * send crosses nodes) */
static void p2p_ends(const Executor *ex, int recv_i, int c, int *send_i, StreamId *send_s,
                     StreamId *recv_s) {
    static const StreamId sends[WORKLOAD_PP_CHANNELS] = {
        STREAM_PP_SEND_FWD, STREAM_PP_SEND_BWD, STREAM_PP_SEND_FWD_V, STREAM_PP_SEND_BWD_V};
    static const StreamId recvs[WORKLOAD_PP_CHANNELS] = {
        STREAM_PP_RECV_FWD, STREAM_PP_RECV_BWD, STREAM_PP_RECV_FWD_V, STREAM_PP_RECV_BWD_V};
    int recv_rank = ex->job_rank[recv_i];
    int send_rank = workload_pp_from_prev(c) ? layout_pp_prev(ex->lay, recv_rank)
                                             : layout_pp_next(ex->lay, recv_rank);
    *send_i = sim_index(ex, send_rank);
    *send_s = sends[c];
    *recv_s = recvs[c];
}

static void on_p2p_done(void *ctx, uint64_t arg) {
    Executor *ex = ctx;
    int recv_i = (int)(arg >> 3), c = (int)(arg & 3), send_i;
    gboolean inter = (gboolean)(arg >> 2 & 1);
    StreamId ss, rs;
    p2p_ends(ex, recv_i, c, &send_i, &ss, &rs);
    gang_own(ex, send_i);
    gang_own(ex, recv_i);
    SimTime now = engine_now(ex->eng);
    stats_comm(ex->st, send_i, COLL_SEND, DIM_PP, FALSE, now);
    stats_comm(ex->st, recv_i, COLL_RECV, DIM_PP, FALSE, now);
    comm_change(ex, send_i, inter, -1);
    comm_change(ex, recv_i, inter, -1);
    complete_own(ex, send_i, ss);
    complete_own(ex, recv_i, rs);
}

static void arrive_p2p(Executor *ex, int i, const Task *t) {
    int rank = ex->job_rank[i], dir = workload_pp_channel(t->stream), recv_i = i;
    if (t->kind == TASK_SEND) /* to the next stage where the channel comes from the previous */
        recv_i = sim_index(ex, workload_pp_from_prev(dir) ? layout_pp_next(ex->lay, rank)
                                                          : layout_pp_prev(ex->lay, rank));
    Channel *c = &ex->chan[dir][recv_i];
    if (t->kind == TASK_SEND)
        c->send_arrived = 1;
    else
        c->recv_arrived = 1;
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
    const CollGroup **g = &ex->p2p_group[dir][recv_i];
    if (!*g) {
        int ends[2] = {ex->job_rank[send_i], ex->job_rank[recv_i]};
        *g = coll_group(ex->coll, COLL_SEND, machine_gpus(ex, ends, 2), 2);
    }
    gboolean inter = coll_group_spans_nodes(*g);
    gang_own(ex, send_i); /* the end that arrived first may be in a tied group again */
    gang_own(ex, recv_i);
    comm_change(ex, send_i, inter, +1);
    comm_change(ex, recv_i, inter, +1);
    observe_begin(ex, send_i, ss);
    observe_begin(ex, recv_i, rs);
    /* one tensor-parallel representative: its peers' sends (the next GPUs) in the same flow;
     * deduplicated DP replicas: the sends of the replicas this one stands for (the same stages
     * and TP index, DP index + k x span) in the same flow, so that their paths load the fabric
     * links the replicas' pipelines share (the switches, a dragonfly group's local and global
     * links); their node-local links are images of simulated ones and stay out
     * (COLL_IMAGES). Where their paths differ (some replicas' stage boundary crosses a
     * dragonfly group, others' not) the flow moves at the slowest copy's pace: see docs/speed.md
     * for what that costs against --all-ranks; the run counts such sends and its report says so
     * (UNEVEN COPIES in coll_streams.c). */
    CollCall call = {.op = COLL_SEND, .group = *g, .bytes = t->bytes, .cls = DIM_PP};
    if (ex->bound) {           /* its own send alone, as --all-ranks makes it (exec_set_bound) */
    } else if (ex->dedup_tp) { /* its TP peers' sends, then the other replicas' (TP_PEERS) */
        call.copies = ex->sc->tp * (ex->sc->dp / ex->span);
        call.stride = 1; /* replica r's peer k: rank + r x tp + k (exec_tp_interchangeable) */
        call.form = call.copies > ex->sc->tp ? COLL_IMAGES : COLL_FULL;
        call.whole = ex->sc->tp;
    } else if (ex->dedup && ex->sc->dp > ex->span) {
        call.copies = ex->sc->dp / ex->span;
        call.stride = layout_stride(ex->lay, DIM_DP_INTER); /* span replicas; GPU ids = job ranks */
        call.form = COLL_IMAGES;
    }
    coll_start(ex->coll, &call, on_p2p_done, ex,
               (uint64_t)recv_i << 3 | (uint64_t)inter << 2 | (uint64_t)dir);
}

/* A kernel of a communication (TASK_KERNEL) on stream arg & 0xff of simulated rank arg >> 8 ended.
 */
static void on_kernel_done(Engine *eng, void *ctx, uint64_t arg) {
    Executor *ex = ctx;
    int i = (int)(arg >> 8);
    StreamId s = (StreamId)(arg & 0xffu);
    gang_own(ex, i);
    const Task *t = head_task(ex, i, s);
    stats_comm(ex->st, i, t->op, t->dim, FALSE, engine_now(eng));
    complete_own(ex, i, s);
}

static gboolean deps_met(const Program *pg, const RankState *rs, const Task *t) {
    for (guint32 d = 0; d < t->dep_count; d++) {
        guint32 dep = pg->deps[t->dep_first + d];
        if (rs->next[TASK_DEP_STREAM(dep)] <= TASK_DEP_POS(dep))
            return FALSE;
    }
    return TRUE;
}

/* The next synchronisation of simulated rank i's host: a task index, G_MAXUINT32 when none. */
static guint32 next_sync(const Executor *ex, int i) {
    const GArray *syncs = ex->syncs[ex->rs[i].stage];
    guint32 n = ex->rs[i].next_sync;
    return n < syncs->len ? g_array_index(syncs, guint32, n) : G_MAXUINT32;
}

/* When the host of simulated rank i has issued task k: SIM_TIME_MAX while it waits at a
 * synchronisation before k. */
static SimTime issue_time(const Executor *ex, int i, guint32 k) {
    if (!ex->host)
        return 0;
    const RankState *rs = &ex->rs[i];
    int stage = (int)rs->stage;
    if (k >= next_sync(ex, i))
        return SIM_TIME_MAX;
    const SimTime *cum = ex->host_cum[stage];
    return rs->host_base + cum[k + 1] - cum[rs->host_first];
}

static void on_wake(Engine *eng, void *ctx, uint64_t i) {
    (void)eng;
    Executor *ex = ctx;
    if (gang_leads(ex, (int)i))
        ex->gang_events += ex->gang_size - 1;
    try_advance(ex, (int)i);
}

/* Wake rank i at time `at` (absolute), unless it is woken earlier already. */
static void wake_at(Executor *ex, int i, SimTime at) {
    EngineTimer *w = &ex->rs[i].wake;
    if (w->armed && w->when <= at)
        return;
    engine_timer_set(ex->eng, w, at - engine_now(ex->eng));
}

/* The host of rank i waits at its synchronisations: once every task issued before one has
 * finished, it resumes issuing (at the optimizer step after running the step's framework code,
 * host_step). */
static void host_sync(Executor *ex, int i) {
    RankState *rs = &ex->rs[i];
    const Program *pg = program_of(ex, i);
    for (guint32 sync;
         ex->host && (sync = next_sync(ex, i)) != G_MAXUINT32 && rs->completed >= sync;) {
        SimTime now = engine_now(ex->eng);
        const Task *t = &pg->tasks[sync];
        rs->next_sync++;
        rs->host_first = sync;
        rs->host_base = now + (t->phase == PHASE_OPTIMIZER ? ex->sc->topo.host_step : 0);
        if (ex->obs && ex->obs->host)
            ex->obs->host(ex->obs->ctx, ex->job_rank[i], NULL, now, rs->host_base);
    }
}

/* Whether a tied group (gang.c) runs task t as a whole: compute, and its TP collectives. */
static gboolean group_task(const Task *t) {
    return t->kind == TASK_COMPUTE || (t->kind == TASK_COLL && t->dim == DIM_TP);
}

/* Whether simulated rank i, the first member of a tied group, is about to start a task that is
 * not the group's as a whole (a send, a kernel, another dimension's collective). */
static gboolean about_to_part(const Executor *ex, int i) {
    const RankState *rs = &ex->rs[i];
    const Program *pg = program_of(ex, i);
    for (unsigned m = rs->waiting; m; m &= m - 1) {
        int s = __builtin_ctz(m);
        guint32 k = pg->streams[s][rs->next[s]];
        const Task *t = &pg->tasks[k];
        if (!group_task(t) && deps_met(pg, rs, t) && issue_time(ex, i, k) <= engine_now(ex->eng))
            return TRUE;
    }
    return FALSE;
}

/* Start rank i's tasks that are ready and issued; with `own`, only those that are not a tied
 * group's as a whole (a send, a kernel, another dimension's collective), leaving the rest for a
 * full pass after. */
static void start_ready(Executor *ex, int i, gboolean own) {
    RankState *rs = &ex->rs[i];
    const Program *pg = program_of(ex, i);
    SimTime now = engine_now(ex->eng);
    /* the streams with a task waiting, in stream order (starting one changes no other's deps) */
    for (unsigned m = rs->waiting; m; m &= m - 1) {
        int s = __builtin_ctz(m);
        guint32 k = pg->streams[s][rs->next[s]];
        const Task *t = &pg->tasks[k];
        if ((own && group_task(t)) || !deps_met(pg, rs, t))
            continue;
        SimTime issued = issue_time(ex, i, k);
        if (issued > now && own)
            continue;
        if (issued > now) { /* the GPU could run it; the host has not launched it yet */
            if (s == STREAM_COMPUTE && rs->ready_since < 0)
                rs->ready_since = now;
            if (issued != SIM_TIME_MAX)
                wake_at(ex, i, issued);
            continue;
        }
        if (ex->host && ex->obs && ex->obs->host) {
            const SimTime *cum = ex->host_cum[rs->stage];
            ex->obs->host(ex->obs->ctx, ex->job_rank[i], t, issued - (cum[k + 1] - cum[k]), issued);
        }
        rs->busy[s] = 1;
        rs->waiting &= (uint16_t) ~(1u << s);
        switch (t->kind) {
        case TASK_COMPUTE:
            GANG_EACH(ex, i, j) {
                if (rs->ready_since >= 0)
                    stats_host_wait(ex->st, j, now - rs->ready_since);
                stats_compute(ex->st, j, TRUE, now);
            }
            rs->ready_since = -1;
            observe_begin(ex, i, s);
            if (G_UNLIKELY(i == 0 && ex->cut) && t->phase == PHASE_FWD &&
                t->micro > ex->cut_micro) {
                ex->cut_micro = t->micro;
                ex->cut(ex->cut_ctx, t->micro);
            }
            rs->work_left = (double)t->duration;
            rs->run_since = rs->comp_start = now;
            engine_timer_set(ex->eng, &rs->comp, stretch(rs->work_left, rs->sigma));
            break;
        case TASK_COLL:
            start_collective(ex, i, t);
            break;
        case TASK_KERNEL: /* counts as its communication in flight, not as compute */
            stats_comm(ex->st, i, t->op, t->dim, TRUE, now);
            observe_begin(ex, i, s);
            engine_schedule(ex->eng, t->duration, on_kernel_done, ex,
                            (uint64_t)i << 8 | (uint64_t)s);
            break;
        case TASK_SEND:
        case TASK_RECV:
            arrive_p2p(ex, i, t);
            break;
        }
    }
}

static void try_advance(Executor *ex, int i) {
    RankState *rs = &ex->rs[i];
    const Program *pg = program_of(ex, i);
    host_sync(ex, i);
    if (rs->tied && about_to_part(ex, i)) {
        /* each member starts its own tasks, in member order; then, where that left the members in
           step, the group goes on as one (its followers' timers were held, not armed: HELD
           TIMERS, gang.c), else each member alone */
        gboolean held = gang_part(ex, i);
        for (int j = i; j >= 0; j = ex->gang_next[j])
            start_ready(ex, j, TRUE);
        gang_settle(ex, i);
        if (rs->tied) {
            try_advance(ex, i);
            return;
        }
        if (held)
            gang_release(ex, i);
        for (int j = i; j >= 0; j = ex->gang_next[j])
            try_advance(ex, j);
        gang_settle(ex, i); /* still in step where each started the same at the same time */
        return;
    }
    start_ready(ex, i, FALSE);
    if (rs->completed == pg->ntasks && !rs->finished) { /* each task is in one stream */
        rs->finished = 1;
        GANG_EACH(ex, i, j) {
            ex->nfinished++;
            stats_finish(ex->st, j, engine_now(ex->eng));
        }
        if (rs->tied) /* every member's state says it finished */
            gang_untie(ex, i);
    }
}

/* READ AHEAD (engine.c): what a rank's compute end or wake-up reads first, its state and its
 * statistics' first line, fetched while the event before it runs. */
static void hint_rank(const void *ctx, uint64_t i) {
    const Executor *ex = ctx;
    const char *rs = (const char *)&ex->rs[i];
    for (size_t b = 0; b < sizeof(RankState); b += 64)
        __builtin_prefetch(rs + b);
    stats_prefetch(ex->st, (int)i);
}

size_t exec_state_bytes(const Executor *ex) {
    return (size_t)ex->nsim * (sizeof(RankState) + stats_rank_bytes());
}

/* Every simulated rank set up and started: its first tasks begin at time 0. */
static void start_ranks(Executor *ex) {
    engine_hint(ex->eng, on_compute_done, hint_rank);
    engine_hint(ex->eng, on_wake, hint_rank);
    gang_setup(ex);
    for (int i = 0; i < ex->nsim; i++) {
        RankState *rs = &ex->rs[i];
        rs->ready_since = -1;
        rs->stage = (guint32)layout_stage(ex->lay, ex->job_rank[i]);
        for (int s = 0; s < STREAM_COUNT; s++)
            if (ex->prog[rs->stage]->nstream[s] > 0)
                rs->waiting |= (uint16_t)(1u << s);
        engine_timer_init(&rs->comp, on_compute_done, ex, (uint64_t)i);
        engine_timer_init(&rs->wake, on_wake, ex, (uint64_t)i);
    }
    for (int i = 0; ex->gang_size > 0 && i < ex->nsim; i++)
        if (ex->gang_lead[i] == i) /* every group starts in step */
            gang_try_tie(ex, i, i);
    for (int i = 0; i < ex->nsim; i++)
        if (!ex->rs[i].tied || ex->gang_lead[i] == i)
            try_advance(ex, i);
}

/* After the engine ran dry: an overflow, or a rank that did not finish (a deadlock). */
static gboolean check_finished(const Executor *ex, GError **err) {
    if (engine_overflowed(ex->eng)) {
        g_set_error(err, EXEC_ERROR, EXEC_ERROR_OVERFLOW,
                    "the simulated iteration would last past %.0f days, beyond what 64-bit "
                    "picoseconds hold: a bandwidth too small (NICs, links, fabric), or too much "
                    "work per iteration (seq_len, micro_batch, grad_accum) in the input?",
                    (double)SIM_TIME_MAX / (double)SIM_PS_PER_S / 86400.0);
        return FALSE;
    }
    for (int i = 0; i < ex->nsim; i++) {
        if (!ex->rs[i].finished) {
            g_set_error(err, EXEC_ERROR, EXEC_ERROR_DEADLOCK,
                        "internal error: rank %d did not finish its program (a schedule "
                        "deadlock); please report this scenario",
                        ex->job_rank[i]);
            return FALSE;
        }
    }
    return TRUE;
}

gboolean exec_run(Executor *ex, GError **err) {
    start_ranks(ex);
    engine_run_until(ex->eng, ex->horizon);
    if (ex->nfinished < ex->nsim && engine_now(ex->eng) > ex->horizon &&
        !engine_overflowed(ex->eng)) {
        g_set_error(err, EXEC_ERROR, EXEC_ERROR_HORIZON,
                    "the iteration lasts past %.6f s (the horizon it was run to)",
                    sim_time_s(ex->horizon));
        return FALSE;
    }
    engine_run(ex->eng);
    return check_finished(ex, err);
}

gboolean exec_run_together(Executor *const *ex, int n, GError **err) {
    g_assert(n >= 1);
    for (int j = 0; j < n; j++) {
        g_assert(ex[j]->eng == ex[0]->eng && ex[j]->horizon == SIM_TIME_MAX);
        start_ranks(ex[j]);
    }
    engine_run(ex[0]->eng);
    for (int j = 0; j < n; j++)
        if (!check_finished(ex[j], err))
            return FALSE;
    return TRUE;
}
