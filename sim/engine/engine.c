/* engine: a 4-ary min-heap of events over a flat array, keyed by (time, sequence).
 *
 * The heap holds 16-byte nodes: the time and one key, the insertion sequence (high 40 bits) above
 * the index of the event's payload (low 24 bits: the callback, its context and argument, in a
 * side array whose slots are recycled through a free list). Sift-up and sift-down move only the
 * nodes, four children to a cache line; the payload is read once, when the event runs. No
 * allocation per event. Ordering by (time, key) is ordering by (time, sequence), since sequences
 * are unique. Limits: 2^40 events scheduled in a run (about 10^12), 2^24 pending at once.
 *
 * Each slot knows its node's place in the heap, so an event can be moved where it is
 * (engine_move, and so engine_timer_set on an armed timer): it takes a new sequence, as a fresh
 * event would, and leaves no stale entry behind to be popped later. */
#include "engine.h"

#define SLOT_BITS 24
#define SLOT_MASK ((UINT64_C(1) << SLOT_BITS) - 1)

typedef struct {
    SimTime time; /* when, picoseconds */
    uint64_t key; /* sequence << SLOT_BITS | payload slot */
} Node;

typedef struct {
    EngineFn fn;
    void *ctx;
    uint64_t arg;
} Payload;

struct Engine {
    Node *heap;          /* heap[0] is the earliest event */
    size_t len;          /* events in the heap */
    size_t cap;          /* allocated nodes */
    Payload *pay;        /* by slot */
    uint32_t *free;      /* free slots, a stack */
    uint32_t *pos;       /* by slot: its node's index in the heap while pending */
    size_t nfree;        /* slots on it */
    size_t pay_len;      /* slots ever used (pay and free hold pay_cap) */
    size_t pay_cap;      /* allocated slots */
    SimTime now;         /* picoseconds */
    uint64_t seq;        /* next insertion sequence */
    uint64_t done;       /* events executed */
    gboolean overflowed; /* some event would have come at or past SIM_TIME_MAX */
};

Engine *engine_new(void) {
    Engine *eng = g_new0(Engine, 1);
    eng->cap = eng->pay_cap = 1024;
    eng->heap = g_new(Node, eng->cap);
    eng->pay = g_new(Payload, eng->pay_cap);
    eng->free = g_new(uint32_t, eng->pay_cap);
    eng->pos = g_new(uint32_t, eng->pay_cap);
    return eng;
}

void engine_free(Engine *eng) {
    if (!eng)
        return;
    g_free(eng->heap);
    g_free(eng->pay);
    g_free(eng->free);
    g_free(eng->pos);
    g_free(eng);
}

SimTime engine_now(const Engine *eng) {
    return eng->now;
}

gboolean engine_overflowed(const Engine *eng) {
    return eng->overflowed;
}

uint64_t engine_events(const Engine *eng) {
    return eng->done;
}

size_t engine_pending(const Engine *eng) {
    return eng->len;
}

static inline gboolean node_before(const Node *a, const Node *b) {
    return a->time < b->time || (a->time == b->time && a->key < b->key);
}

/* Put node ev at heap index i (a hole), recording where its slot now is. */
static inline void place(Engine *eng, size_t i, Node ev) {
    eng->heap[i] = ev;
    eng->pos[ev.key & SLOT_MASK] = (uint32_t)i;
}

static void sift_up(Engine *eng, size_t i, Node ev) {
    while (i > 0) {
        size_t parent = (i - 1) / 4;
        if (!node_before(&ev, &eng->heap[parent]))
            break;
        place(eng, i, eng->heap[parent]);
        i = parent;
    }
    place(eng, i, ev);
}

static void sift_down(Engine *eng, size_t i, Node ev) {
    size_t n = eng->len;
    for (;;) {
        size_t first = 4 * i + 1, best = i;
        const Node *bestp = &ev;
        for (size_t c = first; c < first + 4 && c < n; c++) {
            if (node_before(&eng->heap[c], bestp)) {
                best = c;
                bestp = &eng->heap[c];
            }
        }
        if (best == i)
            break;
        place(eng, i, eng->heap[best]);
        i = best;
    }
    place(eng, i, ev);
}

static uint32_t schedule_slot(Engine *eng, SimTime delay, EngineFn fn, void *ctx, uint64_t arg) {
    if (eng->len == eng->cap) {
        eng->cap *= 2;
        eng->heap = g_renew(Node, eng->heap, eng->cap);
    }
    uint32_t slot;
    if (eng->nfree > 0) {
        slot = eng->free[--eng->nfree];
    } else {
        if (eng->pay_len == eng->pay_cap) {
            eng->pay_cap *= 2;
            if (eng->pay_cap > SLOT_MASK + 1)
                g_error("engine: more than %" G_GUINT64_FORMAT " events pending at once",
                        SLOT_MASK + 1);
            eng->pay = g_renew(Payload, eng->pay, eng->pay_cap);
            eng->free = g_renew(uint32_t, eng->free, eng->pay_cap);
            eng->pos = g_renew(uint32_t, eng->pos, eng->pay_cap);
        }
        slot = (uint32_t)eng->pay_len++;
    }
    eng->pay[slot] = (Payload){fn, ctx, arg};
    Node ev = {eng->now + delay, eng->seq++ << SLOT_BITS | slot};
    sift_up(eng, eng->len++, ev);
    return slot;
}

void engine_schedule(Engine *eng, SimTime delay, EngineFn fn, void *ctx, uint64_t arg) {
    g_assert(delay >= 0);
    if (delay >= SIM_TIME_MAX - eng->now) { /* time out of range: the run stops, reported */
        eng->overflowed = TRUE;
        return;
    }
    schedule_slot(eng, delay, fn, ctx, arg);
}

uint32_t engine_schedule_movable(Engine *eng, SimTime delay, EngineFn fn, void *ctx, uint64_t arg) {
    g_assert(delay >= 0);
    if (delay >= SIM_TIME_MAX - eng->now) {
        eng->overflowed = TRUE;
        return ENGINE_NO_EVENT;
    }
    return schedule_slot(eng, delay, fn, ctx, arg);
}

void engine_move(Engine *eng, uint32_t ev, SimTime delay, uint64_t arg) {
    g_assert(delay >= 0);
    if (ev == ENGINE_NO_EVENT || delay >= SIM_TIME_MAX - eng->now) {
        eng->overflowed = TRUE;
        return;
    }
    g_assert(ev < eng->pay_len && eng->pos[ev] < eng->len);
    size_t i = eng->pos[ev];
    g_assert((eng->heap[i].key & SLOT_MASK) == ev);
    eng->pay[ev].arg = arg;
    Node moved = {eng->now + delay, eng->seq++ << SLOT_BITS | ev};
    if (i > 0 && node_before(&moved, &eng->heap[(i - 1) / 4]))
        sift_up(eng, i, moved);
    else
        sift_down(eng, i, moved);
}

static Node pop_min(Engine *eng) {
    Node top = eng->heap[0];
    Node last = eng->heap[--eng->len];
    if (eng->len > 0)
        sift_down(eng, 0, last);
    return top;
}

SimTime engine_run(Engine *eng) {
    while (eng->len > 0 && !eng->overflowed) {
        Node ev = pop_min(eng);
        uint32_t slot = (uint32_t)(ev.key & SLOT_MASK);
        Payload p = eng->pay[slot];
        eng->free[eng->nfree++] = slot;
        eng->now = ev.time;
        eng->done++;
        p.fn(eng, p.ctx, p.arg);
    }
    return eng->now;
}

void engine_timer_init(EngineTimer *t, EngineFn fn, void *ctx, uint64_t arg) {
    *t = (EngineTimer){.fn = fn, .ctx = ctx, .arg = arg};
}

/* The event behind every timer: ctx is the timer, arg the generation it was armed with. */
static void timer_fire(Engine *eng, void *ctx, uint64_t gen) {
    EngineTimer *t = ctx;
    if (!t->armed || t->gen != gen)
        return; /* moved or cancelled since */
    t->armed = FALSE;
    t->fn(eng, t->ctx, t->arg);
}

void engine_timer_set(Engine *eng, EngineTimer *t, SimTime delay) {
    t->gen++;
    t->when = sim_time_add(eng->now, delay);
    if (t->armed) { /* its event moves where it is */
        engine_move(eng, t->ev, delay, t->gen);
        return;
    }
    t->armed = TRUE;
    t->ev = engine_schedule_movable(eng, delay, timer_fire, t, t->gen);
}

void engine_timer_cancel(EngineTimer *t) {
    t->gen++;
    t->armed = FALSE;
}
