/* engine: a 4-ary min-heap of events over a flat array, keyed by (time, sequence).
 *
 * Events live in one growable array that is the heap itself; there is no per-event allocation.
 * A 4-ary heap halves the depth of a binary one and keeps the children of a node in one cache
 * line, which matters more than the extra comparisons. */
#include "engine.h"

typedef struct {
    SimTime time; /* when, picoseconds */
    uint64_t seq; /* insertion order, breaks ties */
    EngineFn fn;
    void *ctx;
    uint64_t arg;
} Event;

struct Engine {
    Event *heap;         /* heap[0] is the earliest event */
    size_t len;          /* events in the heap */
    size_t cap;          /* allocated slots */
    SimTime now;         /* picoseconds */
    uint64_t seq;        /* next insertion sequence */
    uint64_t done;       /* events executed */
    gboolean overflowed; /* some event would have come at or past SIM_TIME_MAX */
};

Engine *engine_new(void) {
    Engine *eng = g_new0(Engine, 1);
    eng->cap = 1024;
    eng->heap = g_new(Event, eng->cap);
    return eng;
}

void engine_free(Engine *eng) {
    if (!eng)
        return;
    g_free(eng->heap);
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

static inline gboolean event_before(const Event *a, const Event *b) {
    return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

void engine_schedule(Engine *eng, SimTime delay, EngineFn fn, void *ctx, uint64_t arg) {
    g_assert(delay >= 0);
    if (delay >= SIM_TIME_MAX - eng->now) { /* time out of range: the run stops, reported */
        eng->overflowed = TRUE;
        return;
    }
    if (eng->len == eng->cap) {
        eng->cap *= 2;
        eng->heap = g_renew(Event, eng->heap, eng->cap);
    }
    Event ev = {eng->now + delay, eng->seq++, fn, ctx, arg};
    size_t i = eng->len++;
    while (i > 0) { /* sift up */
        size_t parent = (i - 1) / 4;
        if (!event_before(&ev, &eng->heap[parent]))
            break;
        eng->heap[i] = eng->heap[parent];
        i = parent;
    }
    eng->heap[i] = ev;
}

static Event pop_min(Engine *eng) {
    Event top = eng->heap[0];
    Event last = eng->heap[--eng->len];
    size_t n = eng->len, i = 0;
    for (;;) { /* sift down */
        size_t first = 4 * i + 1, best = i;
        const Event *bestp = &last;
        for (size_t c = first; c < first + 4 && c < n; c++) {
            if (event_before(&eng->heap[c], bestp)) {
                best = c;
                bestp = &eng->heap[c];
            }
        }
        if (best == i)
            break;
        eng->heap[i] = eng->heap[best];
        i = best;
    }
    if (n > 0)
        eng->heap[i] = last;
    return top;
}

SimTime engine_run(Engine *eng) {
    while (eng->len > 0 && !eng->overflowed) {
        Event ev = pop_min(eng);
        eng->now = ev.time;
        eng->done++;
        ev.fn(eng, ev.ctx, ev.arg);
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
    t->armed = TRUE;
    t->when = sim_time_add(eng->now, delay);
    engine_schedule(eng, delay, timer_fire, t, t->gen);
}

void engine_timer_cancel(EngineTimer *t) {
    t->gen++;
    t->armed = FALSE;
}
