/* gang: the ranks of a tensor-parallel group simulated as one while they are in step.
 *
 * GROUPS IN STEP. The members of a TP group run one stage program (the same tasks, durations and
 * host costs). When their executor states are equal (the same tasks done and started, the same
 * host position, the same communication counts and compute slowdown, compute and wake timers due
 * at the same picosecond), every event that concerns the group as a whole keeps them equal: a
 * compute end or a wake-up does to each what it does to the first; a TP collective starts when
 * the group arrives and ends for all its members at once (on_coll_done). So while nothing
 * concerns one member alone, the group is "tied": its first member's state stands for all, only
 * its timers are armed, and one event completes every member. Statistics stay per rank and are
 * charged to every member at the same times as before, so each rank's figures are what they would
 * be with every member simulated separately.
 *
 * What concerns one member alone unties the group first (gang_untie: every member gets the first
 * member's state, its timers due at the same times but held, HELD TIMERS below): a task that is
 * not the group's as a whole about to start (a collective of another dimension, whose group
 * differs per member, a pipeline send or receive, a kernel: each member starts those first, and
 * the group goes on as one if that left them in step), or an event of one member (its own
 * collective, send or kernel ending; another rank's arrival that starts a collective it belongs
 * to). An untied group ties again (gang_try_tie) when its members' states are equal: in the
 * settling event queued at the picosecond of its members' own ends, before they start what the ends
 * enabled (on_settle in executor.c), and at the end of an event that parted it but left its members
 * equal. That is where members that drifted apart (their sends took different paths) meet again.
 *
 * Exact: between tie and untie the members' states are equal by construction, and every event
 * that reaches them is one the group receives as a whole. What differs from running each member
 * is the order of events within one picosecond (the group's in one event; an untied member's
 * timers armed later than its own would have been; what a member's own end enabled starts in the
 * settling event), which no figure depends on: tests/groups_in_step.sh holds every report to the
 * one with sim.group_in_step: false, byte for byte but for the engine's and the solver's work
 * counters. docs/speed.md, "Groups in step". */
#include "exec_internal.h"

#include <string.h>

#include "bigmem.h"

void gang_setup(Executor *ex) {
    int tp = layout_group_size(ex->lay, DIM_TP);
    ex->gang_size = 0;
    /* one rank already stands for the group (dedup_tp), or a trace watches every rank's tasks */
    if (!ex->sc->group_in_step || tp <= 1 || ex->dedup_tp || ex->obs)
        return;
    ex->gang_lead = bigmem_new0(ex->nsim, sizeof(int));
    ex->gang_next = bigmem_new0(ex->nsim, sizeof(int));
    ex->gang_pending = bigmem_new0(ex->nsim, sizeof(uint8_t));
    for (int i = 0; i < ex->nsim; i++)
        ex->gang_lead[i] = -1;
    int *m = g_new(int, tp);
    for (int i = 0; i < ex->nsim; i++) {
        if (ex->gang_lead[i] >= 0)
            continue;
        int g = layout_group_of(ex->lay, DIM_TP, ex->job_rank[i]);
        layout_group_members(ex->lay, DIM_TP, g, m);
        int lead = -1, prev = -1;
        for (int k = 0; k < tp; k++) {
            int j = ex->sim_of[m[k]];
            g_assert(j >= 0);               /* without dedup_tp, every TP member is simulated */
            g_assert(lead < 0 || j > prev); /* members in simulated order: the first leads */
            if (lead < 0)
                lead = j;
            else
                ex->gang_next[prev] = j;
            ex->gang_lead[j] = lead;
            prev = j;
        }
        ex->gang_next[prev] = -1;
    }
    g_free(m);
    ex->gang_size = tp;
}

void gang_free(Executor *ex) {
    bigmem_free(ex->gang_lead);
    bigmem_free(ex->gang_next);
    bigmem_free(ex->gang_pending);
}

/* Whether two members' states are equal (their timers due at the same times). */
static gboolean timer_eq(const EngineTimer *a, const EngineTimer *b) {
    return a->armed == b->armed && (!a->armed || a->when == b->when);
}

static gboolean state_eq(const RankState *a, const RankState *b) {
    return a->completed == b->completed && memcmp(a->next, b->next, sizeof a->next) == 0 &&
           memcmp(a->busy, b->busy, sizeof a->busy) == 0 && a->waiting == b->waiting &&
           a->finished == b->finished && a->stage == b->stage && a->next_sync == b->next_sync &&
           a->completed == b->completed && a->host_first == b->host_first &&
           a->host_base == b->host_base && a->ready_since == b->ready_since &&
           a->comm_intra == b->comm_intra && a->comm_inter == b->comm_inter &&
           a->sigma == b->sigma && a->work_left == b->work_left && a->run_since == b->run_since &&
           a->comp_start == b->comp_start && timer_eq(&a->comp, &b->comp) &&
           timer_eq(&a->wake, &b->wake);
}

void gang_try_tie(Executor *ex, int lead, int changed) {
    const RankState *l = &ex->rs[lead];
    g_assert(ex->gang_lead[lead] == lead && !l->tied);
    if (changed != lead && !state_eq(l, &ex->rs[changed])) /* the likeliest to differ, first */
        return;
    for (int j = ex->gang_next[lead]; j >= 0; j = ex->gang_next[j])
        if (!state_eq(l, &ex->rs[j]))
            return;
    ex->rs[lead].tied = 1;
    for (int j = ex->gang_next[lead]; j >= 0; j = ex->gang_next[j]) {
        RankState *f = &ex->rs[j];
        f->tied = 1;
        /* the first member's fire for all; a cancelled timer's entry still pops as an event,
         * which stands for the rank-event the group's event counts for it (exec_group_events) */
        ex->gang_events -= (int64_t)(f->comp.armed && !f->comp.held) +
                           (int64_t)(f->wake.armed && !f->wake.held); /* held: no entry */
        engine_timer_cancel(&f->comp);
        engine_timer_cancel(&f->wake);
    }
}

/* Arm a follower's timer t as the first member's l is set (absolute time), held (HELD TIMERS
 * below): whether it was. */
static gboolean rearm(Engine *eng, EngineTimer *t, const EngineTimer *l) {
    if (!l->armed)
        return FALSE;
    if (t->armed && !t->held) /* not expected: a tied group's followers' timers are cancelled */
        engine_timer_set(eng, t, l->when - engine_now(eng));
    else
        engine_timer_hold(eng, t, l->when);
    return t->held;
}

/* HELD TIMERS. Untied, each follower gets the first member's timers, but held
 * (engine_timer_hold): armed, due at the same picosecond, with no event queued. Most groups tie
 * again within the same picosecond (their members' sends started, or their own ends settled), and
 * a tie cancels a follower's timers: held ones leave no stale entry to pop. Those of a group that
 * stays untied are released (engine_timer_release) in its settling event, queued at this
 * picosecond (exec_settle_later; gang_part's caller releases them itself), so each fires at the
 * same picosecond as if armed here, only later among that picosecond's events (which no figure
 * depends on: "Groups in step", docs/speed.md). */
gboolean gang_part(Executor *ex, int i) {
    int lead = ex->gang_lead[i];
    RankState *l = &ex->rs[lead];
    g_assert(l->tied);
    l->tied = 0;
    gboolean held = FALSE;
    for (int j = ex->gang_next[lead]; j >= 0; j = ex->gang_next[j]) {
        RankState *f = &ex->rs[j];
        EngineTimer comp = f->comp, wake = f->wake; /* its own callbacks (rank j's) */
        *f = *l;
        f->comp = comp;
        f->wake = wake;
        held |= rearm(ex->eng, &f->comp, &l->comp);
        held |= rearm(ex->eng, &f->wake, &l->wake);
    }
    return held;
}

void gang_untie(Executor *ex, int i) {
    if (gang_part(ex, i))
        exec_settle_later(ex, ex->gang_lead[i]);
}

void gang_release(Executor *ex, int lead) {
    for (int j = ex->gang_next[lead]; j >= 0; j = ex->gang_next[j]) {
        engine_timer_release(ex->eng, &ex->rs[j].comp);
        engine_timer_release(ex->eng, &ex->rs[j].wake);
    }
}
