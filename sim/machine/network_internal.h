/* network_internal: the network's state, shared by network.c (flows, links, statistics) and
 * net_solver.c (the max-min solver). Nothing else includes it. */
#ifndef SIM_NETWORK_INTERNAL_H
#define SIM_NETWORK_INTERNAL_H

#include "bigmem.h"
#include "network.h"

/* A borrowed load set (net_flow_borrowed), worked out on its first flow and kept: the lk index of
 * each load's link, the rate alone, and which of its links no other load set or flow has ever
 * used (exclusive: see EXCLUSIVE LINKS in network.c). */
typedef struct {
    double lone;
    uint32_t *dl;               /* by load: the lk index of its link */
    uint8_t *excl;              /* by load: 1 while its link is this set's alone */
    uint8_t *wc;                /* by load: its weight class, an index in wval and acc */
    uint32_t n;                 /* loads */
    uint32_t nexcl;             /* loads with excl set */
    uint32_t *eidx;             /* nexcl: their indices, in no order */
    uint32_t *epos;             /* by load: an exclusive load's place in eidx */
    uint32_t *sidx;             /* the other loads' indices (n - nexcl), in no order: what its
                                   lazy flow goes on */
    int nw;                     /* weight classes: distinct weights among the loads */
    uint32_t *wval;             /* nw weights */
    double (*acc)[NET_CLASSES]; /* nw: bytes an exclusive link of that weight has carried, by
                                   class (every such link carries the same, in the same order) */
    uint32_t live;              /* flows of this set on their links */
    int32_t lazy;               /* the slot of its live flow not on its exclusive links, -1 none */
    uint32_t waiting;           /* flows of this set started, their activation still to come */
} LoadInfo;

/* A flow's load on a link that couples (Flow.tl): what the solver reads of it, beside it, so that
 * collecting a solve's flows and filling reads the list alone, not the flow's load and lk index
 * arrays as well (a cache miss each, for every flow of a global link). */
typedef struct {
    uint32_t load;   /* its index in the flow's loads */
    uint32_t d;      /* its link's lk index */
    uint32_t weight; /* the load's weight */
    int32_t link;    /* its link's topology id */
} TightLoad;

typedef struct {
    const NetLoad *loads; /* owned unless borrowed (net_flow_borrowed) */
    LoadInfo *info;       /* borrowed: its load set's */
    const uint32_t *dl;   /* the lk index of each load's link (with the loads, or kept: LoadInfo) */
    double lone;          /* its rate alone on its links (lone_rate) */
    int n;
    uint8_t cls;
    uint8_t owned;    /* loads is this flow's copy */
    double bytes;     /* per stream, in all */
    double remaining; /* per stream, bytes */
    double rate;      /* per stream, bytes/s; 0 until first solved */
    SimTime last;     /* when remaining was last brought up to date (its rate's last change) */
    uint32_t version;
    uint32_t stamp;   /* solver visit mark */
    uint32_t ev;      /* its pending completion event (engine_schedule_movable) */
    uint8_t ev_armed; /* ev is pending */
    uint8_t lazy;     /* not on its set's exclusive links (the set's only live flow) */
    gboolean live;    /* on its links (after latency, until done) */
    gboolean fixed;   /* solver scratch */
    double nrate;     /* solver scratch: its rate in this solve, set when it is committed */
    /* solver scratch: its best private link (no other flow on it), by (share, link id) */
    double own_share;
    int32_t own_link; /* -1: none */
    uint32_t own_d;
    /* COUPLING LISTS (network.c): its loads on links that couple, kept as links turn tight or
     * slack, with each listed load's place in the list (tpos, by load), so the solver's walk
     * reads those alone; ntl of them, tl and tpos in one block for tl_cap, kept with the slot
     * for its next flow */
    TightLoad *tl;
    uint32_t *tpos;
    uint32_t ntl, tl_cap;
    NetDoneFn done;
    void *ctx;
    uint64_t arg;
} Flow;

typedef struct {
    uint32_t flow;
    uint32_t weight;
    uint32_t load; /* its index in the flow's loads */
} Crossing;

/* A link in use: in one array in the order first used (Network.lk), found through dense_of.
 * One cache line (the array is aligned to them): all that a flow's start and end read and write
 * for each of its loads. The solver's scratch (LinkScratch) and the byte counts (lbytes, LinkStat)
 * live apart, by the same index. */
typedef struct {
    Crossing *fl; /* live flows on this link, nfl of them (capacity cfl) */
    uint32_t nfl, cfl;
    uint64_t wtot;        /* the sum of their weights (exact: a solve starts from it) */
    uint64_t slack_below; /* slack while ubsum < this (0: never) */
    /* the sum over its flows of ub x weight, exact whatever the order (link_ubsum): two words,
     * not one 16-byte field, which gcc stored through the stack and read back whole, a
     * store-forwarding stall on every load's start and end */
    uint64_t ub_lo, ub_hi;
    double cap;     /* bytes/s */
    int32_t id;     /* topology link id */
    uint8_t tight;  /* not slack: see SLACK_MARGIN */
    uint8_t filled; /* it fixed a flow in the rates in force (FILLED LINKS in net_solver.c); may
                       stay set after it stops (which only widens a solve), never missing where
                       a flow's load on it could fall */
} __attribute__((aligned(64))) Link;

G_STATIC_ASSERT(sizeof(Link) == 64);

/* The solver's scratch for a link (net_solver.c). */
typedef struct {
    double cap_left, wsum;
    double hkey;    /* its last heap entry's share (LAZY HEAP) */
    uint64_t sw;    /* the weights of the solved flows crossing it (all of them: wtot) */
    uint32_t stamp; /* visit mark */
    uint8_t skip;   /* another link of its class stands for it, or it is checked, not filled */
    uint8_t fill;   /* it fixed a flow in this solve */
} LinkScratch;

static inline unsigned __int128 link_ubsum(const Link *l) {
    return (unsigned __int128)l->ub_hi << 64 | l->ub_lo;
}

static inline void link_set_ubsum(Link *l, unsigned __int128 v) {
    l->ub_lo = (uint64_t)v;
    l->ub_hi = (uint64_t)(v >> 64);
}

/* Who a link's byte counts belong to (the counts themselves: Network.lbytes). */
typedef struct {
    int32_t owner;       /* LINK_UNUSED, LINK_SHARED, or the index in Network.infos of the load set
                            it is exclusive to */
    uint32_t owner_load; /* that set's load on it */
} LinkStat;

#define LINK_UNUSED (-1) /* no flow or load set has used it yet */
#define LINK_SHARED (-2) /* used by two load sets, or by a flow with its own loads */

typedef struct {
    double share;
    int32_t link; /* topology id: ties go to the lowest */
    uint32_t d;   /* its index in Network.lk */
} HeapItem;

/* Growable arrays of plain values for the solver's inner loops (an inline push, no call). */
typedef struct {
    uint32_t *v;
    uint32_t n, cap;
} Vec;

static inline void vec_push(Vec *a, uint32_t x) {
    if (a->n == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 64;
        a->v = g_renew(uint32_t, a->v, a->cap);
    }
    a->v[a->n++] = x;
}

typedef struct {
    HeapItem *v;
    uint32_t n, cap;
} HeapVec;

/* A link class in the solver's open-addressed table: its representative (lk index, UINT32_MAX
 * for an empty slot) and its sorted crossings at off in Network.cls_key. */
typedef struct {
    uint64_t hash;
    uint32_t d, off;
} ClassSlot;

struct Network {
    Engine *eng;
    const Topology *topo;
    gboolean sharing;
    NetFlowFn flow_fn; /* net_set_flow_observer: told of every flow as it starts */
    void *flow_ctx;
    gboolean classes;     /* the solver's private links and link classes (net_set_solver_classes) */
    gboolean exclusive;   /* a load set's one live flow skips its exclusive links (network.c) */
    gboolean local;       /* a solve closes over filled links, not every tight one (net_solver.c) */
    gboolean early;       /* EARLY ACTIVATION (network.c) */
    uint64_t early_flows; /* flows activated early to the end (their activation event saved) */
    Flow *fl;             /* by slot: nflows used of cflows (bigmem_regrow) */
    guint32 nflows, cflows;
    Vec free_slots;     /* flow slots free for reuse, a stack */
    uint32_t *dense_of; /* by link id: its index in lk + 1, 0 until first used */
    Link *lk;           /* links in use, in the order first used (cache-line aligned) */
    LinkScratch *lx;    /* the same order */
    LinkStat *lstat;    /* the same order */
    /* bytes carried, by lk index and class, in stripes of eight links (link_bytes; an exclusive
     * link's: its owner's acc). A flow's end adds to one class, where a load set's links, first
     * used together, lie side by side: a cache line holds eight of them, where a link's eight
     * classes took a line each; and a link's classes share its pages, where an array per class
     * put each class of the links in use on pages of its own (eight huge pages for the few
     * hundred KB of 20B on 1,024 nodes with every rank) */
    double *lbytes;
    uint32_t nlk, clk; /* in use, allocated */
    int32_t nlinks;
    Vec dirty;  /* filled links flows left since the last solve (every such link, local off) */
    Vec dflows; /* flow slots started since the last solve, not alone */
    gboolean solve_pending;
    uint32_t stamp;
    /* solver scratch: lk indices, flow slots, links by fair share */
    Vec stack, comp_links, comp_flows, cls_key, order;
    HeapVec heap;
    ClassSlot *cls;
    uint32_t ccls;
    /* load builder */
    uint32_t *slot_of; /* link -> index in builder + 1, 0: not in it */
    GArray *builder;   /* NetLoad */
    uint32_t unit;     /* weight of one stream on a link it crosses whole (topo_stream_weight) */
    double dunit;      /* the same, as a double */
    uint64_t solves, solved_links;
    GHashTable *info_of; /* borrowed loads -> LoadInfo (capacities never change) */
    GPtrArray *infos;    /* LoadInfo, in the order made (LinkStat.owner), in arena */
    /* ARENA PIECES: what lives until the network goes, or grows and is never given back (load
     * sets' facts, coupling lists, crossing lists), carved from one arena (bigmem.h): on huge
     * pages where a run needs many MiB of them, and a load set's arrays in one piece */
    BigArena *arena;
};

static inline Flow *flow_at(const Network *net, uint32_t slot) {
    return &net->fl[slot];
}

/* The bytes of class c link d has carried (Network.lbytes). */
static inline double *link_bytes(const Network *net, int c, uint32_t d) {
    return &net->lbytes[((size_t)(d >> 3) << 6) | ((size_t)c << 3) | (d & 7)];
}

G_STATIC_ASSERT(NET_CLASSES == 8); /* link_bytes' stripes */

/* x / unit: the division skipped where the unit is 1 (x / 1.0 is x exactly, so the same bits). */
static inline double per_unit(const Network *net, double x) {
    return net->unit == 1 ? x : x / net->dunit;
}

/* Slack links. A flow never moves faster than alone: ub, the smallest capacity x unit / weight
 * over its links. A link whose capacity exceeds the sum of ub x weight / unit of its flows (by
 * more than SLACK_MARGIN) cannot fill before its flows are fixed elsewhere: while a solve is at
 * level s, every unfixed flow on it has ub >= s, so its share, (capacity - the fixed flows' use) /
 * unfixed weight, stays above s (1 + SLACK_MARGIN); the heap only ever finds it stale or spent. A
 * slack link changes no rate, in any bit, so it does not join its flows into one component: the
 * solver follows tight links only. On Frontier the 200 GB/s link between a GCD and the GCD that
 * owns its NIC carries both a TP ring and pipeline sends bound by the 25 GB/s NIC; slack, it no
 * longer ties every node's TP flows to the whole fabric's pipeline traffic. The margin is far
 * above the rounding of a solve's sums (relative 1e-13 for thousands of terms) and far below any
 * difference that matters. */
#define SLACK_MARGIN 1e-9

/* A link that joins its flows into one component: a tight one, or any with the shortcuts off
 * (SLACK_MARGIN in network.c). */
static inline gboolean couples(const Network *net, const Link *l) {
    return l->tight || !net->classes;
}

/* (Re)schedule flow slot's completion at its rate; a pending one moves in place. */
void net_schedule_finish(Network *net, guint32 slot);

/* Put flow slot, its set's lazy flow, on its set's exclusive links (network.c). */
void net_flow_materialise(Network *net, guint32 slot);

/* The solve event: rates for the component of the dirty links (net_solver.c). */
void net_solve(Engine *eng, void *ctx, uint64_t arg);

#endif
