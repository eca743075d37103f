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

/* STEADY STATE (sim/run/steady.c): one value of three runs a, b, c of 1, 2 and 3 more repeated
 * micro-batches than a; FALSE unless its steps agree exactly, else *out = c + k (c - b). */
static gboolean affine_time(SimTime a, SimTime b, SimTime c, int64_t k, SimTime *out) {
    SimTime d = c - b, kd;
    if (b - a != d || __builtin_mul_overflow(k, d, &kd) || __builtin_add_overflow(c, kd, out))
        return FALSE;
    return TRUE;
}

static gboolean affine_num(double a, double b, double c, int64_t k, double *out) {
    double d = c - b;
    if (b - a != d)
        return FALSE;
    *out = c + (double)k * d;
    return isfinite(*out);
}

static gboolean affine_rank(const RankStats *a, const RankStats *b, RankStats *c, int nslots,
                            int64_t k) {
    RankStats x = *c;
    if (a->in_flight || b->in_flight || c->in_flight || a->computing || b->computing ||
        c->computing)
        return FALSE;
    gboolean ok =
        affine_time(a->last, b->last, c->last, k, &x.last) &&
        affine_time(a->compute, b->compute, c->compute, k, &x.compute) &&
        affine_time(a->comm, b->comm, c->comm, k, &x.comm) &&
        affine_time(a->exposed, b->exposed, c->exposed, k, &x.exposed) &&
        affine_time(a->bubble, b->bubble, c->bubble, k, &x.bubble) &&
        affine_time(a->finish, b->finish, c->finish, k, &x.finish) &&
        affine_time(a->host_wait, b->host_wait, c->host_wait, k, &x.host_wait) &&
        affine_time(a->interference, b->interference, c->interference, k, &x.interference);
    for (int s = 0; ok && s < nslots; s++) {
        const SlotStats *p = &a->slot[s], *q = &b->slot[s], *r = &c->slot[s];
        SlotStats *o = &x.slot[s];
        ok = affine_time(p->time, q->time, r->time, k, &o->time) &&
             affine_num(p->exposed, q->exposed, r->exposed, k, &o->exposed) &&
             affine_num(p->hidden, q->hidden, r->hidden, k, &o->hidden) &&
             affine_num(p->calls, q->calls, r->calls, k, &o->calls) &&
             affine_num(p->volume, q->volume, r->volume, k, &o->volume);
    }
    if (ok)
        *c = x;
    return ok;
}

/* A size's count in table t (0 where it never occurred). */
static double size_count(GHashTable *t, int64_t key) {
    const double *v = g_hash_table_lookup(t, &key);
    return v ? *v : 0.0;
}

gboolean stats_extrapolate(Stats *c, const Stats *b, const Stats *a, int64_t k) {
    if (a->nsim != c->nsim || b->nsim != c->nsim || a->weight != c->weight ||
        b->weight != c->weight || a->nslots != c->nslots || b->nslots != c->nslots ||
        memcmp(a->cat_of_slot, c->cat_of_slot, sizeof c->cat_of_slot) ||
        memcmp(b->cat_of_slot, c->cat_of_slot, sizeof c->cat_of_slot))
        return FALSE;
    int ns = c->nslots;
    /* every figure is checked before any is changed: a failed check leaves c as it ran */
    RankStats *ranks = g_memdup2(c->ranks, sizeof(RankStats) * (size_t)c->nsim);
    double calls[SLOT_MAX], bytes[SLOT_MAX], volume[SLOT_MAX];
    gboolean ok = TRUE;
    for (int r = 0; ok && r < c->nsim; r++)
        ok = affine_rank(&a->ranks[r], &b->ranks[r], &ranks[r], ns, k);
    for (int s = 0; ok && s < ns; s++) {
        ok = affine_num(a->calls[s], b->calls[s], c->calls[s], k, &calls[s]) &&
             affine_num(a->bytes[s], b->bytes[s], c->bytes[s], k, &bytes[s]) &&
             affine_num(a->volume[s], b->volume[s], c->volume[s], k, &volume[s]);
        /* the sizes a and b issued, c issued too (a size new in c fails below) */
        ok = ok && g_hash_table_size(a->sizes[s]) <= g_hash_table_size(c->sizes[s]) &&
             g_hash_table_size(b->sizes[s]) <= g_hash_table_size(c->sizes[s]);
        GHashTableIter it;
        gpointer key, v;
        g_hash_table_iter_init(&it, c->sizes[s]);
        while (ok && g_hash_table_iter_next(&it, &key, &v)) {
            int64_t kk = *(int64_t *)key;
            double out;
            ok = affine_num(size_count(a->sizes[s], kk), size_count(b->sizes[s], kk), *(double *)v,
                            k, &out);
        }
    }
    if (!ok) {
        g_free(ranks);
        return FALSE;
    }
    memcpy(c->ranks, ranks, sizeof(RankStats) * (size_t)c->nsim);
    g_free(ranks);
    for (int s = 0; s < ns; s++) {
        c->calls[s] = calls[s];
        c->bytes[s] = bytes[s];
        c->volume[s] = volume[s];
        GHashTableIter it;
        gpointer key, v;
        g_hash_table_iter_init(&it, c->sizes[s]);
        while (g_hash_table_iter_next(&it, &key, &v)) {
            int64_t kk = *(int64_t *)key;
            double *count = v;
            affine_num(size_count(a->sizes[s], kk), size_count(b->sizes[s], kk), *count, k, count);
        }
    }
    return TRUE;
}
