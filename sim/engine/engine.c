/* engine: events keyed by (time, sequence), in a 4-ary min-heap and same-time lanes.
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
 * LANES. Most events come in crowds at one picosecond: every data-parallel replica and tensor-
 * parallel rank ends the same kernel together (20B on 1,024 nodes with every rank simulated: 733
 * distinct times for 3.3 M events; the 1T layout on 512 Frontier nodes with every rank: 8.1 M of
 * 9.0 M events at the time of the event before them). A lane is a FIFO of events of one time: an
 * event scheduled at a lane's time is appended to it (O(1)) instead of sifted into the heap
 * (O(log n)), and since sequences only grow, a lane is in sequence order. A time's second event in
 * a row (the first went to the heap: a crowd starts) finds its lane, or opens one, in a hash table
 * by time (open addressing, linear probing; a lane holds its time alone); an event after that goes
 * to the lane it would share with the event queued last, or to the heap. Every pending time can
 * own a lane: crowds of different tensor-parallel groups are pending at once (one a node), and four
 * fixed lanes caught 190,298 of the 1T layout's 9.0 M events, unlimited ones most of the rest. The
 * lanes are ordered by their times in a second 4-ary heap; the next event is the least of the event
 * heap's top and the earliest lane's head, by the same (time, sequence) key: the same order of
 * events whichever holds them (an event moved in the heap to a lane's time keeps its place by its
 * key). A singleton time costs what it did: one heap push and pop, no hash.
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

#define NO_LANE UINT32_MAX
#define IN_LANE UINT32_MAX /* pos of a slot whose event waits in a lane */

/* A lane: two cache lines, holding a tensor-parallel group's crowd of 8 in its own entries
 * (keys[] while cap is LANE_INLINE; a larger crowd, a data-parallel group's or the whole job's,
 * in `more`, from the C heap and given back when the lane closes, so that only open lanes hold
 * memory). Its entries are keys[head .. head + n): appended at the end, taken from the head. */
#define LANE_INLINE 12
typedef struct {
    SimTime time;       /* of every event in it */
    uint64_t *more;     /* cap entries past LANE_INLINE (NULL: none) */
    uint32_t head, n;   /* its entries, sequence << SLOT_BITS | slot, oldest at head */
    uint32_t cap;       /* entries it holds: LANE_INLINE, or its `more`'s */
    uint32_t next_free; /* while free: the next free lane, NO_LANE at the end */
    uint64_t keys[LANE_INLINE];
} Lane;
G_STATIC_ASSERT(sizeof(Lane) == 128);

static inline uint64_t *lane_keys(Lane *l) {
    return l->cap == LANE_INLINE ? l->keys : l->more;
}

/* A lane in the hash table, with its time, so that a probe reads the table alone. */
typedef struct {
    SimTime time;
    uint32_t lane; /* its index + 1; 0: empty */
} TabEntry;

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
    Lane *lane;     /* by index (bigmem) */
    uint32_t nlane, lane_cap, free_lane;
    Node *lheap; /* the lanes in use (time << 64 | index), earliest first; bigmem */
    size_t llen, lcap;
    TabEntry *tab;       /* the lanes in use (llen of them) by their times' hashes (bigmem) */
    size_t tab_mask;     /* size - 1, a power of 2 at least four times the lanes in use */
    uint32_t last_lane;  /* the lane that took the last event queued, NO_LANE: the heap did */
    SimTime last_time;   /* of the event the heap took last: a lane opens for its time's second */
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
    uint64_t from_lanes; /* of them, taken from a lane */
    gboolean overflowed; /* some event would have come at or past SIM_TIME_MAX */
    gboolean read_ahead; /* READ AHEAD on (engine_set_read_ahead) */
    int nhint;           /* handlers with a hint */
    EngineFn hint_fn[ENGINE_HINTS];
    EngineHint hint[ENGINE_HINTS];
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
    eng->last_lane = NO_LANE;
    eng->free_lane = NO_LANE;
    eng->tab_mask = 255;
    eng->tab = bigmem_new0(eng->tab_mask + 1, sizeof(TabEntry));
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
    for (uint32_t k = 0; k < eng->nlane; k++)
        g_free(eng->lane[k].more);
    bigmem_free(eng->lane);
    bigmem_free(eng->lheap);
    bigmem_free(eng->tab);
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

uint64_t engine_lane_events(const Engine *eng) {
    return eng->from_lanes;
}

size_t engine_pending(const Engine *eng) {
    return eng->live;
}

/* Put node ev at heap index i (a hole), recording where its slot now is. */
/* 4-ary heaps of Nodes: the events' (pos: each slot's index, kept as nodes move) and the lanes'
 * (pos NULL: a lane is never moved, only its earliest taken). Node ev into hole i. */
static inline void place(Node *h, uint32_t *pos, size_t i, Node ev) {
    h[i] = ev;
    if (pos)
        pos[node_slot(ev)] = (uint32_t)i;
}

static void sift_up(Node *h, uint32_t *pos, size_t i, Node ev) {
    while (i > 0) {
        size_t parent = (i - 1) / 4;
        if (ev >= h[parent])
            break;
        place(h, pos, i, h[parent]);
        i = parent;
    }
    place(h, pos, i, ev);
}

/* ev into hole i of a heap of n nodes, moving down. */
static void sift_down(Node *h, uint32_t *pos, size_t n, size_t i, Node ev) {
    for (;;) {
        size_t first = 4 * i + 1, best = i;
        Node bestn = ev;
        for (size_t c = first; c < first + 4 && c < n; c++) {
            if (h[c] < bestn) {
                best = c;
                bestn = h[c];
            }
        }
        if (best == i)
            break;
        place(h, pos, i, h[best]);
        i = best;
    }
    place(h, pos, i, ev);
}

/* Drop the entries at a lane's head whose event moved since (its slot has another key now). */
static inline void lane_clean(Engine *eng, Lane *l) {
    const uint64_t *k = lane_keys(l);
    while (l->n > 0) {
        uint64_t key = k[l->head];
        if (eng->key_of[key & SLOT_MASK] == key)
            return;
        l->head++;
        l->n--;
    }
}

/* Append an entry: at the end; when the end is reached, the entries move to the front, or to a
 * larger `more` (twice the entries) when full. */
static void lane_push(Lane *l, uint64_t key) {
    if (l->head + l->n == l->cap) {
        uint64_t *k = lane_keys(l);
        if (l->n == l->cap) {
            uint32_t cap = 2 * l->cap;
            uint64_t *more = g_new(uint64_t, cap);
            memcpy(more, k + l->head, (size_t)l->n * sizeof(uint64_t));
            g_free(l->more);
            l->more = more;
            l->cap = cap;
        } else {
            memmove(k, k + l->head, (size_t)l->n * sizeof(uint64_t));
        }
        l->head = 0;
    }
    lane_keys(l)[l->head + l->n++] = key;
}

static inline size_t tab_home(const Engine *eng, SimTime time) {
    return (size_t)(((uint64_t)time * UINT64_C(0x9E3779B97F4A7C15)) >> 32) & eng->tab_mask;
}

static uint32_t tab_find(const Engine *eng, SimTime time) {
    for (size_t i = tab_home(eng, time);; i = (i + 1) & eng->tab_mask) {
        const TabEntry *e = &eng->tab[i];
        if (e->lane == 0)
            return NO_LANE;
        if (e->time == time)
            return e->lane - 1;
    }
}

static void tab_put(Engine *eng, SimTime time, uint32_t li) {
    size_t i = tab_home(eng, time);
    while (eng->tab[i].lane)
        i = (i + 1) & eng->tab_mask;
    eng->tab[i] = (TabEntry){time, li + 1};
}

/* Double the table when a quarter full (every lane put again). */
static void tab_grow(Engine *eng) {
    TabEntry *old = eng->tab;
    size_t size = eng->tab_mask + 1;
    eng->tab_mask = 2 * size - 1;
    eng->tab = bigmem_new0(2 * size, sizeof(TabEntry));
    for (size_t i = 0; i < size; i++)
        if (old[i].lane)
            tab_put(eng, old[i].time, old[i].lane - 1);
    bigmem_free(old);
}

/* Take time's lane out of the table (backward-shift deletion: every later entry of the probe run
 * whose home is not between the hole and itself moves into the hole). */
static void tab_remove(Engine *eng, SimTime time) {
    size_t mask = eng->tab_mask, i = tab_home(eng, time);
    while (eng->tab[i].time != time || !eng->tab[i].lane)
        i = (i + 1) & mask;
    for (size_t j = i;;) {
        j = (j + 1) & mask;
        const TabEntry *e = &eng->tab[j];
        if (e->lane == 0)
            break;
        size_t home = tab_home(eng, e->time);
        /* the entry at j stays where its home lies cyclically in (i, j] */
        gboolean stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!stays) {
            eng->tab[i] = *e;
            i = j;
        }
    }
    eng->tab[i].lane = 0;
}

/* The lanes' heap (times are unique among lanes in use, so a time orders them). */
static void lheap_push(Engine *eng, Node n) {
    if (eng->llen == eng->lcap) {
        size_t cap = eng->lcap ? 2 * eng->lcap : 256;
        eng->lheap = bigmem_regrow(eng->lheap, eng->llen, cap, sizeof(Node));
        eng->lcap = cap;
    }
    sift_up(eng->lheap, NULL, eng->llen++, n);
}

static void lheap_pop(Engine *eng) {
    if (--eng->llen > 0)
        sift_down(eng->lheap, NULL, eng->llen, 0, eng->lheap[eng->llen]);
}

/* A lane for `time` (none in use has it): from the free list or new, in the table and the lanes'
 * heap. */
static uint32_t lane_open(Engine *eng, SimTime time) {
    uint32_t li = eng->free_lane;
    if (li != NO_LANE) {
        eng->free_lane = eng->lane[li].next_free;
    } else {
        if (eng->nlane == eng->lane_cap) {
            size_t cap = eng->lane_cap ? 2 * (size_t)eng->lane_cap : 64;
            if (cap > SLOT_MASK + 1)
                g_error("engine: more than %" G_GUINT64_FORMAT " crowded times pending at once",
                        SLOT_MASK + 1);
            eng->lane = bigmem_regrow(eng->lane, eng->nlane, cap, sizeof(Lane));
            eng->lane_cap = (uint32_t)cap;
        }
        li = eng->nlane++;
        eng->lane[li] = (Lane){.cap = LANE_INLINE};
    }
    Lane *l = &eng->lane[li];
    l->time = time;
    l->head = l->n = 0;
    if (4 * (eng->llen + 1) > eng->tab_mask + 1)
        tab_grow(eng);
    tab_put(eng, time, li);
    lheap_push(eng, (Node)(uint64_t)time << 64 | li);
    return li;
}

/* The earliest lane, empty of live entries, leaves the table, the lanes' heap and use. */
static void lane_close(Engine *eng) {
    uint32_t li = (uint32_t)eng->lheap[0];
    Lane *l = &eng->lane[li];
    tab_remove(eng, l->time);
    lheap_pop(eng);
    g_clear_pointer(&l->more, g_free);
    l->cap = LANE_INLINE;
    l->next_free = eng->free_lane;
    eng->free_lane = li;
    if (eng->last_lane == li)
        eng->last_lane = NO_LANE;
}

/* Queue slot's event at `time` under `key` (a fresh sequence): the lane of the event queued last,
 * if at that time; for the heap's last time, its lane (LANES); else the heap. O(1), or O(log n) for
 * the heap and for a lane's opening. */
static void enqueue(Engine *eng, uint32_t slot, SimTime time, uint64_t key) {
    eng->key_of[slot] = key;
    uint32_t li = eng->last_lane;
    if (li == NO_LANE || eng->lane[li].time != time) {
        li = NO_LANE;
        if (time == eng->last_time) {
            li = tab_find(eng, time);
            if (li == NO_LANE)
                li = lane_open(eng, time);
        }
        eng->last_lane = li;
    }
    if (li != NO_LANE) {
        lane_push(&eng->lane[li], key);
        eng->pos[slot] = IN_LANE;
        return;
    }
    eng->last_time = time;
    if (eng->len == eng->cap)
        heap_grow(eng, 2 * eng->cap);
    sift_up(eng->heap, eng->pos, eng->len++, node_make(time, key));
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
        sift_up(eng->heap, eng->pos, i, moved);
    else
        sift_down(eng->heap, eng->pos, eng->len, i, moved);
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
        place(eng->heap, eng->pos, i, eng->heap[best]);
        i = best;
    }
    sift_up(eng->heap, eng->pos, i, last);
    return top;
}

/* Take the earliest pending event: the least of the heap's top and the earliest lane's head (a
 * lane is closed once it gives its last entry, or at the top with stale entries alone). */
static Node take_next(Engine *eng) {
    while (eng->llen > 0) {
        Lane *l = &eng->lane[(uint32_t)eng->lheap[0]];
        lane_clean(eng, l);
        if (l->n > 0)
            break;
        lane_close(eng);
    }
    if (eng->llen == 0)
        return pop_min(eng);
    Lane *l = &eng->lane[(uint32_t)eng->lheap[0]];
    Node head = node_make(l->time, lane_keys(l)[l->head]);
    if (eng->len > 0 && eng->heap[0] < head)
        return pop_min(eng);
    l->head++;
    if (--l->n == 0)
        lane_close(eng);
    eng->from_lanes++;
    return head;
}

/* READ AHEAD. With every rank of all of Frontier the events' state (a rank's, a flow's) is
 * hundreds of MiB, and an event's first reads miss to memory one after another: its payload, then
 * what its context points to, then what its handler reads by its argument. The events queued in
 * a lane are known in advance, so while an event runs, the earliest lane's third entry's payload
 * is fetched, its second's context, and the hint (engine_hint) of its head's handler is called:
 * three steps of a crowd's misses overlap with the event before, where they came one after
 * another. (The head is most often the next event; a crowd's first event, from the heap, may
 * come before it, and then the head is hinted twice.) Hints only fetch: the order and every
 * result are the same. */
static void timer_fire(Engine *eng, void *ctx, uint64_t gen);

static inline void read_ahead(Engine *eng) {
    if (!eng->read_ahead || eng->llen == 0)
        return;
    Lane *l = &eng->lane[(uint32_t)eng->lheap[0]];
    const uint64_t *k = lane_keys(l) + l->head;
    uint32_t n = l->n;
    if (n == 0)
        return;
    if (n > 2)
        __builtin_prefetch(&eng->pay[k[2] & SLOT_MASK]);
    if (n > 1)
        __builtin_prefetch(eng->pay[k[1] & SLOT_MASK].ctx);
    const Payload *p = &eng->pay[k[0] & SLOT_MASK]; /* its payload and context fetched before */
    EngineFn fn = p->fn;
    const void *ctx = p->ctx;
    uint64_t arg = p->arg;
    if (fn == timer_fire) { /* the timer's own callback */
        const EngineTimer *t = ctx;
        fn = t->fn;
        ctx = t->ctx;
        arg = t->arg;
    }
    for (int h = 0; h < eng->nhint; h++)
        if (eng->hint_fn[h] == fn) {
            eng->hint[h](ctx, arg);
            return;
        }
}

void engine_set_read_ahead(Engine *eng, gboolean on) {
    eng->read_ahead = on;
}

void engine_hint(Engine *eng, EngineFn fn, EngineHint hint) {
    for (int h = 0; h < eng->nhint; h++)
        if (eng->hint_fn[h] == fn) {
            eng->hint[h] = hint;
            return;
        }
    g_assert(eng->nhint < ENGINE_HINTS);
    eng->hint_fn[eng->nhint] = fn;
    eng->hint[eng->nhint++] = hint;
}

SimTime engine_run(Engine *eng) {
    return engine_run_until(eng, SIM_TIME_MAX);
}

SimTime engine_run_until(Engine *eng, SimTime horizon) {
    while (eng->live > 0 && !eng->overflowed && eng->now <= horizon) {
        Node ev = take_next(eng);
        uint32_t slot = node_slot(ev);
        Payload p = eng->pay[slot];
        read_ahead(eng);
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
    if (t->held) /* still no event: released at its new time */
        return;
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
    t->held = FALSE;
}

void engine_timer_hold(Engine *eng, EngineTimer *t, SimTime when) {
    g_assert(when >= eng->now && !(t->armed && !t->held)); /* no event of it is pending */
    t->gen++;
    t->when = when;
    t->armed = TRUE;
    t->held = TRUE;
}

void engine_timer_release(Engine *eng, EngineTimer *t) {
    if (!t->held)
        return;
    g_assert(t->armed && t->when >= eng->now);
    t->held = FALSE;
    t->ev = engine_schedule_movable(eng, t->when - eng->now, timer_fire, t, t->gen);
}
