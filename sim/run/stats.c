/* stats: per-rank interval accounting by state changes.
 *
 * Between two state changes of a rank nothing about it changes, so each change first charges the
 * elapsed time to the state it is leaving: compute busy -> compute; else communication in flight
 * -> exposed (split among the categories in flight in proportion to their count); else bubble.
 * Communication time counts whenever anything is in flight, whatever compute does; while compute
 * is busy it is hidden, split among the categories in flight the same way. */
#include "stats.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "bigmem.h"
#include "steps.h"

#define CAT_COUNT (COLL_OP_COUNT * DIM_COUNT)
#define SLOT_MAX 16 /* distinct (op, dim) pairs a run can use */

/* A rank's figures for one (op, dim) slot: what one call's start, end and issue touch, together. */
typedef struct {
    SimTime time;   /* in flight, summed over calls */
    double exposed; /* its share of exposed time */
    double hidden;  /* its share of compute with communication in flight */
    double calls;
    double volume;
} SlotStats;

/* One rank, laid out by what a state change touches: the first cache line (the times it charges,
 * what is in flight) and the slots in flight; a change read eleven lines spread over arrays by
 * field, one for each array it touched (every rank's is touched, in turn, on all of Frontier
 * with every rank: docs/speed.md, "Memory"). */
typedef struct {
    SimTime last; /* time of the last state change */
    SimTime compute, comm, exposed, bubble;
    int32_t in_flight; /* communications in flight */
    uint8_t computing;
    uint16_t active[SLOT_MAX]; /* in flight, by slot */
    SimTime finish;
    SimTime host_wait, interference;
    SlotStats slot[SLOT_MAX];
} __attribute__((aligned(64))) RankStats;

/* the first eight slots' counts in the first line with the times (slots go in first-use order) */
G_STATIC_ASSERT(offsetof(RankStats, active) + 8 * sizeof(uint16_t) <= 64);

struct Stats {
    int nsim, weight, total;
    RankStats *ranks;
    int8_t slot_of[CAT_COUNT]; /* -1 when unused */
    int nslots;
    int cat_of_slot[SLOT_MAX];
    double calls[SLOT_MAX], bytes[SLOT_MAX], volume[SLOT_MAX]; /* summed over all ranks */
    GHashTable *sizes[SLOT_MAX];  /* message bytes (as int64 key) -> calls over all ranks */
    int64_t last_key[SLOT_MAX];   /* the size counted last, and its count in sizes: a run */
    double *last_count[SLOT_MAX]; /* issues the same size again and again (NULL: none yet) */
};

Stats *stats_new(int nsim, int weight, int total) {
    Stats *st = g_new0(Stats, 1);
    st->nsim = nsim;
    st->weight = weight;
    st->total = total;
    st->ranks = bigmem_new0(nsim, sizeof(RankStats)); /* with every rank: many MiB */
    memset(st->slot_of, -1, sizeof st->slot_of);
    return st;
}

void stats_free(Stats *st) {
    if (!st)
        return;
    for (int i = 0; i < st->nslots; i++)
        g_hash_table_unref(st->sizes[i]);
    bigmem_free(st->ranks);
    g_free(st);
}

static int slot(Stats *st, CollOp op, Dim dim) {
    int cat = op * DIM_COUNT + dim;
    if (st->slot_of[cat] >= 0)
        return st->slot_of[cat];
    g_assert(st->nslots < SLOT_MAX);
    int s = st->nslots++;
    st->slot_of[cat] = (int8_t)s;
    st->cat_of_slot[s] = cat;
    st->sizes[s] = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
    return s;
}

static void charge(Stats *st, RankStats *rs, SimTime now) {
    SimTime dt = now - rs->last;
    g_assert(dt >= 0);
    rs->last = now;
    if (dt == 0)
        return;
    if (rs->in_flight > 0)
        rs->comm += dt;
    if (rs->computing) {
        rs->compute += dt;
        for (int s = 0; s < st->nslots && rs->in_flight > 0; s++)
            if (rs->active[s])
                rs->slot[s].hidden += (double)dt * rs->active[s] / rs->in_flight;
    } else if (rs->in_flight > 0) {
        rs->exposed += dt;
        for (int s = 0; s < st->nslots; s++)
            if (rs->active[s])
                rs->slot[s].exposed += (double)dt * rs->active[s] / rs->in_flight;
    } else {
        rs->bubble += dt;
    }
}

size_t stats_rank_bytes(void) {
    return sizeof(RankStats);
}

void stats_prefetch(const Stats *st, int r) {
    __builtin_prefetch(&st->ranks[r]);
}

void stats_compute(Stats *st, int r, gboolean busy, SimTime now) {
    RankStats *rs = &st->ranks[r];
    charge(st, rs, now);
    rs->computing = busy;
}

void stats_comm(Stats *st, int r, CollOp op, Dim dim, gboolean begin, SimTime now) {
    RankStats *rs = &st->ranks[r];
    int s = slot(st, op, dim);
    charge(st, rs, now);
    if (begin) {
        rs->in_flight++;
        rs->active[s]++;
        rs->slot[s].time -= now;
    } else {
        g_assert(rs->active[s] > 0);
        rs->in_flight--;
        rs->active[s]--;
        rs->slot[s].time += now;
    }
}

void stats_issue(Stats *st, int r, CollOp op, Dim dim, double bytes, double volume) {
    RankStats *rs = &st->ranks[r];
    int s = slot(st, op, dim);
    rs->slot[s].calls += 1;
    rs->slot[s].volume += volume;
    st->calls[s] += st->weight;
    st->bytes[s] += bytes * st->weight;
    st->volume[s] += volume * st->weight;
    int64_t key = (int64_t)llround(bytes);
    double *count = st->last_count[s];
    if (!count || st->last_key[s] != key) {
        count = g_hash_table_lookup(st->sizes[s], &key);
        if (!count) {
            count = g_new0(double, 1);
            g_hash_table_insert(st->sizes[s], g_memdup2(&key, sizeof key), count);
        }
        st->last_key[s] = key;
        st->last_count[s] = count;
    }
    *count += st->weight;
}

void stats_host_wait(Stats *st, int r, SimTime dt) {
    st->ranks[r].host_wait += dt;
}

void stats_interference(Stats *st, int r, SimTime dt) {
    st->ranks[r].interference += dt;
}

void stats_finish(Stats *st, int r, SimTime now) {
    RankStats *rs = &st->ranks[r];
    charge(st, rs, now);
    rs->finish = now;
}

RankTimes stats_rank(const Stats *st, int r) {
    const RankStats *rs = &st->ranks[r];
    return (RankTimes){rs->finish, rs->compute,   rs->comm,        rs->exposed,
                       rs->bubble, rs->host_wait, rs->interference};
}

int stats_critical_rank(const Stats *st) {
    int best = 0;
    for (int r = 1; r < st->nsim; r++)
        if (st->ranks[r].finish > st->ranks[best].finish)
            best = r;
    return best;
}

static gint cmp_size(gconstpointer a, gconstpointer b) {
    double x = ((const SizeCount *)a)->bytes, y = ((const SizeCount *)b)->bytes;
    return (x > y) - (x < y);
}

static gint cmp_row(gconstpointer a, gconstpointer b) {
    const CommRow *x = a, *y = b;
    if (x->dim != y->dim)
        return (int)x->dim - (int)y->dim;
    return (int)x->op - (int)y->op;
}

GArray *stats_comm_rows(const Stats *st, int r) {
    GArray *rows = g_array_new(FALSE, TRUE, sizeof(CommRow));
    const RankStats *rs = &st->ranks[r];
    for (int s = 0; s < st->nslots; s++) {
        CommRow row = {0};
        row.op = st->cat_of_slot[s] / DIM_COUNT;
        row.dim = st->cat_of_slot[s] % DIM_COUNT;
        row.calls = st->calls[s] / st->total;
        row.message_bytes = st->bytes[s] / st->total;
        row.volume_bytes = st->volume[s] / st->total;
        row.total_volume_bytes = st->volume[s];
        row.time = rs->slot[s].time;
        row.exposed = rs->slot[s].exposed;
        row.hidden = rs->slot[s].hidden;
        row.sizes = g_array_new(FALSE, FALSE, sizeof(SizeCount));
        GHashTableIter it;
        gpointer k, v;
        g_hash_table_iter_init(&it, st->sizes[s]);
        while (g_hash_table_iter_next(&it, &k, &v)) {
            SizeCount sc = {(double)*(int64_t *)k, *(double *)v / st->total};
            g_array_append_val(row.sizes, sc);
        }
        g_array_sort(row.sizes, cmp_size);
        g_array_append_val(rows, row);
    }
    g_array_sort(rows, cmp_row);
    return rows;
}

void stats_rows_free(GArray *rows) {
    if (!rows)
        return;
    for (guint i = 0; i < rows->len; i++)
        g_array_unref(g_array_index(rows, CommRow, i).sizes);
    g_array_unref(rows);
}

double stats_rank_volume(const Stats *st, int r, CollOp op, Dim dim) {
    int s = st->slot_of[op * DIM_COUNT + dim];
    return s < 0 ? 0.0 : st->ranks[r].slot[s].volume;
}

double stats_rank_calls(const Stats *st, int r, CollOp op, Dim dim) {
    int s = st->slot_of[op * DIM_COUNT + dim];
    return s < 0 ? 0.0 : st->ranks[r].slot[s].calls;
}

/* STEADY STATE (sim/run/steady.c). A copy of st as it stands: mid-run, a cut. */
Stats *stats_copy(const Stats *st) {
    Stats *c = g_memdup2(st, sizeof *st);
    c->ranks = bigmem_new0((size_t)st->nsim, sizeof(RankStats));
    memcpy(c->ranks, st->ranks, sizeof(RankStats) * (size_t)st->nsim);
    for (int s = 0; s < st->nslots; s++) {
        c->sizes[s] = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
        GHashTableIter it;
        gpointer key, v;
        g_hash_table_iter_init(&it, st->sizes[s]);
        while (g_hash_table_iter_next(&it, &key, &v))
            g_hash_table_insert(c->sizes[s], g_memdup2(key, sizeof(int64_t)),
                                g_memdup2(v, sizeof(double)));
        c->last_key[s] = 0;
        c->last_count[s] = NULL; /* the run's cache of the last size: not carried */
    }
    return c;
}

/* One figure at three cuts one period apart (a, b, c) and at the end of the run (*x): FALSE
 * unless it stepped as much from b to c as from a to b, exactly; else *x moves by k such steps. */
static gboolean step_time(SimTime a, SimTime b, SimTime c, int64_t k, SimTime *x) {
    SimTime d = c - b, kd;
    return b - a == d && !__builtin_mul_overflow(k, d, &kd) && !__builtin_add_overflow(*x, kd, x);
}

static gboolean step_num(double a, double b, double c, int64_t k, double *x) {
    if (!steps_even(a, b, c))
        return FALSE;
    *x += (double)k * (c - b);
    return isfinite(*x);
}

/* Rank r's figures at three cuts (a, b, c) and the end (*x): its state the same at the cuts (what
 * it is doing, what is in flight, by slot, and its last change exactly one period later: a rank
 * whose own period differs, a data-parallel replica drifting from the one cut, is refused even
 * where its sums step evenly), each sum stepping evenly; its last change and its finish are the
 * end's, k periods later. */
static gboolean step_rank(const RankStats *a, const RankStats *b, const RankStats *c, RankStats *x,
                          int nslots, int64_t k, SimTime period, SimTime kperiod) {
    if (a->in_flight != b->in_flight || b->in_flight != c->in_flight ||
        a->computing != b->computing || b->computing != c->computing || a->finish || b->finish ||
        c->finish || memcmp(a->active, b->active, sizeof a->active) ||
        memcmp(b->active, c->active, sizeof b->active) || b->last - a->last != period ||
        c->last - b->last != period || x->in_flight || x->computing || x->finish <= 0)
        return FALSE;
    RankStats y = *x;
    gboolean ok =
        step_time(a->compute, b->compute, c->compute, k, &y.compute) &&
        step_time(a->comm, b->comm, c->comm, k, &y.comm) &&
        step_time(a->exposed, b->exposed, c->exposed, k, &y.exposed) &&
        step_time(a->bubble, b->bubble, c->bubble, k, &y.bubble) &&
        step_time(a->host_wait, b->host_wait, c->host_wait, k, &y.host_wait) &&
        step_time(a->interference, b->interference, c->interference, k, &y.interference) &&
        !__builtin_add_overflow(y.last, kperiod, &y.last) &&
        !__builtin_add_overflow(y.finish, kperiod, &y.finish);
    for (int s = 0; ok && s < nslots; s++) {
        const SlotStats *p = &a->slot[s], *q = &b->slot[s], *r = &c->slot[s];
        SlotStats *o = &y.slot[s];
        ok = step_time(p->time, q->time, r->time, k, &o->time) &&
             step_num(p->exposed, q->exposed, r->exposed, k, &o->exposed) &&
             step_num(p->hidden, q->hidden, r->hidden, k, &o->hidden) &&
             step_num(p->calls, q->calls, r->calls, k, &o->calls) &&
             step_num(p->volume, q->volume, r->volume, k, &o->volume);
    }
    if (ok)
        *x = y;
    return ok;
}

/* A size's count in table t (0 where it never occurred). */
static double size_count(GHashTable *t, int64_t key) {
    const double *v = g_hash_table_lookup(t, &key);
    return v ? *v : 0.0;
}

gboolean stats_extrapolate(Stats *x, const Stats *a, const Stats *b, const Stats *c, SimTime period,
                           int64_t k) {
    SimTime kperiod;
    if (a->nsim != x->nsim || b->nsim != x->nsim || c->nsim != x->nsim || a->nslots != c->nslots ||
        b->nslots != c->nslots || c->nslots > x->nslots ||
        memcmp(a->cat_of_slot, b->cat_of_slot, sizeof a->cat_of_slot) ||
        memcmp(b->cat_of_slot, c->cat_of_slot, sizeof b->cat_of_slot) ||
        memcmp(c->cat_of_slot, x->cat_of_slot, sizeof(int) * (size_t)c->nslots) || k < 0 ||
        period <= 0 || __builtin_mul_overflow(k, period, &kperiod))
        return FALSE;
    /* slots the end has beyond the cuts' were first used after them: no step */
    int ns = c->nslots;
    /* every figure is checked before any is changed: a failed check leaves x as it ran */
    RankStats *ranks = g_memdup2(x->ranks, sizeof(RankStats) * (size_t)x->nsim);
    double calls[SLOT_MAX], bytes[SLOT_MAX], volume[SLOT_MAX];
    gboolean ok = TRUE;
    for (int r = 0; ok && r < x->nsim; r++)
        ok = step_rank(&a->ranks[r], &b->ranks[r], &c->ranks[r], &ranks[r], ns, k, period, kperiod);
    for (int s = 0; ok && s < ns; s++) {
        calls[s] = x->calls[s];
        bytes[s] = x->bytes[s];
        volume[s] = x->volume[s];
        ok = step_num(a->calls[s], b->calls[s], c->calls[s], k, &calls[s]) &&
             step_num(a->bytes[s], b->bytes[s], c->bytes[s], k, &bytes[s]) &&
             step_num(a->volume[s], b->volume[s], c->volume[s], k, &volume[s]);
        /* every size the cuts counted, the end counts too: its table is a superset */
        GHashTableIter it;
        gpointer key, v;
        g_hash_table_iter_init(&it, x->sizes[s]);
        while (ok && g_hash_table_iter_next(&it, &key, &v)) {
            int64_t kk = *(int64_t *)key;
            double out = *(double *)v;
            ok = step_num(size_count(a->sizes[s], kk), size_count(b->sizes[s], kk),
                          size_count(c->sizes[s], kk), k, &out);
        }
    }
    if (!ok) {
        g_free(ranks);
        return FALSE;
    }
    memcpy(x->ranks, ranks, sizeof(RankStats) * (size_t)x->nsim);
    g_free(ranks);
    for (int s = 0; s < ns; s++) {
        x->calls[s] = calls[s];
        x->bytes[s] = bytes[s];
        x->volume[s] = volume[s];
        GHashTableIter it;
        gpointer key, v;
        g_hash_table_iter_init(&it, x->sizes[s]);
        while (g_hash_table_iter_next(&it, &key, &v)) {
            int64_t kk = *(int64_t *)key;
            step_num(size_count(a->sizes[s], kk), size_count(b->sizes[s], kk),
                     size_count(c->sizes[s], kk), k, (double *)v);
        }
    }
    return TRUE;
}
