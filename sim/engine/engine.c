/* engine: a 4-ary min-heap of events over a flat array, keyed by (time, sequence).
 *
 * The heap holds 16-byte nodes, each one unsigned 128-bit number: the time in the high 64 bits
 * (never negative), and below it the insertion sequence (40 bits) above the index of the event's
 * payload (24 bits: the callback, its context and argument, in a side array whose slots are
 * recycled through a free list). One integer comparison orders two events by (time, sequence),
 * since sequences are unique; no branch on ties, which are common (a thousand ranks' timers at one
 * picosecond). Sift-up and sift-down move only the nodes, four children to a cache line; the
 * payload is read once, when the event runs. No allocation per event. Limits: 2^40 events
 * scheduled in a run (about 10^12), 2^24 pending at once.
 *
 * Popping the earliest uses Floyd's bottom-up sift-down (Knuth, TAOCP vol. 3, 5.2.3 ex. 18): the
 * hole at the root goes down to a leaf along the smaller children (3 comparisons a level instead
 * of 4), then the last node rises from there, which is rarely more than a level. Keys are unique,
 * so which event is earliest never depends on the heap's arrangement: the same order of events.
 *
 * Each slot knows its node's place in the heap, so an event can be moved where it is
 * (engine_move, and so engine_timer_set on an armed timer): it takes a new sequence, as a fresh
 * event would, and leaves no stale entry behind to be popped later. */
#include "engine.h"

#define SLOT_BITS 24
#define SLOT_MASK ((UINT64_C(1) << SLOT_BITS) - 1)

typedef unsigned __int128 Node; /* time (ps) << 64 | sequence << SLOT_BITS | payload slot */

static inline Node node_make(SimTime time, uint64_t key) {
    return (Node)(uint64_t)time << 64 | key;
}

static inline SimTime node_time(Node n) {
    return (SimTime)(uint64_t)(n >> 64);
}

static inline uint32_t node_slot(Node n) {
    return (uint32_t)((uint64_t)n & SLOT_MASK);
}

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

/* Put node ev at heap index i (a hole), recording where its slot now is. */
static inline void place(Engine *eng, size_t i, Node ev) {
    eng->heap[i] = ev;
    eng->pos[node_slot(ev)] = (uint32_t)i;
}

static void sift_up(Engine *eng, size_t i, Node ev) {
    while (i > 0) {
        size_t parent = (i - 1) / 4;
        if (ev >= eng->heap[parent])
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
        Node bestn = ev;
        for (size_t c = first; c < first + 4 && c < n; c++) {
            if (eng->heap[c] < bestn) {
                best = c;
                bestn = eng->heap[c];
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
    Node ev = node_make(eng->now + delay, eng->seq++ << SLOT_BITS | slot);
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
    g_assert(node_slot(eng->heap[i]) == ev);
    eng->pay[ev].arg = arg;
    Node moved = node_make(eng->now + delay, eng->seq++ << SLOT_BITS | ev);
    if (i > 0 && moved < eng->heap[(i - 1) / 4])
        sift_up(eng, i, moved);
    else
        sift_down(eng, i, moved);
}

/* Remove the earliest node (Floyd: the hole sinks to a leaf, the last node rises from there). */
static Node pop_min(Engine *eng) {
    Node top = eng->heap[0];
    Node last = eng->heap[--eng->len];
    size_t n = eng->len;
    if (n == 0)
        return top;
    size_t i = 0;
    for (;;) {
        size_t first = 4 * i + 1;
        if (first >= n)
            break;
        size_t best = first;
        size_t end = first + 4 < n ? first + 4 : n;
        for (size_t c = first + 1; c < end; c++)
            if (eng->heap[c] < eng->heap[best])
                best = c;
        place(eng, i, eng->heap[best]);
        i = best;
    }
    sift_up(eng, i, last);
    return top;
}

SimTime engine_run(Engine *eng) {
    while (eng->len > 0 && !eng->overflowed) {
        Node ev = pop_min(eng);
        uint32_t slot = node_slot(ev);
        Payload p = eng->pay[slot];
        eng->free[eng->nfree++] = slot;
        eng->now = node_time(ev);
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
