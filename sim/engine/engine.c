/* engine: events keyed by (time, sequence), in a 4-ary min-heap and a few same-time lanes.
 *
 * The heap holds 16-byte nodes, each one unsigned 128-bit number: the time in the high 64 bits
 * (never negative), and below it the insertion sequence (40 bits) above the index of the event's
 * payload (24 bits: the callback, its context and argument, in a side array whose slots are
 * recycled through a free list). One integer comparison orders two events by (time, sequence),
 * since sequences are unique. Sift-up and sift-down move only the nodes, four children to a
 * cache line; the payload is read once, when the event runs. No allocation per event. Limits:
 * 2^40 events scheduled in a run (about 10^12), 2^24 pending at once.
 *
 * Popping the heap's earliest uses Floyd's bottom-up sift-down (Knuth, TAOCP vol. 3, 5.2.3
 * ex. 18): the hole at the root goes down to a leaf along the smaller children, then the last
 * node rises from there, which is rarely more than a level.
 *
 * Lanes. Most events come in crowds at one picosecond: every data-parallel replica and tensor-
 * parallel rank ends the same kernel together (20B on 1,024 nodes with every rank simulated: 733
 * distinct times for 3.3 M events). A lane is a FIFO of events of one time: an event scheduled at
 * a lane's time is appended to it (O(1)) instead of sifted into the heap (O(log n)), and since
 * sequences only grow, a lane is in sequence order. An event at another time claims an empty lane
 * or goes to the heap. The next event is the least of the heap's top and the lanes' heads, by
 * the same (time, sequence) key: the same order of events whichever holds them.
 *
 * Each slot knows its node's place in the heap, so a heap event can be moved where it is
 * (engine_move, and so engine_timer_set on an armed timer): it takes a new sequence, as a fresh
 * event would. A moved lane event is scheduled anew and its old entry, whose key is no longer the
 * slot's, is dropped when it comes to its lane's head. */
#include "engine.h"

#include <string.h>

#include "bigmem.h"

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

#define LANES 4
#define IN_LANE UINT32_MAX /* pos of a slot whose event waits in a lane */

typedef struct {
    uint64_t *key;         /* ring of sequence << SLOT_BITS | slot, oldest at head */
    uint32_t head, n, cap; /* cap: a power of 2 (0 before first use) */
    SimTime time;          /* of every event in it */
} Lane;

/* HEAP ALIGNMENT. A node's four children, 4i + 1 to 4i + 4, are 64 bytes; they share one cache
 * line when heap[1] starts one, so the heap lies HEAP_SKEW nodes into a 64-byte aligned block.
 * From the C heap (16-byte aligned, and at 16 past a page for large blocks) every four children
 * straddled two lines: two misses a level in a heap larger than the cache. */
#define HEAP_SKEW 3

struct Engine {
    Node *heap;     /* heap[0] is the earliest event: HEAP_SKEW nodes into heap_mem */
    Node *heap_mem; /* bigmem: 64-byte aligned */
    size_t len;     /* events in the heap */
    size_t live;    /* events pending, heap and lanes */
    Lane lane[LANES];
    unsigned lanes;      /* bit k: lane k holds entries (live or stale) */
    SimTime last_time;   /* of the event queued last: a lane opens for a time's second event */
    uint64_t *key_of;    /* by slot: its pending event's sequence << SLOT_BITS | slot */
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

/* The slot arrays at pay_cap, the first used slots kept. They are read on every event by slot:
 * bigmem puts them on huge pages once they are large (with every rank of all of Frontier, about
 * 200,000 slots), as it does the heap. */
/* The heap in a fresh block of cap nodes, its len nodes kept (HEAP ALIGNMENT). */
static void heap_grow(Engine *eng, size_t cap) {
    Node *mem = bigmem_new0(cap + HEAP_SKEW, sizeof(Node));
    if (eng->len)
        memcpy(mem + HEAP_SKEW, eng->heap, eng->len * sizeof(Node));
    bigmem_free(eng->heap_mem);
    eng->heap_mem = mem;
    eng->heap = mem + HEAP_SKEW;
    eng->cap = cap;
    g_assert(((uintptr_t)&eng->heap[1] & 63) == 0);
}

static void slots_grow(Engine *eng, size_t used) {
    eng->pay = bigmem_regrow(eng->pay, used, eng->pay_cap, sizeof(Payload));
    eng->free = bigmem_regrow(eng->free, used, eng->pay_cap, sizeof(uint32_t));
    eng->pos = bigmem_regrow(eng->pos, used, eng->pay_cap, sizeof(uint32_t));
    eng->key_of = bigmem_regrow(eng->key_of, used, eng->pay_cap, sizeof(uint64_t));
}

Engine *engine_new(void) {
    Engine *eng = g_new0(Engine, 1);
    heap_grow(eng, 1024);
    eng->pay_cap = 1024;
    slots_grow(eng, 0);
    eng->last_time = -1;
    return eng;
}

void engine_free(Engine *eng) {
    if (!eng)
        return;
    bigmem_free(eng->heap_mem);
    bigmem_free(eng->pay);
    bigmem_free(eng->free);
    bigmem_free(eng->pos);
    bigmem_free(eng->key_of);
    for (int k = 0; k < LANES; k++)
        g_free(eng->lane[k].key);
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
    return eng->live;
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

/* Drop the entries at a lane's head whose event moved since (its slot has another key now). */
static inline void lane_clean(Engine *eng, Lane *l) {
    while (l->n > 0) {
        uint64_t key = l->key[l->head];
        if (eng->key_of[key & SLOT_MASK] == key)
            return;
        l->head = (l->head + 1) & (l->cap - 1);
        l->n--;
    }
}

static void lane_push(Lane *l, uint64_t key) {
    if (l->n == l->cap) { /* grow, unwrapping the ring */
        uint32_t cap = l->cap ? 2 * l->cap : 64;
        uint64_t *k = g_new(uint64_t, cap);
        for (uint32_t i = 0; i < l->n; i++)
            k[i] = l->key[(l->head + i) & (l->cap - 1)];
        g_free(l->key);
        l->key = k;
        l->head = 0;
        l->cap = cap;
    }
    l->key[(l->head + l->n++) & (l->cap - 1)] = key;
}

/* Queue slot's event at `time` under `key` (a fresh sequence): the lane of that time; a free lane
 * for the second event in a row at one time (the first went to the heap: a crowd starts); or the
 * heap. O(LANES), or O(log n) for the heap. */
static void enqueue(Engine *eng, uint32_t slot, SimTime time, uint64_t key) {
    eng->key_of[slot] = key;
    for (unsigned m = eng->lanes; m; m &= m - 1) {
        Lane *l = &eng->lane[__builtin_ctz(m)];
        if (l->time == time) {
            lane_push(l, key);
            eng->pos[slot] = IN_LANE;
            return;
        }
    }
    unsigned all = (1u << LANES) - 1;
    if (time == eng->last_time && eng->lanes != all) {
        int k = __builtin_ctz(~eng->lanes & all);
        eng->lane[k].time = time;
        eng->lanes |= 1u << k;
        lane_push(&eng->lane[k], key);
        eng->pos[slot] = IN_LANE;
        return;
    }
    eng->last_time = time;
    if (eng->len == eng->cap)
        heap_grow(eng, 2 * eng->cap);
    sift_up(eng, eng->len++, node_make(time, key));
}

static uint32_t schedule_slot(Engine *eng, SimTime delay, EngineFn fn, void *ctx, uint64_t arg) {
    uint32_t slot;
    if (eng->nfree > 0) {
        slot = eng->free[--eng->nfree];
    } else {
        if (eng->pay_len == eng->pay_cap) {
            eng->pay_cap *= 2;
            if (eng->pay_cap > SLOT_MASK + 1)
                g_error("engine: more than %" G_GUINT64_FORMAT " events pending at once",
                        SLOT_MASK + 1);
            slots_grow(eng, eng->pay_len);
        }
        slot = (uint32_t)eng->pay_len++;
    }
    eng->pay[slot] = (Payload){fn, ctx, arg};
    eng->live++;
    enqueue(eng, slot, eng->now + delay, eng->seq++ << SLOT_BITS | slot);
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
    g_assert(ev < eng->pay_len);
    eng->pay[ev].arg = arg;
    uint64_t key = eng->seq++ << SLOT_BITS | ev;
    if (eng->pos[ev] == IN_LANE) { /* anew; its lane entry is stale from here */
        enqueue(eng, ev, eng->now + delay, key);
        return;
    }
    size_t i = eng->pos[ev];
    g_assert(i < eng->len && node_slot(eng->heap[i]) == ev);
    eng->key_of[ev] = key;
    Node moved = node_make(eng->now + delay, key);
    if (i > 0 && moved < eng->heap[(i - 1) / 4])
        sift_up(eng, i, moved);
    else
        sift_down(eng, i, moved);
}

/* Remove the heap's earliest node (Floyd: the hole sinks to a leaf, the last node rises). */
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

/* Take the earliest pending event: the least of the heap's top and the lanes' heads. */
static Node take_next(Engine *eng) {
    if (!eng->lanes)
        return pop_min(eng);
    Node best = 0;
    Lane *from = NULL;
    gboolean any = eng->len > 0;
    if (any)
        best = eng->heap[0];
    for (unsigned m = eng->lanes; m; m &= m - 1) {
        int k = __builtin_ctz(m);
        Lane *l = &eng->lane[k];
        lane_clean(eng, l);
        if (l->n == 0) {
            eng->lanes &= ~(1u << k);
            continue;
        }
        Node head = node_make(l->time, l->key[l->head]);
        if (!any || head < best) {
            best = head;
            from = l;
            any = TRUE;
        }
    }
    g_assert(any);
    if (!from)
        return pop_min(eng);
    from->head = (from->head + 1) & (from->cap - 1);
    if (--from->n == 0)
        eng->lanes &= ~(1u << (from - eng->lane));
    return best;
}

SimTime engine_run(Engine *eng) {
    while (eng->live > 0 && !eng->overflowed) {
        Node ev = take_next(eng);
        uint32_t slot = node_slot(ev);
        Payload p = eng->pay[slot];
        eng->key_of[slot] = UINT64_MAX; /* no event: a stale lane entry never matches */
        eng->free[eng->nfree++] = slot;
        eng->live--;
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
